#include "mpi_deviations.hpp"

#include <cstdio>
#include <cstring>

namespace ucxdt::support {

MpiIdentity mpi_identity() {
    char text[MPI_MAX_LIBRARY_VERSION_STRING] = "";
    int len = 0;
    MPI_Get_library_version(text, &len);
    MpiIdentity id;
    id.text = std::string(text, strcspn(text, "\n"));
    if (std::sscanf(text, "Open MPI v%d.%d.%d", &id.major, &id.minor, &id.patch) >= 2)
        id.flavor = MpiIdentity::Flavor::open_mpi;
    else if (std::sscanf(text, "MPICH Version: %d.%d.%d", &id.major, &id.minor, &id.patch) >= 2)
        id.flavor = MpiIdentity::Flavor::mpich;
    return id;
}

}  // namespace ucxdt::support
