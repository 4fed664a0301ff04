// One-sided put and get of layouts (include/ucxdt/ucxdt_rma.h): registered regions, their
// remote keys, and the operations, which are requests of the rendezvous worker (RequestExt) so
// that status, callbacks, freeing and peer failure behave as for sends.
#pragma once

#include "base/bytes.hpp"
#include "ucp_rndv/rndv_worker.hpp"

#include <ucxdt/ucxdt_rma.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace ucxdt::rma {

/// A packed rkey (ucxdt_rkey_pack): this header, then UCP's packed rkey of the region.
struct RkeyWire {
    static constexpr uint32_t kMagic = 0x6b727875;  // "uxrk"
    static constexpr uint16_t kVersion = 2;
    uint32_t magic;
    uint16_t version;
    uint16_t device;        // 1: the region is CUDA device memory
    uint64_t address;       // the region's first byte in the exporting process
    uint64_t length;        // bytes
    uint64_t node;          // the exporter's node (rndv::node_identity())
    uint64_t worker_uuid;   // the exporting worker, which keys IPC mappings
    uint64_t process;       // the exporting process (rndv::process_identity())
    uint32_t has_ipc;       // 1: `ipc` references the region's first byte, and the exporter
                            // uses CUDA IPC (its worker's Config::ipc)
    uint32_t pad;
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
    bool ipc = false;  // a device region the origin copies into over CUDA IPC (Worker::ipc_reaches)
};

class Rma;
struct Receiving;  // a message of the active-message path arriving by rendezvous (rma_am.cpp)

/// The header of the one-sided active messages (id UCXDT_UCP_AM_ID_RMA): the target-unpack path,
/// where the origin sends the packed stream (put) or asks for it (get) with the target plan's
/// encoding (dt/plan_wire.hpp), and the target's worker unpacks or packs it.
struct AmOp {
    static constexpr uint32_t kMagic = 0x616d7875;  // "uxma"
    enum Kind : uint32_t { PUT = 1, GET, PUT_ACK, GET_REPLY };
    uint32_t magic = kMagic;
    uint32_t kind = 0;
    uint64_t origin_req = 0;  // the origin's request id, which the reply names
    uint64_t address = 0;     // PUT, GET: the target address the plan's displacements start at
    int64_t packed = 0;       // bytes of the packed stream
    uint64_t plan_bytes = 0;  // PUT, GET: the plan encoding that starts the message's data
    int32_t status = 0;       // PUT_ACK, GET_REPLY: the target's ucxdt status
    uint32_t pad = 0;
    uint64_t target_ns = 0;   // PUT_ACK, GET_REPLY: the target's unpack or pack time (cost model)
};

/// How a non-contiguous target out of CUDA IPC's reach is served (UCXDT_RMA_PATH).
enum class Path { AUTO, RUNS, AM };

/// The measured costs that choose between one UCP operation per run of the target layout and
/// one active message that the target unpacks (HAND's selection by measured cost): seconds per
/// run of the runs path, the active message's fixed seconds, and the target's seconds per run
/// unpacked (which its reply reports). A sample is a window of kStint consecutive completions
/// of one path (Rma::measure): the service times of its operations after the first, summed. A
/// lone operation among the other path's measures its latency, not its cost at the rate
/// operations are posted (on the H100 machine a lone active message took 20-250 us where a
/// stream of them took 5 us each), and replies that arrive together are averaged over the
/// window.
struct PathCosts {
    /// A moving average whose first sample gives way to the second: a first operation runs
    /// cold (the endpoint's lanes wired up, a plan built, CUDA started at the target, which
    /// costs a thousand operations' time).
    struct Avg {
        double v = 0;
        int n = 0;
        void add(double x) {
            v = n < 2 ? x : 0.5 * v + 0.5 * x;
            ++n;
        }
    };
    /// A path is measured by a stint: operations of that path alone, from the first until a
    /// window of kStint of them has completed in a row (the operations of the other path in
    /// flight drain first), or kMaxStint operations if none does. The path the model does not
    /// take gets a stint once per kReprobe x (the last stint's length) x (its cost / the
    /// best's) operations, so that probes cost at most 1/kReprobe of the time.
    static constexpr int kStint = 8, kMaxStint = 256;
    static constexpr double kReprobe = 64, kMaxRatio = 1000;
    Avg run, am, target_run;
    Path stint_path = Path::AUTO;
    bool probing = false;    // a stint is on: its sample has not come back
    int stint_ops = 0;       // operations of the stint so far, or of the last one
    double since_probe = 0;  // operations since the last stint started
};

