// Launch interface of the pack/unpack kernels, shared by nvcc (kernels/*.cu) and the host
// engine (src/cuda/gpu_engine.cpp). Both kernels copy a window [offset, end) of a plan's
// packed stream between the layout (user buffer) and the packed buffer, in either direction,
// so fragments can be produced in any order (see docs/design.md, "GPU engine").
#pragma once

#include "fast_div.hpp"

#include <cuda_runtime_api.h>

#include <cstdint>

namespace ucxdt::kernels {

constexpr int kMaxDims = 8;

/// Outer strided dims of a plan: index i decomposes over counts (innermost last) into a
/// byte displacement sum(idx_k * stride_k).
struct Dims {
    int n = 0;
    FastDiv count[kMaxDims];
    int64_t stride[kMaxDims] = {};
};

/// STRIDED plans: runs of block_len bytes. Each run is cut into `ipr` pieces of at most
/// `piece` bytes; a group of 2^lanes_log2 threads copies one piece `vec` bytes at a time.
/// The host guarantees that vec divides block_len, piece, base, every stride, offset, end and
/// both buffer addresses. With thread_vectors (1 or 2) a piece is that many vectors, one
/// thread's, and items count pieces of the packed stream from piece first_item; 2 needs piece
/// to divide block_len, offset, end and `packed`, and vec to be at most 8.
struct StridedArgs {
    char *layout = nullptr;       // user buffer (byte displacements are relative to it)
    char *packed = nullptr;       // holds packed bytes [offset, end); with packed_dims, a
                                  // second layout of the same runs: run i at
                                  // packed + packed_base + (its displacement by packed_dims)
    Dims packed_dims;             // n == 0: `packed` is the packed stream
    int64_t packed_base = 0;
    int64_t base = 0;             // displacement of run 0
    Dims dims;                    // runs = prod(dims)
    int64_t block_len = 0;
    int64_t piece = 0;
    FastDiv ipr;                  // pieces per run
    uint64_t first_item = 0, items = 0;
    int64_t offset = 0, end = 0;  // the packed window
    int vec = 1;
    int lanes_log2 = 0;
    int thread_vectors = 0;       // 0: groups of lanes (above)
    bool pack = true;             // layout -> packed; false: packed -> layout
};

/// A work unit of a block list (Wu et al., HPDC'16, 3.1): `len` bytes at layout
/// displacement `src` (relative to the outer index's base) that are packed bytes
/// [dst, dst + len) of one outer index's unit.
struct Unit {
    int64_t src;
    int64_t dst;
    int64_t len;
};

/// BLOCK_LIST plans: work item w is unit (w mod nunits) of outer index (w / nunits).
struct UnitArgs {
    char *layout = nullptr;
    char *packed = nullptr;
    int64_t base = 0;
    Dims dims;
    const Unit *units = nullptr;  // device memory
    FastDiv nunits;
    int64_t unit_size = 0;        // packed bytes per outer index
    uint64_t first_item = 0, items = 0;
    int64_t offset = 0, end = 0;
    int lanes_log2 = 5;
    bool pack = true;
    char *twin = nullptr;         // pack only: a second buffer of the same layout, which each
                                  // byte goes to at its own displacement instead of `packed`
};

/// Blocks of `block` threads for a grid-stride launch of `threads` threads: enough to fill
/// every multiprocessor of the node's largest GPU, no more, and at most sm_bound()
/// (kernels/grid.cu).
unsigned grid_blocks(uint64_t threads, unsigned block);
/// The same for a device of `sms` multiprocessors and a bound of `bound` blocks (0: none):
/// up to two waves of full occupancy (2048 threads per multiprocessor), at least one block.
inline unsigned bounded_grid(uint64_t threads, unsigned block, int sms, unsigned bound) {
    const uint64_t needed = (threads + block - 1) / block;
    uint64_t cap = static_cast<uint64_t>(sms > 1 ? sms : 1) * 2048 / block * 2;
    if (bound > 0 && bound < cap) cap = bound;
    return static_cast<unsigned>(needed < 1 ? 1 : needed < cap ? needed : cap);
}
/// The most blocks a ucxdt kernel runs at once, and so the most multiprocessors it occupies
/// (each block runs on one multiprocessor, and the block scheduler spreads them): the
/// UCXDT_GPU_SMS setting, a count of multiprocessors; 0 is no bound. Read once per process.
unsigned sm_bound();
/// UCXDT_GPU_SMS when unset: no bound (docs/performance.md, table h, says why).
constexpr unsigned kDefaultSmBound = 0;

/// Whether a strided copy gives each run one thread of its own: runs of one piece, one lane
/// each, with an access width known on the host (kernels/strided_kernel.cu).
UCXDT_HD inline bool one_run_per_thread(int vec, int lanes_log2, uint64_t pieces_per_run) {
    return vec > 0 && lanes_log2 == 0 && pieces_per_run == 1;
}
UCXDT_HD inline bool one_run_per_thread(const StridedArgs &a) {
    return one_run_per_thread(a.vec, a.lanes_log2, a.ipr.d);
}
/// Blocks of `block` threads for one thread per item, `items` of them: every item's (the blocks
/// start in order), at least one, at most `bound` (0: no bound) and gridDim.x's limit.
inline unsigned run_grid(uint64_t items, unsigned block, unsigned bound) {
    const uint64_t needed = (items + block - 1) / block;
    const uint64_t cap = bound > 0 ? bound : uint64_t{0x7fffffff};
    return static_cast<unsigned>(needed < 1 ? 1 : needed < cap ? needed : cap);
}
/// run_grid under sm_bound() (kernels/grid.cu).
unsigned run_blocks(uint64_t items, unsigned block);

/// Enqueue on `stream` (on the current device). Return the launch's status.
cudaError_t launch_strided(const StridedArgs &args, cudaStream_t stream);
cudaError_t launch_units(const UnitArgs &args, cudaStream_t stream);
/// Most copies one batched launch takes (their arguments are one kernel parameter).
constexpr int kMaxBatch = 8;
/// Copies a batched launch takes: kMaxBatch, fewer under a smaller UCXDT_GPU_SMS (a row of the
/// grid per copy, a block at least each).
int batch_rows();
/// The grid of a batched launch of `rows` copies whose largest needs `threads` threads.
dim3 batch_grid(uint64_t threads, unsigned block, int rows);
/// `n` copies of launch_strided (packs, unpacks and layout-to-layout copies, mixed) on
/// `stream`, batch_rows() to a launch: a window of small messages pays one launch where each
/// copy would pay its own. Copies of one call must not depend on each other's bytes.
cudaError_t launch_strided_batch(const StridedArgs *args, int n, cudaStream_t stream);
/// `n` copies of launch_units (mixed directions, with or without a twin), as above.
cudaError_t launch_units_batch(const UnitArgs *args, int n, cudaStream_t stream);

}  // namespace ucxdt::kernels

