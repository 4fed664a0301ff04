// The CPU pack engine: copies any byte range of a plan's packed stream between host
// memory in the user's layout and a contiguous buffer.
#pragma once

#include "ucp_dt/plan.hpp"

#include <algorithm>
#include <cstdint>
#include <vector>

namespace ucxdt::cpu {

// Calls visit(mem_disp, packed_pos, n) for each contiguous piece of packed bytes
// [offset, offset + length): n bytes at byte displacement mem_disp of the user buffer,
// which are bytes [packed_pos, packed_pos + n) of the stream. Seeking to `offset` costs a
// division per dim and a binary search in the block list, never a walk from the start.
template <typename Visit>
void for_each_piece(const Plan &p, int64_t offset, int64_t length, Visit &&visit) {
    if (length <= 0) return;
    const int64_t end = offset + length;
    const size_t nd = p.dims.size();

    // Outer index and the position inside the unit.
    int64_t outer = offset / p.unit_size;
    int64_t in_unit = offset - outer * p.unit_size;
    int64_t idx[64];
    std::vector<int64_t> idx_heap;
    int64_t *ix = idx;
    if (nd > 64) {
        idx_heap.resize(nd);
        ix = idx_heap.data();
    }
    int64_t mem = p.base;
    for (size_t k = nd; k-- > 0;) {
        ix[k] = outer % p.dims[k].count;
        outer /= p.dims[k].count;
        mem += ix[k] * p.dims[k].stride;
    }
    // Advances the odometer over the dims, innermost fastest, keeping `mem` current.
    auto next_outer = [&] {
        for (size_t k = nd; k-- > 0;) {
            if (++ix[k] < p.dims[k].count) {
                mem += p.dims[k].stride;
                return;
            }
            mem -= (p.dims[k].count - 1) * p.dims[k].stride;
            ix[k] = 0;
        }
    };

    int64_t pos = offset;
    if (p.cls != UCXDT_PLAN_BLOCK_LIST) {
        const int64_t b = p.block_len;
        // Partial first run, then whole runs, then a partial last run.
        int64_t n = std::min(b - in_unit, end - pos);
        visit(mem + in_unit, pos, n);
        pos += n;
        while (pos < end) {
            next_outer();
            n = std::min(b, end - pos);
            visit(mem, pos, n);
            pos += n;
        }
        return;
    }
    const int64_t nb = static_cast<int64_t>(p.len.size());
    int64_t j = std::upper_bound(p.prefix.begin(), p.prefix.end(), in_unit) - p.prefix.begin() - 1;
    int64_t in_block = in_unit - p.prefix[j];
    while (pos < end) {
        int64_t n = std::min(p.len[j] - in_block, end - pos);
        visit(mem + p.disp[j] + in_block, pos, n);
        pos += n;
        in_block = 0;
        if (++j == nb) {
            j = 0;
            if (pos < end) next_outer();
        }
    }
}

/// Copies packed bytes [offset, offset + length) of (buf, plan) into `packed`.
/// The range must lie within [0, plan.packed_size]; the caller checks.
void pack(const Plan &plan, const char *buf, int64_t offset, int64_t length, char *packed);

/// Copies `length` packed bytes, bytes [offset, offset + length) of the stream, into
/// (buf, plan). Only bytes of the type map are written.
void unpack(const Plan &plan, char *buf, int64_t offset, int64_t length, const char *packed);

}  // namespace ucxdt::cpu
