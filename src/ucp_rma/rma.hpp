// One-sided put and get of layouts (include/ucxdt/ucxdt_rma.h): registered regions, their
// remote keys, and the operations, which are requests of the rendezvous worker (RequestExt) so
// that status, callbacks, freeing and peer failure behave as for sends.
#pragma once

#include "ucp_rndv/rndv_worker.hpp"

#include <ucxdt/ucxdt_rma.h>

#include <cstdint>
#include <deque>
#include <vector>

namespace ucxdt::rma {

/// A packed rkey (ucxdt_rkey_pack): this header, then UCP's packed rkey of the region.
struct RkeyWire {
    static constexpr uint32_t kMagic = 0x6b727875;  // "uxrk"
    static constexpr uint16_t kVersion = 1;
    uint32_t magic;
    uint16_t version;
    uint16_t device;        // 1: the region is CUDA device memory
    uint64_t address;       // the region's first byte in the exporting process
    uint64_t length;        // bytes
    uint64_t node;          // the exporter's node (rndv::node_identity())
    uint64_t worker_uuid;   // the exporting worker, which keys IPC mappings
    int32_t pid;
    uint32_t has_ipc;       // 1: `ipc` references the region's first byte
    cuda::IpcRef ipc;
    uint64_t ucp_rkey_bytes;
};

/// A registered region (ucxdt_mem_h).
struct Mem {
    rndv::Worker *worker = nullptr;
    char *address = nullptr;
    size_t length = 0;
    bool device = false;
    ucp_mem_h memh = nullptr;
    bool has_ipc = false;
    cuda::IpcRef ipc{};
};

/// A peer's region as an endpoint reaches it (ucxdt_rkey_h).
struct Rkey {
    rndv::Ep *ep = nullptr;
    RkeyWire wire{};
    ucp_rkey_h ucp_rkey = nullptr;
};

class Rma;

/// The state of one put, get or flush.
struct Op : rndv::RequestExt {
    Rma *rma = nullptr;
    bool put = false, flush = false;
    PlanPtr target;                    // the target layout's plan
    ucxdt_status_t error = UCXDT_OK;   // the first failure of its UCP operations
    // Staging of the packed stream: pageable, or page-locked for a GPU origin (UCP path) or a
    // host origin (CUDA IPC path); device staging between two non-contiguous GPU layouts.
    std::vector<char> host;
    char *pinned = nullptr;
    char *device = nullptr;
    char *landing = nullptr;           // get: where the packed bytes land (staging or the origin)
    bool unpack_on_host = false;       // get, CUDA IPC path, host origin: the CPU unpacks at the end
    // Flush: the operations started before it, by request id; then UCP's own flush.
    std::vector<uint64_t> before;
    bool ucp_flush_posted = false;
    ~Op() override;
};

/// The one-sided layer of a worker: its operations' GPU work and UCP completions, polled by
/// ucxdt_worker_progress.
class Rma : public rndv::Extension {
public:
    explicit Rma(rndv::Worker *w) : w_(w) {}
    ~Rma() override;
    /// The layer of `w`, made on first use.
    static Rma &of(rndv::Worker *w);
    rndv::Worker *worker() const { return w_; }

    /// Starts r (a put or get whose origin is r's buffer, count and plan) on `rkey` at
    /// `remote`; an error status completes it (nothing was moved).
    ucxdt_status_t start(rndv::Request *r, const Rkey &rkey, uint64_t remote);
    /// Starts a flush of `ep`'s operations (every endpoint's when null).
    void start_flush(rndv::Request *r, rndv::Ep *ep);

    /// UCP completion of one of r's operations (from a UCP callback: queued).
    void ucp_done(rndv::Request *r, ucs_status_t st) { done_.push_back({r, st}); }
    unsigned progress() override;

private:
    ucxdt_status_t start_ipc(rndv::Request *r, const Rkey &rkey, uint64_t remote);
    ucxdt_status_t start_ucp(rndv::Request *r, const Rkey &rkey, uint64_t remote);
    void finish(rndv::Request *r);  // its last UCP operation or GPU work ended
    void advance_flush(rndv::Request *r);

    struct GpuWait {
        rndv::Request *r;
        cuda::DeviceStaging *dev;
        cudaEvent_t event;
    };
    struct UcpDone {
        rndv::Request *r;
        ucs_status_t status;
    };
    rndv::Worker *w_;
    std::deque<GpuWait> gpu_;
    std::deque<UcpDone> done_;
    std::vector<uint64_t> flushes_;  // request ids of flushes not yet complete
};

}  // namespace ucxdt::rma

struct ucxdt_mem : ucxdt::rma::Mem {};
struct ucxdt_rkey : ucxdt::rma::Rkey {};
