// Pack/unpack of STRIDED plans: every run has the same length, so a group of lanes per run
// piece needs no list in memory, only the plan's dims (HAND's adaptive thread-block shape:
// the group size follows the run length).
#include "pack_kernels.hpp"

#include "batch.cuh"
#include "copy.cuh"
#include "launch.cuh"

#include <algorithm>

namespace ucxdt::kernels {

namespace {

// V > 0: every address and length is a multiple of V (checked on the host). V == 0: any
// alignment; each piece finds its widest access at run time. TWO: the packed side is a second
// strided layout of the same runs (a layout-to-layout copy), not the packed stream.
// Address of packed position `pos` of run `run`, whose first packed position is p0.
template <bool TWO>
__device__ __forceinline__ char *packed_at(const StridedArgs &a, uint64_t run, int64_t p0, int64_t pos) {
    if constexpr (TWO) return at(a.packed, a.packed_base + outer_disp(a.packed_dims, run) + (pos - p0));
    return at(a.packed, pos - a.offset);
}

// Runs short enough for one thread each (a run of at most four accesses but for 1- to 4-byte
// words, kernels/pack_kernels.hpp): consecutive threads on consecutive runs, so that a warp's
// accesses to the packed side are contiguous, and all of a run's loads (four at a time) issued
// before its first store. Launched with a block per 256 runs (run_blocks), not a grid-stride
// loop: blocks start in order, so the GPU's resident threads work on one window of the layout
// that slides through it (8-byte runs every 64 bytes: unpack 329 -> 387 GB/s on an H200,
// docs/performance-log.md, run 40).
template <int V, bool PACK, bool TWO>
__device__ __forceinline__ void runs_per_thread(const StridedArgs &a, uint64_t tid,
                                                uint64_t threads) {
    for (uint64_t item = tid; item < a.items; item += threads) {
        const uint64_t run = a.first_item + item;
        const int64_t p0 = static_cast<int64_t>(run) * a.block_len;
        const int64_t lo = max(p0, a.offset), hi = min(p0 + a.block_len, a.end);
        char *lay = at(a.layout, a.base + outer_disp(a.dims, run) + (lo - p0));
        char *pk = packed_at<TWO>(a, run, p0, lo);
        copy_vectors<V>(PACK ? pk : lay, PACK ? lay : pk, 0, hi - lo, 0, 1);
    }
}

// A window too small for groups of lanes to fill the GPU: a thread per piece of K vectors
// (a.thread_vectors), side by side in one run and stored as one K * V-byte access on the packed
// side, so that a warp's index arithmetic, a dependent chain, is short and many warps hide it.
template <int V, int K, bool PACK, bool TWO>
__device__ __forceinline__ void pieces_per_thread(const StridedArgs &a, uint64_t tid, uint64_t threads) {
    using Vec = typename VecOf<V>::type;
    using Wide = typename VecOf<V * K>::type;
    for (uint64_t item = tid; item < a.items; item += threads) {
        const uint64_t u = a.first_item + item;  // piece u of the packed stream
        const uint64_t run = a.ipr.div(u);
        const int64_t in_run = static_cast<int64_t>(u - run * a.ipr.d) * (V * K);
        char *lay = at(a.layout, a.base + outer_disp(a.dims, run) + in_run);
        char *pk = TWO ? at(a.packed, a.packed_base + outer_disp(a.packed_dims, run) + in_run)
                       : at(a.packed, static_cast<int64_t>(item) * (V * K));
        union {
            Vec v[K];
            Wide w;
        } piece;
        if constexpr (PACK) {
#pragma unroll
            for (int k = 0; k < K; ++k) piece.v[k] = *reinterpret_cast<const Vec *>(lay + k * V);
            *reinterpret_cast<Wide *>(pk) = piece.w;
        } else {
            piece.w = *reinterpret_cast<const Wide *>(pk);
#pragma unroll
            for (int k = 0; k < K; ++k) *reinterpret_cast<Vec *>(lay + k * V) = piece.v[k];
        }
    }
}

// The copy of one StridedArgs by `threads` threads, of which this one is `tid`.
template <int V, bool PACK, bool TWO>
__device__ __forceinline__ void strided_copy(const StridedArgs &a, uint64_t tid, uint64_t threads) {
    const int lanes = 1 << a.lanes_log2;
    if constexpr (V > 0) {
        if (a.thread_vectors > 0) {
            if constexpr (V <= 8) {
                if (a.thread_vectors == 2) return pieces_per_thread<V, 2, PACK, TWO>(a, tid, threads);
            }
            return pieces_per_thread<V, 1, PACK, TWO>(a, tid, threads);
        }
        if (one_run_per_thread(a)) {
            runs_per_thread<V, PACK, TWO>(a, tid, threads);
            return;
        }
    }
    const int lane = static_cast<int>(tid & (lanes - 1));
    for (uint64_t t = tid; (t >> a.lanes_log2) < a.items; t += threads) {
        const uint64_t item = a.first_item + (t >> a.lanes_log2);
        const uint64_t run = a.ipr.div(item);
        const int64_t piece = static_cast<int64_t>(item - run * a.ipr.d);
        const int64_t p0 = static_cast<int64_t>(run) * a.block_len;  // packed position of run
        const int64_t lo = max(p0 + piece * a.piece, a.offset);
        const int64_t hi = min(min(p0 + (piece + 1) * a.piece, p0 + a.block_len), a.end);
        if (lo >= hi) continue;
        // lay[pos] and pk[pos] are the layout and packed bytes of packed position pos.
        char *lay = at(a.layout, a.base + outer_disp(a.dims, run) - p0);
        char *pk = packed_at<TWO>(a, run, p0, 0);
        char *dst = PACK ? pk : lay;
        const char *src = PACK ? lay : pk;
        if constexpr (V > 0) {
            copy_vectors<V>(dst, src, lo, hi, lane, lanes);
        } else {
            copy_span(dst + lo, src + lo, hi - lo, lane, lanes);
        }
    }
}

template <int V, bool PACK, bool TWO>
__global__ void strided_kernel(const __grid_constant__ StridedArgs a) {
    strided_copy<V, PACK, TWO>(a, static_cast<uint64_t>(blockIdx.x) * blockDim.x + threadIdx.x,
                               static_cast<uint64_t>(gridDim.x) * blockDim.x);
}

struct StridedBatch {
    StridedArgs a[kMaxBatch];
};

// Row y of the grid copies b.a[y], in its own direction: one launch for a window of small
// packs, unpacks and layout-to-layout copies. A row is uniform, so the branch never diverges.
template <int V>
__global__ void strided_batch_kernel(const __grid_constant__ StridedBatch b) {
    const StridedArgs &a = b.a[blockIdx.y];
    const uint64_t tid = static_cast<uint64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
    const uint64_t threads = static_cast<uint64_t>(gridDim.x) * blockDim.x;
    if (a.packed_dims.n > 0) strided_copy<V, true, true>(a, tid, threads);
    else if (a.pack) strided_copy<V, true, false>(a, tid, threads);
    else strided_copy<V, false, false>(a, tid, threads);
}

template <int V>
cudaError_t launch(const StridedArgs &a, dim3 grid, dim3 block, cudaStream_t stream) {
    // layout to layout: only "pack" (layout -> packed side) is used
    const auto kernel = a.packed_dims.n > 0 ? strided_kernel<V, true, true>
                        : a.pack            ? strided_kernel<V, true, false>
                                            : strided_kernel<V, false, false>;
    return launch_kernel(kernel, grid, block, 0, stream, a);
}

template <int V>
cudaError_t launch_batch(const StridedBatch &b, dim3 grid, dim3 block, cudaStream_t stream) {
    return launch_kernel(strided_batch_kernel<V>, grid, block, 0, stream, b);
}

}  // namespace

cudaError_t launch_strided_batch(const StridedArgs *args, int n, cudaStream_t stream) {
    return launch_in_batches<StridedBatch>(args, n, [&](const StridedBatch &b, int rows, dim3 grid, dim3 block) {
        int vec = 16;  // powers of two (0: any alignment): the least serves all
        for (int i = 0; i < rows; ++i) vec = std::min(vec, b.a[i].vec);
        switch (vec) {
        case 16: return launch_batch<16>(b, grid, block, stream);
        case 8: return launch_batch<8>(b, grid, block, stream);
        case 4: return launch_batch<4>(b, grid, block, stream);
        case 2: return launch_batch<2>(b, grid, block, stream);
        case 1: return launch_batch<1>(b, grid, block, stream);
        default: return launch_batch<0>(b, grid, block, stream);
        }
    });
}

cudaError_t launch_strided(const StridedArgs &a, cudaStream_t stream) {
    if (a.items == 0) return cudaSuccess;
    constexpr unsigned kBlock = 256;
    const bool per_thread = a.thread_vectors > 0 || one_run_per_thread(a);
    const dim3 grid(per_thread ? run_blocks(a.items, kBlock) : grid_blocks(a.items << a.lanes_log2, kBlock)), block(kBlock);
    switch (a.vec) {
    case 16: return launch<16>(a, grid, block, stream);
    case 8: return launch<8>(a, grid, block, stream);
    case 4: return launch<4>(a, grid, block, stream);
    case 2: return launch<2>(a, grid, block, stream);
    case 1: return launch<1>(a, grid, block, stream);
    default: return launch<0>(a, grid, block, stream);
    }
}

}  // namespace ucxdt::kernels
