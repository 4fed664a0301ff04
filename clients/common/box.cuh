// Boxes of a C-order 3-D array of doubles, which the clients' halos, slabs and blocks are: the
// gather into a contiguous buffer and the scatter back that a user writes by hand (a CUDA
// kernel on device memory, loops on host memory), and the values that every check expects.
#pragma once

#include "client.hpp"

#include <cstdint>

namespace clients {

// sub[0] x sub[1] x sub[2] elements at start of an array of dims, slowest dimension first.
struct Box {
    int64_t dims[3];
    int64_t start[3];
    int64_t sub[3];
    __host__ __device__ int64_t count() const { return sub[0] * sub[1] * sub[2]; }
    int64_t array_count() const { return dims[0] * dims[1] * dims[2]; }
};

// Where an array lies in the global (periodic) domain: array element x of dimension d is
// global coordinate (origin[d] + x) mod dims[d].
struct Global {
    int64_t origin[3];
    int64_t dims[3];
};

// The value of a global cell at a step: exact in a double while the cell's index is below 2^46,
// and unlike the value of the step before, so that data of an older step is caught.
__host__ __device__ inline double cell_value(const Global &g, int64_t i, int64_t j, int64_t k, long step) {
    const int64_t x[3] = {i, j, k};
    int64_t index = 0;
    for (int d = 0; d < 3; ++d) index = index * g.dims[d] + ((g.origin[d] + x[d]) % g.dims[d] + g.dims[d]) % g.dims[d];
    return 1.0 + static_cast<double>(index * 64 + (step & 63));
}

// Array coordinates of element e of a box, counted in C order.
__host__ __device__ inline void box_coords(const Box &b, int64_t e, int64_t x[3]) {
    x[2] = b.start[2] + e % b.sub[2];
    x[1] = b.start[1] + e / b.sub[2] % b.sub[1];
    x[0] = b.start[0] + e / (b.sub[2] * b.sub[1]);
}

template <bool kGather>
__global__ void box_copy_kernel(double *array, Box b, double *packed) {
    const int64_t n = b.count();
    for (int64_t e = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; e < n; e += int64_t{gridDim.x} * blockDim.x) {
        int64_t x[3];
        box_coords(b, e, x);
        double &a = array[(x[0] * b.dims[1] + x[1]) * b.dims[2] + x[2]];
        if (kGather) packed[e] = a;
        else a = packed[e];
    }
}

__global__ void box_fill_kernel(double *array, Box b, Global g, long step) {
    const int64_t n = b.count();
    for (int64_t e = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; e < n; e += int64_t{gridDim.x} * blockDim.x) {
        int64_t x[3];
        box_coords(b, e, x);
        array[(x[0] * b.dims[1] + x[1]) * b.dims[2] + x[2]] = cell_value(g, x[0], x[1], x[2], step);
    }
}

inline int grid_for(int64_t n) { return static_cast<int>(std::clamp<int64_t>((n + 255) / 256, 1, 8192)); }

// Gathers box b of `array` into `packed` (or scatters `packed` into it); device work is queued
// on `stream` for the caller to synchronize.
inline void box_copy(Mem m, cudaStream_t stream, double *array, const Box &b, double *packed, bool gather) {
    if (b.count() == 0) return;
    if (m == Mem::device) {
        if (gather) box_copy_kernel<true><<<grid_for(b.count()), 256, 0, stream>>>(array, b, packed);
        else box_copy_kernel<false><<<grid_for(b.count()), 256, 0, stream>>>(array, b, packed);
        cuda_check(cudaGetLastError(), "box copy kernel launch");
        return;
    }
    const size_t row = static_cast<size_t>(b.sub[2]) * sizeof(double);
    for (int64_t i = 0; i < b.sub[0]; ++i)
        for (int64_t j = 0; j < b.sub[1]; ++j) {
            double *a = array + ((b.start[0] + i) * b.dims[1] + b.start[1] + j) * b.dims[2] + b.start[2];
            double *p = packed + (i * b.sub[1] + j) * b.sub[2];
            gather ? std::memcpy(p, a, row) : std::memcpy(a, p, row);
        }
}

// Writes every element of box b with its cell value at `step`; done when it returns.
inline void box_fill(Mem m, double *array, const Box &b, const Global &g, long step) {
    if (m == Mem::device) {
        box_fill_kernel<<<grid_for(b.count()), 256>>>(array, b, g, step);
        cuda_check(cudaDeviceSynchronize(), "fill kernel");
        return;
    }
    for (int64_t i = b.start[0]; i < b.start[0] + b.sub[0]; ++i)
        for (int64_t j = b.start[1]; j < b.start[1] + b.sub[1]; ++j)
            for (int64_t k = b.start[2]; k < b.start[2] + b.sub[2]; ++k)
                array[(i * b.dims[1] + j) * b.dims[2] + k] = cell_value(g, i, j, k, step);
}

// How many elements of box b of a host array differ from their cell value at `step`; the first
// few are printed, named by `what`, while *budget lasts.
inline int64_t box_mismatches(const double *array, const Box &b, const Global &g, long step, const char *what,
                              int *budget) {
    int64_t bad = 0;
    for (int64_t i = b.start[0]; i < b.start[0] + b.sub[0]; ++i)
        for (int64_t j = b.start[1]; j < b.start[1] + b.sub[1]; ++j)
            for (int64_t k = b.start[2]; k < b.start[2] + b.sub[2]; ++k) {
                const double got = array[(i * b.dims[1] + j) * b.dims[2] + k];
                const double want = cell_value(g, i, j, k, step);
                if (got == want) continue;
                if (++bad, (*budget)-- > 0)
                    std::fprintf(stderr, "%s: rank %d: step %ld: %s: element (%lld,%lld,%lld) is %.17g, not %.17g\n",
                                 g_prog, world_rank(), step, what, static_cast<long long>(i),
                                 static_cast<long long>(j), static_cast<long long>(k), got, want);
            }
    return bad;
}

}  // namespace clients
