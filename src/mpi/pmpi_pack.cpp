// MPI_Pack and MPI_Unpack (MPI-4.1 5.2) of routed triples: ucxdt packs the same bytes as the
// MPI's homogeneous packed format (no header), so either side may be packed by either library.
// MPI_Pack_size is left to the MPI: its bound covers ucxdt's exact size.
#include "pmpi.hpp"

namespace {
int mpi_code(ucxdt_status_t s) {
    switch (s) {
    case UCXDT_OK: return MPI_SUCCESS;
    case UCXDT_ERR_TRUNCATED: return MPI_ERR_TRUNCATE;
    case UCXDT_ERR_INVALID_PARAM: return MPI_ERR_ARG;
    default: return MPI_ERR_INTERN;
    }
}
}  // namespace

using namespace ucxdt::pmpi;

UCXDT_PMPI_EXPORT int MPI_Pack(const void *inbuf, int incount, MPI_Datatype dt, void *outbuf, int outsize,
                               int *position, MPI_Comm comm) {
    Route r;
    if (!position || !route(inbuf, incount, dt, &r)) return PMPI_Pack(inbuf, incount, dt, outbuf, outsize, position, comm);
    int64_t pos = *position;
    const int rc = mpi_code(ucxdt_pack(inbuf, incount, r.type->type, outbuf, outsize, &pos));
    if (rc != MPI_SUCCESS) return fail(comm, rc);
    *position = static_cast<int>(pos);
    count_op(kPacks);
    return MPI_SUCCESS;
}

UCXDT_PMPI_EXPORT int MPI_Unpack(const void *inbuf, int insize, int *position, void *outbuf, int outcount,
                                 MPI_Datatype dt, MPI_Comm comm) {
    Route r;
    if (!position || !route(outbuf, outcount, dt, &r))
        return PMPI_Unpack(inbuf, insize, position, outbuf, outcount, dt, comm);
    int64_t pos = *position;
    const int rc = mpi_code(ucxdt_unpack(inbuf, insize, &pos, outbuf, outcount, r.type->type));
    if (rc != MPI_SUCCESS) return fail(comm, rc);
    *position = static_cast<int>(pos);
    count_op(kPacks);
    return MPI_SUCCESS;
}