/// The path of a host target of `runs` runs that is not contiguous: the forced one, else runs
/// until two windows of them are measured, then two stints of active messages, then the cheaper
/// by
///     T_runs = runs x run,   T_am = am + runs x target_run,
/// with a stint of the other path now and then (PathCosts::kReprobe).
inline Path next_path(PathCosts &c, Path forced, int64_t runs) {
    if (forced != Path::AUTO) return forced;
    if (c.probing) {
        if (c.stint_ops < PathCosts::kMaxStint) return ++c.stint_ops, c.stint_path;
        c.probing = false;  // no window closed (operations failed): taken again later
    }
    const auto stint = [&c](Path p) {
        c.stint_path = p, c.probing = true, c.stint_ops = 1, c.since_probe = 0;
        return p;
    };
    if (c.run.n < 2) return Path::RUNS;
    const double every = PathCosts::kReprobe * c.stint_ops;
    if (c.am.n < 2)  // the second stint follows the first, which ran cold
        return c.am.n == 1 || ++c.since_probe >= every ? stint(Path::AM) : Path::RUNS;
    const auto n = static_cast<double>(runs);
    const double t_runs = n * c.run.v, t_am = c.am.v + n * c.target_run.v;
    const Path best = t_am < t_runs ? Path::AM : Path::RUNS;
    const double lo = std::max(std::min(t_runs, t_am), 1e-12), hi = std::max(t_runs, t_am);
    if (++c.since_probe < every * std::min(hi / lo, PathCosts::kMaxRatio)) return best;
    return stint(best == Path::AM ? Path::RUNS : Path::AM);
}

/// The state of one put, get or flush.
struct Op : rndv::RequestExt {
    Rma *rma = nullptr;
    bool put = false, flush = false;
    PlanPtr target;                    // the target layout's plan
    ucxdt_status_t error = UCXDT_OK;   // the first failure of its UCP operations
    // Staging of the packed stream: pageable, or page-locked for a GPU origin (UCP path) or a
    // host origin (CUDA IPC path); device staging between two non-contiguous GPU layouts.
    Bytes host;  // base/bytes.hpp: written in full by the pack
    char *pinned = nullptr;            // from cuda::staging_pinned, `staged` bytes
    char *device = nullptr;            // from cuda::staging_device on `staged_device`
    int64_t staged = 0;
    int staged_device = -1;
    char *landing = nullptr;           // get: where the packed bytes land (staging or the origin)
    bool unpack_on_host = false;       // get, CUDA IPC path, host origin: the CPU unpacks at the end
    // Target-unpack path: the header and plan encoding UCP reads until the send completes, and
    // the target's runs (for the cost model).
    bool am = false;
    AmOp am_header;
    std::shared_ptr<const std::vector<char>> plan_wire;  // shared with Rma's cache
    ucp_dt_iov_t iov[2]{};
    bool device_target = false;        // UCP and active-message paths: the region is device memory
    int64_t target_runs = 0;           // UCP and active-message paths (cost model)
    uint64_t target_ns = 0;            // active-message path: the target's time, from its reply
    std::chrono::steady_clock::time_point started{};
    // Flush: the operations started before it, by request id; then UCP's own flush.
    std::vector<uint64_t> before;
    bool ucp_flush_posted = false;
    ~Op() override;
};

/// The one-sided layer of a worker: its operations' GPU work and UCP completions, polled by
/// ucxdt_worker_progress.
class Rma : public rndv::Extension {
public:
    /// Sets the UCP active-message handler of id UCXDT_UCP_AM_ID_RMA on w's UCP worker.
    explicit Rma(rndv::Worker *w);
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
    /// A peer's operation is being received or served (ucxdt_worker_destroy waits for it).
    bool busy() const override { return !receiving_.empty() || !received_.empty() || !incoming_.empty(); }

    /// A region of this worker that peers may target (ucxdt_mem_map), until forgotten.
    void add_region(const Mem *m) { regions_.push_back(m); }
    void forget_region(const Mem *m) { regions_.erase(std::remove(regions_.begin(), regions_.end(), m), regions_.end()); }

    /// An active message of id UCXDT_UCP_AM_ID_RMA (from UCP's handler: queued).
    struct Incoming {
        AmOp h;
        void *data;
        size_t length;
        bool rndv;        // `data` is a rendezvous descriptor (ucp_am_recv_data_nbx)
        bool persistent;  // `data` is UCP's, held until ucp_am_data_release
        ucp_ep_h reply_ep;
        std::shared_ptr<std::vector<char>> copy;  // data valid only during UCP's callback, copied
    };
    void am_arrived(const Incoming &in) { incoming_.push_back(in); }

