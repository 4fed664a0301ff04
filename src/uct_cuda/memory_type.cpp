#include "uct_cuda/memory_type.hpp"

#include <cuda_runtime_api.h>

namespace ucxdt::cuda {

bool gpu_present() {
    static const bool present = [] {
        int n = 0;
        const bool ok = cudaGetDeviceCount(&n) == cudaSuccess && n > 0;
        cudaGetLastError();  // do not leave a sticky error for the application
        return ok;
    }();
    return present;
}

MemoryType memory_type(const void *ptr, int *device) {
    if (!ptr || !gpu_present()) return MemoryType::HOST;
    cudaPointerAttributes attr{};
    if (cudaPointerGetAttributes(&attr, ptr) != cudaSuccess) {
        cudaGetLastError();
        return MemoryType::HOST;
    }
    if (device) *device = attr.device;
    switch (attr.type) {
    case cudaMemoryTypeDevice: return MemoryType::DEVICE;
    case cudaMemoryTypeManaged: return MemoryType::MANAGED;
    case cudaMemoryTypeHost: return MemoryType::HOST_PINNED;
    default: return MemoryType::HOST;
    }
}

}  // namespace ucxdt::cuda
