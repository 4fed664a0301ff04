// A plan: (type, count) lowered to one of three classes that the pack engines execute.
//
//   CONTIGUOUS  one run of block_len bytes at `base`
//   STRIDED     prod(dims) runs of block_len bytes at base + sum_k i_k * dims[k].stride
//   BLOCK_LIST  the unit list (disp[j], len[j]) repeated over the strided dims
// The packed stream visits dims with the last one fastest and, inside each outer index,
// the unit's blocks in order. unit_size bytes are packed per outer index, so a byte offset
// splits into an outer index (by division) and a block (by binary search over prefix).
#pragma once

#include "dt/type.hpp"

#include <ucxdt/ucxdt.h>

#include <cstdint>
#include <memory>
#include <vector>

namespace ucxdt {

struct Plan {
    struct Dim {
        int64_t count;
        int64_t stride;  // bytes
    };

    uint64_t id = 0;          // unique per process: keys the GPU caches of this plan
    ucxdt_plan_class_t cls = UCXDT_PLAN_CONTIGUOUS;
    int64_t count = 0;        // elements of the type this plan moves
    int64_t packed_size = 0;  // bytes
    int64_t base = 0;         // byte displacement of the first run from the buffer pointer
    std::vector<Dim> dims;    // outermost first
    int64_t block_len = 0;    // CONTIGUOUS, STRIDED: bytes per run
    std::vector<int64_t> disp, len, prefix;  // BLOCK_LIST unit; prefix has n + 1 entries
    NodePtr unit_node;        // BLOCK_LIST: the layout the unit list was flattened from
    int64_t unit_size = 0;    // packed bytes per outer index
    int64_t num_blocks = 0;   // runs in the whole plan
    int64_t data_lo = 0, data_hi = 0;  // bytes [data_lo, data_hi) from the buffer pointer hold
                                       // every byte of the type map (true lb and ub of count)
    uint64_t layout_hash = 0;  // BLOCK_LIST, STRIDED: hash of base, run length, dims and the unit
                               // list; two plans of equal hash and packed size move the same
                               // byte addresses
};

/// Byte displacement of the plan's first packed byte: a byte of the type map, unlike `base`
/// for block lists (memory-type detection must look at data, not at the origin).
inline int64_t first_data_byte(const Plan &p) {
    return p.cls == UCXDT_PLAN_BLOCK_LIST ? p.base + p.disp[0] : p.base;
}

using PlanPtr = std::shared_ptr<const Plan>;

/// The plan of `count` elements of the committed type `t`, from its cache or built now.
/// Errors: UCXDT_ERR_OVERFLOW if count x extent or count x size overflows;
/// UCXDT_ERR_NO_MEMORY if the block list cannot be allocated.
ucxdt_status_t get_plan(const Type &t, int64_t count, PlanPtr *plan);

/// Lowers `node`, every byte of a plan's type map with displacements from the buffer pointer,
/// into p's class, base, dims and runs. The caller sets p's packed size and data bounds.
/// Errors: UCXDT_ERR_NO_MEMORY if the block list cannot be allocated.
ucxdt_status_t lower_plan(NodePtr node, Plan &p);
/// An id no other plan of this process has (Plan::id). Thread safe.
uint64_t new_plan_id();

}  // namespace ucxdt
