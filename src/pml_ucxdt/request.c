/* Requests of pml ucxdt: an ompi_request_t around one ucxdt request at a time (MPI-4.1 §3.7).
 * ucxdt calls back from ucxdt_worker_progress, which opal_progress drives (component.c); the
 * callback fills the MPI status and completes the request. Persistent requests (§3.9) keep
 * their arguments and post a new ucxdt request at each start. */
#include "pml_ucxdt.h"

#include "ompi/mca/pml/base/pml_base_bsend.h"
#include "opal/util/output.h"


int pml_ucxdt_mpi_error(ucxdt_status_t st) {
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
    default:
        /* No MPI class says more than MPI_ERR_INTERN: say what ucxdt said (the thread's last
         * error names the failing step). */
        opal_output(0, "pml ucxdt: %s", *ucxdt_last_error() ? ucxdt_last_error() : ucxdt_status_string(st));
        return MPI_ERR_INTERN;
    }
}

/* A request from the free list, as new (the list constructs each object once). */
static void request_reset(pml_ucxdt_request_t *r) {
    r->op = NULL;
    r->done = true;
    r->free_called = false;
    r->ended_op = NULL;
    r->next_finished = NULL;
    r->bsend_space = NULL;
    r->sent_at_once = false;
    r->dt = NULL;
    r->comm = NULL;
}

OBJ_CLASS_INSTANCE(pml_ucxdt_request_t, ompi_request_t, NULL, NULL);

void pml_ucxdt_request_release(pml_ucxdt_request_t *r) {
    if (r->ompi.req_persistent && r->dt) OMPI_DATATYPE_RELEASE(r->dt);
    OMPI_REQUEST_FINI(&r->ompi);
    opal_free_list_return(&pml_ucxdt.requests, &r->ompi.super);
}

int pml_ucxdt_requests_init(void) {
    OBJ_CONSTRUCT(&pml_ucxdt.requests, opal_free_list_t);
    return opal_free_list_init(&pml_ucxdt.requests, sizeof(pml_ucxdt_request_t), opal_cache_line_size,
                               OBJ_CLASS(pml_ucxdt_request_t), 0, opal_cache_line_size, 128, -1, 128, NULL, 0,
                               NULL, NULL, NULL);
}

void pml_ucxdt_requests_fini(void) { OBJ_DESTRUCT(&pml_ucxdt.requests); }

/* r's operation has ended (its status is filled): ends the ucxdt request, then completes r, or
 * releases it when MPI_Request_free came first. Under the lock, so that a concurrent
 * request_free, request_cancel or post sees either the running operation or the finished one;
 * r is completed inside it, so that a free can only follow the completion. */
static void request_finish(pml_ucxdt_request_t *r) {
    void *op = r->ended_op;
    r->ended_op = NULL;
    if (r->bsend_space) mca_pml_base_bsend_request_free(r->bsend_space), r->bsend_space = NULL;
    OPAL_THREAD_LOCK(&pml_ucxdt.lock);
    r->op = NULL;
    r->done = true;
    const bool release = r->free_called;  /* nobody waits for it */
    if (!release || r->ompi.req_persistent) ompi_request_complete(&r->ompi, true);
    OPAL_THREAD_UNLOCK(&pml_ucxdt.lock);
    if (op) ucxdt_request_free(op);
    if (release) pml_ucxdt_request_release(r);
}

/* The operation `op` (NULL: none was posted) ended with `err`, an MPI error class; the status's
 * other fields are filled. Called by ucxdt's callbacks, under its worker lock: under
 * MPI_THREAD_MULTIPLE r is queued for pml_ucxdt_progress (see pml_ucxdt_state_t), and finished
 * at once otherwise. */
static void request_done(pml_ucxdt_request_t *r, void *op, int err) {
    r->ompi.req_status.MPI_ERROR = err;
    r->ended_op = op;
    if (!pml_ucxdt.threads) {
        request_finish(r);
        return;
    }
    r->next_finished = NULL;
    opal_mutex_lock(&pml_ucxdt.finished_lock);
    if (pml_ucxdt.finished_last) pml_ucxdt.finished_last->next_finished = r;
    else __atomic_store_n(&pml_ucxdt.finished, r, __ATOMIC_RELAXED);
    pml_ucxdt.finished_last = r;
    opal_mutex_unlock(&pml_ucxdt.finished_lock);
}

