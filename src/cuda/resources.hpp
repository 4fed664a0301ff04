// Per-device resources reused across calls: one internal stream for the synchronous API, and
// a bounded staging pair (device memory and pinned host memory) for transfers whose other
// side is pageable host memory.
#pragma once

#include <ucxdt/ucxdt.h>

#include <cuda_runtime_api.h>

#include <cstdint>
#include <mutex>

namespace ucxdt::cuda {

/// Bytes of each staging buffer (env UCXDT_STAGING_MB, default 32 MiB); transfers larger than
/// this go through in chunks.
int64_t staging_bytes();

/// The internal stream of `device` (created on first use, never destroyed).
ucxdt_status_t internal_stream(int device, cudaStream_t *stream);

/// Exclusive use of `device`'s staging buffers while alive. Buffers are allocated on first
/// use and kept: the pool is bounded to one pair per device.
class Staging {
public:
    explicit Staging(int device);
    ~Staging();
    Staging(const Staging &) = delete;
    Staging &operator=(const Staging &) = delete;

    ucxdt_status_t status() const { return status_; }
    char *device_buffer() const { return device_buf_; }
    char *host_buffer() const { return host_buf_; }
    int64_t bytes() const { return staging_bytes(); }

private:
    std::unique_lock<std::mutex> lock_;
    char *device_buf_ = nullptr, *host_buf_ = nullptr;
    ucxdt_status_t status_ = UCXDT_OK;
};

}  // namespace ucxdt::cuda
