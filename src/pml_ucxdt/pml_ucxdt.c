/* The PML's sends and receives (MPI-4.1 §3.4-3.9): blocking, nonblocking and persistent, in
 * the four send modes. Open MPI's MPI layer has already checked the arguments and handled
 * MPI_PROC_NULL. Blocking calls post a request and wait on it through opal_progress. */
#include "pml_ucxdt.h"

/* Posts a new nonblocking operation into *request; on failure nothing stays behind. */
static int post(mca_pml_ucxdt_kind_t kind, const void *buf, size_t count, ompi_datatype_t *dt, int peer, int tag,
                mca_pml_base_send_mode_t mode, ompi_communicator_t *comm, ompi_request_t **request) {
    mca_pml_ucxdt_request_t *r = mca_pml_ucxdt_request_make(kind, buf, count, dt, peer, tag, mode, comm, false);
    if (!r) return OMPI_ERR_OUT_OF_RESOURCE;
    bool at_once = false;
    const int rc = mca_pml_ucxdt_request_post(r, &at_once);
    if (rc != OMPI_SUCCESS || at_once) {
        mca_pml_ucxdt_request_release(r);
        if (rc == OMPI_SUCCESS) *request = &ompi_request_empty;  /* complete, as MPI_Bsend's */
        return rc;
    }
    *request = &r->ompi;
    return OMPI_SUCCESS;
}

/* Waits for r, copies its status to `status` (unless MPI_STATUS_IGNORE), frees it, and returns
 * its error. */
static int wait_and_free(ompi_request_t *r, ompi_status_public_t *status) {
    ompi_request_wait_completion(r);
    const int rc = r->req_status.MPI_ERROR;
    if (status != MPI_STATUS_IGNORE) {
        status->MPI_SOURCE = r->req_status.MPI_SOURCE;
        status->MPI_TAG = r->req_status.MPI_TAG;
        status->_ucount = r->req_status._ucount;
        status->_cancelled = r->req_status._cancelled;
    }
    ompi_request_free(&r);
    return rc;
}

static int m_isend(const void *buf, size_t count, ompi_datatype_t *dt, int dst, int tag,
                 mca_pml_base_send_mode_t mode, ompi_communicator_t *comm, ompi_request_t **request) {
    if (mode == MCA_PML_BASE_SEND_BUFFERED) {
        const int rc = mca_pml_ucxdt_bsend(buf, count, dt, dst, tag, comm);
        if (rc != OMPI_SUCCESS) return rc;
        *request = &ompi_request_empty;  /* complete: the data is in the attached buffer */
        return OMPI_SUCCESS;
    }
    return post(PML_UCXDT_SEND, buf, count, dt, dst, tag, mode, comm, request);
}

static int m_send(const void *buf, size_t count, ompi_datatype_t *dt, int dst, int tag,
                mca_pml_base_send_mode_t mode, ompi_communicator_t *comm) {
    if (mode == MCA_PML_BASE_SEND_BUFFERED) return mca_pml_ucxdt_bsend(buf, count, dt, dst, tag, comm);
    ompi_request_t *r;
    const int rc = post(PML_UCXDT_SEND, buf, count, dt, dst, tag, mode, comm, &r);
    return rc != OMPI_SUCCESS ? rc : wait_and_free(r, MPI_STATUS_IGNORE);
}

static int m_isend_init(const void *buf, size_t count, ompi_datatype_t *dt, int dst, int tag,
                      mca_pml_base_send_mode_t mode, ompi_communicator_t *comm, ompi_request_t **request) {
    mca_pml_ucxdt_request_t *r = mca_pml_ucxdt_request_make(PML_UCXDT_SEND, buf, count, dt, dst, tag, mode, comm, true);
    if (!r) return OMPI_ERR_OUT_OF_RESOURCE;
    r->ompi.req_start = mca_pml_ucxdt_start;
    *request = &r->ompi;
    return OMPI_SUCCESS;
}

