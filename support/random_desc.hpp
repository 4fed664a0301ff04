// Seeded random datatypes for differential tests (in the spirit of MPICH's dtpools): nested
// constructors with negative strides, unsorted and uneven displacements, zero counts, resized
// types with padding, negative extents and nonzero lb, all within MPI's int limits.
#pragma once

#include "support/type_desc.hpp"

#include <cstdint>
#include <random>

namespace ucxdt::support {

using Rng = std::mt19937_64;

/// Bounds on the generated types. Sizes in bytes.
struct RandomDescLimits {
    int max_depth = 4;                // constructor nesting above the primitives
    int64_t max_size = 64 * 1024;     // packed size of one element
    int64_t max_span = 256 * 1024;    // |lb|, |extent|, |true lb| and true extent of one element
    bool avoid_openmpi_deviations = true;  // the restrictions below; false: any MPI-4.1 type
};

/// A random type within `limits`: every constructor of TypeDesc (contiguous, vector, hvector,
/// indexed, hindexed, indexed_block, hindexed_block, subarray in C and Fortran order, struct
/// of different children, resized, dup). Its data may overlap (fine for packing, not for
/// receiving). Unless limits.avoid_openmpi_deviations is false, types Open MPI 4.1 rejects or
/// gets wrong (against MPI-4.1) are not generated (support/deviations.hpp lists them):
///  - subarray subsizes are >= 1 (it rejects 0);
///  - a struct entry of no data has blocklength 0 (an empty entry moves the struct's bounds,
///    where MPI-4.1 5.1.2 says it adds nothing; and when its bounds come from a resized empty
///    entry, MPI_Pack of count > 1 steps by the size, not the extent);
///  - no (h)vector steps by -1 byte and no type has extent -1 (it packs vector(2,1,-1,int8) as
///    bytes 0, 1 instead of 0, -1);
///  - in hindexed, hindexed_block and struct, each block of a child without explicit bounds
///    starts (its lb) at a multiple of the constructor's alignment: Open MPI pads the extent
///    (5.1.6's epsilon) after each block, relative to the lb so far, not once over the type
///    map, so a later block that lowers the lb by a non-multiple pads it again
///    (hindexed_block(1,[2,1,0],int32): extent 12, not 8; struct{double@8, char@3, char@1}:
///    24, not 16, with every primitive aligned). Other constructors add one run, or blocks
///    whole extents apart;
///  - contiguous, indexed and hindexed take no child of no data with explicit bounds (it
///    returns an empty type: contig(1,resized(contig(0,byte),-8,20)) gets lb 0, extent 0, not
///    lb -8, extent 20); vector, indexed_block and hindexed_block take it instead;
///  - hvector and hindexed_block take no child of no data without explicit bounds (its
///    copies move the bounds: hindexed_block(1,[5],contig(0,int32)) gets lb 5, not 0); vector
///    and indexed_block take it instead.
/// Deterministic in the state of `rng`.
layouts::TypeDescPtr random_desc(Rng &rng, const RandomDescLimits &limits = {});

/// A random type with the same type signature as `desc` (the same primitives in the same order,
/// for any count) but another layout: constructors, displacements, strides, padding and
/// block splits are redrawn while each node keeps its children's sequence and element counts.
/// Its type map never touches a byte twice, also over any count of elements (|extent| >= true
/// extent), so that it can receive data. The same restrictions as random_desc hold.
layouts::TypeDescPtr relayout(const layouts::TypeDesc &desc, Rng &rng);

/// A buffer for `count` elements of `desc`: `bytes` to allocate and `origin`, the offset of the
/// pointer to pass to pack/unpack, such that every byte the type map touches (true lb to true
/// ub of each element, element i displaced by i x extent) lies in [slack, bytes - slack).
/// At least 1 byte, so that a buffer exists also for types without data; bytes INT64_MAX
/// where those bytes lie too far apart for int64 (near-limit types).
struct BufferSpan {
    int64_t bytes = 0;
    int64_t origin = 0;
};
BufferSpan buffer_span(const layouts::TypeDesc &desc, int64_t count, int64_t slack = 0);
/// The same from one element's bounds (bytes), wherever they come from (an MPI's, say).
BufferSpan buffer_span(int64_t size, int64_t extent, int64_t true_lb, int64_t true_extent,
                       int64_t count, int64_t slack = 0);

}  // namespace ucxdt::support
