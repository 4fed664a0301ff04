// Device-side copy primitives shared by the pack kernels: a group of lanes copies one span,
// vec bytes per access, several accesses in flight per lane before the first store.
#pragma once

#include "pack_kernels.hpp"

#include <cstdint>

namespace ucxdt::kernels {

template <int V> struct VecOf;
template <> struct VecOf<16> { using type = uint4; };
template <> struct VecOf<8> { using type = uint2; };
template <> struct VecOf<4> { using type = uint32_t; };
template <> struct VecOf<2> { using type = uint16_t; };
template <> struct VecOf<1> { using type = uint8_t; };

/// Copies bytes [lo, hi) of a span whose byte i lives at src + i and goes to dst + i; the
/// group's `lane` of `lanes` takes every lanes-th vector. src + lo, dst + lo and hi - lo must be
/// multiples of V. Up to four loads are in flight before the first store, the last (partial)
/// round included: a short run read across the host link waits one round trip, not one per
/// vector (ncu, performance-log.md, run 26).
template <int V>
__device__ __forceinline__ void copy_vectors(char *__restrict__ dst, const char *__restrict__ src,
                                             int64_t lo, int64_t hi, int lane, int lanes) {
    using Vec = typename VecOf<V>::type;
    const int64_t step = static_cast<int64_t>(lanes) * V;
    int64_t i = lo + static_cast<int64_t>(lane) * V;
    for (; i + 3 * step < hi; i += 4 * step) {
        const Vec a = *reinterpret_cast<const Vec *>(src + i);
        const Vec b = *reinterpret_cast<const Vec *>(src + i + step);
        const Vec c = *reinterpret_cast<const Vec *>(src + i + 2 * step);
        const Vec d = *reinterpret_cast<const Vec *>(src + i + 3 * step);
        *reinterpret_cast<Vec *>(dst + i) = a;
        *reinterpret_cast<Vec *>(dst + i + step) = b;
        *reinterpret_cast<Vec *>(dst + i + 2 * step) = c;
        *reinterpret_cast<Vec *>(dst + i + 3 * step) = d;
    }
    if (i < hi) {
        Vec v[3];
#pragma unroll
        for (int k = 0; k < 3; ++k)
            if (i + k * step < hi) v[k] = *reinterpret_cast<const Vec *>(src + i + k * step);
#pragma unroll
        for (int k = 0; k < 3; ++k)
            if (i + k * step < hi) *reinterpret_cast<Vec *>(dst + i + k * step) = v[k];
    }
}

template <int V>
__device__ __forceinline__ void copy_with_head(char *dst, const char *src, int64_t n, int lane,
                                               int lanes) {
    // Bytes up to the first V-aligned source address, the aligned body, the remaining bytes.
    const int64_t misalign =
        static_cast<int64_t>((V - (reinterpret_cast<uintptr_t>(src) & (V - 1))) & (V - 1));
    const int64_t head = n < misalign ? n : misalign;
    const int64_t body_end = head + (n - head) / V * V;
    for (int64_t i = lane; i < head; i += lanes) dst[i] = src[i];
    copy_vectors<V>(dst, src, head, body_end, lane, lanes);
    for (int64_t i = body_end + lane; i < n; i += lanes) dst[i] = src[i];
}

/// Copies n bytes from src to dst with the widest access that both addresses allow once
/// aligned: their distance modulo 16 decides (Wu et al. used 8 bytes per thread).
__device__ __forceinline__ void copy_span(char *dst, const char *src, int64_t n, int lane,
                                          int lanes) {
    const uintptr_t rel = reinterpret_cast<uintptr_t>(src) ^ reinterpret_cast<uintptr_t>(dst);
    if ((rel & 15) == 0) copy_with_head<16>(dst, src, n, lane, lanes);
    else if ((rel & 7) == 0) copy_with_head<8>(dst, src, n, lane, lanes);
    else if ((rel & 3) == 0) copy_with_head<4>(dst, src, n, lane, lanes);
    else if ((rel & 1) == 0) copy_with_head<2>(dst, src, n, lane, lanes);
    else copy_with_head<1>(dst, src, n, lane, lanes);
}

/// Byte displacement of outer index `i` over `dims` (innermost last). i < the product of the
/// counts, so the outermost index is what the inner divisions leave (dims.n == 0: i == 0 and
/// stride[0] == 0). A loop of dims.n - 1 turns, not one unrolled over kMaxDims: the untaken
/// guards of that one cost a one-level plan 0.3 us of a 1 MB pack (performance-log.md, run 42).
__device__ __forceinline__ int64_t outer_disp(const Dims &dims, uint64_t i) {
    int64_t disp = 0;
    for (int k = dims.n - 1; k > 0; --k) {
        const uint64_t q = dims.count[k].div(i);
        disp += static_cast<int64_t>(i - q * dims.count[k].d) * dims.stride[k];
        i = q;
    }
    return disp + static_cast<int64_t>(i) * dims.stride[0];
}

/// Address `disp` bytes from `base`, formed as an integer: displacements may be negative or
/// absolute (a NULL base, as with MPI_BOTTOM).
__device__ __forceinline__ char *at(char *base, int64_t disp) {
    return reinterpret_cast<char *>(reinterpret_cast<uintptr_t>(base) +
                                    static_cast<uintptr_t>(disp));
}

}  // namespace ucxdt::kernels
