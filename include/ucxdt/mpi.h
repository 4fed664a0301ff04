/*
 * ucxdt <-> MPI bridge: imports an MPI datatype as an equivalent ucxdt type.
 *
 * Built into the separate library ucxdt_mpi, so that the core library does not depend on MPI.
 * Tested against Open MPI 4.1 and MPICH 4.0; uses only MPI-4.1 standard calls.
 */
#ifndef UCXDT_MPI_H
#define UCXDT_MPI_H

#include <mpi.h>
#include <ucxdt/ucxdt.h>

#ifdef __cplusplus
extern "C" {
#endif

/** Decodes `datatype` with MPI_Type_get_envelope / MPI_Type_get_contents (MPI-4.1 5.1.13),
 *  recursively, and returns in *type a new, committed ucxdt type with the same type map
 *  (the same bytes in the same order, hence the same MPI_Pack output for any count), the same
 *  lb and extent and the same size as the MPI library reports. Free it with ucxdt_type_free.
 *
 *  ucxdt pads extents for alignment (the epsilon of MPI-4.1 5.1.6), so the bounds normally
 *  agree. Where the MPI library's bounds for a constructor still differ from ucxdt's (Open MPI
 *  4.1 pads after every block; MPICH 4.0 pads structs only; both let some entries without
 *  data move the bounds; docs/design.md lists the cases), that level is resized to the
 *  library's lb and extent, so its combiner is then UCXDT_COMBINER_RESIZED, and copies of it
 *  step as they do in the library. The type map is the one MPI-4.1 defines for the
 *  constructors' arguments: where a library packs another (Open MPI 4.1 packs steps of -1
 *  byte as +1), the import packs the standard's.
 *
 *  Combiners: NAMED, DUP, CONTIGUOUS, VECTOR, HVECTOR, INDEXED, HINDEXED, INDEXED_BLOCK,
 *  HINDEXED_BLOCK, STRUCT, SUBARRAY, DARRAY (lowered as MPI-4.1 5.1.4 defines it; a
 *  MPI_DISTRIBUTE_NONE dimension must have psize 1), RESIZED, F90_REAL/F90_COMPLEX/F90_INTEGER,
 *  and the MPI-1 *_INTEGER variants where the MPI library still produces them.
 *  Predefined types map to the ucxdt primitive of the same kind and size
 *  (integers, booleans, characters and Fortran LOGICAL to signed/unsigned integers by size;
 *  MPI_BYTE and MPI_PACKED to UCXDT_BYTE); a complex type with no ucxdt primitive of its size
 *  (MPI_C_LONG_DOUBLE_COMPLEX) becomes two contiguous reals, and the named pair types
 *  (MPI_DOUBLE_INT, MPI_2INT, ...) become the struct they stand for, with MPI's lb and extent.
 *  Its signature therefore matches other ucxdt types built from the same primitives, which is
 *  coarser than MPI's type matching (MPI_INT and MPI_INT32_T both become UCXDT_INT32).
 *
 *  Units: all displacements and extents in bytes, as MPI_Aint.
 *  Errors (nothing is created, *type untouched, message in ucxdt_last_error()):
 *  UCXDT_ERR_INVALID_PARAM for a NULL type, MPI_DATATYPE_NULL, or MPI not initialized /
 *  already finalized; UCXDT_ERR_UNSUPPORTED for a combiner or predefined type ucxdt cannot
 *  represent (e.g. a 16-byte integer) or a darray that MPI-4.1 calls erroneous;
 *  UCXDT_ERR_NO_MEMORY; UCXDT_ERR_OVERFLOW and others as the ucxdt
 *  constructors return them. MPI errors are returned as UCXDT_ERR_INVALID_PARAM only if the
 *  error handler in effect returns them; this function never aborts by itself.
 *  Every datatype handle MPI_Type_get_contents returns is freed before returning.
 *
 *  Thread safety: as the MPI calls it makes: concurrent calls need MPI_THREAD_MULTIPLE.
 *  `datatype` need not be committed and is not modified. */
UCXDT_API ucxdt_status_t ucxdt_type_from_mpi(MPI_Datatype datatype, ucxdt_type_t *type);

#ifdef __cplusplus
}
#endif

#endif /* UCXDT_MPI_H */
