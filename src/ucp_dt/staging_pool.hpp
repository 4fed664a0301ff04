// Staging slots of one memory kind (host, or the device memory of one GPU) for the rendezvous:
// one region of slots x slot_bytes, registered once with ucp_mem_map so that a peer can GET from
// it with one rkey, handed out slot by slot.
#pragma once

#include <ucxdt/ucxdt.h>

#include <ucp/api/ucp.h>

#include <cstdint>
#include <string>
#include <vector>

namespace ucxdt::rndv {

class StagingPool {
public:
    /// device < 0: host memory; else device memory of that GPU.
    static ucxdt_status_t create(ucp_context_h ctx, int device, int slots, int64_t slot_bytes,
                                 StagingPool **out);
    ~StagingPool();

    int device() const { return device_; }
    int64_t slot_bytes() const { return slot_bytes_; }
    char *slot(int i) const { return base_ + static_cast<int64_t>(i) * slot_bytes_; }
    char *base() const { return base_; }
    /// The packed rkey of the whole region (for an RTS).
    const std::vector<char> &rkey() const { return rkey_; }

    /// Takes up to `want` free slots (at least one, or none when all are taken).
    std::vector<int> take(int want);
    void give(int slot) { free_.push_back(slot); }
    int free_slots() const { return static_cast<int>(free_.size()); }

private:
    StagingPool() = default;
    ucp_context_h ctx_ = nullptr;
    int device_ = -1;
    int64_t slot_bytes_ = 0;
    char *base_ = nullptr;
    bool registered_ = false;  // host memory page-locked with cudaHostRegister
    ucp_mem_h memh_ = nullptr;
    std::vector<char> rkey_;
    std::vector<int> free_;
};

}  // namespace ucxdt::rndv
