// Pack/unpack of BLOCK_LIST plans over cached work units (Wu et al., HPDC'16, 3.1: the
// host cuts blocks into units of bounded size so that one launch covers the whole list with
// balanced groups of lanes).
#include "pack_kernels.hpp"

#include "batch.cuh"
#include "copy.cuh"
#include "launch.cuh"

#include <algorithm>

namespace ucxdt::kernels {

namespace {

// The copy of one UnitArgs by `threads` threads, of which this one is `tid`.
template <bool PACK>
__device__ __forceinline__ void unit_copy(const UnitArgs &a, uint64_t tid, uint64_t threads) {
    const int lanes = 1 << a.lanes_log2;
    const int lane = static_cast<int>(tid & (lanes - 1));
    for (uint64_t t = tid; (t >> a.lanes_log2) < a.items; t += threads) {
        const uint64_t w = a.first_item + (t >> a.lanes_log2);
        const uint64_t outer = a.nunits.div(w);
        const Unit u = a.units[w - outer * a.nunits.d];
        const int64_t p0 = static_cast<int64_t>(outer) * a.unit_size + u.dst;
        const int64_t lo = max(p0, a.offset), hi = min(p0 + u.len, a.end);
        if (lo >= hi) continue;
        const int64_t disp = a.base + outer_disp(a.dims, outer) + u.src + (lo - p0);
        char *lay = at(a.layout, disp);
        char *pk = a.twin ? at(a.twin, disp) : at(a.packed, lo - a.offset);
        if (PACK) copy_span(pk, lay, hi - lo, lane, lanes);
        else copy_span(lay, pk, hi - lo, lane, lanes);
    }
}

template <bool PACK>
__global__ void unit_kernel(const __grid_constant__ UnitArgs a) {
    unit_copy<PACK>(a, static_cast<uint64_t>(blockIdx.x) * blockDim.x + threadIdx.x,
                    static_cast<uint64_t>(gridDim.x) * blockDim.x);
}

struct UnitBatch {
    UnitArgs a[kMaxBatch];
};

// Row y of the grid copies b.a[y], packing or unpacking as it says (or into its twin).
__global__ void unit_batch_kernel(const __grid_constant__ UnitBatch b) {
    const UnitArgs &a = b.a[blockIdx.y];
    const uint64_t tid = static_cast<uint64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
    const uint64_t threads = static_cast<uint64_t>(gridDim.x) * blockDim.x;
    if (a.pack) unit_copy<true>(a, tid, threads);
    else unit_copy<false>(a, tid, threads);
}

}  // namespace

cudaError_t launch_units_batch(const UnitArgs *args, int n, cudaStream_t stream) {
    return launch_in_batches<UnitBatch>(args, n, [&](const UnitBatch &b, int, dim3 grid, dim3 block) {
        return launch_kernel(unit_batch_kernel, grid, block, 0, stream, b);
    });
}

cudaError_t launch_units(const UnitArgs &a, cudaStream_t stream) {
    if (a.items == 0) return cudaSuccess;
    constexpr unsigned kBlock = 256;
    const dim3 grid(grid_blocks(a.items << a.lanes_log2, kBlock)), block(kBlock);
    return launch_kernel(a.pack ? unit_kernel<true> : unit_kernel<false>, grid, block, 0, stream, a);
}

}  // namespace ucxdt::kernels
