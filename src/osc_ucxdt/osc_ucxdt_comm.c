/* MPI_Put, MPI_Get, MPI_Rput and MPI_Rget (MPI-4.1 §12.3): each layout moves whole, through
 * ucxdt_put_nbx and ucxdt_get_nbx, origin and target in any memory, with any datatypes of the
 * same type signature; contiguous host bytes on both sides go straight on UCP
 * (osc_ucxdt_direct.c). A put or get is left running; the synchronization that ends its epoch
 * waits for it, and an error it ends with is reported there. */
#include "osc_ucxdt.h"

/* The first error of an operation that ended is kept for the next synchronization. */
static void keep_op_error(mca_osc_ucxdt_module_t *m, int err) {
    int none = 0;
    (void)__atomic_compare_exchange_n(&m->op_error, &none, err, false, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED);
}

/* A blocking call's operation ended. */
static void op_ended(void *request, ucxdt_status_t status, void *user_data) {
    (void)request;
    if (status != UCXDT_OK) keep_op_error(user_data, mca_osc_ucxdt_mpi_error(status));
}

/* A request-based call's operation ended: its request completes (local completion, §12.3.5). */
static void request_ended(void *request, ucxdt_status_t status, void *user_data) {
    (void)request;
    mca_osc_ucxdt_request_complete(user_data, status == UCXDT_OK ? MPI_SUCCESS : mca_osc_ucxdt_mpi_error(status));
}

/* The same for an operation straight on UCP: a failed endpoint is a failed peer (the endpoints'
 * error handling, osc_ucxdt_peer.c), anything else MPI_ERR_OTHER. */
static int direct_error(ucs_status_t status) {
    switch (status) {
    case UCS_OK: return MPI_SUCCESS;
    case UCS_ERR_ENDPOINT_TIMEOUT:
    case UCS_ERR_CONNECTION_RESET:
    case UCS_ERR_UNREACHABLE: return MPI_ERR_PROC_FAILED;
    default: return MPI_ERR_OTHER;
    }
}

/* UCP calls back only for a request not yet freed (ucp_request_free ends its notifications):
 * each is freed here. */
static void direct_op_ended(void *request, ucs_status_t status, void *user_data) {
    ucp_request_free(request);
    if (status != UCS_OK) keep_op_error(user_data, direct_error(status));
}

static void direct_request_ended(void *request, ucs_status_t status, void *user_data) {
    ucp_request_free(request);
    mca_osc_ucxdt_request_complete(user_data, direct_error(status));
}

ucxdt_status_ptr_t mca_osc_ucxdt_start_op(mca_osc_ucxdt_module_t *m, int target, bool put, void *buf, int count,
                                       ucxdt_type_t type, uint64_t remote, ucxdt_rkey_h rkey, int target_count,
                                       ucxdt_type_t target_type, const ucxdt_request_param_t *param) {
    mca_osc_ucxdt_target_t *t = &m->targets[target];
    const ucxdt_status_ptr_t op =
        put ? ucxdt_put_nbx(t->peer->ep, buf, count, type, remote, rkey, target_count, target_type, param)
            : ucxdt_get_nbx(t->peer->ep, buf, count, type, remote, rkey, target_count, target_type, param);
    if (!UCXDT_PTR_IS_ERR(op)) __atomic_add_fetch(&t->ucxdt_started, 1, __ATOMIC_RELEASE);
    return op;
}

