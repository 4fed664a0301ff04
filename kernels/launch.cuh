// One kernel launch that returns its own error. cudaLaunchKernel reports a failed launch
// directly, where <<<>>> leaves it for a cudaGetLastError call after: 0.07 us more host time
// a launch on an H200 host, in calls whose GPU work takes a few microseconds
// (docs/performance-log.md, run 41).
#pragma once

#include <cuda_runtime_api.h>

namespace ucxdt::kernels {

template <typename Args>
cudaError_t launch_kernel(void (*kernel)(Args), dim3 grid, dim3 block, size_t shared_bytes,
                          cudaStream_t stream, const Args &args) {
    void *params[] = {const_cast<Args *>(&args)};
    return cudaLaunchKernel(reinterpret_cast<const void *>(kernel), grid, block, params, shared_bytes,
                            stream);
}

}  // namespace ucxdt::kernels
