// Host staging slots for the rendezvous: one region of slots x slot_bytes, page-locked when a
// GPU is present (so GPU layouts pack into it with zero copy) and registered once with
// ucp_mem_map, so that a peer can GET from it with one rkey; handed out slot by slot.
#pragma once

#include "slot_list.hpp"

#include <ucxdt/ucxdt.h>

#include <ucp/api/ucp.h>

#include <cstdint>
#include <vector>

namespace ucxdt::rndv {

class StagingPool {
public:
    static ucxdt_status_t create(ucp_context_h ctx, int slots, int64_t slot_bytes, StagingPool **out);
    ~StagingPool();

    char *slot(int i) const { return base_ + static_cast<int64_t>(i) * slot_bytes_; }
    char *base() const { return base_; }
    /// The packed rkey of the whole region (for an RTS).
    const std::vector<char> &rkey() const { return rkey_; }

    /// Takes up to `want` free slots (none when all are taken).
    std::vector<int> take(int want) { return free_.take(want); }
    void give(int slot) { free_.give(slot); }

private:
    StagingPool() = default;
    ucp_context_h ctx_ = nullptr;
    int64_t slot_bytes_ = 0;
    char *base_ = nullptr;
    bool registered_ = false;  // page-locked with cudaHostRegister
    ucp_mem_h memh_ = nullptr;
    std::vector<char> rkey_;
    SlotList free_;
};

}  // namespace ucxdt::rndv
