// Pack/unpack of dense short runs through shared memory (see TileArgs): the layout span of a
// tile and its packed bytes are both contiguous, so each side moves as 4-byte words; the
// byte-wise reshuffle between them happens in shared memory.
#include "pack_kernels.hpp"

#include "copy.cuh"

namespace ucxdt::kernels {

namespace {

// Shared byte i = global byte g[i], for i < n, by the block's threads: 4-byte words where
// g is aligned, single bytes at the unaligned head and tail. Reads no global byte outside
// [g, g + n).
__device__ __forceinline__ void load_shared(unsigned char *s, const char *g, int64_t n) {
    const int64_t head =
        min(n, static_cast<int64_t>((4 - (reinterpret_cast<uintptr_t>(g) & 3)) & 3));
    const int64_t words = (n - head) / 4;
    for (int64_t i = threadIdx.x; i < head; i += blockDim.x) s[i] = g[i];
    for (int64_t w = threadIdx.x; w < words; w += blockDim.x) {
        const int64_t i = head + 4 * w;
        const uint32_t v = *reinterpret_cast<const uint32_t *>(g + i);
#pragma unroll
        for (int b = 0; b < 4; ++b) s[i + b] = static_cast<unsigned char>(v >> (8 * b));
    }
    for (int64_t i = head + 4 * words + threadIdx.x; i < n; i += blockDim.x) s[i] = g[i];
}

// Global byte g[i] = shared byte s[at(i)], for i < n: words where g is aligned, bytes at the
// head and tail. Writes no global byte outside [g, g + n).
template <typename At>
__device__ __forceinline__ void store_gathered(char *g, int64_t n, const unsigned char *s,
                                               At at_of) {
    const int64_t head =
        min(n, static_cast<int64_t>((4 - (reinterpret_cast<uintptr_t>(g) & 3)) & 3));
    const int64_t words = (n - head) / 4;
    for (int64_t i = threadIdx.x; i < head; i += blockDim.x) g[i] = static_cast<char>(s[at_of(i)]);
    for (int64_t w = threadIdx.x; w < words; w += blockDim.x) {
        const int64_t i = head + 4 * w;
        uint32_t v = 0;
#pragma unroll
        for (int b = 0; b < 4; ++b) v |= static_cast<uint32_t>(s[at_of(i + b)]) << (8 * b);
        *reinterpret_cast<uint32_t *>(g + i) = v;
    }
    for (int64_t i = head + 4 * words + threadIdx.x; i < n; i += blockDim.x)
        g[i] = static_cast<char>(s[at_of(i)]);
}

template <bool PACK>
__global__ void tile_kernel(const __grid_constant__ TileArgs a) {
    extern __shared__ unsigned char tile[];
    const int64_t tiles = (a.runs + a.runs_per_tile - 1) / a.runs_per_tile;
    for (int64_t t = blockIdx.x; t < tiles; t += gridDim.x) {
        const int64_t r0 = a.first_run + t * a.runs_per_tile;
        const int64_t nr = min(a.runs_per_tile, a.first_run + a.runs - r0);
        // The tile's packed bytes within the window: [skip, skip + n) counted from run r0.
        const int64_t skip = max(r0 * a.block_len, a.offset) - r0 * a.block_len;
        const int64_t n = min((r0 + nr) * a.block_len, a.end) - r0 * a.block_len - skip;
        char *lay = at(a.layout, a.base + r0 * a.stride);  // first byte of run r0
        char *pk = at(a.packed, r0 * a.block_len + skip - a.offset);
        const int64_t len = a.block_len, stride = a.stride;
        // Byte q of the tile's packed bytes lives at byte (q mod len) of run q / len.
        auto at_run = [&](int64_t q) {
            const int64_t j = static_cast<int64_t>(a.len_div.div(static_cast<uint64_t>(q)));
            return j * stride + (q - j * len);
        };
        __syncthreads();  // the previous tile is done with the shared buffer
        if (PACK) {
            // The span from run r0 to the end of its last run: data and the gaps between.
            load_shared(tile, lay, (nr - 1) * stride + len);
            __syncthreads();
            store_gathered(pk, n, tile, [&](int64_t i) { return at_run(skip + i); });
        } else {
            load_shared(tile, pk, n);
            __syncthreads();
            // Only data bytes of the layout are written: packed byte q goes to run q / len.
            for (int64_t i = threadIdx.x; i < n; i += blockDim.x)
                lay[at_run(skip + i)] = static_cast<char>(tile[i]);
        }
    }
}

}  // namespace

cudaError_t launch_tiles(const TileArgs &a, cudaStream_t stream) {
    if (a.runs == 0 || a.end <= a.offset) return cudaSuccess;
    constexpr unsigned kBlock = 256;
    const int64_t tiles = (a.runs + a.runs_per_tile - 1) / a.runs_per_tile;
    const dim3 grid(grid_blocks(static_cast<uint64_t>(tiles) * kBlock, kBlock)), block(kBlock);
    const size_t shared = static_cast<size_t>(tile_shared_bytes(a));
    if (a.pack) tile_kernel<true><<<grid, block, shared, stream>>>(a);
    else tile_kernel<false><<<grid, block, shared, stream>>>(a);
    return cudaGetLastError();
}

}  // namespace ucxdt::kernels