static int m_irecv(void *buf, size_t count, ompi_datatype_t *dt, int src, int tag, ompi_communicator_t *comm,
                 ompi_request_t **request) {
    return post(PML_UCXDT_RECV, buf, count, dt, src, tag, MCA_PML_BASE_SEND_STANDARD, comm, request);
}

static int m_recv(void *buf, size_t count, ompi_datatype_t *dt, int src, int tag, ompi_communicator_t *comm,
                ompi_status_public_t *status) {
    ompi_request_t *r;
    const int rc = m_irecv(buf, count, dt, src, tag, comm, &r);
    return rc != OMPI_SUCCESS ? rc : wait_and_free(r, status);
}

static int m_irecv_init(void *buf, size_t count, ompi_datatype_t *dt, int src, int tag, ompi_communicator_t *comm,
                      ompi_request_t **request) {
    mca_pml_ucxdt_request_t *r = mca_pml_ucxdt_request_make(PML_UCXDT_RECV, buf, count, dt, src, tag, MCA_PML_BASE_SEND_STANDARD, comm, true);
    if (!r) return OMPI_ERR_OUT_OF_RESOURCE;
    r->ompi.req_start = mca_pml_ucxdt_start;
    *request = &r->ompi;
    return OMPI_SUCCESS;
}

/* ---- Probes and matched receives (MPI-4.1 §3.8) ------------------------------------------ */

static void probe_status(const ucxdt_tag_recv_info_t *info, ompi_status_public_t *status) {
    if (status == MPI_STATUS_IGNORE) return;
    status->MPI_SOURCE = mca_pml_ucxdt_tag_source(info->sender_tag);
    status->MPI_TAG = mca_pml_ucxdt_tag_tag(info->sender_tag);
    status->_ucount = (size_t)info->length;
    status->_cancelled = 0;
}

static int m_iprobe(int src, int tag, ompi_communicator_t *comm, int *matched, ompi_status_public_t *status) {
    ucp_tag_t utag, mask;
    ucxdt_tag_recv_info_t info;
    mca_pml_ucxdt_recv_tag(src, tag, comm, &utag, &mask);
    *matched = ucxdt_tag_probe_nb(ompi_pml_ucxdt.worker, utag, mask, 0, &info) != NULL;
    if (*matched) probe_status(&info, status);
    else opal_progress();  /* a loop of MPI_Iprobe must make progress (§3.8.1) */
    return OMPI_SUCCESS;
}

static int m_probe(int src, int tag, ompi_communicator_t *comm, ompi_status_public_t *status) {
    int matched = 0;
    int rc;
    while ((rc = m_iprobe(src, tag, comm, &matched, status)) == OMPI_SUCCESS && !matched) {}
    return rc;
}

static int m_improbe(int src, int tag, ompi_communicator_t *comm, int *matched, ompi_message_t **message,
                   ompi_status_public_t *status) {
    ucp_tag_t utag, mask;
    ucxdt_tag_recv_info_t info;
    mca_pml_ucxdt_recv_tag(src, tag, comm, &utag, &mask);
    ucxdt_tag_message_h m = ucxdt_tag_probe_nb(ompi_pml_ucxdt.worker, utag, mask, 1, &info);
    *matched = m != NULL;
    if (!m) {
        opal_progress();
        return OMPI_SUCCESS;
    }
    ompi_message_t *msg = ompi_message_alloc();
    if (!msg) return OMPI_ERR_OUT_OF_RESOURCE;  /* the message stays removed: not expected to happen */
    msg->comm = comm;
    msg->req_ptr = m;
    msg->peer = mca_pml_ucxdt_tag_source(info.sender_tag);
    msg->count = (size_t)info.length;
    *message = msg;
    probe_status(&info, status);
    return OMPI_SUCCESS;
}

static int m_mprobe(int src, int tag, ompi_communicator_t *comm, ompi_message_t **message, ompi_status_public_t *status) {
    int matched = 0;
    int rc;
    while ((rc = m_improbe(src, tag, comm, &matched, message, status)) == OMPI_SUCCESS && !matched) {}
    return rc;
}