namespace ucxdt::kernels {

/// A node of a layout tree (src/dt/layout.hpp) flattened for the point-based kernel.
struct TreeNode {
    enum : int32_t { BLOCK = 0, STRIDED = 1, LIST = 2 };
    int32_t kind = BLOCK;
    int32_t child = 0;        // STRIDED: index of the child node
    int64_t stride = 0;       // STRIDED: bytes
    FastDiv child_size;       // STRIDED: packed bytes of the child
    int64_t first = 0, n = 0; // LIST: its entries in the entry array
};

/// An entry of a LIST node: `node` displaced by `disp` bytes, starting at packed offset
/// `prefix` of the list.
struct TreeEntry {
    int64_t disp;
    int64_t prefix;
    int64_t node;
};

/// BLOCK_LIST plans whose unit list would outweigh their data (Jenkins et al., TPDS'14, 3.2):
/// each thread takes `vec` packed bytes and finds their address by descending the tree from
/// node 0, by division at strided levels and binary search at lists. vec divides every block
/// length, displacement and stride of the tree, base, offset, end and both buffer addresses.
struct PointArgs {
    char *layout = nullptr;
    char *packed = nullptr;
    int64_t base = 0;
    Dims dims;
    const TreeNode *nodes = nullptr;     // device memory
    const TreeEntry *entries = nullptr;  // device memory
    int num_nodes = 0, num_entries = 0;
    FastDiv unit_size;                   // packed bytes per outer index (the tree's size)
    int64_t offset = 0, end = 0;
    int vec = 1;
    bool pack = true;
    char *twin = nullptr;                // as in UnitArgs; vec divides its address too
};

cudaError_t launch_point(const PointArgs &args, cudaStream_t stream);
/// `n` copies of launch_point (mixed directions, with or without a twin), batch_rows() to a
/// launch, as launch_strided_batch.
cudaError_t launch_point_batch(const PointArgs *args, int n, cudaStream_t stream);

}  // namespace ucxdt::kernels

