// CUDA runtime errors as ucxdt statuses, with the runtime's message and what was attempted.
#pragma once

#include "base/error.hpp"

#include <cuda_runtime_api.h>

#include <string>

namespace ucxdt::cuda {

inline ucxdt_status_t check(cudaError_t err, const char *what) {
    if (err == cudaSuccess) return UCXDT_OK;
    cudaGetLastError();  // clear a non-sticky error so that later calls do not see it
    return fail(UCXDT_ERR_CUDA, std::string(what) + ": " + cudaGetErrorName(err) + " (" +
                                    cudaGetErrorString(err) + ")");
}

/// Makes `device` current for a scope and restores the caller's device after, so that
/// buffers on another GPU than the current one are served without side effects.
class DeviceGuard {
public:
    explicit DeviceGuard(int device) {
        cudaGetDevice(&saved_);
        if (device != saved_) err_ = cudaSetDevice(device);
    }
    ~DeviceGuard() {
        int now = -1;
        cudaGetDevice(&now);
        if (now != saved_) cudaSetDevice(saved_);
    }
    DeviceGuard(const DeviceGuard &) = delete;
    DeviceGuard &operator=(const DeviceGuard &) = delete;
    ucxdt_status_t status() const { return check(err_, "cudaSetDevice"); }

private:
    int saved_ = 0;
    cudaError_t err_ = cudaSuccess;
};

}  // namespace ucxdt::cuda
