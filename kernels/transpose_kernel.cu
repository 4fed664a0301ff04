// Pack/unpack of a transposed pair of dims (see TransposeArgs) through a shared-memory tile of
// 32 x 32 elements: the layout side is read or written along its contiguous columns and the
// packed side along its rows, so both sides move whole 32-element spans per warp. The strided
// kernel, one element per thread, writes a transpose's layout side 8 or 16 bytes per sector
// (0.15 of memcpy for a 4096^2 unpack, docs/performance.md table a).
#include "pack_kernels.hpp"

#include "copy.cuh"

namespace ucxdt::kernels {

namespace {

constexpr int kTile = 32;  // elements per tile side: a warp's span on either side
constexpr int kRowsPerPass = 8;  // threadIdx.y; each thread moves kTile / 8 elements per side

// Byte displacement of global row R (row R mod rows of leading index R / rows) in the layout.
__device__ __forceinline__ int64_t row_disp(const TransposeArgs &a, uint64_t R) {
    const uint64_t o = a.rows.div(R);
    return a.base + outer_disp(a.lead, o) + static_cast<int64_t>(R - o * a.rows.d) * a.elem;
}

template <typename Vec, bool PACK>
__global__ void transpose_kernel(const __grid_constant__ TransposeArgs a) {
    // tile[c][r]: element (row r, column c) of the tile; the pad keeps both passes free of
    // shared-memory bank conflicts for 4-, 8- and 16-byte elements.
    __shared__ Vec tile[kTile][kTile + 1];
    const int tx = static_cast<int>(threadIdx.x), ty = static_cast<int>(threadIdx.y);
    const int64_t e0 = a.offset / a.elem, e1 = a.end / a.elem;  // the window, in elements
    const int64_t cols = a.cols;
    const int64_t R0 = e0 / cols, R1 = (e1 - 1) / cols;          // its first and last rows
    const int64_t col_tiles = (cols + kTile - 1) / kTile;
    const int64_t tiles = (R1 - R0 + kTile) / kTile * col_tiles;
    for (int64_t t = blockIdx.x; t < tiles; t += gridDim.x) {
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

template <typename Vec>
cudaError_t launch(const TransposeArgs &a, cudaStream_t stream) {
    const int64_t e0 = a.offset / a.elem, e1 = a.end / a.elem;
    const int64_t rows = (e1 - 1) / a.cols - e0 / a.cols + 1;
    const int64_t tiles = (rows + kTile - 1) / kTile * ((a.cols + kTile - 1) / kTile);
    const dim3 block(kTile, kRowsPerPass);
    const dim3 grid(grid_blocks(static_cast<uint64_t>(tiles) * block.x * block.y, block.x * block.y));
    if (a.pack) transpose_kernel<Vec, true><<<grid, block, 0, stream>>>(a);
    else transpose_kernel<Vec, false><<<grid, block, 0, stream>>>(a);
    return cudaGetLastError();
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

}  // namespace ucxdt::kernels
