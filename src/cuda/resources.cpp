#include <cuda_runtime.h>

#include "cuda/resources.hpp"

#include "cuda/cuda_check.hpp"
#include "cuda/gpu_share.hpp"
#include "base/env.hpp"

#include <cstdlib>
#include <memory>
#include <vector>

namespace ucxdt::cuda {

namespace {

struct DeviceResources {
    std::mutex mutex;          // guards the lazy creation below
    cudaStream_t stream = nullptr;
    std::mutex staging_mutex;  // held by a Staging for its whole use
    char *device_buf = nullptr, *host_buf = nullptr;
};

DeviceResources &resources(int device) {
    static std::mutex mutex;
    static std::vector<std::unique_ptr<DeviceResources>> all;
    std::lock_guard lock(mutex);
    if (device >= static_cast<int>(all.size())) all.resize(static_cast<size_t>(device) + 1);
    if (!all[device]) all[device] = std::make_unique<DeviceResources>();
    return *all[device];
}

}  // namespace

int64_t staging_bytes() {
    static const int64_t bytes = env_integer("UCXDT_STAGING_MB", 32, 1, INT64_MAX >> 20) << 20;
    return bytes;
}

ucxdt_status_t internal_stream(int device, cudaStream_t *stream) {
    DeviceResources &r = resources(device);
    std::lock_guard lock(r.mutex);
    if (!r.stream) {
        DeviceGuard guard(device);
        if (ucxdt_status_t st = guard.status()) return st;
        // Blocking, not cudaStreamNonBlocking: synchronous calls start after the legacy default
        // stream's work, as cudaMemcpy does (a pageable cudaMemcpy may return before its DMA
        // lands; a non-blocking stream raced it, seen as stale bytes in ucxdt_perftest).
        if (ucxdt_status_t st = create_stream(&r.stream, "internal")) return st;
    }
    *stream = r.stream;
    return UCXDT_OK;
}

Staging::Staging(int device) {
    DeviceResources &r = resources(device);
    lock_ = std::unique_lock(r.staging_mutex);
    if (!r.device_buf) {
        DeviceGuard guard(device);
        if ((status_ = guard.status())) return;
        if ((status_ = check(cudaMalloc(&r.device_buf, staging_bytes()), "cudaMalloc (staging)")))
            return;
    }
    if (!r.host_buf &&
        (status_ = check(cudaMallocHost(&r.host_buf, staging_bytes()), "cudaMallocHost (staging)")))
        return;
    device_buf_ = r.device_buf;
    host_buf_ = r.host_buf;
}

Staging::~Staging() = default;

}  // namespace ucxdt::cuda
