// Grid size of the pack kernels. Grid-stride kernels: enough blocks to fill every
// multiprocessor several times over, no more (extra blocks would only re-enter the stride
// loop's exit). One thread per run: a block per 256 runs. Never more than UCXDT_GPU_SMS blocks
// where that is set, to leave the rest of the GPU to the application (Wu et al. HPDC'16 §5.4).
#include "pack_kernels.hpp"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>

namespace ucxdt::kernels {

unsigned sm_bound() {
    static const unsigned bound = [] {
        const char *s = std::getenv("UCXDT_GPU_SMS");
        if (!s || !*s) return kDefaultSmBound;
        char *end = nullptr;
        const long v = std::strtol(s, &end, 10);
        return *end || v < 0 || v > 1 << 20 ? kDefaultSmBound : static_cast<unsigned>(v);
    }();
    return bound;
}

namespace {

// The most multiprocessors of any GPU of the node, asked once: on a node of mixed GPUs the
// smaller ones get a few blocks more than they run at once, which leave the stride loop at
// once, where asking the current device's count costs a cudaGetDevice each launch.
int max_sms() {
    static const int sms = [] {
        int n = 0, most = 0;
        if (cudaGetDeviceCount(&n) != cudaSuccess) n = 0;
        for (int d = 0; d < n; ++d) {
            int v = 0;
            if (cudaDeviceGetAttribute(&v, cudaDevAttrMultiProcessorCount, d) == cudaSuccess) most = std::max(most, v);
        }
        cudaGetLastError();
        return most > 0 ? most : 132;
    }();
    return sms;
}

}  // namespace

unsigned grid_blocks(uint64_t threads, unsigned block) { return bounded_grid(threads, block, max_sms(), sm_bound()); }

unsigned run_blocks(uint64_t items, unsigned block) { return run_grid(items, block, sm_bound()); }

int batch_rows() {
    // Each row of a batch's grid is at least one block: under UCXDT_GPU_SMS, no more rows.
    return sm_bound() > 0 && sm_bound() < static_cast<unsigned>(kMaxBatch) ? static_cast<int>(sm_bound()) : kMaxBatch;
}

dim3 batch_grid(uint64_t threads, unsigned block, int rows) {
    // Each row as many blocks as the largest copy needs, the whole grid within one launch's.
    const unsigned r = static_cast<unsigned>(rows);
    const unsigned per_row = std::min(grid_blocks(threads, block), grid_blocks(threads * r, block) / r);
    return dim3(per_row > 0 ? per_row : 1, r);
}

}  // namespace ucxdt::kernels
