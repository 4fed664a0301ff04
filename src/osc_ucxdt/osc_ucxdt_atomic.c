/* Remote atomics on the windows' state regions (the lock word, the accumulate lock, the counters
 * of general active-target synchronization), gets of them (dynamic windows' tables), and flushes. Each call waits for its answer,
 * driving the osc worker; UCP emulates an atomic a transport lacks through the target's
 * progress, which runs whenever that process is inside MPI (opal_progress). */
#include "osc_ucxdt.h"

#include "opal/runtime/opal_progress.h"
#include "opal/util/output.h"

/* The osc worker drives the wait; Open MPI's progress (the PML's, the runtime's, and this
 * component's again) only every 16th turn, as osc ucx calls it every 100th: the wait of a small
 * flush is short, and each turn of it walks every registered callback. */
void mca_osc_ucxdt_wait_turn(unsigned *turn) {
    mca_osc_ucxdt_progress();
    if ((++*turn & 15) == 0) opal_progress();
}

static void wait_ucp(void *req) {
    unsigned turn = 0;
    while (ucp_request_check_status(req) == UCS_INPROGRESS) mca_osc_ucxdt_wait_turn(&turn);
}

/* The status of a UCP operation (NULL: done, or an error pointer), waited for and freed. */
static ucs_status_t finish_ucp(ucs_status_ptr_t req) {
    if (UCS_PTR_IS_ERR(req)) return UCS_PTR_STATUS(req);
    if (!req) return UCS_OK;
    wait_ucp(req);
    const ucs_status_t st = ucp_request_check_status(req);
    ucp_request_free(req);
    return st;
}

/* st as an MPI error class, saying what failed (`what` with target's rank). */
static int ucp_error(mca_osc_ucxdt_module_t *m, int target, ucs_status_t st, const char *what) {
    if (st == UCS_OK) return OMPI_SUCCESS;
    if (__atomic_load_n(&m->targets[target].peer->failed, __ATOMIC_ACQUIRE)) return MPI_ERR_PROC_FAILED;
    opal_output(0, "osc ucxdt: %s rank %d: %s", what, target, ucs_status_string(st));
    return OMPI_ERROR;
}

int mca_osc_ucxdt_state_atomic(mca_osc_ucxdt_module_t *m, int target, size_t index, ucp_atomic_op_t op,
                               uint64_t value, uint64_t swap, uint64_t *fetched) {
    mca_osc_ucxdt_target_t *t = &m->targets[target];
    if (__atomic_load_n(&t->peer->failed, __ATOMIC_ACQUIRE)) return MPI_ERR_PROC_FAILED;
    uint64_t reply = swap;  /* CSWAP: the value swapped in, then the one found (UCP: buffer is compared) */
    ucp_request_param_t p = {0};
    p.op_attr_mask = UCP_OP_ATTR_FIELD_DATATYPE;
    p.datatype = ucp_dt_make_contig(sizeof(uint64_t));
    const bool fetch = fetched || op == UCP_ATOMIC_OP_CSWAP || op == UCP_ATOMIC_OP_SWAP;
    if (fetch) p.op_attr_mask |= UCP_OP_ATTR_FIELD_REPLY_BUFFER, p.reply_buffer = &reply;
    ucs_status_t st = finish_ucp(ucp_atomic_op_nbx(t->peer->ucp_ep, op, &value, 1, t->state + index * sizeof(uint64_t),
                                                   t->state_rkey, &p));
    if (st == UCS_OK && !fetch) {
        /* A posted atomic is done once its endpoint is flushed. */
        st = mca_osc_ucxdt_flush_target(m, target) == OMPI_SUCCESS ? UCS_OK : UCS_ERR_IO_ERROR;
    }
    const int rc = ucp_error(m, target, st, "an atomic on");
    if (rc == OMPI_SUCCESS && fetched) *fetched = reply;
    return rc;
}

int mca_osc_ucxdt_state_post(mca_osc_ucxdt_module_t *m, int target, size_t index, ucp_atomic_op_t op,
                             uint64_t value) {
    mca_osc_ucxdt_target_t *t = &m->targets[target];
    if (__atomic_load_n(&t->peer->failed, __ATOMIC_ACQUIRE)) return MPI_ERR_PROC_FAILED;
    ucp_request_param_t p = {0};
    p.op_attr_mask = UCP_OP_ATTR_FIELD_DATATYPE;
    p.datatype = ucp_dt_make_contig(sizeof(uint64_t));
    /* Without a reply buffer the request ends at local completion: the transport has the atomic
     * and delivers it without this process's progress. */
    return ucp_error(m, target, finish_ucp(ucp_atomic_op_nbx(t->peer->ucp_ep, op, &value, 1,
                                                             t->state + index * sizeof(uint64_t), t->state_rkey, &p)),
                     "an atomic on");
}

