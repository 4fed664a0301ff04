/* The endpoints of this process's osc worker, one per peer process, made when a window first
 * joins the two (from the worker addresses its creation exchanged) and kept until finalize:
 * windows come and go, processes stay. To a process of another node UCP's peer error handling
 * is on, so an operation to a process that failed ends with MPI_ERR_PROC_FAILED. To one of this
 * node it is not: UCX leaves shared memory's and CMA's single copies out of endpoints in that
 * mode, which would put the window's bytes on TCP (as pml ucxdt's data endpoints, docs/pml.md);
 * an error UCP still reports there ends the operations the same way. */
#include "osc_ucxdt.h"

#include "opal/util/output.h"

#include <time.h>

static void peer_failed(void *arg, ucp_ep_h ep, ucs_status_t status) {
    mca_osc_ucxdt_peer_t *p = arg;
    (void)ep;
    __atomic_store_n(&p->failed, true, __ATOMIC_RELEASE);
    if (ompi_osc_ucxdt.verbose > 0) opal_output(0, "osc ucxdt: a peer failed: %s", ucs_status_string(status));
}

/* The handler of an endpoint without UCP's peer error mode. */
static void local_failed(void *arg, ucp_ep_h ep, ucs_status_t status) {
    ucxdt_worker_handle_ep_error(ompi_osc_ucxdt.worker, ep, status);
    peer_failed(arg, ep, status);
}

int mca_osc_ucxdt_peer_connect(ompi_proc_t *proc, const void *address, size_t length, mca_osc_ucxdt_peer_t **peer) {
    (void)length;
    void *found = NULL;
    OPAL_THREAD_LOCK(&ompi_osc_ucxdt.lock);
    if (opal_hash_table_get_value_ptr(&ompi_osc_ucxdt.peers, &proc, sizeof proc, &found) == OPAL_SUCCESS) {
        OPAL_THREAD_UNLOCK(&ompi_osc_ucxdt.lock);
        *peer = found;
        return OMPI_SUCCESS;
    }
    mca_osc_ucxdt_peer_t *p = calloc(1, sizeof *p);
    int rc = p ? OMPI_SUCCESS : OMPI_ERR_OUT_OF_RESOURCE;
    if (rc == OMPI_SUCCESS) {
        ucp_ep_params_t params = {0};
        params.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS;
        params.address = address;
        const bool local = OPAL_PROC_ON_LOCAL_NODE(proc->super.proc_flags);
        ucxdt_status_t st = UCXDT_OK;
        if (local) {
            params.field_mask |= UCP_EP_PARAM_FIELD_ERR_HANDLER;
            params.err_handler.cb = local_failed;
            params.err_handler.arg = p;
        } else {
            st = ucxdt_ep_params_set_err_handler(&params, ompi_osc_ucxdt.worker, peer_failed, p);
        }
        ucs_status_t us = st == UCXDT_OK ? ucp_ep_create(ompi_osc_ucxdt.ucp_worker, &params, &p->ucp_ep)
                                         : UCS_ERR_INVALID_PARAM;
        if (us != UCS_OK) {
            opal_output(0, "osc ucxdt: cannot reach rank %u: %s", proc->super.proc_name.vpid,
                        st == UCXDT_OK ? ucs_status_string(us) : ucxdt_last_error());
            rc = MPI_ERR_INTERN;
        } else {
            ucxdt_ep_params_t ep_params = {.field_mask = UCXDT_EP_PARAM_FIELD_UCP_EP, .ucp_ep = p->ucp_ep};
            if ((st = ucxdt_ep_create(ompi_osc_ucxdt.worker, &ep_params, &p->ep)) != UCXDT_OK) {
                opal_output(0, "osc ucxdt: ucxdt_ep_create: %s", ucxdt_last_error());
                rc = mca_osc_ucxdt_mpi_error(st);
            }
        }
    }
    if (rc == OMPI_SUCCESS) rc = opal_hash_table_set_value_ptr(&ompi_osc_ucxdt.peers, &proc, sizeof proc, p);
    OPAL_THREAD_UNLOCK(&ompi_osc_ucxdt.lock);
    if (rc != OMPI_SUCCESS) {
        if (p && p->ep) ucxdt_ep_destroy(p->ep);
        if (p && p->ucp_ep) {
            ucp_request_param_t cp = {.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS, .flags = UCP_EP_CLOSE_FLAG_FORCE};
            ucs_status_ptr_t c = ucp_ep_close_nbx(p->ucp_ep, &cp);
            if (UCS_PTR_IS_PTR(c)) ucp_request_free(c);
        }
        free(p);
        return rc;
    }
    *peer = p;
    return OMPI_SUCCESS;
}

/* Closes every endpoint, each by a flush bounded in time (finalize must not hang on a peer that
 * stopped); forced where the peer failed. */
#define OSC_UCXDT_CLOSE_SECONDS 5.0
static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

void mca_osc_ucxdt_peers_close(void) {
    void *key, *value, *node = NULL;
    size_t key_size;
    if (!ompi_osc_ucxdt.worker) return;
    int rc = opal_hash_table_get_first_key_ptr(&ompi_osc_ucxdt.peers, &key, &key_size, &value, &node);
    while (rc == OPAL_SUCCESS) {
        mca_osc_ucxdt_peer_t *p = value;
        ucxdt_ep_destroy(p->ep);
        ucp_request_param_t cp = {.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS,
                                  .flags = p->failed ? UCP_EP_CLOSE_FLAG_FORCE : 0};
        ucs_status_ptr_t c = ucp_ep_close_nbx(p->ucp_ep, &cp);
        if (UCS_PTR_IS_PTR(c)) {
            const double until = now_s() + OSC_UCXDT_CLOSE_SECONDS;
            while (ucp_request_check_status(c) == UCS_INPROGRESS && now_s() < until)
                ucxdt_worker_progress(ompi_osc_ucxdt.worker);
            ucp_request_free(c);
        }
        free(p);
        rc = opal_hash_table_get_next_key_ptr(&ompi_osc_ucxdt.peers, &key, &key_size, &value, node, &node);
    }
    opal_hash_table_remove_all(&ompi_osc_ucxdt.peers);
}
