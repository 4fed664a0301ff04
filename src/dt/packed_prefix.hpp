// The leading bytes of a type's packed stream: the signature of the primitives they hold and
// how many those are. A message shorter than its receive (a partial last element) is checked
// and counted by it (MPI-4.1 §3.2.5 MPI_Get_count, §5.1.11 MPI_Get_elements).
#pragma once

#include "dt/signature.hpp"

#include <cstdint>

namespace ucxdt {

struct Type;

struct PackedPrefix {
    Signature sig;           // of the primitives in the prefix, in type-map order
    int64_t primitives = 0;  // their number (MPI's basic elements)
};

/// The first `bytes` (>= 0) bytes of the packed stream of any count of elements of t, in
/// O(depth x blocks) without expanding the type map. False when `bytes` ends inside a
/// primitive, or goes on past a type of size 0: no message of whole primitives is that long.
bool packed_prefix(const Type &t, int64_t bytes, PackedPrefix *out);

}  // namespace ucxdt
