// A TypeDesc materialized as an MPI datatype, so that the MPI library (Open MPI or MPICH) can serve
// as the oracle for ucxdt: same constructors, same arguments, MPI's own semantics.
#pragma once

// Only MPI's C API is used; the deprecated C++ bindings stay out.
#ifndef OMPI_SKIP_MPICXX
#define OMPI_SKIP_MPICXX 1
#endif
#ifndef MPICH_SKIP_MPICXX
#define MPICH_SKIP_MPICXX 1
#endif
#include <mpi.h>

#include "support/random_desc.hpp"  // BufferSpan
#include "support/type_desc.hpp"

namespace ucxdt::support {

/// The predefined MPI datatype of a ucxdt primitive (MPI_INT8_T for UCXDT_INT8, ...).
/// Throws std::invalid_argument for a value out of range.
MPI_Datatype mpi_primitive(ucxdt_primitive_t p);

/// Builds `desc` with the MPI-4.1 5.1.2 - 5.1.7 constructors (int-count variants) and commits
/// it; the caller frees it with MPI_Type_free (a predefined type is returned as a committed
/// MPI_Type_dup, so that the result can always be freed). Intermediate types are freed.
/// Throws std::invalid_argument, naming the node (to_string) and the argument, when a count,
/// blocklength or displacement in elements does not fit MPI's int, and std::runtime_error with
/// MPI's message when MPI rejects the type; MPI must then return errors (MPI_ERRORS_RETURN on
/// MPI_COMM_WORLD and MPI_COMM_SELF), or the error handler decides. Not thread safe: MPI must be
/// initialized and its calls serialized by the caller.
MPI_Datatype to_mpi(const layouts::TypeDesc &desc);

/// buffer_span by the MPI library's own size and bounds of `t`.
BufferSpan mpi_span(MPI_Datatype t, int64_t count, int64_t slack);

/// A buffer holding what both the MPI library's placement of `count` elements of `t` and the
/// standard's (the reference walker's, of `desc`) touch: they differ where the library
/// deviates. bytes INT64_MAX where either does not fit.
BufferSpan joint_span(const layouts::TypeDesc &desc, MPI_Datatype t, int64_t count,
                      int64_t slack);

}  // namespace ucxdt::support
