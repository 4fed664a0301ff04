/* Endpoints: one UCP endpoint and one ucxdt endpoint per peer process, made on the first send
 * to it from the worker address it published in the modex (pml_ucxdt_component.c), and kept in the
 * process's ompi_proc_t (proc_endpoints, the PML's slot). Open MPI hands add_procs only the
 * processes of this node by default, and others reach the PML through ompi_comm_peer_lookup,
 * so all are made on first use; processes of other jobs (MPI_Comm_spawn, MPI_Comm_connect and
 * MPI_Comm_accept, MPI-4.1 §11.8) the same way, from the address their job published. A peer UCP reports failed
 * (UCP_ERR_HANDLING_MODE_PEER) fails its operations with MPI_ERR_PROC_FAILED, which reaches
 * the communicator's error handler through the request (ucxdt_worker_handle_ep_error).
 *
 * UCP leaves CMA out of an endpoint that reports failures, and CMA's single copy is what moves
 * large host messages between processes of a node at pml ucx's rate (with 64 in flight,
 * 1.3-1.8 times the shared-memory copies' rate from 64 KiB, performance-log run 48). So a
 * process of this node gets its data endpoint without UCP's peer mode, as under pml ucx, but
 * with an error handler (without one UCX aborts the process when a CMA read finds its peer
 * gone), and a second, idle endpoint in the peer mode (the watch endpoint), whose failure,
 * found by UCP's keepalive, is reported for the data endpoint. */
#include "pml_ucxdt.h"

#include "opal/mca/pmix/pmix-internal.h"
#include "opal/util/output.h"
#include "ompi/proc/proc.h"

#include <time.h>

/* UCP's error handler, inside UCP's progress: the receives waiting for the peer end in the
 * PML's progress (mca_pml_ucxdt_peers_fail_receives). */
static void peer_failed(void *arg, ucp_ep_h ep, ucs_status_t status) {
    (void)ep;
    mca_pml_ucxdt_peer_t *p = arg;
    __atomic_store_n(&p->failed, 1, __ATOMIC_RELAXED);
    __atomic_store_n(&ompi_pml_ucxdt.any_peer_failed, true, __ATOMIC_RELAXED);
    __atomic_store_n(&ompi_pml_ucxdt.peer_failed, true, __ATOMIC_RELEASE);
    if (ompi_pml_ucxdt.verbose)
        opal_output(0, "pml ucxdt: a peer failed (%s): its operations end with MPI_ERR_PROC_FAILED",
                    ucs_status_string(status));
}

/* The watch endpoint's error handler: the data endpoint's peer failed. */
static void watch_failed(void *arg, ucp_ep_h ep, ucs_status_t status) {
    mca_pml_ucxdt_peer_t *p = arg;
    if (p->ucp_ep) ucxdt_worker_handle_ep_error(ompi_pml_ucxdt.worker, p->ucp_ep, status);
    peer_failed(arg, ep, status);
}

/* Closes a UCP endpoint: at once (UCP_EP_CLOSE_FLAG_FORCE) where UCP reports peers' failures
 * (`force`), since a peer that stopped may never answer a flush; else by a flush, since UCP
 * leaves a forced close undefined without its peer error handling (ucxdt_ucp.h, "Peer
 * failure"). The wait is bounded either way (finalize must not hang): after
 * PML_UCXDT_CLOSE_SECONDS the request is left to UCP, which ucp_worker_destroy reclaims. */
#define PML_UCXDT_CLOSE_SECONDS 5.0
static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}
static void close_ep(ucp_ep_h *ep, bool force) {
    ucp_request_param_t params = {0};
    params.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
    params.flags = force ? UCP_EP_CLOSE_FLAG_FORCE : 0;
    ucs_status_ptr_t c = ucp_ep_close_nbx(*ep, &params);
    if (UCS_PTR_IS_PTR(c)) {
        const double until = now_s() + PML_UCXDT_CLOSE_SECONDS;
        while (ucp_request_check_status(c) == UCS_INPROGRESS && now_s() < until)
            ucp_worker_progress(ompi_pml_ucxdt.ucp_worker);
        if (ucp_request_check_status(c) == UCS_INPROGRESS)
            opal_output(0, "pml ucxdt: closing an endpoint took over %.0f s: left to UCP", PML_UCXDT_CLOSE_SECONDS);
        ucp_request_free(c);
    }
    *ep = NULL;
}

