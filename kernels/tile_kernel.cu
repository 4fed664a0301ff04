// Pack/unpack of dense short runs through shared memory (see TileArgs): the layout span of a
// tile and its packed bytes are both contiguous, so the contiguous side moves as 16-byte
// vectors; the reshuffle between them happens in shared memory, in units of TileArgs::unit.
#include "pack_kernels.hpp"

#include "batch.cuh"
#include "copy.cuh"
#include "launch.cuh"

#include <cuda_pipeline_primitives.h>

#include <algorithm>

namespace ucxdt::kernels {

namespace {

// Copies global bytes [g, g + n) to shared memory at s + (g mod 16), so that both sides share
// their alignment: 16-byte vectors in the body, single bytes at the unaligned head and tail.
// Reads no global byte outside [g, g + n). Returns the shared address of g's byte. ASYNC: the
// vectors move by asynchronous copies (cp.async), all of a thread's in flight at once and
// without registers, where a load and a store per vector wait out the memory's latency each
// time. Byte-unit packs (struct) ran 16% faster so; 12-byte runs, already at 0.94 of the DRAM
// bound, and unpacks ran up to 5% slower, and keep plain loads (performance-log.md, run 27).
template <bool ASYNC>
__device__ __forceinline__ unsigned char *load_shared(uint4 *s, const char *g, int64_t n) {
    const uintptr_t mis = reinterpret_cast<uintptr_t>(g) & 15;
    unsigned char *sb = reinterpret_cast<unsigned char *>(s) + mis;
    const int64_t head = min(n, static_cast<int64_t>((16 - mis) & 15));
    const int64_t vecs = (n - head) / 16;
    for (int64_t i = threadIdx.x; i < head; i += blockDim.x) sb[i] = g[i];
    const uint4 *gv = reinterpret_cast<const uint4 *>(g + head);
    uint4 *sv = reinterpret_cast<uint4 *>(sb + head);
    for (int64_t w = threadIdx.x; w < vecs; w += blockDim.x) {
        if constexpr (ASYNC) __pipeline_memcpy_async(sv + w, gv + w, sizeof(uint4));
        else sv[w] = gv[w];
    }
    if constexpr (ASYNC) __pipeline_commit();
    for (int64_t i = head + 16 * vecs + threadIdx.x; i < n; i += blockDim.x) sb[i] = g[i];
    if constexpr (ASYNC) __pipeline_wait_prior(0);
    return sb;
}

// Packed byte g[i] = shared byte s[layout position of packed byte skip + i], for i < n: the
// tile's runs (len bytes every stride) gathered into 16-byte vectors where g is aligned, bytes
// at the head and tail. One division per vector; the run advances by counting. Writes no
// global byte outside [g, g + n).
__device__ __forceinline__ void gather_bytes(char *g, int64_t n, const unsigned char *s, int64_t skip,
                                             int64_t len, int64_t stride, const FastDiv &len_div) {
    auto at_run = [&](int64_t q) {
        const int64_t j = static_cast<int64_t>(len_div.div(static_cast<uint64_t>(q)));
        return j * stride + (q - j * len);
    };
    const int64_t head =
        min(n, static_cast<int64_t>((16 - (reinterpret_cast<uintptr_t>(g) & 15)) & 15));
    const int64_t vecs = (n - head) / 16;
    for (int64_t i = threadIdx.x; i < head; i += blockDim.x) g[i] = static_cast<char>(s[at_run(skip + i)]);
    for (int64_t w = threadIdx.x; w < vecs; w += blockDim.x) {
        const int64_t q = skip + head + 16 * w;
        const int64_t j = static_cast<int64_t>(len_div.div(static_cast<uint64_t>(q)));
        int64_t within = q - j * len, idx = j * stride + within;
        uint32_t word[4] = {0, 0, 0, 0};
#pragma unroll
        for (int b = 0; b < 16; ++b) {
            word[b / 4] |= static_cast<uint32_t>(s[idx]) << (8 * (b % 4));
            ++idx;
            if (++within == len) within = 0, idx += stride - len;
        }
        *reinterpret_cast<uint4 *>(g + head + 16 * w) = make_uint4(word[0], word[1], word[2], word[3]);
    }
    for (int64_t i = head + 16 * vecs + threadIdx.x; i < n; i += blockDim.x)
        g[i] = static_cast<char>(s[at_run(skip + i)]);
}

// The layout position of packed bytes q, q + step, q + 2 step, ... (each in the run q / len
// at byte q mod len): one division to start, then additions, where a division per unit cost
// struct's unpack 4-5% (performance-log.md, run 27).
struct RunCursor {
    int64_t at, within;  // the layout position of the current packed byte, and its byte in its run
    int64_t len, wrap;   // wrap: from the end of a run to the start of the next
    int64_t jump, rem;   // a step: whole runs (as layout bytes) plus rem bytes

