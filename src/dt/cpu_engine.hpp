// The CPU pack engine: copies any byte range of a plan's packed stream between host
// memory in the user's layout and a contiguous buffer.
#pragma once

#include "dt/plan.hpp"

#include <algorithm>
#include <cstdint>
#include <vector>

namespace ucxdt::cpu {

// The odometer over a plan's strided dims, innermost last, and the byte displacement it
// points at (for_each_piece's, and the engine's loops in cpu_engine.cpp).
class Cursor {
public:
    explicit Cursor(const Plan &p) : d_(p.dims.data()), nd_(p.dims.size()), mem_(p.base) {
        if (nd_ > kInline) {
            heap_.resize(nd_);
            ix_ = heap_.data();
        }
    }
    Cursor(const Cursor &) = delete;  // ix_ may point into the object itself
    Cursor &operator=(const Cursor &) = delete;
    // Points at outer index `outer` (in units of the innermost dim fastest).
    void seek(int64_t outer) {
        for (size_t k = nd_; k-- > 0;) {
            ix_[k] = outer % d_[k].count;
            outer /= d_[k].count;
            mem_ += ix_[k] * d_[k].stride;
        }
    }
    // Advances by one over dims [0, k), the innermost of them fastest.
    void next(size_t k) {
        while (k-- > 0) {
            if (++ix_[k] < d_[k].count) {
                mem_ += d_[k].stride;
                return;
            }
            mem_ -= (d_[k].count - 1) * d_[k].stride;
            ix_[k] = 0;
        }
    }
    int64_t &mem() { return mem_; }
    int64_t &ix(size_t k) { return ix_[k]; }

private:
    static constexpr size_t kInline = 64;
    const Plan::Dim *d_;
    size_t nd_;
    int64_t mem_;
    int64_t inline_[kInline];
    int64_t *ix_ = inline_;
    std::vector<int64_t> heap_;
};

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
    const int64_t outer = offset / p.unit_size;
    const int64_t in_unit = offset - outer * p.unit_size;
    Cursor c(p);
    c.seek(outer);

    int64_t pos = offset;
    if (p.cls != UCXDT_PLAN_BLOCK_LIST) {
        const int64_t b = p.block_len;
        // Partial first run, then whole runs, then a partial last run.
        int64_t n = std::min(b - in_unit, end - pos);
        visit(c.mem() + in_unit, pos, n);
        pos += n;
        while (pos < end) {
            c.next(nd);
            n = std::min(b, end - pos);
            visit(c.mem(), pos, n);
            pos += n;
        }
        return;
    }
    const int64_t nb = static_cast<int64_t>(p.len.size());
    int64_t j = std::upper_bound(p.prefix.begin(), p.prefix.end(), in_unit) - p.prefix.begin() - 1;
    int64_t in_block = in_unit - p.prefix[j];
    while (pos < end) {
        int64_t n = std::min(p.len[j] - in_block, end - pos);
        visit(c.mem() + p.disp[j] + in_block, pos, n);
        pos += n;
        in_block = 0;
        if (++j == nb) {
            j = 0;
            if (pos < end) c.next(nd);
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
