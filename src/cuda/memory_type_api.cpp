// ucxdt_memory_type (ucxdt_cuda.h): the CUDA layer's pointer query, for callers outside ucxdt.
#include "cuda/memory_type.hpp"

#include <ucxdt/ucxdt_cuda.h>

extern "C" ucxdt_memory_type_t ucxdt_memory_type(const void *ptr, int *device) {
    int d = -1;
    ucxdt_memory_type_t t = UCXDT_MEMORY_HOST;
    switch (ucxdt::cuda::memory_type(ptr, &d)) {
    case ucxdt::cuda::MemoryType::HOST: t = UCXDT_MEMORY_HOST; break;
    case ucxdt::cuda::MemoryType::HOST_PINNED: t = UCXDT_MEMORY_HOST_PINNED; break;
    case ucxdt::cuda::MemoryType::DEVICE: t = UCXDT_MEMORY_DEVICE; break;
    case ucxdt::cuda::MemoryType::MANAGED: t = UCXDT_MEMORY_MANAGED; break;
    }
    if (device) *device = t == UCXDT_MEMORY_DEVICE || t == UCXDT_MEMORY_MANAGED ? d : -1;
    return t;
}
