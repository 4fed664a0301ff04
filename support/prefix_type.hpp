// The first k primitives of a type's type map as a type of their own: a send whose signature
// ends wherever k says, inside an element of the receive type or not (partial receives,
// MPI_Get_count and MPI_Get_elements).
#pragma once

#include "support/type_desc.hpp"
#include "support/typemap_walk.hpp"

#include <cstdint>
#include <vector>

namespace ucxdt::support {

/// The first k primitives of `count` elements of d, as a struct of runs of one primitive
/// placed one after another (dense: its packed stream is its memory).
inline layouts::TypeDescPtr prefix_type(const layouts::TypeDesc &d, int64_t count, int64_t k) {
    std::vector<int64_t> blocks, disps;
    std::vector<layouts::TypeDescPtr> types;
    ucxdt_primitive_t last = UCXDT_PRIMITIVE_LAST;
    int64_t at = 0, taken = 0;
    ref::walk_primitives(d, count, [&](int64_t, ucxdt_primitive_t p) {
        if (taken++ >= k) return;
        if (p == last) {
            ++blocks.back();
        } else {
            blocks.push_back(1), disps.push_back(at), types.push_back(layouts::named(p));
            last = p;
        }
        at += layouts::primitive_size(p);
    });
    return layouts::structure(blocks, disps, types);
}

}  // namespace ucxdt::support