int pml_ucxdt_requests_finish_queued(void) {
    /* A peek without the lock: a request queued meanwhile is seen at the next progress. */
    if (!__atomic_load_n(&pml_ucxdt.finished, __ATOMIC_RELAXED)) return 0;
    opal_mutex_lock(&pml_ucxdt.finished_lock);
    pml_ucxdt_request_t *r = pml_ucxdt.finished;
    __atomic_store_n(&pml_ucxdt.finished, NULL, __ATOMIC_RELAXED);
    pml_ucxdt.finished_last = NULL;
    opal_mutex_unlock(&pml_ucxdt.finished_lock);
    int n = 0;
    while (r) {
        pml_ucxdt_request_t *next = r->next_finished;
        request_finish(r);
        r = next, ++n;
    }
    return n;
}

/* A receive that refused the message (too long, or another signature) reports it; the send
 * completes without error, as in pml ucx: MPI reports truncation at the receiver (MPI-4.1
 * §3.2.4), and an aborting sender would end a program that every MPI completes. */
/* The MPI error of an operation with `peer` (a rank of comm) that ended with st. A transport
 * error from a process that failed is its failure: UCP ends the operations of a data endpoint
 * without error handling (peers.c) with the transport's status (CMA: an I/O error). */
static int peer_error(ucxdt_status_t st, ompi_communicator_t *comm, int peer) {
    if (st == UCXDT_ERR_UCX && pml_ucxdt_peer_has_failed(comm, peer)) return MPI_ERR_PROC_FAILED;
    return pml_ucxdt_mpi_error(st);
}

static void send_done(void *op, ucxdt_status_t st, void *user_data) {
    pml_ucxdt_request_t *r = user_data;
    const bool receivers = st == UCXDT_ERR_TRUNCATED || st == UCXDT_ERR_TYPE_MISMATCH;
    request_done(r, op, receivers ? MPI_SUCCESS : peer_error(st, r->comm, r->peer));
}

static void recv_done(void *op, ucxdt_status_t st, int64_t length, ucp_tag_t sender_tag, void *user_data) {
    pml_ucxdt_request_t *r = user_data;
    ompi_status_public_t *s = &r->ompi.req_status;
    if (st == UCXDT_ERR_CANCELED) {
        s->_cancelled = 1;
        request_done(r, op, MPI_SUCCESS);
        return;
    }
    s->MPI_SOURCE = pml_ucxdt_tag_source(sender_tag);
    s->MPI_TAG = pml_ucxdt_tag_tag(sender_tag);
    s->_ucount = st == UCXDT_OK ? (size_t)length : 0;
    request_done(r, op, peer_error(st, r->comm, s->MPI_SOURCE));
}

static int request_free(ompi_request_t **rp) {
    pml_ucxdt_request_t *r = (pml_ucxdt_request_t *)*rp;
    *rp = MPI_REQUEST_NULL;
    OPAL_THREAD_LOCK(&pml_ucxdt.lock);
    const bool running = !r->done;
    r->free_called = running;  /* then released once its operation ends (request_finish) */
    OPAL_THREAD_UNLOCK(&pml_ucxdt.lock);
    if (!running) pml_ucxdt_request_release(r);
    return OMPI_SUCCESS;
}

/* A receive not matched yet completes canceled; a matched one, and any send, run to the end
 * (a send's cancel may fail, MPI-4.1 §3.8.4; ucxdt cannot withdraw a posted message). The
 * lock keeps r->op from being freed meanwhile (request_finish). */
static int request_cancel(ompi_request_t *req, int flag) {
    (void)flag;
    pml_ucxdt_request_t *r = (pml_ucxdt_request_t *)req;
    OPAL_THREAD_LOCK(&pml_ucxdt.lock);
    if (r->kind == PML_UCXDT_RECV && r->op && !r->done) ucxdt_request_cancel(pml_ucxdt.worker, r->op);
    OPAL_THREAD_UNLOCK(&pml_ucxdt.lock);
    return OMPI_SUCCESS;
}

