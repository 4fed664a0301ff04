// Driver API calls that the CUDA runtime does not offer, reached through the runtime's
// entry-point query so that libucxdt links the runtime only. A member is null when the
// installed driver does not provide it.
#pragma once

#include <cuda.h>

namespace ucxdt::cuda {

struct Driver {
    CUresult (*get_address_range)(CUdeviceptr *, size_t *, CUdeviceptr) = nullptr;
    CUresult (*pointer_attribute)(void *, CUpointer_attribute, CUdeviceptr) = nullptr;
    CUresult (*device_attribute)(int *, CUdevice_attribute, CUdevice) = nullptr;
    CUresult (*stream_write_value64)(CUstream, CUdeviceptr, cuuint64_t, unsigned) = nullptr;
};

/// The entry points, looked up once.
const Driver &driver();

}  // namespace ucxdt::cuda
