// Staging buffers of the interposer and the memory query that decides routing. Buffers are kept
// for reuse in power-of-two classes per (kind, GPU), up to UCXDT_PMPI_STAGING_MB in all;
// cudaMalloc and cudaMallocHost cost far more than a small message. A request beyond that
// allocates and frees its own: waiting for staging could deadlock a correct program (every
// rank in MPI_Isend, waiting for sends that need the peers' receives) and MPI_Isend is local.
#include "pmpi.hpp"

#include <cuda_runtime_api.h>

#include <chrono>
#include <cstdlib>
#include <map>
#include <mutex>
#include <tuple>
#include <vector>

namespace ucxdt::pmpi {

namespace {

std::mutex pool_mutex;
using PoolKey = std::tuple<int, int, int64_t>;  // (kind, device, capacity)
std::map<PoolKey, std::vector<void *>> &pool() {
    static auto *p = new std::map<PoolKey, std::vector<void *>>;
    return *p;
}
int64_t kept_bytes = 0;

int64_t size_class(int64_t bytes) {
    int64_t c = 4096;
    while (c < bytes) c *= 2;
    return c;
}

// Runs f with `device` current, restoring the caller's device.
template <typename F>
cudaError_t on_device(int device, F &&f) {
    int prev = -1;
    if (device >= 0) {
        cudaGetDevice(&prev);
        if (prev != device) cudaSetDevice(device);
    }
    const cudaError_t e = f();
    if (device >= 0 && prev >= 0 && prev != device) cudaSetDevice(prev);
    return e;
}

void free_buffer(Where w, int device, void *p) {
    switch (w) {
    case Where::kHost: std::free(p); break;
    case Where::kPinned: cudaFreeHost(p); break;
    case Where::kDevice: on_device(device, [&] { return cudaFree(p); }); break;
    }
}

}  // namespace

int gpu_of(const void *p) {
    // Without a usable GPU every buffer is host memory, and no CUDA call is made again.
    static const bool have_gpu = [] {
        int n = 0;
        const bool ok = cudaGetDeviceCount(&n) == cudaSuccess && n > 0;
        if (!ok) cudaGetLastError();
        return ok;
    }();
    if (!have_gpu || !p) return -1;
    cudaPointerAttributes a{};
    if (cudaPointerGetAttributes(&a, p) != cudaSuccess) {
        cudaGetLastError();
        return -1;
    }
    return (a.type == cudaMemoryTypeDevice || a.type == cudaMemoryTypeManaged) ? a.device : -1;
}

Staging get_staging(int64_t bytes, Where where, int device) {
    Staging s;
    s.bytes = size_class(bytes);
    s.where = where;
    s.device = where == Where::kDevice ? device : -1;
    {
        std::lock_guard<std::mutex> lock(pool_mutex);
        auto it = pool().find({static_cast<int>(s.where), s.device, s.bytes});
        if (it != pool().end() && !it->second.empty()) {
            s.ptr = it->second.back();
            it->second.pop_back();
            kept_bytes -= s.bytes;
            return s;
        }
    }
    const auto t0 = std::chrono::steady_clock::now();
    switch (where) {
    case Where::kHost: s.ptr = std::malloc(static_cast<size_t>(s.bytes)); break;
    case Where::kPinned:
        if (cudaMallocHost(&s.ptr, static_cast<size_t>(s.bytes)) != cudaSuccess) s.ptr = nullptr;
        break;
    case Where::kDevice:
        if (on_device(device, [&] { return cudaMalloc(&s.ptr, static_cast<size_t>(s.bytes)); }) != cudaSuccess)
            s.ptr = nullptr;
        break;
    }
    if (!s.ptr) cudaGetLastError();
    add_time(kAllocTime, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    return s;
}

void put_staging(Staging &s) {
    if (!s.ptr) return;
    {
        std::lock_guard<std::mutex> lock(pool_mutex);
        if (kept_bytes + s.bytes <= settings().staging_keep) {
            pool()[{static_cast<int>(s.where), s.device, s.bytes}].push_back(s.ptr);
            kept_bytes += s.bytes;
            s.ptr = nullptr;
            return;
        }
    }
    free_buffer(s.where, s.device, s.ptr);
    s.ptr = nullptr;
}

void *stream_of(int device) {
    static std::mutex m;
    static std::map<int, cudaStream_t> streams;  // kept for the process: streams outlive MPI
    std::lock_guard<std::mutex> lock(m);
    auto it = streams.find(device);
    if (it != streams.end()) return it->second;
    // A blocking stream, as ucxdt's own: it waits for the legacy default stream, where a
    // program's cudaMemcpy of a send buffer (or of a receive buffer's old contents) may still be
    // copying from pageable memory when the call returns.
    cudaStream_t s = nullptr;
    if (on_device(device, [&] { return cudaStreamCreateWithFlags(&s, cudaStreamDefault); }) != cudaSuccess) {
        cudaGetLastError();
        return nullptr;
    }
    streams[device] = s;
    return s;
}

void release_all_staging() {
    std::lock_guard<std::mutex> lock(pool_mutex);
    for (auto &[key, list] : pool())
        for (void *p : list) free_buffer(static_cast<Where>(std::get<0>(key)), std::get<1>(key), p);
    pool().clear();
    kept_bytes = 0;
}

}  // namespace ucxdt::pmpi
