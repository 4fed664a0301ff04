// Properties of a TypeDesc that the random generators and the list of MPI libraries' known
// deviations ask about: which children a node places and how, explicit bounds, alignment, and
// the features of the edge categories (negative steps, overlap, near-limit bounds).
#pragma once

#include "support/type_desc.hpp"

#include <cstdint>
#include <functional>

namespace ucxdt::support {

/// Copies of the child that a one-child constructor places (0 for struct, named, resized, dup).
int64_t copies(const layouts::TypeDesc &d);

/// Whether d has explicit bounds (lb/ub markers): set by resized and subarray, kept by every
/// constructor that places a copy of a child that has them (as the reference walker does).
bool marked(const layouts::TypeDesc &d);

/// A multiple of the alignment of every primitive of d: the largest primitive size (sizes are
/// powers of two and multiples of their alignments).
int64_t alignment(const layouts::TypeDesc &d);

/// Whether d has data (size > 0).
bool has_data(const layouts::TypeDesc &d);

/// Whether `pred` holds for d or any node below it.
bool any_node(const layouts::TypeDesc &d, const std::function<bool(const layouts::TypeDesc &)> &pred);

/// Whether some node steps between copies it places (two or more) by a negative number of
/// bytes, or resizes to a negative extent.
bool has_negative_step(const layouts::TypeDesc &d);

/// Whether `count` elements of d touch some byte twice (then d can be packed, not received).
bool overlaps(const layouts::TypeDesc &d, int64_t count);

/// Whether some struct or hindexed node has a block of length 0.
bool has_zero_block(const layouts::TypeDesc &d);

/// Whether some node's bounds or true bounds lie beyond +-2^40 bytes: far outside any
/// memory, near the MPI_Aint limits.
bool near_limit(const layouts::TypeDesc &d);

}  // namespace ucxdt::support
