/* Requests of pml ucxdt: an ompi_request_t around one ucxdt request at a time (MPI-4.1 §3.7).
 * ucxdt calls back from ucxdt_worker_progress, which opal_progress drives (pml_ucxdt_component.c); the
 * callback fills the MPI status and completes the request. Persistent requests (§3.9) keep
 * their arguments and post a new ucxdt request at each start. */
#include "pml_ucxdt.h"

#include "ompi/mca/pml/base/pml_base_bsend.h"
#include "opal/util/output.h"


/* A request from the free list, as new (the list constructs each object once). */
static void request_reset(mca_pml_ucxdt_request_t *r) {
    r->op = NULL;
    r->done = true;
    r->free_called = false;
    r->ended_op = NULL;
    r->next_finished = NULL;
    r->bsend_space = NULL;
    r->dt = NULL;
    r->comm = NULL;
}

OBJ_CLASS_INSTANCE(mca_pml_ucxdt_request_t, ompi_request_t, NULL, NULL);

void mca_pml_ucxdt_request_release(mca_pml_ucxdt_request_t *r) {
    if (r->ompi.req_persistent && r->dt) OMPI_DATATYPE_RELEASE(r->dt);
    OMPI_REQUEST_FINI(&r->ompi);
    opal_free_list_return(&ompi_pml_ucxdt.requests, &r->ompi.super);
}

int mca_pml_ucxdt_requests_init(void) {
    OBJ_CONSTRUCT(&ompi_pml_ucxdt.requests, opal_free_list_t);
    return opal_free_list_init(&ompi_pml_ucxdt.requests, sizeof(mca_pml_ucxdt_request_t), opal_cache_line_size,
                               OBJ_CLASS(mca_pml_ucxdt_request_t), 0, opal_cache_line_size, 128, -1, 128, NULL, 0,
                               NULL, NULL, NULL);
}

void mca_pml_ucxdt_requests_fini(void) { OBJ_DESTRUCT(&ompi_pml_ucxdt.requests); }

/* r's operation has ended (its status is filled): ends the ucxdt request, then completes r, or
 * releases it when MPI_Request_free came first. Under the lock, so that a concurrent
 * request_free, request_cancel or post sees either the running operation or the finished one;
 * r is completed inside it, so that a free can only follow the completion. */
static void request_finish(mca_pml_ucxdt_request_t *r) {
    void *op = r->ended_op;
    r->ended_op = NULL;
    if (r->bsend_space) mca_pml_base_bsend_request_free(r->bsend_space), r->bsend_space = NULL;
    OPAL_THREAD_LOCK(&ompi_pml_ucxdt.lock);
    r->op = NULL;
    r->done = true;
    const bool release = r->free_called;  /* nobody waits for it */
    if (!release || r->ompi.req_persistent) ompi_request_complete(&r->ompi, true);
    OPAL_THREAD_UNLOCK(&ompi_pml_ucxdt.lock);
    if (op) ucxdt_request_free(op);
    if (release) mca_pml_ucxdt_request_release(r);
}

/* The operation `op` (NULL: none was posted) ended with `err`, an MPI error class; the status's
 * other fields are filled. Called by ucxdt's callbacks, under its worker lock: under
 * MPI_THREAD_MULTIPLE r is queued for mca_pml_ucxdt_progress (see mca_pml_ucxdt_state_t), and finished
 * at once otherwise. */
static void request_done(mca_pml_ucxdt_request_t *r, void *op, int err) {
    r->ompi.req_status.MPI_ERROR = err;
    r->ended_op = op;
    if (!ompi_pml_ucxdt.threads) {
        request_finish(r);
        return;
    }
    r->next_finished = NULL;
    opal_mutex_lock(&ompi_pml_ucxdt.finished_lock);
    if (ompi_pml_ucxdt.finished_last) ompi_pml_ucxdt.finished_last->next_finished = r;
    else __atomic_store_n(&ompi_pml_ucxdt.finished, r, __ATOMIC_RELAXED);
    ompi_pml_ucxdt.finished_last = r;
    opal_mutex_unlock(&ompi_pml_ucxdt.finished_lock);
}

