// A constructor-level description of a datatype, independent of any library.
// Layouts, the random type generator and the MPI oracle all speak this one description, and
// each materializes it: into ucxdt here (build), into MPI in support/mpi_desc.
#pragma once

#include <ucxdt/ucxdt.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace ucxdt::layouts {

struct TypeDesc;
using TypeDescPtr = std::shared_ptr<const TypeDesc>;

struct TypeDesc {
    ucxdt_combiner_t combiner = UCXDT_COMBINER_NAMED;
    ucxdt_primitive_t primitive = UCXDT_BYTE;       // NAMED
    int64_t count = 0;                              // contiguous, vector, hvector, *_block
    int64_t blocklength = 0;                        // vector, hvector, *_block
    int64_t stride = 0;                             // vector (extents), hvector (bytes)
    std::vector<int64_t> blocklengths;              // indexed, hindexed, struct
    std::vector<int64_t> displacements;             // indexed*, hindexed*, struct (see combiner)
    std::vector<int64_t> sizes, subsizes, starts;   // subarray
    ucxdt_order_t order = UCXDT_ORDER_C;            // subarray
    int64_t lb = 0, extent = 0;                     // resized (bytes)
    std::vector<TypeDescPtr> children;              // one child, or one per struct entry
};

TypeDescPtr named(ucxdt_primitive_t p);
TypeDescPtr contiguous(int64_t count, TypeDescPtr old);
TypeDescPtr vector(int64_t count, int64_t blocklength, int64_t stride, TypeDescPtr old);
TypeDescPtr hvector(int64_t count, int64_t blocklength, int64_t stride_bytes, TypeDescPtr old);
TypeDescPtr indexed(std::vector<int64_t> blocklengths, std::vector<int64_t> displacements,
                    TypeDescPtr old);
TypeDescPtr hindexed(std::vector<int64_t> blocklengths, std::vector<int64_t> displacements_bytes,
                     TypeDescPtr old);
TypeDescPtr indexed_block(int64_t blocklength, std::vector<int64_t> displacements,
                          TypeDescPtr old);
TypeDescPtr hindexed_block(int64_t blocklength, std::vector<int64_t> displacements_bytes,
                           TypeDescPtr old);
TypeDescPtr subarray(std::vector<int64_t> sizes, std::vector<int64_t> subsizes,
                     std::vector<int64_t> starts, ucxdt_order_t order, TypeDescPtr old);
TypeDescPtr structure(std::vector<int64_t> blocklengths, std::vector<int64_t> displacements_bytes,
                      std::vector<TypeDescPtr> types);
TypeDescPtr resized(TypeDescPtr old, int64_t lb, int64_t extent);
TypeDescPtr dup(TypeDescPtr old);

/// Builds the described type with ucxdt's constructors; intermediate handles are freed.
/// The result is committed when `commit` is true. On error *type is untouched.
ucxdt_status_t build(const TypeDesc &desc, ucxdt_type_t *type, bool commit = true);

/// One-line readable form, e.g. "vector(4,2,8,double)", for test failure messages.
std::string to_string(const TypeDesc &desc);

/// Size in bytes of a primitive on this platform.
int64_t primitive_size(ucxdt_primitive_t p);

}  // namespace ucxdt::layouts