/* A put or get, left running (blocking calls) or with a request. */
static int putget(bool put, void *origin_addr, int origin_count, ompi_datatype_t *origin_dt, int target,
                  ptrdiff_t target_disp, int target_count, ompi_datatype_t *target_dt, mca_osc_ucxdt_module_t *m,
                  ompi_request_t **request) {
    mca_osc_ucxdt_request_t *r = NULL;
    int rc = mca_osc_ucxdt_check_access(m, target, request != NULL);
    if (rc != OMPI_SUCCESS) return rc;
    if (request) {
        if (!(r = mca_osc_ucxdt_request_new(m->win))) return OMPI_ERR_OUT_OF_RESOURCE;
        *request = &r->ompi;
    }
    mca_osc_ucxdt_target_t *t = &m->targets[target];
    ucxdt_status_ptr_t op = NULL;
    size_t osize = 0, tsize = 0;
    ompi_datatype_type_size(origin_dt, &osize);
    ompi_datatype_type_size(target_dt, &tsize);
    uint64_t remote = 0;
    ucxdt_rkey_h rkey = NULL;
    mca_osc_ucxdt_direct_t direct;
    ucxdt_type_t otype, ttype;  /* imported only for ucxdt's path */
    if ((size_t)origin_count * osize == 0 && (size_t)target_count * tsize == 0) {
        op = NULL;  /* nothing to move */
    } else if ((rc = mca_osc_ucxdt_direct_fits(m, target, origin_addr, origin_count, origin_dt, target_disp,
                                               target_count, target_dt, &direct)) != OMPI_ERR_NOT_AVAILABLE) {
        if (rc == OMPI_SUCCESS) {
            /* Contiguous host bytes: straight on UCP (osc_ucxdt_direct.c). */
            ucp_request_param_t p = {.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA};
            p.cb.send = r ? direct_request_ended : direct_op_ended;
            p.user_data = r ? (void *)r : (void *)m;
            ucs_status_ptr_t req = mca_osc_ucxdt_direct_start(m, target, put, &direct, &p);
            if (UCS_PTR_IS_ERR(req)) {
                rc = __atomic_load_n(&t->peer->failed, __ATOMIC_ACQUIRE) ? MPI_ERR_PROC_FAILED : OMPI_ERROR;
            } else {
                if (!req && r) mca_osc_ucxdt_request_complete(r, MPI_SUCCESS);  /* done already: no callback */
                return OMPI_SUCCESS;
            }
        }
    } else if ((rc = mca_osc_ucxdt_type(origin_dt, &otype)) == OMPI_SUCCESS &&
               (rc = mca_osc_ucxdt_type(target_dt, &ttype)) == OMPI_SUCCESS &&
               (rc = mca_osc_ucxdt_resolve(m, target, target_disp, target_dt, &remote, &rkey)) == OMPI_SUCCESS) {
        ucxdt_request_param_t p = {.field_mask = UCXDT_REQUEST_PARAM_FIELD_CALLBACK | UCXDT_REQUEST_PARAM_FIELD_USER_DATA};
        p.cb.send = r ? request_ended : op_ended;
        p.user_data = r ? (void *)r : (void *)m;
        op = mca_osc_ucxdt_start_op(m, target, put, origin_addr, origin_count, otype, remote, rkey, target_count, ttype, &p);
    }
    if (rc != OMPI_SUCCESS || UCXDT_PTR_IS_ERR(op)) {
        if (rc == OMPI_SUCCESS)
            rc = __atomic_load_n(&t->peer->failed, __ATOMIC_ACQUIRE) ? MPI_ERR_PROC_FAILED
                                                                     : mca_osc_ucxdt_mpi_error(UCXDT_PTR_STATUS(op));
        if (r) {
            r->free_called = true;  /* never handed out */
            mca_osc_ucxdt_request_complete(r, rc);
            *request = NULL;
        }
        return rc;
    }
    if (op) ucxdt_request_free(op);  /* it ends on its own and calls back */
    else if (r) mca_osc_ucxdt_request_complete(r, MPI_SUCCESS);  /* done already: no callback */
    return OMPI_SUCCESS;
}

int mca_osc_ucxdt_put(const void *origin_addr, int origin_count, ompi_datatype_t *origin_dt, int target,
                      ptrdiff_t target_disp, int target_count, ompi_datatype_t *target_dt, ompi_win_t *win) {
    return putget(true, (void *)origin_addr, origin_count, origin_dt, target, target_disp, target_count,
                                target_dt, mca_osc_ucxdt_module(win), NULL);
}

int mca_osc_ucxdt_get(void *origin_addr, int origin_count, ompi_datatype_t *origin_dt, int target,
                      ptrdiff_t target_disp, int target_count, ompi_datatype_t *target_dt, ompi_win_t *win) {
    return putget(false, origin_addr, origin_count, origin_dt, target, target_disp, target_count,
                                target_dt, mca_osc_ucxdt_module(win), NULL);
}

int mca_osc_ucxdt_rput(const void *origin_addr, int origin_count, ompi_datatype_t *origin_dt, int target,
                       ptrdiff_t target_disp, int target_count, ompi_datatype_t *target_dt, ompi_win_t *win,
                       ompi_request_t **request) {
    return putget(true, (void *)origin_addr, origin_count, origin_dt, target, target_disp, target_count,
                                target_dt, mca_osc_ucxdt_module(win), request);
}

int mca_osc_ucxdt_rget(void *origin_addr, int origin_count, ompi_datatype_t *origin_dt, int target,
                       ptrdiff_t target_disp, int target_count, ompi_datatype_t *target_dt, ompi_win_t *win,
                       ompi_request_t **request) {
    return putget(false, origin_addr, origin_count, origin_dt, target, target_disp, target_count,
                                target_dt, mca_osc_ucxdt_module(win), request);
}