    __device__ __forceinline__ RunCursor(int64_t q, int64_t step, int64_t len, int64_t stride, const FastDiv &len_div)
        : len(len), wrap(stride - len) {
        const int64_t j = static_cast<int64_t>(len_div.div(static_cast<uint64_t>(q)));
        within = q - j * len;
        at = j * stride + within;
        const int64_t runs = static_cast<int64_t>(len_div.div(static_cast<uint64_t>(step)));
        rem = step - runs * len;
        jump = runs * stride + rem;
    }
    __device__ __forceinline__ void next() {
        at += jump;
        within += rem;
        if (within >= len) within -= len, at += wrap;
    }
};

// U: the unit every run length, stride, window end and buffer address is a multiple of (1, 4
// or 8 bytes, TileArgs::unit); data moves between shared memory and the layout's runs in
// units, so 12-byte runs take three accesses, not twelve. Block `block` of `blocks` takes every
// blocks-th tile.
template <int U, bool PACK>
__device__ __forceinline__ void tile_copy(const TileArgs &a, uint4 *tile, int64_t block, int64_t blocks) {
    using Unit = typename VecOf<U>::type;
    const int64_t tiles = tiles_of(a);
    for (int64_t t = block; t < tiles; t += blocks) {
        const int64_t r0 = a.first_run + t * a.runs_per_tile;
        const int64_t nr = min(a.runs_per_tile, a.first_run + a.runs - r0);
        // The tile's packed bytes within the window: [skip, skip + n) counted from run r0.
        const int64_t skip = max(r0 * a.block_len, a.offset) - r0 * a.block_len;
        const int64_t n = min((r0 + nr) * a.block_len, a.end) - r0 * a.block_len - skip;
        char *lay = at(a.layout, a.base + r0 * a.stride);  // first byte of run r0
        char *pk = at(a.packed, r0 * a.block_len + skip - a.offset);
        // Byte q of the tile's packed bytes lives at byte (q mod len) of run q / len.
        const int64_t len = a.block_len, stride = a.stride;
        __syncthreads();  // the previous tile is done with the shared buffer
        if (PACK) {
            // The span from run r0 to the end of its last run: data and the gaps between.
            const unsigned char *s = load_shared<U == 1>(tile, lay, (nr - 1) * stride + len);
            __syncthreads();
            if constexpr (U == 1) {
                gather_bytes(pk, n, s, skip, len, stride, a.len_div);
            } else {
                RunCursor c(skip + U * threadIdx.x, U * blockDim.x, len, stride, a.len_div);
                for (int64_t i = U * threadIdx.x; i < n; i += U * blockDim.x, c.next())
                    *reinterpret_cast<Unit *>(pk + i) = *reinterpret_cast<const Unit *>(s + c.at);
            }
        } else {
            const unsigned char *s = load_shared<false>(tile, pk, n);
            __syncthreads();
            // Only data bytes of the layout are written: packed byte q goes to run q / len.
            RunCursor c(skip + U * threadIdx.x, U * blockDim.x, len, stride, a.len_div);
            for (int64_t i = U * threadIdx.x; i < n; i += U * blockDim.x, c.next())
                *reinterpret_cast<Unit *>(lay + c.at) = *reinterpret_cast<const Unit *>(s + i);
        }
    }
}

template <int U, bool PACK>
__global__ void tile_kernel(const __grid_constant__ TileArgs a) {
    extern __shared__ uint4 tile[];
    tile_copy<U, PACK>(a, tile, blockIdx.x, gridDim.x);
}

struct TileBatch {
    TileArgs a[kMaxBatch];
};

// Row y of the grid copies b.a[y], in its own direction; U divides every row's unit. A row is
// uniform, so its blocks never diverge at the barriers.
template <int U>
__global__ void tile_batch_kernel(const __grid_constant__ TileBatch b) {
    extern __shared__ uint4 tile[];
    const TileArgs &a = b.a[blockIdx.y];
    if (a.pack) tile_copy<U, true>(a, tile, blockIdx.x, gridDim.x);
    else tile_copy<U, false>(a, tile, blockIdx.x, gridDim.x);
}

template <int U>
cudaError_t launch(const TileArgs &a, dim3 grid, dim3 block, size_t shared, cudaStream_t stream) {
    return launch_kernel(a.pack ? tile_kernel<U, true> : tile_kernel<U, false>, grid, block, shared, stream, a);
}

}  // namespace

cudaError_t launch_tiles(const TileArgs &a, cudaStream_t stream) {
    if (a.runs == 0 || a.end <= a.offset) return cudaSuccess;
    const dim3 grid(grid_blocks(threads_of(a), kTileBlock)), block(kTileBlock);
    const size_t shared = static_cast<size_t>(tile_shared_bytes(a));
    switch (a.unit) {
    case 8: return launch<8>(a, grid, block, shared, stream);
    case 4: return launch<4>(a, grid, block, shared, stream);
    default: return launch<1>(a, grid, block, shared, stream);
    }
}

cudaError_t launch_tiles_batch(const TileArgs *args, int n, cudaStream_t stream) {
    return launch_in_batches<TileBatch>(args, n, [&](const TileBatch &b, int rows, dim3 grid, dim3 block) {
        int unit = 8;  // 8, 4 or 1: the least serves all
        int64_t shared = 0;
        for (int i = 0; i < rows; ++i) {
            unit = std::min(unit, b.a[i].unit);
            shared = std::max(shared, tile_shared_bytes(b.a[i]));
        }
        const size_t bytes = static_cast<size_t>(shared);
        const auto kernel = unit == 8 ? tile_batch_kernel<8> : unit == 4 ? tile_batch_kernel<4> : tile_batch_kernel<1>;
        return launch_kernel(kernel, grid, block, bytes, stream, b);
    });
}

}  // namespace ucxdt::kernels