static int m_imrecv(void *buf, size_t count, ompi_datatype_t *dt, ompi_message_t **message, ompi_request_t **request) {
    ompi_message_t *msg = *message;
    mca_pml_ucxdt_request_t *r = mca_pml_ucxdt_request_make(PML_UCXDT_RECV, buf, count, dt, msg->peer, MPI_ANY_TAG,
                                  MCA_PML_BASE_SEND_STANDARD, msg->comm, false);
    if (!r) return OMPI_ERR_OUT_OF_RESOURCE;
    const int rc = mca_pml_ucxdt_request_post_matched(r, msg->req_ptr);
    if (rc != OMPI_SUCCESS) {  /* the message stays for another matched receive */
        mca_pml_ucxdt_request_release(r);
        return rc;
    }
    ompi_message_return(msg);
    *message = MPI_MESSAGE_NULL;
    *request = &r->ompi;
    return OMPI_SUCCESS;
}

static int m_mrecv(void *buf, size_t count, ompi_datatype_t *dt, ompi_message_t **message, ompi_status_public_t *status) {
    ompi_request_t *r;
    const int rc = m_imrecv(buf, count, dt, message, &r);
    return rc != OMPI_SUCCESS ? rc : wait_and_free(r, status);
}

static int m_add_procs(struct ompi_proc_t **procs, size_t nprocs) {
    (void)procs, (void)nprocs;  /* endpoints are made on first use (pml_ucxdt_peer.c) */
    return OMPI_SUCCESS;
}
static int m_del_procs(struct ompi_proc_t **procs, size_t nprocs) {
    (void)procs, (void)nprocs;  /* closed together at finalize (pml_ucxdt_component.c) */
    return OMPI_SUCCESS;
}
static int m_enable(bool on) { (void)on; return OMPI_SUCCESS; }
static int m_add_comm(ompi_communicator_t *comm) {
    /* The tag holds the communicator's index and the ranks in 20 bits each. */
    if (comm->c_index > PML_UCXDT_MAX_CONTEXT || ompi_comm_size(comm) > PML_UCXDT_MAX_RANK + 1 ||
        ompi_comm_remote_size(comm) > PML_UCXDT_MAX_RANK + 1)
        return OMPI_ERR_OUT_OF_RESOURCE;
    return OMPI_SUCCESS;
}
static int m_del_comm(ompi_communicator_t *comm) { (void)comm; return OMPI_SUCCESS; }
static int m_dump(ompi_communicator_t *comm, int verbose) {
    (void)comm, (void)verbose;
    ucxdt_worker_print_config(ompi_pml_ucxdt.worker, stderr);
    return OMPI_SUCCESS;
}

mca_pml_base_module_t mca_pml_ucxdt_module = {
    .pml_add_procs = m_add_procs,
    .pml_del_procs = m_del_procs,
    .pml_enable = m_enable,
    .pml_progress = NULL,  /* registered with opal_progress by the component */
    .pml_add_comm = m_add_comm,
    .pml_del_comm = m_del_comm,
    .pml_revoke_comm = NULL,
    .pml_irecv_init = m_irecv_init,
    .pml_irecv = m_irecv,
    .pml_recv = m_recv,
    .pml_isend_init = m_isend_init,
    .pml_isend = m_isend,
    .pml_send = m_send,
    .pml_iprobe = m_iprobe,
    .pml_probe = m_probe,
    .pml_start = mca_pml_ucxdt_start,
    .pml_improbe = m_improbe,
    .pml_mprobe = m_mprobe,
    .pml_imrecv = m_imrecv,
    .pml_mrecv = m_mrecv,
    .pml_dump = m_dump,
    .pml_max_contextid = PML_UCXDT_MAX_CONTEXT,
    .pml_max_tag = PML_UCXDT_MAX_TAG,
    .pml_flags = 0,
    .pml_get_transports = NULL,
};
