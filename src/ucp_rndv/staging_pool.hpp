// Host staging slots for the rendezvous: one region of slots x slot_bytes, allocated by UCP
// (shared memory where a shared-memory transport is enabled, so that a receiver on this node
// can map it: PeerStaging), page-locked when a GPU is present (so GPU layouts pack into it with
// zero copy), placed on the NUMA nodes local to the GPU it serves (hwloc), and registered once
// with ucp_mem_map, so that a peer can GET from it with one rkey; handed out slot by slot, in
// sizes from slot_bytes down to kMinStagingSlot (base/buddy_slots.hpp): a message smaller than a
// slot takes a slot its size, so that a window of small messages fits (issue 22: 16 slots of
// 1 MiB held 16 messages of 12-40 KB in flight, and bounded their rate).
#pragma once

#include "base/buddy_slots.hpp"

#include <ucxdt/ucxdt.h>

#include <ucp/api/ucp.h>

#include <cstdint>
#include <vector>

namespace ucxdt::rndv {

class StagingPool {
public:
    /// `near_gpu`: the CUDA device whose layouts it stages (its pages go to the NUMA nodes
    /// local to that GPU), -1 for none.
    static ucxdt_status_t create(ucp_context_h ctx, int slots, int64_t slot_bytes, int near_gpu, StagingPool **out);
    ~StagingPool();

    /// Slot i of `level` (of slot_bytes >> level bytes each).
    char *slot(int i, int level = 0) const { return base_ + static_cast<int64_t>(i) * (slot_bytes_ >> level); }
    char *base() const { return base_; }
    int64_t bytes() const { return bytes_; }
    /// The packed rkey of the whole region (for an RTS).
    const std::vector<char> &rkey() const { return rkey_; }

    /// Takes up to `want` free slots of `level` (none when none is free).
    std::vector<int> take(int want, int level = 0) { return free_.take(want, level); }
    void give(int slot, int level = 0) { free_.give(slot, level); }
    /// Whole slots free: all of them once every slot taken is given back.
    int free_slots() const { return free_.free_top(); }
    /// Page-locked (cudaHostRegister): GPU kernels and copies reach the slots with zero copy.
    bool page_locked() const { return page_locked_; }
    /// The pages are bound to the NUMA nodes of a GPU (cuda::bind_near_gpu).
    bool numa_bound() const { return numa_bound_; }

private:
    StagingPool() = default;
    ucp_context_h ctx_ = nullptr;
    int64_t slot_bytes_ = 0, bytes_ = 0;
    char *base_ = nullptr;
    char *owned_ = nullptr;    // allocated here, when UCP could not
    bool registered_ = false;   // page-locked here with cudaHostRegister (unregistered here)
    bool page_locked_ = false;  // by us or by UCX's cuda_copy when ucp_mem_map allocated it
    bool numa_bound_ = false;
    ucp_mem_h memh_ = nullptr;
    std::vector<char> rkey_;
    BuddySlots free_;
};

}  // namespace ucxdt::rndv