int mca_osc_ucxdt_state_get(mca_osc_ucxdt_module_t *m, int target, uint64_t offset, void *buf, size_t len) {
    mca_osc_ucxdt_target_t *t = &m->targets[target];
    if (__atomic_load_n(&t->peer->failed, __ATOMIC_ACQUIRE)) return MPI_ERR_PROC_FAILED;
    const ucp_request_param_t p = {0};
    return ucp_error(m, target, finish_ucp(ucp_get_nbx(t->peer->ucp_ep, buf, len, t->state + offset, t->state_rkey, &p)),
                     "a read of the window state of");
}

int mca_osc_ucxdt_wait_ucp(mca_osc_ucxdt_module_t *m, int target, ucs_status_ptr_t req) {
    return ucp_error(m, target, finish_ucp(req), "a transfer with");
}

int mca_osc_ucxdt_wait_op(mca_osc_ucxdt_module_t *m, int target, ucxdt_status_ptr_t op) {
    int st = UCXDT_OK;
    if (UCXDT_PTR_IS_ERR(op)) {
        st = UCXDT_PTR_STATUS(op);
    } else if (op) {
        unsigned turn = 0;
        while ((st = ucxdt_request_check_status(op)) == UCXDT_INPROGRESS) mca_osc_ucxdt_wait_turn(&turn);
        ucxdt_request_free(op);
    }
    if (st == UCXDT_OK) return OMPI_SUCCESS;
    return __atomic_load_n(&m->targets[target].peer->failed, __ATOMIC_ACQUIRE) ? MPI_ERR_PROC_FAILED
                                                                                : mca_osc_ucxdt_mpi_error((ucxdt_status_t)st);
}

/* ucxdt's flush waits for the ucxdt operations started before it, then flushes the UCP endpoint;
 * with none started since the last one ended, UCP's flush alone completes the direct path's
 * operations and the atomics, without ucxdt's request and its scan of the worker's operations.
 * The count is read first: an operation started during the flush is left to the next. */
int mca_osc_ucxdt_flush_target(mca_osc_ucxdt_module_t *m, int target) {
    mca_osc_ucxdt_target_t *t = &m->targets[target];
    const uint64_t started = __atomic_load_n(&t->ucxdt_started, __ATOMIC_ACQUIRE);
    uint64_t flushed = __atomic_load_n(&t->ucxdt_flushed, __ATOMIC_ACQUIRE);
    if (started == flushed) {
        const ucp_request_param_t none = {0};
        return mca_osc_ucxdt_wait_ucp(m, target, ucp_ep_flush_nbx(t->peer->ucp_ep, &none));
    }
    const ucxdt_request_param_t none = {0};
    const int rc = mca_osc_ucxdt_wait_op(m, target, ucxdt_ep_flush_nbx(t->peer->ep, &none));
    /* Another thread's flush may have counted further already. */
    while (rc == OMPI_SUCCESS && flushed < started &&
           !__atomic_compare_exchange_n(&t->ucxdt_flushed, &flushed, started, false, __ATOMIC_ACQ_REL,
                                        __ATOMIC_ACQUIRE)) {
    }
    return rc;
}

/* Each target's endpoint in turn: the worker's flush would also wait for other windows'. */
int mca_osc_ucxdt_flush_all_targets(mca_osc_ucxdt_module_t *m) {
    int rc = OMPI_SUCCESS;
    for (int r = 0; r < m->size; ++r) {
        const int one = mca_osc_ucxdt_flush_target(m, r);
        if (rc == OMPI_SUCCESS) rc = one;
    }
    return rc;
}

int mca_osc_ucxdt_acc_lock(mca_osc_ucxdt_module_t *m, int target) {
    /* An exclusive lock of the window is exclusive of every other accumulate already. */
    if (m->targets[target].lock == MPI_LOCK_EXCLUSIVE) return OMPI_SUCCESS;
    for (;;) {
        uint64_t found = 1;
        const int rc = mca_osc_ucxdt_state_atomic(m, target, OSC_UCXDT_ACC_LOCK, UCP_ATOMIC_OP_CSWAP, 0, 1, &found);
        if (rc != OMPI_SUCCESS || found == 0) return rc;
        opal_progress();
    }
}

int mca_osc_ucxdt_acc_unlock(mca_osc_ucxdt_module_t *m, int target) {
    if (m->targets[target].lock == MPI_LOCK_EXCLUSIVE) return OMPI_SUCCESS;
    /* What the accumulate wrote lands before the lock is seen free: a flush, not UCP's fence,
     * which UCX 1.13 keeps per transport, so a put that UCP emulates by active messages (no RMA
     * transport between the two) could land after a release that the shared-memory transport
     * did at once (a lost update of one_sided_np4's fetch-and-op counter on this VM). The release
     * is posted: no one waits for it but the next holder. */
    int rc = mca_osc_ucxdt_flush_target(m, target);
    const int urc = mca_osc_ucxdt_state_post(m, target, OSC_UCXDT_ACC_LOCK, UCP_ATOMIC_OP_ADD, (uint64_t)-1);
    return rc != OMPI_SUCCESS ? rc : urc;
}