pml_ucxdt_request_t *pml_ucxdt_request_new(pml_ucxdt_kind_t kind, ompi_communicator_t *comm, bool persistent) {
    pml_ucxdt_request_t *r = (pml_ucxdt_request_t *)opal_free_list_get(&pml_ucxdt.requests);
    if (!r) return NULL;
    request_reset(r);
    OMPI_REQUEST_INIT(&r->ompi, persistent);
    r->ompi.req_type = OMPI_REQUEST_PML;
    r->ompi.req_free = request_free;
    r->ompi.req_cancel = request_cancel;
    r->ompi.req_start = pml_ucxdt_start;
    r->ompi.req_mpi_object.comm = comm;
    r->kind = kind;
    r->comm = comm;
    return r;
}

/* Readies r for a new operation: status cleared, active, pending. */
static void activate(pml_ucxdt_request_t *r) {
    ompi_status_public_t *s = &r->ompi.req_status;
    s->MPI_SOURCE = MPI_ANY_SOURCE;
    s->MPI_TAG = MPI_ANY_TAG;
    s->MPI_ERROR = MPI_SUCCESS;
    s->_cancelled = 0;
    s->_ucount = 0;
    r->ompi.req_state = OMPI_REQUEST_ACTIVE;
    r->ompi.req_complete = REQUEST_PENDING;
    r->done = false;
}

/* activate(r), then the operation's type and the ucxdt request parameters (callback and r as
 * user data) filled in. */
static int begin(pml_ucxdt_request_t *r, ucxdt_type_t *type, ucxdt_request_param_t *p) {
    activate(r);
    if (r->count > (size_t)INT64_MAX) return MPI_ERR_COUNT;
    bool packed = false;
    const int rc = pml_ucxdt_type(r->dt, type, &packed);
    if (rc != OMPI_SUCCESS) return rc;
    memset(p, 0, sizeof *p);
    p->field_mask = UCXDT_REQUEST_PARAM_FIELD_CALLBACK | UCXDT_REQUEST_PARAM_FIELD_USER_DATA;
    p->user_data = r;
    if (r->kind == PML_UCXDT_SEND) p->cb.send = send_done;
    else p->cb.recv = recv_done;
    /* MPI_PACKED matches any signature (MPI-4.1 §5.2): Open MPI's own layers receive packed
     * data from typed sends (MPI_Sendrecv_replace) and may send it to typed receives. Types
     * Open MPI built inside itself have no MPI signature here (datatype_desc.c). Other
     * receives take any message whose bytes fit, as in pml ucx, unless the signature check is
     * asked for (pml_ucxdt_check_signature): MPI-4.1 §3.3.1 calls a mismatch erroneous, but
     * every MPI delivers the bytes (a vector of doubles received as MPI_BYTE), and codes rely
     * on it. */
    const bool any = packed || r->dt == MPI_PACKED;
    if (any || (r->kind == PML_UCXDT_RECV && !pml_ucxdt.check_signature)) {
        p->field_mask |= UCXDT_REQUEST_PARAM_FIELD_FLAGS;
        p->flags = r->kind == PML_UCXDT_SEND ? UCXDT_SEND_FLAG_PACKED : UCXDT_RECV_FLAG_PACKED;
    }
    return OMPI_SUCCESS;
}

/* What ucxdt returned for r's operation: a request it will call back, NULL (a send complete
 * at once) or an error. */
static int posted(pml_ucxdt_request_t *r, ucxdt_status_ptr_t op) {
    if (UCXDT_PTR_IS_ERR(op)) return pml_ucxdt_mpi_error(UCXDT_PTR_STATUS(op));
    if (op == NULL) {  /* r may be released here (a buffered send) */
        if (r->kind == PML_UCXDT_SEND && !r->ompi.req_persistent && !r->bsend_space) {
            r->sent_at_once = true;  /* completing and freeing r would cost more than the send */
            return OMPI_SUCCESS;
        }
        r->ompi.req_status.MPI_ERROR = MPI_SUCCESS;
        request_finish(r);
        return OMPI_SUCCESS;
    }
    /* It may have finished already (request_finish), in this thread or another's progress. */
    OPAL_THREAD_LOCK(&pml_ucxdt.lock);
    if (!r->done) r->op = op;
    OPAL_THREAD_UNLOCK(&pml_ucxdt.lock);
    return OMPI_SUCCESS;
}

