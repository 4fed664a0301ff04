#include "ucp_rndv/wire_pool.hpp"

#include "base/error.hpp"

#include <algorithm>

namespace ucxdt::rndv {

void WirePool::configure(ucp_context_h ctx, int chunk_slots, int64_t slot_bytes, int64_t max_bytes) {
    ctx_ = ctx;
    chunk_slots_ = chunk_slots;
    slot_bytes_ = slot_bytes;
    max_chunks_ = static_cast<int>(std::max<int64_t>(1, max_bytes / (slot_bytes * chunk_slots)));
}

int WirePool::take(int near_gpu) {
    for (size_t c = 0; c < chunks_.size(); ++c)
        if (const std::vector<int> s = chunks_[c]->take(1); !s.empty())
            return static_cast<int>(c) * chunk_slots_ + s[0];
    if (failed_ || chunks() >= max_chunks_) return -1;
    StagingPool *made = nullptr;
    if (StagingPool::create(ctx_, chunk_slots_, slot_bytes_, near_gpu, &made)) {
        failed_ = true;
        clear_error();  // pageable buffers then
        return -1;
    }
    std::unique_ptr<StagingPool> chunk(made);
    if (!chunk->page_locked()) {  // no zero copy: the synchronous path is as good
        failed_ = true;
        return -1;
    }
    chunks_.push_back(std::move(chunk));
    return take(near_gpu);
}

}  // namespace ucxdt::rndv
