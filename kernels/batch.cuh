// The host loop of the batched launches (launch_strided_batch, launch_units_batch,
// launch_point_batch, launch_tiles_batch, launch_transpose_batch): copies batch_rows() to a launch, row y of the grid
// copying the y-th, the grid sized for the largest.
#pragma once

#include "pack_kernels.hpp"

#include <algorithm>
#include <concepts>
#include <cstdint>

namespace ucxdt::kernels {

/// Threads a copy's launch would take on its own.
template <class A>  // strided and unit copies: `items` work items of 2^lanes_log2 lanes each
    requires std::same_as<A, StridedArgs> || std::same_as<A, UnitArgs>
inline uint64_t threads_of(const A &a) {
    return a.items << a.lanes_log2;
}
inline uint64_t threads_of(const PointArgs &a) {
    return a.end > a.offset ? static_cast<uint64_t>(a.end - a.offset) / static_cast<uint64_t>(a.vec) : 0;
}
inline uint64_t threads_of(const TileArgs &a) {  // a block of kTileBlock threads per tile
    return a.runs > 0 && a.end > a.offset ? static_cast<uint64_t>(tiles_of(a)) * kTileBlock : 0;
}
inline uint64_t threads_of(const TransposeArgs &a) {  // a block of kTileBlock threads per tile
    return a.end > a.offset ? static_cast<uint64_t>(transpose_tiles(a)) * kTileBlock : 0;
}

/// Launches args[0, n) through launch(batch, rows, grid, block), a Batch (a struct holding
/// `Args a[kMaxBatch]`) of up to batch_rows() copies each time; batches without work are skipped.
/// Every kind's blocks are kTileBlock threads, since a tile or transpose tile is one block.
template <class Batch, class Args, class Launch>
cudaError_t launch_in_batches(const Args *args, int n, Launch &&launch) {
    for (int first = 0; first < n; first += batch_rows()) {
        Batch b;
        const int rows = std::min(batch_rows(), n - first);
        uint64_t threads = 0;
        for (int i = 0; i < rows; ++i) {
            b.a[i] = args[first + i];
            threads = std::max(threads, threads_of(b.a[i]));
        }
        if (threads == 0) continue;
        const dim3 grid = batch_grid(threads, kTileBlock, rows);
        if (const cudaError_t e = launch(b, rows, grid, dim3(kTileBlock)); e != cudaSuccess) return e;
    }
    return cudaSuccess;
}

}  // namespace ucxdt::kernels
