// Division by a run-time invariant divisor as a multiply-high and shifts (Granlund and
// Montgomery, PLDI'94, section 4): the kernels divide every run and item index by plan
// constants, and 64-bit hardware division costs tens of instructions on a GPU.
#pragma once

#include <cstdint>

#if defined(__CUDACC__)
#define UCXDT_HD __host__ __device__
#else
#define UCXDT_HD
#endif

namespace ucxdt::kernels {

struct FastDiv {
    uint64_t d = 1;
    uint64_t m = 0;    // magic multiplier
    uint32_t s1 = 0, s2 = 0;

    FastDiv() = default;

    /// d in [1, 2^63).
    explicit FastDiv(uint64_t divisor) : d(divisor) {
        uint32_t l = 0;
        while (l < 63 && (uint64_t{1} << l) < d) ++l;  // l = ceil(log2 d)
        const unsigned __int128 num = static_cast<unsigned __int128>((uint64_t{1} << l) - d) << 64;
        m = static_cast<uint64_t>(num / d) + 1;
        s1 = l < 1 ? l : 1;
        s2 = l > 1 ? l - 1 : 0;
    }

    UCXDT_HD uint64_t div(uint64_t n) const {
#if defined(__CUDA_ARCH__)
        const uint64_t t = __umul64hi(m, n);
#else
        const uint64_t t = static_cast<uint64_t>((static_cast<unsigned __int128>(m) * n) >> 64);
#endif
        return (t + ((n - t) >> s1)) >> s2;
    }
};

}  // namespace ucxdt::kernels
