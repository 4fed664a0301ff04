// Random types of the categories that random_desc avoids or rarely reaches (issue 18): each
// any MPI-4.1 type with its category's feature, whether or not an MPI library gets it right.
// The oracle checks each against the MPI where it follows the standard and against the
// standard's answer (the reference walker) where the MPI is known to deviate.
#pragma once

#include "support/type_desc.hpp"
#include "support/random_desc.hpp"

#include <cstdint>

namespace ucxdt::support {

enum class Edge : int {
    NEGATIVE,     // negative strides and steps, negative extents from resized (-1 included)
    OVERLAP,      // a type map that touches some byte twice: packed, never received into
    ZERO_BLOCKS,  // struct and hindexed with blocks of length 0 among others
    EMPTY,        // no data at all: counts of 0, blocklengths all 0, subsizes of 0
    NEAR_LIMIT,   // bounds near the MPI_Aint (int64) limits, still fitting
    COUNT
};

const char *edge_name(Edge e);

/// A type and the count of elements to check.
struct EdgeCase {
    layouts::TypeDescPtr desc;
    int64_t count = 1;
};

/// A random case of category `e` (in_category holds for it), every node of which is
/// representable (ref::representable) and within MPI's int arguments. Deterministic in the
/// state of `rng`.
EdgeCase edge_desc(Edge e, Rng &rng);

/// Whether (desc, count) shows the feature of `e`.
bool in_category(Edge e, const layouts::TypeDesc &desc, int64_t count);

}  // namespace ucxdt::support
