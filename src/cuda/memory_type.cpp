#include "cuda/memory_type.hpp"

#include "cuda/driver.hpp"

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

namespace {

// The runtime's query, where the driver's is missing or refuses the pointer.
MemoryType runtime_memory_type(const void *ptr, int *device) {
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

}  // namespace

MemoryType memory_type(const void *ptr, int *device) {
    if (!ptr || !gpu_present()) return MemoryType::HOST;
    // Only the three attributes asked: 0.11-0.13 us a call on an H200 host, where
    // cudaPointerGetAttributes, which asks the driver for more, takes 0.16-0.20 (run 41).
    const Driver &d = driver();
    if (!d.pointer_attributes) return runtime_memory_type(ptr, device);
    CUpointer_attribute names[] = {CU_POINTER_ATTRIBUTE_MEMORY_TYPE, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL,
                                   CU_POINTER_ATTRIBUTE_IS_MANAGED};
    unsigned int type = 0, managed = 0;  // IS_MANAGED is written as a bool: its other bytes stay 0
    int ordinal = -1;
    void *values[] = {&type, &ordinal, &managed};
    if (d.pointer_attributes(3, names, values, reinterpret_cast<CUdeviceptr>(ptr)) != CUDA_SUCCESS)
        return runtime_memory_type(ptr, device);
    if (type == 0) return MemoryType::HOST;  // memory CUDA does not know
    if (device) *device = ordinal;
    if (managed) return MemoryType::MANAGED;
    switch (type) {
    case CU_MEMORYTYPE_DEVICE: return MemoryType::DEVICE;
    case CU_MEMORYTYPE_HOST: return MemoryType::HOST_PINNED;
    default: return MemoryType::HOST;
    }
}

}  // namespace ucxdt::cuda
