// The identity of the MPI library this process runs, for the known deviations of
// support/deviations.hpp. Compiled against each MPI (mpi.h), as the other mpi_* files.
#pragma once

#include "mpi_desc.hpp"  // mpi.h as the tests include it, and TypeDesc
#include "support/deviations.hpp"

namespace ucxdt::support {

/// The MPI library this process runs, by MPI_Get_library_version (MPI must be initialized).
MpiIdentity mpi_identity();

}  // namespace ucxdt::support
