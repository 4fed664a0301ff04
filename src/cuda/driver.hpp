// CUDA driver calls that the runtime does not offer (or offers only at a higher cost), reached
// through the runtime's entry-point query so that libucxdt links the runtime only.
#pragma once

#include <cuda.h>

namespace ucxdt::cuda {

struct Driver {
    CUresult (*get_address_range)(CUdeviceptr *, size_t *, CUdeviceptr) = nullptr;
    CUresult (*pointer_attribute)(void *, CUpointer_attribute, CUdeviceptr) = nullptr;
    /// Several attributes in one call; for memory CUDA does not know it returns CUDA_SUCCESS
    /// with the attributes' null values (CUDA driver API, cuPointerGetAttributes).
    CUresult (*pointer_attributes)(unsigned, CUpointer_attribute *, void **, CUdeviceptr) = nullptr;
    CUresult (*set_pointer_attribute)(const void *, CUpointer_attribute, CUdeviceptr) = nullptr;
};

/// The entry points, looked up once per process; a member is null where the driver lacks it.
/// Thread-safe.
const Driver &driver();

}  // namespace ucxdt::cuda
