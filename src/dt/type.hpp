// A datatype as the user built it: the constructor and its arguments (the IR), the MPI
// attributes derived at construction (size, lb/ub, true lb/ub, signature), and, once
// committed, its normalized layout and a cache of plans per count.
#pragma once

#include "dt/layout.hpp"
#include "dt/signature.hpp"

#include <ucxdt/ucxdt.h>

#include <atomic>
#include <memory>
#include <mutex>
#include <vector>

namespace ucxdt {

struct Plan;
struct Type;
using TypePtr = std::shared_ptr<const Type>;

struct Type {
    // Every constructor is recorded in one of three canonical shapes:
    //   PRIMITIVE                 a predefined type of `size` bytes
    //   VECTOR                    count blocks of blocklength children, stride_bytes apart
    //   INDEXED                   blocks of blocklengths[i] kids[i or 0] at disps[i] x
    //                             disp_unit bytes
    // with explicit bounds (resized, subarray) replacing the computed lb/ub.
    enum class Shape : uint8_t { PRIMITIVE, VECTOR, INDEXED };

    ucxdt_combiner_t combiner = UCXDT_COMBINER_NAMED;
    Shape shape = Shape::PRIMITIVE;
    ucxdt_primitive_t primitive = UCXDT_BYTE;
    int64_t count = 0, blocklength = 0, stride_bytes = 0;
    std::vector<int64_t> blocklengths, disps;
    // Bytes per unit of disps: 1, or the child's extent (indexed, indexed_block). A block's
    // origin, disps[i] x disp_unit, may lie beyond int64 where its data and bounds do not.
    int64_t disp_unit = 1;
    std::vector<TypePtr> kids;  // one child, or one per entry (struct)

    // MPI attributes, bytes.
    int64_t size = 0;
    int64_t lb = 0, ub = 0;              // extent = ub - lb
    int64_t true_lb = 0, true_ub = 0;    // 0, 0 when size == 0
    bool has_bounds = false;             // non-empty type map or explicit bounds
    int64_t alignment = 1;               // bytes; the largest of the primitives' (epsilon)
    bool explicit_bounds = false;        // lb/ub set by resized (or inherited from a child
                                         // that has them): MPI-4.1 5.1.7's sticky markers
    Signature signature;

    int64_t extent() const { return ub - lb; }
    __int128 disp_bytes(size_t i) const { return static_cast<__int128>(disps[i]) * disp_unit; }
    const TypePtr &kid(size_t i) const { return kids.size() == 1 ? kids[0] : kids[i]; }

    /// The normalized layout of one element; computed once, on first use.
    const NodePtr &layout() const;

    std::atomic<bool> committed{false};

    // Plans of this type per count, most recently used last (see plan.hpp).
    mutable std::mutex plan_mutex;
    mutable std::vector<std::shared_ptr<const Plan>> plans;

private:
    mutable std::once_flag layout_once_;
    mutable NodePtr layout_;
};

/// Computes size, bounds and signature of `t` from its shape and kids, with overflow checks.
/// On success returns UCXDT_OK; `t` may then be shared. has_explicit sets explicit bounds
/// [explicit_lb, explicit_ub) (resized, subarray); otherwise, as in MPI-4.1 5.1.7, lb and ub
/// come from the children's explicit bounds if any child has them, else from all children,
/// with ub rounded up so that the extent is a multiple of the alignment (MPI-4.1 5.1.6's
/// epsilon: by every constructor, once over its type map, never to explicit bounds).
/// Overflow is what the type reports or touches not fitting int64 (size, lb, ub, extent, true
/// bounds, true extent); sums and products on the way are exact (128 bits).
ucxdt_status_t finish_type(Type &t, bool has_explicit, int64_t explicit_lb, int64_t explicit_ub);

/// The predefined type of a primitive (a process-wide singleton).
TypePtr primitive_type(ucxdt_primitive_t p);

}  // namespace ucxdt
