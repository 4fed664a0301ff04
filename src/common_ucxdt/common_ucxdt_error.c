/* ucxdt's statuses as MPI error classes. */
#include "common_ucxdt.h"

#include "opal/util/output.h"

int mca_common_ucxdt_mpi_error(ucxdt_status_t st, const char *owner) {
    switch (st) {
    case UCXDT_OK: return MPI_SUCCESS;
    case UCXDT_ERR_TRUNCATED: return MPI_ERR_TRUNCATE;
    case UCXDT_ERR_TYPE_MISMATCH: return MPI_ERR_TYPE;
    case UCXDT_ERR_INVALID_PARAM: return MPI_ERR_ARG;
    case UCXDT_ERR_OVERFLOW: return MPI_ERR_COUNT;  /* count x extent or a displacement past int64 */
    case UCXDT_ERR_NOT_COMMITTED: return MPI_ERR_TYPE;
    case UCXDT_ERR_UNSUPPORTED: return MPI_ERR_UNSUPPORTED_OPERATION;
    case UCXDT_ERR_NO_MEMORY: return MPI_ERR_NO_MEM;
    case UCXDT_ERR_PEER_FAILURE: return MPI_ERR_PROC_FAILED;
    case UCXDT_ERR_OUT_OF_RANGE: return MPI_ERR_RMA_RANGE;  /* a target outside its window */
    default:
        /* No MPI class says more than MPI_ERR_INTERN: say what ucxdt said (the thread's last
         * error names the failing step). */
        opal_output(0, "%s: %s", owner, *ucxdt_last_error() ? ucxdt_last_error() : ucxdt_status_string(st));
        return MPI_ERR_INTERN;
    }
}