/* Closes p's endpoints (either may be NULL). */
static void close_eps(mca_pml_ucxdt_peer_t *p) {
    if (p->ucp_ep) close_ep(&p->ucp_ep, ompi_pml_ucxdt.peer_failure && !p->watch_ep);
    if (p->watch_ep) close_ep(&p->watch_ep, true);
}

static int peer_connect(ompi_proc_t *proc, mca_pml_ucxdt_peer_t *p) {
    int rc;
    ucp_address_t *address = NULL;
    size_t length = 0;
    OPAL_MODEX_RECV(rc, &mca_pml_ucxdt_component.pmlm_version, &proc->super.proc_name, (void **)&address, &length);
    if (rc != OPAL_SUCCESS) {
        opal_output(0, "pml ucxdt: no worker address of rank %u in the modex", proc->super.proc_name.vpid);
        return MPI_ERR_INTERN;
    }
    /* Locality as the runtime reported it; a process it says nothing of (another job's) gets
     * the data endpoint with error handling. */
    const bool watched = ompi_pml_ucxdt.peer_failure && OPAL_PROC_ON_LOCAL_NODE(proc->super.proc_flags);
    ucp_ep_params_t params = {0};
    params.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS;
    params.address = address;
    ucxdt_status_t st = ompi_pml_ucxdt.peer_failure && !watched
                            ? ucxdt_ep_params_set_err_handler(&params, ompi_pml_ucxdt.worker, peer_failed, p)
                            : UCXDT_OK;
    if (watched) {
        params.field_mask |= UCP_EP_PARAM_FIELD_ERR_HANDLER;
        params.err_handler.cb = watch_failed;
        params.err_handler.arg = p;
    }
    ucs_status_t us = st == UCXDT_OK ? ucp_ep_create(ompi_pml_ucxdt.ucp_worker, &params, &p->ucp_ep) : UCS_ERR_INVALID_PARAM;
    if (us == UCS_OK && watched) {
        ucp_ep_params_t wp = {0};
        wp.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS | UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE |
                        UCP_EP_PARAM_FIELD_ERR_HANDLER;
        wp.address = address;
        wp.err_mode = UCP_ERR_HANDLING_MODE_PEER;
        wp.err_handler.cb = watch_failed;
        wp.err_handler.arg = p;
        if ((us = ucp_ep_create(ompi_pml_ucxdt.ucp_worker, &wp, &p->watch_ep)) != UCS_OK) close_eps(p);
    }
    free(address);
    if (us != UCS_OK) {
        opal_output(0, "pml ucxdt: cannot reach rank %u: %s", proc->super.proc_name.vpid,
                    st == UCXDT_OK ? ucs_status_string(us) : ucxdt_last_error());
        return MPI_ERR_INTERN;
    }
    ucxdt_ep_params_t ep_params = {.field_mask = UCXDT_EP_PARAM_FIELD_UCP_EP, .ucp_ep = p->ucp_ep};
    ucxdt_ep_h ep;
    if ((st = ucxdt_ep_create(ompi_pml_ucxdt.worker, &ep_params, &ep)) != UCXDT_OK) {
        opal_output(0, "pml ucxdt: ucxdt_ep_create: %s", ucxdt_last_error());
        close_eps(p);
        return mca_pml_ucxdt_mpi_error(st);
    }
    __atomic_store_n(&p->ep, ep, __ATOMIC_RELEASE);  /* read without the lock (mca_pml_ucxdt_peer_ep) */
    return OMPI_SUCCESS;
}

/* proc's peer, NULL before the first send to it; read without the lock (mca_pml_ucxdt_peer_ep stores
 * it whole, under the lock). */
static mca_pml_ucxdt_peer_t *peer_of(const ompi_proc_t *proc) {
    return __atomic_load_n((mca_pml_ucxdt_peer_t *const *)&proc->proc_endpoints[OMPI_PROC_ENDPOINT_TAG_PML],
                           __ATOMIC_ACQUIRE);
}

