// How many fragments a pipelined rendezvous message is cut into: a small cost model in the
// manner of TEMPI and HAND, whose inputs the worker measures at run time (design.md).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>

namespace ucxdt::rndv {

/// Fragment size, in bytes, of a message of `packed` bytes that crosses two pipelined stages:
/// a slow one (the link) and one at `fast_bytes_per_s` (a local pack or unpack) whose last
/// fragment is not overlapped, each fragment adding `frag_seconds` to the critical path (its
/// launches, event polls and control messages). The time
///     T(n) = P / R_slow + P / (n R_fast) + n c
/// is least at n = sqrt(P / (R_fast c)) fragments (Wu et al., HPDC'16, section 4.1, pipelines
/// the same stages with a fixed fragment size). The size is rounded up to a multiple of `align`
/// bytes and capped at `max_bytes`; without a positive rate and cost, one fragment (capped).
/// Pure; thread safe.
inline int64_t pipeline_frag_bytes(int64_t packed, double fast_bytes_per_s, double frag_seconds, int64_t align,
                                   int64_t max_bytes) {
    packed = std::max<int64_t>(packed, 1);
    align = std::max<int64_t>(align, 1);
    double n = 1;
    if (fast_bytes_per_s > 0 && frag_seconds > 0)
        n = std::max(1.0, std::round(std::sqrt(static_cast<double>(packed) / (fast_bytes_per_s * frag_seconds))));
    const auto want = static_cast<int64_t>(std::ceil(static_cast<double>(packed) / n));
    const int64_t rounded = (want + align - 1) / align * align;
    return std::max<int64_t>(1, std::min(rounded, max_bytes));
}

}  // namespace ucxdt::rndv
