/* Persistent requests' starts (MPI-4.1 §3.9). */
#include "pml_ucxdt.h"

/* MPI_Start and MPI_Startall (MPI-4.1 §3.9): each inactive persistent request of ours posts
 * its operation again; other requests of the array belong to other layers. A request that
 * cannot post completes with its error and the others still start: Open MPI's MPI_Startall
 * ignores what this returns (the first error), so the error must reach the request's wait. */
int mca_pml_ucxdt_start(size_t count, ompi_request_t **requests) {
    int first = OMPI_SUCCESS;
    for (size_t i = 0; i < count; ++i) {
        mca_pml_ucxdt_request_t *r = (mca_pml_ucxdt_request_t *)requests[i];
        if (!r || r->ompi.req_type != OMPI_REQUEST_PML || r->ompi.req_start != mca_pml_ucxdt_start) continue;
        int rc;
        if (r->kind == PML_UCXDT_SEND && r->mode == MCA_PML_BASE_SEND_BUFFERED) {
            /* A buffered send completes locally (MPI-4.1 §3.6): each start sends a packed copy
             * from the attached buffer, and the request is complete at once. */
            rc = mca_pml_ucxdt_bsend(r->buf, r->count, r->dt, r->peer, r->tag, r->comm);
            mca_pml_ucxdt_request_end_at_start(r, rc);
        } else if ((rc = mca_pml_ucxdt_request_post(r, NULL)) != OMPI_SUCCESS) {
            mca_pml_ucxdt_request_end_at_start(r, rc);  /* nothing was posted */
        }
        if (rc != OMPI_SUCCESS && first == OMPI_SUCCESS) first = rc;
    }
    return first;
}