int pml_ucxdt_request_post(pml_ucxdt_request_t *r) {
    ucxdt_type_t type;
    ucxdt_request_param_t p;
    int rc = begin(r, &type, &p);
    if (rc != OMPI_SUCCESS) return rc;
    if (r->kind == PML_UCXDT_RECV) {
        /* A receive from a process that failed (its earlier ones ended with the same error:
         * pml_ucxdt_peers_fail_receives). */
        if (__atomic_load_n(&pml_ucxdt.any_peer_failed, __ATOMIC_RELAXED) && r->peer != MPI_ANY_SOURCE && pml_ucxdt_peer_has_failed(r->comm, r->peer))
            return MPI_ERR_PROC_FAILED;
        ucp_tag_t tag, mask;
        pml_ucxdt_recv_tag(r->peer, r->tag, r->comm, &tag, &mask);
        return posted(r, ucxdt_tag_recv_nbx(pml_ucxdt.worker, r->buf, (int64_t)r->count, type, tag, mask, &p));
    }
    ucxdt_ep_h ep;
    if ((rc = pml_ucxdt_peer(r->comm, r->peer, &ep)) != OMPI_SUCCESS) return rc;
    if (r->mode == MCA_PML_BASE_SEND_SYNCHRONOUS) {
        p.field_mask |= UCXDT_REQUEST_PARAM_FIELD_FLAGS;
        p.flags |= UCXDT_SEND_FLAG_SYNC;
    }
    const ucp_tag_t tag = pml_ucxdt_send_tag(r->tag, ompi_comm_rank(r->comm), r->comm);
    return posted(r, ucxdt_tag_send_nbx(ep, r->buf, (int64_t)r->count, type, tag, &p));
}

int pml_ucxdt_request_post_matched(pml_ucxdt_request_t *r, ucxdt_tag_message_h message) {
    ucxdt_type_t type;
    ucxdt_request_param_t p;
    const int rc = begin(r, &type, &p);
    if (rc != OMPI_SUCCESS) return rc;
    return posted(r, ucxdt_tag_msg_recv_nbx(pml_ucxdt.worker, r->buf, (int64_t)r->count, type, message, &p));
}

/* Completes a persistent request at its start: a buffered send (err MPI_SUCCESS), or an
 * operation that could not be posted (err its error, which MPI_Wait returns and MPI_Waitall
 * puts in its status). */
static void start_complete(pml_ucxdt_request_t *r, int err) {
    activate(r);
    r->ompi.req_status.MPI_ERROR = err;
    request_finish(r);
}

/* MPI_Start and MPI_Startall (MPI-4.1 §3.9): each inactive persistent request of ours posts
 * its operation again; other requests of the array belong to other layers. A request that
 * cannot post completes with its error and the others still start: Open MPI's MPI_Startall
 * ignores what this returns (the first error), so the error must reach the request's wait. */
int pml_ucxdt_start(size_t count, ompi_request_t **requests) {
    int first = OMPI_SUCCESS;
    for (size_t i = 0; i < count; ++i) {
        pml_ucxdt_request_t *r = (pml_ucxdt_request_t *)requests[i];
        if (!r || r->ompi.req_type != OMPI_REQUEST_PML || r->ompi.req_start != pml_ucxdt_start) continue;
        int rc;
        if (r->kind == PML_UCXDT_SEND && r->mode == MCA_PML_BASE_SEND_BUFFERED) {
            /* A buffered send completes locally (MPI-4.1 §3.6): each start sends a packed copy
             * from the attached buffer, and the request is complete at once. */
            rc = pml_ucxdt_bsend(r->buf, r->count, r->dt, r->peer, r->tag, r->comm);
            start_complete(r, rc);
        } else if ((rc = pml_ucxdt_request_post(r)) != OMPI_SUCCESS) {
            start_complete(r, rc);  /* nothing was posted */
        }
        if (rc != OMPI_SUCCESS && first == OMPI_SUCCESS) first = rc;
    }
    return first;
}
