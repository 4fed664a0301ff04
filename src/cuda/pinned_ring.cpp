#include "cuda/pinned_ring.hpp"

#include "cuda/cuda_check.hpp"
#include "cuda/gpu_share.hpp"
#include "cuda/topology.hpp"
#include "base/env.hpp"
#include "base/error.hpp"

#include <cstdlib>
#include <mutex>
#include <string>

namespace ucxdt::cuda {

namespace {

struct Pool {
    std::mutex mutex;
    std::vector<std::vector<PinnedRing *>> free;  // per device
    std::vector<int> made;                        // per device: rings that exist
};

Pool &pool() {
    static Pool *p = new Pool;  // never destroyed: rings may be released during exit
    return *p;
}

void destroy(PinnedRing *r) {
    DeviceGuard guard(r->device);
    for (cudaEvent_t e : r->events) cudaEventDestroy(e);
    if (r->stream) cudaStreamDestroy(r->stream);
    if (r->host && r->host_alloc) cudaFreeHost(r->host);
    else if (r->host) cudaHostUnregister(r->host), std::free(r->host);
    delete r;
}

ucxdt_status_t make(int device, PinnedRing **out) {
    auto *r = new PinnedRing;
    r->device = device;
    r->slot_bytes = ring_slot_bytes();
    r->depth = ring_depth();
    DeviceGuard guard(device);
    ucxdt_status_t st = guard.status();
    // Blocking, like the internal stream (resources.cpp): ordered after the legacy default stream.
    if (!st) st = create_stream(&r->stream, "ring");
    // Placed on the GPU's NUMA nodes before it is pinned (pinned pages cannot move), then
    // page-locked and mapped for the GPU.
    const size_t bytes = static_cast<size_t>((r->slot_bytes * r->depth + 4095) / 4096 * 4096);
    if (!st && !(r->host = static_cast<char *>(std::aligned_alloc(4096, bytes))))
        st = fail(UCXDT_ERR_NO_MEMORY, "ring: cannot allocate " + std::to_string(bytes) + " bytes");
    if (!st) {
        bind_near_gpu(r->host, bytes, device);
        st = check(cudaHostRegister(r->host, bytes, cudaHostRegisterPortable | cudaHostRegisterMapped),
                   "cudaHostRegister (ring)");
        // Kernels use the host address itself, which registered memory allows only where the
        // device can use host pointers for it (x86-64 Linux does); elsewhere, unbound memory
        // from cudaHostAlloc, whose mapped address equals the host one under UVA.
        void *dev = nullptr;
        if (!st && (cudaHostGetDevicePointer(&dev, r->host, 0) != cudaSuccess || dev != r->host)) {
            cudaGetLastError();
            cudaHostUnregister(r->host);
            std::free(r->host);
            r->host = nullptr;
            st = check(cudaHostAlloc(reinterpret_cast<void **>(&r->host), bytes,
                                     cudaHostAllocPortable | cudaHostAllocMapped),
                       "cudaHostAlloc (ring)");
            r->host_alloc = !st;
        } else if (st) {
            std::free(r->host), r->host = nullptr;
        }
    }
    for (int i = 0; !st && i < r->depth; ++i) {
        cudaEvent_t e = nullptr;
        st = check(cudaEventCreateWithFlags(&e, cudaEventDisableTiming), "cudaEventCreate (ring)");
        if (!st) r->events.push_back(e);
    }
    if (st) {
        destroy(r);
        return st;
    }
    *out = r;
    return UCXDT_OK;
}

}  // namespace

int64_t ring_slot_bytes() {
    static const int64_t v = env_integer("UCXDT_RING_SLOT_KB", 256, 4, 1 << 20) << 10;
    return v;
}

int ring_depth() {
    static const int v = static_cast<int>(env_integer("UCXDT_RING_DEPTH", 4, 1, 64));
    return v;
}

int rings_per_device() {
    static const int v = static_cast<int>(env_integer("UCXDT_RINGS_PER_DEVICE", 64, 1, 4096));
    return v;
}

void RingRelease::operator()(PinnedRing *ring) const {
    Pool &p = pool();
    std::lock_guard lock(p.mutex);
    p.free[ring->device].push_back(ring);
}

RingPtr acquire_ring(int device) {
    Pool &p = pool();
    {
        std::lock_guard lock(p.mutex);
        if (device >= static_cast<int>(p.free.size())) {
            p.free.resize(static_cast<size_t>(device) + 1);
            p.made.resize(static_cast<size_t>(device) + 1, 0);
        }
        if (!p.free[device].empty()) {
            PinnedRing *r = p.free[device].back();
            p.free[device].pop_back();
            return RingPtr(r);
        }
        if (p.made[device] >= rings_per_device()) {
            fail(UCXDT_ERR_NO_MEMORY, "all " + std::to_string(rings_per_device()) +
                                          " staging rings of device " + std::to_string(device) +
                                          " are in use (UCXDT_RINGS_PER_DEVICE)");
            return RingPtr();
        }
        ++p.made[device];  // reserved: made outside the lock, which cudaHostAlloc would hold long
    }
    PinnedRing *r = nullptr;
    if (make(device, &r) != UCXDT_OK) {
        std::lock_guard lock(p.mutex);
        --p.made[device];
        return RingPtr();
    }
    return RingPtr(r);
}

}  // namespace ucxdt::cuda
