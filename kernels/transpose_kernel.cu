// Pack/unpack of a transposed pair of dims (see TransposeArgs) through a shared-memory tile of
// 32 x 32 elements: the layout side is read or written along its contiguous columns and the
// packed side along its rows, so both sides move whole 32-element spans per warp. The strided
// kernel, one element per thread, writes a transpose's layout side 8 or 16 bytes per sector
// (0.15 of memcpy for a 4096^2 unpack, docs/performance.md table a).
#include "pack_kernels.hpp"

#include "batch.cuh"
#include "copy.cuh"
#include "launch.cuh"

namespace ucxdt::kernels {

namespace {

constexpr int kTile = kTransposeTile;  // elements per tile side: a warp's span on either side
constexpr int kRowsPerPass = 8;  // threadIdx.y; each thread moves kTile / 8 elements per side
static_assert(kTile * kRowsPerPass == kTileBlock, "a batched launch's blocks are kTileBlock threads");

// Byte displacement of global row R (row R mod rows of leading index R / rows) in the layout.
__device__ __forceinline__ int64_t row_disp(const TransposeArgs &a, uint64_t R) {
    const uint64_t o = a.rows.div(R);
    return a.base + outer_disp(a.lead, o) + static_cast<int64_t>(R - o * a.rows.d) * a.elem;
}

// tile[c][r]: element (row r, column c) of the tile; the pad keeps both passes free of
// shared-memory bank conflicts for 4-, 8- and 16-byte elements.
template <typename Vec>
using Tile = Vec[kTile][kTile + 1];

// The copy of `a` by block `block` of `blocks` (each takes every blocks-th tile).
template <typename Vec, bool PACK>
__device__ __forceinline__ void transpose_copy(const TransposeArgs &a, Tile<Vec> &tile, int64_t block,
                                               int64_t blocks) {
    const int tx = static_cast<int>(threadIdx.x % kTile), ty = static_cast<int>(threadIdx.x / kTile);
    const int64_t e0 = a.offset / a.elem, e1 = a.end / a.elem;  // the window, in elements
    const int64_t cols = a.cols;
    const int64_t R0 = e0 / cols, R1 = (e1 - 1) / cols;          // its first and last rows
    const int64_t col_tiles = (cols + kTile - 1) / kTile;
    const int64_t tiles = transpose_tiles(a);
    for (int64_t t = block; t < tiles; t += blocks) {
        const int64_t r0 = R0 + t / col_tiles * kTile, c0 = t % col_tiles * kTile;
        // This thread's row on the layout side (r0 + tx) and its first byte there.
        const int64_t Rl = r0 + tx;
        const int64_t lay_row = Rl <= R1 ? row_disp(a, static_cast<uint64_t>(Rl)) : 0;
        __syncthreads();  // the previous tile is done with the shared buffer
        if (PACK) {
#pragma unroll
            for (int k = 0; k < kTile; k += kRowsPerPass) {
                const int64_t c = c0 + ty + k, e = Rl * cols + c;
                if (Rl <= R1 && c < cols && e >= e0 && e < e1)
                    tile[ty + k][tx] = *reinterpret_cast<const Vec *>(at(a.layout, lay_row + c * a.col_stride));
            }
            __syncthreads();
#pragma unroll
            for (int k = 0; k < kTile; k += kRowsPerPass) {
                const int64_t R = r0 + ty + k, c = c0 + tx, e = R * cols + c;
                if (c < cols && e >= e0 && e < e1)
                    *reinterpret_cast<Vec *>(a.packed + (e - e0) * a.elem) = tile[tx][ty + k];
            }
        } else {
#pragma unroll
            for (int k = 0; k < kTile; k += kRowsPerPass) {
                const int64_t R = r0 + ty + k, c = c0 + tx, e = R * cols + c;
                if (c < cols && e >= e0 && e < e1)
                    tile[tx][ty + k] = *reinterpret_cast<const Vec *>(a.packed + (e - e0) * a.elem);
            }
            __syncthreads();
#pragma unroll
            for (int k = 0; k < kTile; k += kRowsPerPass) {
                const int64_t c = c0 + ty + k, e = Rl * cols + c;
                if (Rl <= R1 && c < cols && e >= e0 && e < e1)
                    *reinterpret_cast<Vec *>(at(a.layout, lay_row + c * a.col_stride)) = tile[ty + k][tx];
            }
        }
    }
}

template <typename Vec, bool PACK>
__global__ void transpose_kernel(const __grid_constant__ TransposeArgs a) {
    __shared__ Tile<Vec> tile;
    transpose_copy<Vec, PACK>(a, tile, blockIdx.x, gridDim.x);
}

struct TransposeBatch {
    TransposeArgs a[kMaxBatch];
};

// The copy of `a` by this block of a batch, with the shared tile viewed as a tile of `a`'s
// elements (a 16-byte tile holds the smaller ones).
template <typename Vec>
__device__ __forceinline__ void batch_row(const TransposeArgs &a, Tile<uint4> &raw) {
    Tile<Vec> &tile = *reinterpret_cast<Tile<Vec> *>(&raw);
    if (a.pack) transpose_copy<Vec, true>(a, tile, blockIdx.x, gridDim.x);
    else transpose_copy<Vec, false>(a, tile, blockIdx.x, gridDim.x);
}

// Row y of the grid copies b.a[y], in its own direction and element size; a row is uniform, so
// its blocks never diverge at the barriers.
__global__ void transpose_batch_kernel(const __grid_constant__ TransposeBatch b) {
    __shared__ Tile<uint4> raw;
    const TransposeArgs &a = b.a[blockIdx.y];
    switch (a.elem) {
    case 16: batch_row<uint4>(a, raw); break;
    case 8: batch_row<uint2>(a, raw); break;
    default: batch_row<uint32_t>(a, raw); break;
    }
}

template <typename Vec>
cudaError_t launch(const TransposeArgs &a, cudaStream_t stream) {
    const dim3 block(kTileBlock);
    const dim3 grid(grid_blocks(threads_of(a), kTileBlock));
    return launch_kernel(a.pack ? transpose_kernel<Vec, true> : transpose_kernel<Vec, false>, grid, block, 0, stream, a);
}

}  // namespace

cudaError_t launch_transpose(const TransposeArgs &a, cudaStream_t stream) {
    if (a.end <= a.offset) return cudaSuccess;
    switch (a.elem) {
    case 16: return launch<uint4>(a, stream);
    case 8: return launch<uint2>(a, stream);
    case 4: return launch<uint32_t>(a, stream);
    default: return cudaErrorInvalidValue;
    }
}

cudaError_t launch_transpose_batch(const TransposeArgs *args, int n, cudaStream_t stream) {
    for (int i = 0; i < n; ++i)
        if (args[i].elem != 4 && args[i].elem != 8 && args[i].elem != 16) return cudaErrorInvalidValue;
    return launch_in_batches<TransposeBatch>(args, n, [&](const TransposeBatch &b, int, dim3 grid, dim3 block) {
        return launch_kernel(transpose_batch_kernel, grid, block, 0, stream, b);
    });
}

}  // namespace ucxdt::kernels