namespace ucxdt::kernels {

/// STRIDED plans of one level whose short runs lie densely (stride a few run lengths): a
/// block stages `runs_per_tile` consecutive runs through shared memory. Pack reads the span
/// from the tile's first run to the end of its last as 16-byte vectors (the gaps between runs
/// too, never outside the span) and stores packed units; unpack loads the packed bytes as
/// vectors and writes only the layout's data, a unit per thread.
struct TileArgs {
    char *layout = nullptr;
    char *packed = nullptr;       // holds packed bytes [offset, end)
    int64_t base = 0;             // displacement of run 0
    int64_t stride = 0;           // bytes between runs, >= block_len
    int64_t block_len = 0;
    FastDiv len_div;              // divides packed offsets by block_len
    int64_t first_run = 0, runs = 0;  // the runs the window touches
    int64_t runs_per_tile = 0;
    int64_t offset = 0, end = 0;
    int unit = 1;                 // 8, 4 or 1: divides block_len, stride, base, offset, end and
                                  // both buffer addresses
    bool pack = true;
};

/// Threads of a tile kernel's block (launch_in_batches' blocks too).
constexpr unsigned kTileBlock = 256;

/// Shared memory bytes a launch needs: a tile's span, placed at its address modulo 16.
inline int64_t tile_shared_bytes(const TileArgs &a) {
    return (a.runs_per_tile - 1) * a.stride + a.block_len + 16;
}

/// Tiles of a launch: a block each.
UCXDT_HD inline int64_t tiles_of(const TileArgs &a) { return (a.runs + a.runs_per_tile - 1) / a.runs_per_tile; }

cudaError_t launch_tiles(const TileArgs &args, cudaStream_t stream);
/// `n` copies of launch_tiles (mixed directions and units), batch_rows() to a launch, as
/// launch_strided_batch.
cudaError_t launch_tiles_batch(const TileArgs *args, int n, cudaStream_t stream);

}  // namespace ucxdt::kernels

namespace ucxdt::kernels {

/// STRIDED plans whose last two dims are a transposed pair: the first of them (`rows`) steps by
/// one run, the last (`cols`) by `col_stride`. Packed element e (elem bytes, the run) is row
/// R = e / cols, column e mod cols; in the layout it lies at base + (displacement of leading
/// index R / rows by `lead`) + (R mod rows) * elem + column * col_stride. So a packed row is a
/// layout column and the other way round (a matrix transpose, FFT's scatter type). elem is 4,
/// 8 or 16 and divides base, col_stride, every lead stride, offset, end and both buffers.
struct TransposeArgs {
    char *layout = nullptr;
    char *packed = nullptr;       // holds packed bytes [offset, end)
    int64_t base = 0;
    Dims lead;                    // the plan's dims before the pair (n == 0: none)
    FastDiv rows;
    int64_t cols = 0;
    int64_t elem = 0;
    int64_t col_stride = 0;
    int64_t offset = 0, end = 0;
    bool pack = true;
};

/// Elements per side of a transpose tile, and the tiles of a launch: a block each.
constexpr int kTransposeTile = 32;
UCXDT_HD inline int64_t transpose_tiles(const TransposeArgs &a) {
    const int64_t e0 = a.offset / a.elem, e1 = a.end / a.elem;
    const int64_t rows = (e1 - 1) / a.cols - e0 / a.cols + 1;
    return (rows + kTransposeTile - 1) / kTransposeTile * ((a.cols + kTransposeTile - 1) / kTransposeTile);
}

cudaError_t launch_transpose(const TransposeArgs &args, cudaStream_t stream);
/// `n` copies of launch_transpose (mixed directions and element sizes), batch_rows() to a
/// launch, as launch_strided_batch.
cudaError_t launch_transpose_batch(const TransposeArgs *args, int n, cudaStream_t stream);

}  // namespace ucxdt::kernels
