// Grid size of the grid-stride pack kernels: enough blocks to fill every multiprocessor
// several times over, no more (extra blocks would only re-enter the stride loop's exit).
#include "pack_kernels.hpp"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdint>

namespace ucxdt::kernels {

unsigned grid_blocks(uint64_t threads, unsigned block) {
    static thread_local int cached_device = -1, cached_sms = 0;
    int dev = 0;
    cudaGetDevice(&dev);
    if (dev != cached_device) {
        if (cudaDeviceGetAttribute(&cached_sms, cudaDevAttrMultiProcessorCount, dev) !=
            cudaSuccess)
            cached_sms = 132;
        cached_device = dev;
    }
    const uint64_t needed = (threads + block - 1) / block;
    const uint64_t cap = static_cast<uint64_t>(cached_sms) * 2048 / block * 2;
    return static_cast<unsigned>(std::max<uint64_t>(1, std::min(needed, cap)));
}

}  // namespace ucxdt::kernels
