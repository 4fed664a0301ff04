// Page-locked slots for the tagged messages (eager data, RTS) of GPU layouts, which the GPU packs
// into and unpacks out of with zero copy, on the worker's stream. Chunks of StagingPool slots: a
// new chunk is made when every slot is taken, up to a cap. With one fixed chunk, a window of 32
// small messages took 16 slots and packed the other 16 synchronously through pageable memory
// (issue 22: CPU profile of 4 KiB tag_bw on two H100s).
#pragma once

#include "ucp_rndv/staging_pool.hpp"

#include <memory>
#include <vector>

namespace ucxdt::rndv {

class WirePool {
public:
    /// Chunks of `chunk_slots` slots of `slot_bytes` each, no more than `max_bytes` of them in all
    /// (one chunk at least).
    void configure(ucp_context_h ctx, int chunk_slots, int64_t slot_bytes, int64_t max_bytes);

    /// A free slot, making a chunk near GPU `near_gpu` when none is; -1 when the cap is reached or
    /// a chunk could not be made page-locked (the caller then uses pageable memory).
    int take(int near_gpu);
    void give(int slot) { chunks_[slot / chunk_slots_]->give(slot % chunk_slots_); }
    char *slot(int slot) const { return chunks_[slot / chunk_slots_]->slot(slot % chunk_slots_); }
    int64_t slot_bytes() const { return slot_bytes_; }
    int chunks() const { return static_cast<int>(chunks_.size()); }
    int free_slots() const {
        int n = 0;
        for (const auto &c : chunks_) n += c->free_slots();
        return n;
    }

private:
    ucp_context_h ctx_ = nullptr;
    int chunk_slots_ = 0;
    int64_t slot_bytes_ = 0;
    int max_chunks_ = 0;
    bool failed_ = false;  // a chunk could not be made page-locked: no more tries
    std::vector<std::unique_ptr<StagingPool>> chunks_;
};

}  // namespace ucxdt::rndv