int mca_pml_ucxdt_peer_ep(ompi_communicator_t *comm, int rank, ucxdt_ep_h *ep) {
    ompi_proc_t *proc = ompi_comm_peer_lookup(comm, rank);
    if (!proc) return MPI_ERR_RANK;
    mca_pml_ucxdt_peer_t *p = peer_of(proc);
    if (p && (*ep = __atomic_load_n(&p->ep, __ATOMIC_ACQUIRE))) return OMPI_SUCCESS;
    /* Connecting takes UCP's and ucxdt's worker locks under the PML's: the documented order
     * (mca_pml_ucxdt_state_t), which no callback reverses. */
    int rc = OMPI_SUCCESS;
    OPAL_THREAD_LOCK(&ompi_pml_ucxdt.lock);
    p = proc->proc_endpoints[OMPI_PROC_ENDPOINT_TAG_PML];
    if (!p) {
        if ((p = calloc(1, sizeof *p))) {
            p->proc = proc;
            p->next = ompi_pml_ucxdt.peers, ompi_pml_ucxdt.peers = p;
            __atomic_store_n((mca_pml_ucxdt_peer_t **)&proc->proc_endpoints[OMPI_PROC_ENDPOINT_TAG_PML], p,
                             __ATOMIC_RELEASE);
        } else {
            rc = OMPI_ERR_OUT_OF_RESOURCE;
        }
    }
    if (rc == OMPI_SUCCESS && !p->ep) rc = peer_connect(proc, p);
    OPAL_THREAD_UNLOCK(&ompi_pml_ucxdt.lock);
    if (rc == OMPI_SUCCESS) *ep = p->ep;
    return rc;
}

/* At finalize, after Open MPI's closing fence: every peer's traffic has ended. The processes
 * outlive the PML (ompi_proc_finalize comes later), so each forgets its endpoints. */
void mca_pml_ucxdt_peers_close(void) {
    while (ompi_pml_ucxdt.peers) {
        mca_pml_ucxdt_peer_t *p = ompi_pml_ucxdt.peers;
        ompi_pml_ucxdt.peers = p->next;
        p->proc->proc_endpoints[OMPI_PROC_ENDPOINT_TAG_PML] = NULL;
        if (p->ep) ucxdt_ep_destroy(p->ep), p->ep = NULL;
        close_eps(p);
        free(p);
    }
}

/* Ends every receive posted on any communicator for `proc`, as the source named in its tag (its
 * rank there: in the remote group of an intercommunicator). Receives of MPI_ANY_SOURCE stay
 * posted, as ucxdt_tag_recv_peer_failed leaves them. */
static void fail_receives_from(ompi_proc_t *proc) {
    const int ncomms = opal_pointer_array_get_size(&ompi_mpi_communicators);
    for (int i = 0; i < ncomms; ++i) {
        ompi_communicator_t *comm = opal_pointer_array_get_item(&ompi_mpi_communicators, i);
        if (!comm || comm == &ompi_mpi_comm_null.comm || comm->c_index > PML_UCXDT_MAX_CONTEXT) continue;
        const int n = OMPI_COMM_IS_INTER(comm) ? ompi_comm_remote_size(comm) : ompi_comm_size(comm);
        for (int rank = 0; rank < n; ++rank)
            if (ompi_comm_peer_lookup(comm, rank) == proc)
                (void)ucxdt_tag_recv_peer_failed(ompi_pml_ucxdt.worker,
                                                 (uint64_t)comm->c_index | (uint64_t)rank << PML_UCXDT_RANK_SHIFT,
                                                 PML_UCXDT_CID_MASK | PML_UCXDT_RANK_MASK);
    }
}

int mca_pml_ucxdt_peers_fail_receives(void) {
    if (!__atomic_exchange_n(&ompi_pml_ucxdt.peer_failed, false, __ATOMIC_ACQUIRE)) return 0;
    int n = 0;
    OPAL_THREAD_LOCK(&ompi_pml_ucxdt.lock);
    for (mca_pml_ucxdt_peer_t *p = ompi_pml_ucxdt.peers; p; p = p->next)
        if (__atomic_load_n(&p->failed, __ATOMIC_RELAXED) == 1) {
            p->failed = 2;  /* its receives are ended; later ones fail at their post */
            fail_receives_from(p->proc);
            ++n;
        }
    OPAL_THREAD_UNLOCK(&ompi_pml_ucxdt.lock);
    return n;
}

bool mca_pml_ucxdt_peer_has_failed(ompi_communicator_t *comm, int rank) {
    const ompi_proc_t *proc = ompi_comm_peer_lookup(comm, rank);
    const mca_pml_ucxdt_peer_t *p = proc ? peer_of(proc) : NULL;
    return p && __atomic_load_n(&p->failed, __ATOMIC_RELAXED);
}
