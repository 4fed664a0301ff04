/* The requests of MPI_Rput, MPI_Rget, MPI_Raccumulate and MPI_Rget_accumulate: complete when the
 * operation completes at the origin (MPI-4.1 §12.3.5). A request freed by MPI_Request_free
 * before it completes is released when it does. Completion comes from ucxdt's callbacks, under
 * the ucxdt worker's lock, so the one lock here is a leaf. */
#include "osc_ucxdt.h"

static opal_mutex_t requests_lock = OPAL_MUTEX_STATIC_INIT;

OBJ_CLASS_INSTANCE(mca_osc_ucxdt_request_t, ompi_request_t, NULL, NULL);

static void release(mca_osc_ucxdt_request_t *r) {
    OMPI_REQUEST_FINI(&r->ompi);
    OBJ_RELEASE(r);
}

static int request_free(ompi_request_t **request) {
    mca_osc_ucxdt_request_t *r = (mca_osc_ucxdt_request_t *)*request;
    opal_mutex_lock(&requests_lock);
    const bool complete = REQUEST_COMPLETE(&r->ompi);
    if (!complete) r->free_called = true;
    opal_mutex_unlock(&requests_lock);
    if (complete) release(r);
    *request = MPI_REQUEST_NULL;
    return OMPI_SUCCESS;
}

/* A one-sided operation under way cannot be withdrawn; it completes as usual (MPI-4.1 §3.8.4
 * lets a cancel fail to cancel). */
static int request_cancel(ompi_request_t *request, int complete) {
    (void)request, (void)complete;
    return OMPI_SUCCESS;
}

mca_osc_ucxdt_request_t *mca_osc_ucxdt_request_new(ompi_win_t *win) {
    mca_osc_ucxdt_request_t *r = OBJ_NEW(mca_osc_ucxdt_request_t);
    if (!r) return NULL;
    OMPI_REQUEST_INIT(&r->ompi, false);
    r->ompi.req_type = OMPI_REQUEST_WIN;
    r->ompi.req_mpi_object.win = win;
    r->ompi.req_free = request_free;
    r->ompi.req_cancel = request_cancel;
    r->ompi.req_state = OMPI_REQUEST_ACTIVE;
    r->free_called = false;
    return r;
}

void mca_osc_ucxdt_request_complete(mca_osc_ucxdt_request_t *r, int err) {
    r->ompi.req_status.MPI_ERROR = err;
    opal_mutex_lock(&requests_lock);
    const bool freed = r->free_called;
    if (!freed) ompi_request_complete(&r->ompi, true);
    opal_mutex_unlock(&requests_lock);
    if (freed) release(r);
}
