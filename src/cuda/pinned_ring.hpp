// Rings of pinned host staging for requests that stream a GPU layout through host memory in
// fragments (the UCP generic datatype): `depth` slots of `slot_bytes`, a stream on which the
// GPU packs into or unpacks out of the slots, and one event per slot. The slots are placed on
// the NUMA nodes local to the ring's GPU (topology.hpp). Rings are pooled per device, because
// pinning memory costs far more than one message.
#pragma once

#include <ucxdt/ucxdt.h>

#include <cuda_runtime_api.h>

#include <cstdint>
#include <memory>
#include <vector>

namespace ucxdt::cuda {

struct PinnedRing {
    int device = -1;
    cudaStream_t stream = nullptr;
    char *host = nullptr;   // depth x slot_bytes, page-locked, mapped for the GPU
    bool host_alloc = false;  // from cudaHostAlloc (not registered)
    int64_t slot_bytes = 0;
    int depth = 0;
    std::vector<cudaEvent_t> events;  // one per slot: recorded after the slot's GPU work

    char *slot(int i) const { return host + static_cast<int64_t>(i) * slot_bytes; }
};

/// Ring geometry, from the environment once per process: UCXDT_RING_SLOT_KB (default 256)
/// and UCXDT_RING_DEPTH (default 4) slots; at most UCXDT_RINGS_PER_DEVICE (default 64) rings
/// exist per device, which bounds the pinned memory at that times depth times slot size.
int64_t ring_slot_bytes();
int ring_depth();
int rings_per_device();

struct RingRelease {
    void operator()(PinnedRing *ring) const;
};
/// A ring owned by one request: back to the pool when reset. Its stream may still have
/// work queued: the owner synchronizes what it launched before letting go.
using RingPtr = std::unique_ptr<PinnedRing, RingRelease>;

/// A free ring of `device`, made when none is free. Returns an empty pointer, with the
/// reason in ucxdt_last_error(), when the device already has rings_per_device() in use or a
/// CUDA call fails; the caller then has to do without.
RingPtr acquire_ring(int device);

}  // namespace ucxdt::cuda
