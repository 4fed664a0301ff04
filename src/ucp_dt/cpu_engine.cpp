#include "ucp_dt/cpu_engine.hpp"

#include "base/address.hpp"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <vector>

namespace ucxdt::cpu {

namespace {

// Runs of these widths dominate real layouts (one element of a primitive or complex);
// a fixed-size memcpy compiles to one load and one store.
inline void copy_run(char *dst, const char *src, int64_t n) {
    switch (n) {
    case 4: std::memcpy(dst, src, 4); break;
    case 8: std::memcpy(dst, src, 8); break;
    case 16: std::memcpy(dst, src, 16); break;
    default: std::memcpy(dst, src, static_cast<size_t>(n)); break;
    }
}

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

}  // namespace

void pack(const Plan &plan, const char *buf, int64_t offset, int64_t length, char *packed) {
    for_each_piece(plan, offset, length, [&](int64_t mem, int64_t pos, int64_t n) {
        copy_run(packed + (pos - offset), at(buf, mem), n);
    });
}

void unpack(const Plan &plan, char *buf, int64_t offset, int64_t length, const char *packed) {
    for_each_piece(plan, offset, length, [&](int64_t mem, int64_t pos, int64_t n) {
        copy_run(at(buf, mem), packed + (pos - offset), n);
    });
}

}  // namespace ucxdt::cpu