    /// Operations started per path, and active messages served as a target (tests, debugging).
    struct {
        uint64_t ipc = 0, runs = 0, am = 0, served = 0;
        uint64_t ipc_events = 0;  // events the IPC path's GPU work recorded (shared by a batch)
    } counters;

private:
    ucxdt_status_t start_ipc(rndv::Request *r, const Rkey &rkey, uint64_t remote);
    ucxdt_status_t start_ucp(rndv::Request *r, const Rkey &rkey, uint64_t remote);
    ucxdt_status_t start_am(rndv::Request *r, uint64_t remote);
    /// The packed stream of r's origin for the UCP and active-message paths: the origin itself
    /// when contiguous host memory, else staging, packed for a put.
    /// on_device: device staging for a GPU origin (UCP's RMA into or from a device target).
    ucxdt_status_t stage(rndv::Request *r, bool on_device, char **packed);
    Path choose(const rndv::Request &r);
    // The target side of the active-message path, and the origin's handling of replies.
    void serve(Incoming &in);
    void serve_received(const Incoming &in, const char *data, size_t size);
    // Plans by their encoding (target) and encodings by plan id (origin): a layout sent again
    // is neither encoded nor rebuilt again. Each cache is emptied when it reaches kPlanCache.
    static constexpr size_t kPlanCache = 256;
    ucxdt_status_t plan_of(const char *bytes, size_t size, int64_t packed, PlanPtr *out);
    std::shared_ptr<const std::vector<char>> encoding_of(const Plan &p);
    std::unordered_map<std::string, PlanPtr> decoded_;
    std::unordered_map<uint64_t, std::shared_ptr<const std::vector<char>>> encoded_;
    void reply(ucp_ep_h ep, const AmOp &h, Bytes data);
    void on_reply(const Incoming &in, bool landed = false);  // landed: already in op->landing
    void drop_received();  // at destruction: rendezvous data received but not served
    unsigned serve_incoming();
    static ucs_status_t am_handler(void *arg, const void *header, size_t header_length, void *data, size_t length,
                                   const ucp_am_recv_param_t *param);
    void finish(rndv::Request *r);  // its last UCP operation or GPU work ended
    void measure(const Op &op);     // the cost model's measurement of a completed operation
    std::chrono::steady_clock::time_point last_completion_{};
    struct Window {  // consecutive completions of one path (PathCosts)
        bool am = false;
        int ops = 0;
        double seconds = 0, target_seconds = 0, runs = 0;
    } window_[2];  // host targets, device targets
    void advance_flush(rndv::Request *r);

    struct GpuWait {
        rndv::Request *r;
        cuda::WorkStream *stream;
        cudaEvent_t event;
        bool owns_event;  // false: a later wait of the same launch shares the event and gives it back
        ucxdt_status_t status;  // its launch failed
    };
    // Layout-to-layout copies over CUDA IPC issued since the last progress call (start_ipc),
    // their kernels in the stream's batch, launched together by the next progress call
    // (flush_launches): a window of small puts shares a launch and an event (UCXDT_GPU_BATCH)
    // where each paid its own.
    cuda::LaunchQueue<rndv::Request *> launching_;
    void flush_launches(cuda::WorkStream *only = nullptr);
    struct UcpDone {
        rndv::Request *r;
        ucs_status_t status;
    };
    rndv::Worker *w_;
    ucs_status_t handler_status_ = UCS_OK;
    Path path_ = Path::AUTO;
    PathCosts costs_[2];  // host targets, device targets: their costs differ
    std::vector<const Mem *> regions_;
    std::deque<Incoming> incoming_;
    std::unordered_set<uint64_t> awaiting_;  // requests whose ACK or reply has not come
    std::deque<Receiving *> received_;       // rendezvous data received, to serve
    std::unordered_set<Receiving *> receiving_;  // rendezvous data UCP is still receiving
    void detach_receiving();                 // at destruction: what UCP still receives
    std::deque<GpuWait> gpu_;
    std::deque<UcpDone> done_;
    std::vector<uint64_t> flushes_;  // request ids of flushes not yet complete
};

}  // namespace ucxdt::rma

struct ucxdt_mem : ucxdt::rma::Mem {};
struct ucxdt_rkey : ucxdt::rma::Rkey {};
