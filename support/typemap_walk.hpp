// A slow, obviously-correct reference for a TypeDesc: its type map walked primitive by
// primitive, and its size / lb / extent / true extent, all by the MPI-4.1 definitions
// (5.1.2 - 5.1.7), independently of the ucxdt engine. The tests and the demo check the
// engine against it.
//
// Conventions (the ones ucxdt's header documents):
//  - without lb/ub markers, ub is rounded up so that the extent is a multiple of the largest
//    alignment of the primitives (MPI-4.1 5.1.6's epsilon, applied by every constructor once
//    over its type map); a parent's bounds are taken from its children's rounded bounds;
//  - resized erases the old lb/ub markers and sets new ones; markers are sticky through
//    every other constructor (lb = min of markers when any copy has one, else of data);
//  - subarray is the selected copies of oldtype at their array positions with lb 0 and
//    extent prod(sizes) x extent(oldtype), like a resize;
//  - a block of length 0 contributes nothing, markers included; an empty type has lb = ub = 0.
#pragma once

#include "support/type_desc.hpp"

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace ucxdt::ref {

using layouts::TypeDesc;

/// (byte displacement, length) relative to the buffer pointer passed to pack.
using Block = std::pair<int64_t, int64_t>;

struct Bounds {
    int64_t size = 0;          // bytes of data in one element
    int64_t lb = 0, extent = 0;
    int64_t true_lb = 0, true_extent = 0;
    bool fits = true;          // all of the above (and ub, true ub) fit int64; else all 0
};

/// Size, lb, extent, true lb and true extent of one element, computed exactly (intermediate
/// displacements may exceed int64 where the results do not).
Bounds type_bounds(const TypeDesc &desc);

/// The epsilon of MPI-4.1 5.1.6 that desc's own constructor adds to its extent (0 with
/// lb/ub markers, and for primitives and dup).
int64_t epsilon(const TypeDesc &desc);

/// Whether every node of `desc` has bounds that fit int64 (type_bounds(node).fits): whether
/// an MPI library can report them, and ucxdt can build the type.
bool representable(const TypeDesc &desc);

/// Calls emit(displacement, length) for every primitive of `count` elements in type-map (pack)
/// order; element i is displaced by i x extent. The displacements must fit int64.
void walk_typemap(const TypeDesc &desc, int64_t count,
                  const std::function<void(int64_t, int64_t)> &emit);

/// As walk_typemap, naming each primitive instead of its length.
void walk_primitives(const TypeDesc &desc, int64_t count,
                     const std::function<void(int64_t, ucxdt_primitive_t)> &emit);

/// Every primitive of `count` elements in pack order.
std::vector<Block> typemap_blocks(const TypeDesc &desc, int64_t count);

/// As typemap_blocks, with each primitive that starts where the previous one ended merged into
/// it: the maximal contiguous byte runs in pack order.
std::vector<Block> typemap_runs(const TypeDesc &desc, int64_t count);

/// The packed stream of `count` elements of desc at `origin`: the type map's bytes in pack
/// order, as MPI_Pack writes them.
std::vector<std::byte> pack(const TypeDesc &desc, int64_t count, const std::byte *origin);

/// The first `n` bytes of `stream` written over the type map of `count` elements of desc at
/// `origin` in pack order, as a receive of n bytes does (n may end within an element, or
/// within a primitive); every other byte is left alone.
void unpack(const TypeDesc &desc, int64_t count, const std::byte *stream, int64_t n,
            std::byte *origin);

// ---- Buffer checks shared by tests and the demo -------------------------------------------

/// Fills n bytes with a pattern that is a function of (seed, byte offset) only.
void fill_pattern(std::byte *p, int64_t n, uint64_t seed);

/// dst[i] = ~src[i]: a poison that differs from the source in every byte.
void fill_complement(std::byte *dst, const std::byte *src, int64_t n);

/// "" when packed[0, sum of lengths) is the bytes origin[disp, disp + len) of `runs` in order,
/// else a description of the first difference.
std::string check_packed(const std::vector<Block> &runs, const std::byte *origin,
                         const std::byte *packed);

/// For a buffer of `buffer_bytes` that was poisoned with fill_complement(buffer, src) and then
/// unpacked into at buffer + origin_bytes: "" when the bytes of `runs` equal src and every other
/// byte still holds the poison, else a description of the first difference. Also fails when a
/// run leaves the buffer or two runs overlap.
std::string check_scattered(const std::vector<Block> &runs, int64_t origin_bytes,
                            const std::byte *buffer, const std::byte *src, int64_t buffer_bytes);

}  // namespace ucxdt::ref
