// Dims of strided plans in address order: a copy that takes every byte of a layout to its own
// displacement in another buffer (the same layout on both sides) may visit the runs in any
// order, and in address order neighbours in memory move together. Inline, for plan.cpp and the
// GPU engine alike, and for the tests, which see no internal symbol of libucxdt.
#pragma once

#include "base/checked.hpp"
#include "dt/plan.hpp"

#include <algorithm>
#include <vector>

namespace ucxdt {

// Folds strided dims into the run and into each other where the memory is contiguous,
// and drops dims of count 1.
inline void fold_dims(std::vector<Plan::Dim> &dims, int64_t &block_len) {
    std::vector<Plan::Dim> out;
    for (const auto &d : dims)
        if (d.count != 1) out.push_back(d);
    bool changed = true;
    while (changed && !out.empty()) {
        changed = false;
        if (out.back().stride == block_len) {
            block_len *= out.back().count;
            out.pop_back();
            changed = true;
            continue;
        }
        for (size_t k = 0; k + 1 < out.size(); ++k) {
            int64_t inner_span;
            if (checked_mul(out[k + 1].count, out[k + 1].stride, &inner_span) &&
                out[k].stride == inner_span) {
                out[k + 1].count *= out[k].count;
                out.erase(out.begin() + static_cast<long>(k));
                changed = true;
                break;
            }
        }
    }
    dims = std::move(out);
}

/// Whether a and b, CONTIGUOUS or STRIDED, place their runs alike: equal base, run length,
/// packed size and dims. A copy between two such layouts takes every byte to its own displacement.
inline bool same_shape(const Plan &a, const Plan &b) {
    const auto strided = [](const Plan &p) { return p.cls == UCXDT_PLAN_CONTIGUOUS || p.cls == UCXDT_PLAN_STRIDED; };
    if (!strided(a) || !strided(b) || a.cls != b.cls || a.base != b.base || a.block_len != b.block_len ||
        a.packed_size != b.packed_size || a.dims.size() != b.dims.size())
        return false;
    for (size_t k = 0; k < a.dims.size(); ++k)
        if (a.dims[k].count != b.dims[k].count || a.dims[k].stride != b.dims[k].stride) return false;
    return true;
}

/// For copies that take every byte to its own displacement (same_shape): p, CONTIGUOUS or
/// STRIDED, with its dims in address order (the largest stride outermost) and the dims whose runs
/// touch folded into longer runs (fold_dims). The same bytes at the same displacements, each as
/// often, visited in another order: reads and writes that were a stride apart become neighbours,
/// and a type that covers its span whole (a transpose's columns, FFT's scatter of single
/// elements) becomes one run (CONTIGUOUS). False, *out untouched, where a stride is not positive.
inline bool address_ordered(const Plan &p, Plan *out) {
    if (p.cls != UCXDT_PLAN_CONTIGUOUS && p.cls != UCXDT_PLAN_STRIDED) return false;
    for (const Plan::Dim &d : p.dims)
        if (d.stride <= 0) return false;
    Plan q;
    q.count = p.count;
    q.packed_size = p.packed_size;
    q.base = p.base;
    q.dims = p.dims;
    q.block_len = p.block_len;
    q.data_lo = p.data_lo, q.data_hi = p.data_hi;
    std::stable_sort(q.dims.begin(), q.dims.end(),
                     [](const Plan::Dim &x, const Plan::Dim &y) { return x.stride > y.stride; });
    fold_dims(q.dims, q.block_len);
    q.cls = q.dims.empty() ? UCXDT_PLAN_CONTIGUOUS : UCXDT_PLAN_STRIDED;
    q.unit_size = q.block_len;
    q.num_blocks = 1;
    for (const Plan::Dim &d : q.dims) q.num_blocks *= d.count;
    *out = std::move(q);
    return true;
}

}  // namespace ucxdt
