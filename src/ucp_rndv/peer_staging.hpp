// Peers' host staging mapped into this process: when a sender's staging region is shared memory
// that UCP can reach by load and store (ucp_rkey_ptr: UCX's sysv and posix transports, where
// the pool was allocated by ucp_mem_map), a receiver on its node unpacks each fragment straight
// from the sender's slot instead of copying it into a slot of its own first (UCP's sm
// transports copy with the CPU, at a fraction of what the GPUs on both sides move). One entry
// per sending worker, kept (rkey unpacked, region page-locked for GPU kernels once a GPU receive
// needs it) until that worker fails or this one is destroyed.
#pragma once

#include <ucp/api/ucp.h>

#include <cstdint>
#include <unordered_map>
#include <vector>

namespace ucxdt::rndv {

class PeerStaging {
public:
    PeerStaging() = default;
    PeerStaging(const PeerStaging &) = delete;
    PeerStaging &operator=(const PeerStaging &) = delete;
    ~PeerStaging();

    /// The local address of `sender`'s staging region (`bytes` at `base` in its process,
    /// described by `rkey`), reached through `ep`; nullptr when it cannot be mapped, or, with
    /// `for_gpu`, not page-locked for this process's GPUs. A failure is remembered: the region
    /// is not tried again.
    char *map(ucp_ep_h ep, uint64_t sender, uint64_t base, int64_t bytes, const std::vector<char> &rkey,
              bool for_gpu);
    /// Drops `sender`'s region (its worker failed); no GPU work may still read it.
    void forget(uint64_t sender);

private:
    struct Region {
        uint64_t base = 0;
        int64_t bytes = 0;
        ucp_rkey_h rkey = nullptr;
        char *local = nullptr;
        bool registered = false;   // page-locked here (unregistered here)
        bool page_locked = false;  // here or already
        bool register_failed = false;
    };
    static void release(Region &g);
    std::unordered_map<uint64_t, Region> regions_;
};

}  // namespace ucxdt::rndv