int mca_pml_ucxdt_requests_finish_queued(void) {
    /* A peek without the lock: a request queued meanwhile is seen at the next progress. */
    if (!__atomic_load_n(&ompi_pml_ucxdt.finished, __ATOMIC_RELAXED)) return 0;
    opal_mutex_lock(&ompi_pml_ucxdt.finished_lock);
    mca_pml_ucxdt_request_t *r = ompi_pml_ucxdt.finished;
    __atomic_store_n(&ompi_pml_ucxdt.finished, NULL, __ATOMIC_RELAXED);
    ompi_pml_ucxdt.finished_last = NULL;
    opal_mutex_unlock(&ompi_pml_ucxdt.finished_lock);
    int n = 0;
    while (r) {
        mca_pml_ucxdt_request_t *next = r->next_finished;
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
 * without error handling (pml_ucxdt_peer.c) with the transport's status (CMA: an I/O error). */
static int peer_error(ucxdt_status_t st, ompi_communicator_t *comm, int peer) {
    if (st == UCXDT_ERR_UCX && mca_pml_ucxdt_peer_has_failed(comm, peer)) return MPI_ERR_PROC_FAILED;
    return mca_pml_ucxdt_mpi_error(st);
}

static void send_done(void *op, ucxdt_status_t st, void *user_data) {
    mca_pml_ucxdt_request_t *r = user_data;
    const bool receivers = st == UCXDT_ERR_TRUNCATED || st == UCXDT_ERR_TYPE_MISMATCH;
    request_done(r, op, receivers ? MPI_SUCCESS : peer_error(st, r->comm, r->peer));
}

static void recv_done(void *op, ucxdt_status_t st, int64_t length, ucp_tag_t sender_tag, void *user_data) {
    mca_pml_ucxdt_request_t *r = user_data;
    ompi_status_public_t *s = &r->ompi.req_status;
    if (st == UCXDT_ERR_CANCELED) {
        s->_cancelled = 1;
        request_done(r, op, MPI_SUCCESS);
        return;
    }
    s->MPI_SOURCE = mca_pml_ucxdt_tag_source(sender_tag);
    s->MPI_TAG = mca_pml_ucxdt_tag_tag(sender_tag);
    s->_ucount = st == UCXDT_OK ? (size_t)length : 0;
    request_done(r, op, peer_error(st, r->comm, s->MPI_SOURCE));
}

static int request_free(ompi_request_t **rp) {
    mca_pml_ucxdt_request_t *r = (mca_pml_ucxdt_request_t *)*rp;
    *rp = MPI_REQUEST_NULL;
    OPAL_THREAD_LOCK(&ompi_pml_ucxdt.lock);
    const bool running = !r->done;
    r->free_called = running;  /* then released once its operation ends (request_finish) */
    OPAL_THREAD_UNLOCK(&ompi_pml_ucxdt.lock);
    if (!running) mca_pml_ucxdt_request_release(r);
    return OMPI_SUCCESS;
}

/* A receive not matched yet completes canceled; a matched one, and any send, run to the end
 * (a send's cancel may fail, MPI-4.1 §3.8.4; ucxdt cannot withdraw a posted message). The
 * lock keeps r->op from being freed meanwhile (request_finish). */
static int request_cancel(ompi_request_t *req, int flag) {
    (void)flag;
    mca_pml_ucxdt_request_t *r = (mca_pml_ucxdt_request_t *)req;
    OPAL_THREAD_LOCK(&ompi_pml_ucxdt.lock);
    if (r->kind == PML_UCXDT_RECV && r->op && !r->done) ucxdt_request_cancel(ompi_pml_ucxdt.worker, r->op);
    OPAL_THREAD_UNLOCK(&ompi_pml_ucxdt.lock);
    return OMPI_SUCCESS;
}

mca_pml_ucxdt_request_t *mca_pml_ucxdt_request_new(mca_pml_ucxdt_kind_t kind, ompi_communicator_t *comm, bool persistent) {
    mca_pml_ucxdt_request_t *r = (mca_pml_ucxdt_request_t *)opal_free_list_get(&ompi_pml_ucxdt.requests);
    if (!r) return NULL;
    request_reset(r);
    OMPI_REQUEST_INIT(&r->ompi, persistent);
    r->ompi.req_type = OMPI_REQUEST_PML;
    r->ompi.req_free = request_free;
    r->ompi.req_cancel = request_cancel;
    r->ompi.req_mpi_object.comm = comm;
    r->kind = kind;
    r->comm = comm;
    return r;
}

/* A new request with the operation's arguments (a persistent one keeps a reference to dt). */
mca_pml_ucxdt_request_t *mca_pml_ucxdt_request_make(mca_pml_ucxdt_kind_t kind, const void *buf, size_t count, ompi_datatype_t *dt,
                                                  int peer, int tag, mca_pml_base_send_mode_t mode,
                                                  ompi_communicator_t *comm, bool persistent) {
    mca_pml_ucxdt_request_t *r = mca_pml_ucxdt_request_new(kind, comm, persistent);
    if (!r) return NULL;
    r->buf = (void *)buf;
    r->count = count;
    r->dt = dt;
    r->peer = peer;
    r->tag = tag;
    r->mode = mode;
    if (persistent) OMPI_DATATYPE_RETAIN(dt);
    return r;
}

/* Readies r for a new operation: status cleared, active, pending. */
static void activate(mca_pml_ucxdt_request_t *r) {
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
static int begin(mca_pml_ucxdt_request_t *r, ucxdt_type_t *type, ucxdt_request_param_t *p) {
    activate(r);
    if (r->count > (size_t)INT64_MAX) return MPI_ERR_COUNT;
    bool packed = false;
    const int rc = mca_pml_ucxdt_type(r->dt, type, &packed);
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
     * asked for (mca_pml_ucxdt_check_signature): MPI-4.1 §3.3.1 calls a mismatch erroneous, but
     * every MPI delivers the bytes (a vector of doubles received as MPI_BYTE), and codes rely
     * on it. */
    const bool any = packed || r->dt == MPI_PACKED;
    if (any || (r->kind == PML_UCXDT_RECV && !ompi_pml_ucxdt.check_signature)) {
        p->field_mask |= UCXDT_REQUEST_PARAM_FIELD_FLAGS;
        p->flags = r->kind == PML_UCXDT_SEND ? UCXDT_SEND_FLAG_PACKED : UCXDT_RECV_FLAG_PACKED;
    }
    return OMPI_SUCCESS;
}

/* What ucxdt returned for r's operation: a request it will call back, NULL (a send complete
 * at once) or an error. A send that ended at once is left to the caller when it asks
 * (*at_once): completing and freeing r would cost more than the send. */
static int posted(mca_pml_ucxdt_request_t *r, ucxdt_status_ptr_t op, bool *at_once) {
    if (UCXDT_PTR_IS_ERR(op)) return mca_pml_ucxdt_mpi_error(UCXDT_PTR_STATUS(op));
    if (op == NULL) {  /* r may be released here (a buffered send) */
        if (at_once && r->kind == PML_UCXDT_SEND && !r->ompi.req_persistent && !r->bsend_space) {
            *at_once = true;
            return OMPI_SUCCESS;
        }
        r->ompi.req_status.MPI_ERROR = MPI_SUCCESS;
        request_finish(r);
        return OMPI_SUCCESS;
    }
    /* It may have finished already (request_finish), in this thread or another's progress. */
    OPAL_THREAD_LOCK(&ompi_pml_ucxdt.lock);
    if (!r->done) r->op = op;
    OPAL_THREAD_UNLOCK(&ompi_pml_ucxdt.lock);
    return OMPI_SUCCESS;
}

int mca_pml_ucxdt_request_post(mca_pml_ucxdt_request_t *r, bool *at_once) {
    ucxdt_type_t type;
    ucxdt_request_param_t p;
    int rc = begin(r, &type, &p);
    if (rc != OMPI_SUCCESS) return rc;
    if (r->kind == PML_UCXDT_RECV) {
        /* A receive from a process that failed (its earlier ones ended with the same error:
         * mca_pml_ucxdt_peers_fail_receives). */
        if (__atomic_load_n(&ompi_pml_ucxdt.any_peer_failed, __ATOMIC_RELAXED) && r->peer != MPI_ANY_SOURCE && mca_pml_ucxdt_peer_has_failed(r->comm, r->peer))
            return MPI_ERR_PROC_FAILED;
        ucp_tag_t tag, mask;
        mca_pml_ucxdt_recv_tag(r->peer, r->tag, r->comm, &tag, &mask);
        return posted(r, ucxdt_tag_recv_nbx(ompi_pml_ucxdt.worker, r->buf, (int64_t)r->count, type, tag, mask, &p), NULL);
    }
    ucxdt_ep_h ep;
    if ((rc = mca_pml_ucxdt_peer_ep(r->comm, r->peer, &ep)) != OMPI_SUCCESS) return rc;
    if (r->mode == MCA_PML_BASE_SEND_SYNCHRONOUS) {
        p.field_mask |= UCXDT_REQUEST_PARAM_FIELD_FLAGS;
        p.flags |= UCXDT_SEND_FLAG_SYNC;
    }
    const ucp_tag_t tag = mca_pml_ucxdt_send_tag(r->tag, ompi_comm_rank(r->comm), r->comm);
    return posted(r, ucxdt_tag_send_nbx(ep, r->buf, (int64_t)r->count, type, tag, &p), at_once);
}

int mca_pml_ucxdt_request_post_matched(mca_pml_ucxdt_request_t *r, ucxdt_tag_message_h message) {
    ucxdt_type_t type;
    ucxdt_request_param_t p;
    const int rc = begin(r, &type, &p);
    if (rc != OMPI_SUCCESS) return rc;
    return posted(r, ucxdt_tag_msg_recv_nbx(ompi_pml_ucxdt.worker, r->buf, (int64_t)r->count, type, message, &p), NULL);
}

void mca_pml_ucxdt_request_end_at_start(mca_pml_ucxdt_request_t *r, int err) {
    activate(r);
    r->ompi.req_status.MPI_ERROR = err;
    request_finish(r);
}
