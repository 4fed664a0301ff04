/*
 * pml ucxdt: Open MPI 5's point-to-point layer (PML, ompi/mca/pml/pml.h) on ucxdt's rendezvous
 * worker (ucxdt_ucp.h), so that every MPI call that moves messages, collectives and Fortran
 * included, moves derived datatypes through ucxdt. One UCP context, UCP worker and ucxdt worker
 * per process; an endpoint per peer, made on first use from the worker address the peer
 * published in the modex.
 *
 * Built out of Open MPI's tree as mca_pml_ucxdt.so against an Open MPI 5.0.7 installed with
 * --with-devel-headers (scripts/setup-deps --ompi5). Selected only when asked for:
 * `mpirun --mca pml ucxdt`.
 */
#ifndef PML_UCXDT_H
#define PML_UCXDT_H

#include "ompi_config.h"
#include "ompi/communicator/communicator.h"
#include "ompi/datatype/ompi_datatype.h"
#include "ompi/mca/pml/pml.h"
#include "ompi/message/message.h"
#include "ompi/proc/proc.h"
#include "ompi/request/request.h"
#include "opal/class/opal_free_list.h"
#include "opal/mca/threads/mutex.h"

#include <ucp/api/ucp.h>
#include <ucxdt/ucxdt.h>
#include <ucxdt/ucxdt_ucp.h>

#include "common_ucxdt.h"

BEGIN_C_DECLS

/* ---- The tag: an MPI message's (communicator, source, tag) in UCP's 64 bits --------------------
 * bits  0-19: the communicator's index (c_index, global under Open MPI 5's CID algorithm when
 *             the PML does not claim extended CIDs);
 * bits 20-39: the sender's rank in the communicator (in its local group for intercommunicators,
 *             which is the receiver's remote group);
 * bit  40:    set by ucxdt on a plain message (ucxdt_worker_params_t::plain_tag_bit: contiguous
 *             host data as UCP's own message), never by the PML;
 * bits 41-63: the MPI tag, two's complement. Collectives use negative tags, which
 *             MPI_ANY_TAG must not match (MPI-4.1 §3.2.3 gives users only 0..MPI_TAG_UB), so an
 *             MPI_ANY_TAG receive still matches bit 63, the tag's sign, against 0. Open MPI's
 *             negative tags reach -INT_MAX (libnbc counts down one per nonblocking collective;
 *             neighbourhood and hcoll tags start below -INT_MAX/2): they are folded into the
 *             field's negative half, 2^22 values, so that none wraps into the users' range. */
#define PML_UCXDT_CID_BITS 20
#define PML_UCXDT_RANK_BITS 20
#define PML_UCXDT_TAG_BITS 23
#define PML_UCXDT_RANK_SHIFT PML_UCXDT_CID_BITS
#define PML_UCXDT_PLAIN_BIT (UINT64_C(1) << (PML_UCXDT_CID_BITS + PML_UCXDT_RANK_BITS))
#define PML_UCXDT_TAG_SHIFT (PML_UCXDT_CID_BITS + PML_UCXDT_RANK_BITS + 1)
#define PML_UCXDT_CID_MASK ((UINT64_C(1) << PML_UCXDT_CID_BITS) - 1)
#define PML_UCXDT_RANK_MASK (((UINT64_C(1) << PML_UCXDT_RANK_BITS) - 1) << PML_UCXDT_RANK_SHIFT)
#define PML_UCXDT_TAG_MASK (~UINT64_C(0) << PML_UCXDT_TAG_SHIFT)
#define PML_UCXDT_TAG_SIGN (UINT64_C(1) << 63)
#define PML_UCXDT_MAX_TAG ((1 << (PML_UCXDT_TAG_BITS - 1)) - 1)
#define PML_UCXDT_MAX_CONTEXT ((1u << PML_UCXDT_CID_BITS) - 1)
#define PML_UCXDT_MAX_RANK ((1 << PML_UCXDT_RANK_BITS) - 1)

/* The tag field's value of an MPI tag: itself when it fits, a negative tag folded (above). */
static inline uint64_t mca_pml_ucxdt_tag_field(int tag) {
    const int64_t t = tag >= 0 ? tag : -1 - (-1 - (int64_t)tag) % ((int64_t)PML_UCXDT_MAX_TAG + 1);
    return (uint64_t)t << PML_UCXDT_TAG_SHIFT;
}

static inline ucp_tag_t mca_pml_ucxdt_send_tag(int tag, int my_rank, const ompi_communicator_t *comm) {
    return mca_pml_ucxdt_tag_field(tag) |
           ((uint64_t)my_rank << PML_UCXDT_RANK_SHIFT) | (uint64_t)comm->c_index;
}

/* The tag and mask of a receive or probe of (src, tag) on comm. */
static inline void mca_pml_ucxdt_recv_tag(int src, int tag, const ompi_communicator_t *comm,
                                      ucp_tag_t *utag, ucp_tag_t *mask) {
    *utag = (uint64_t)comm->c_index;
    *mask = PML_UCXDT_CID_MASK;
    if (src != MPI_ANY_SOURCE) *utag |= (uint64_t)src << PML_UCXDT_RANK_SHIFT, *mask |= PML_UCXDT_RANK_MASK;
    if (tag != MPI_ANY_TAG) *utag |= mca_pml_ucxdt_tag_field(tag), *mask |= PML_UCXDT_TAG_MASK;
    else *mask |= PML_UCXDT_TAG_SIGN;
}

static inline int mca_pml_ucxdt_tag_source(ucp_tag_t t) {
    return (int)((t & PML_UCXDT_RANK_MASK) >> PML_UCXDT_RANK_SHIFT);
}
static inline int mca_pml_ucxdt_tag_tag(ucp_tag_t t) { return (int)((int64_t)t >> PML_UCXDT_TAG_SHIFT); }

/* ---- The process's state ------------------------------------------------------------------- */
typedef struct {
    ucp_context_h context;
    ucp_worker_h ucp_worker;
    ucxdt_worker_h worker;
    ucp_address_t *address;     /* published in the modex */
    size_t address_length;
    struct mca_pml_ucxdt_peer *peers;  /* every peer connected, of any job (pml_ucxdt_peer.c) */
    /* Under MPI_THREAD_MULTIPLE (threads). Lock order: `lock`, then the ucxdt worker's lock
     * (and UCP's under it); `finished_lock` is a leaf. ucxdt calls back under its worker lock,
     * so a callback takes no PML lock and calls no Open MPI code: it queues its request on
     * `finished`, which mca_pml_ucxdt_progress empties once ucxdt_worker_progress has returned. */
    bool threads;
    opal_recursive_mutex_t lock;   /* the peer table and the connecting of a peer, the sweep of
                                      failed peers' receives, the type cache, and each
                                      request's op, done and free_called */
    opal_mutex_t finished_lock;
    struct mca_pml_ucxdt_request *finished, *finished_last;  /* ended operations, oldest first */
    opal_free_list_t requests;     /* mca_pml_ucxdt_request_t, reused: a malloc and a free per message cost
                                      as much as UCP's own work on a small one */
    mca_common_ucxdt_types_t types;  /* each datatype's ucxdt type, published in its pml_data */
    int priority;
    int verbose;
    bool peer_failure;             /* UCP's peer error handling on endpoints (MCA pml_ucxdt_peer_failure) */
    bool peer_failed;              /* a peer failed since the last mca_pml_ucxdt_peers_fail_receives */
    bool any_peer_failed;          /* a peer has failed: receives check their source at post */
    bool check_signature;          /* receives check the type signature (MCA pml_ucxdt_check_signature) */
} mca_pml_ucxdt_state_t;

extern mca_pml_ucxdt_state_t ompi_pml_ucxdt;
extern mca_pml_base_module_t mca_pml_ucxdt_module;
OMPI_DECLSPEC extern mca_pml_base_component_2_1_0_t mca_pml_ucxdt_component;

typedef struct mca_pml_ucxdt_peer {
    ucp_ep_h ucp_ep;
    ucp_ep_h watch_ep;  /* a process of this node: reports its failure (pml_ucxdt_peer.c) */
    ucxdt_ep_h ep;
    int failed;  /* UCP reported the endpoint failed: MPI_ERR_PROC_FAILED from then on */
    ompi_proc_t *proc;            /* whose proc_endpoints[OMPI_PROC_ENDPOINT_TAG_PML] points here */
    struct mca_pml_ucxdt_peer *next;  /* in ompi_pml_ucxdt.peers */
} mca_pml_ucxdt_peer_t;

/* A ucxdt status as an MPI error class (common_ucxdt_error.c). */
static inline int mca_pml_ucxdt_mpi_error(ucxdt_status_t st) { return mca_common_ucxdt_mpi_error(st, "pml ucxdt"); }

/* pml_ucxdt_peer.c: the ucxdt endpoint of rank's process on comm, connected on first use. */
int mca_pml_ucxdt_peer_ep(ompi_communicator_t *comm, int rank, ucxdt_ep_h *ep);
void mca_pml_ucxdt_peers_close(void);
/* Ends with MPI_ERR_PROC_FAILED the receives posted for peers that failed since the last call
 * (mca_pml_ucxdt_progress); returns how many peers. */
int mca_pml_ucxdt_peers_fail_receives(void);
/* Whether UCP reported rank's process on comm failed. */
bool mca_pml_ucxdt_peer_has_failed(ompi_communicator_t *comm, int rank);

/* The committed ucxdt type of an Open MPI datatype, imported once and cached
 * (common_ucxdt_datatype.c); *packed: its messages go as packed data (a type built inside Open
 * MPI, from its description). */
static inline int mca_pml_ucxdt_type(ompi_datatype_t *dt, ucxdt_type_t *type, bool *packed) {
    return mca_common_ucxdt_type(&ompi_pml_ucxdt.types, dt, type, packed);
}

/* pml_ucxdt_request.c */
typedef enum { PML_UCXDT_SEND, PML_UCXDT_RECV } mca_pml_ucxdt_kind_t;
typedef struct mca_pml_ucxdt_request {
    ompi_request_t ompi;
    mca_pml_ucxdt_kind_t kind;
    /* Under ompi_pml_ucxdt.lock: */
    void *op;           /* the running ucxdt request, NULL when none; freed by request_finish */
    bool done;          /* no operation running: none posted yet, or the last one finished
                           (request_finish), maybe before its post returned */
    bool free_called;   /* MPI_Request_free before completion: released when it completes */
    /* Set by ucxdt's callback for request_finish: */
    void *ended_op;
    struct mca_pml_ucxdt_request *next_finished;
    void *bsend_space;  /* a buffered send's packed copy in the attached buffer, returned at the end */
    /* What a persistent request posts at each start. */
    void *buf;
    size_t count;
    ompi_datatype_t *dt;
    int peer, tag;
    mca_pml_base_send_mode_t mode;
    ompi_communicator_t *comm;
} mca_pml_ucxdt_request_t;
OBJ_CLASS_DECLARATION(mca_pml_ucxdt_request_t);

mca_pml_ucxdt_request_t *mca_pml_ucxdt_request_new(mca_pml_ucxdt_kind_t kind, ompi_communicator_t *comm, bool persistent);
/* A new request with its operation's arguments; NULL when the free list is empty. */
mca_pml_ucxdt_request_t *mca_pml_ucxdt_request_make(mca_pml_ucxdt_kind_t kind, const void *buf, size_t count,
                                                  ompi_datatype_t *dt, int peer, int tag,
                                                  mca_pml_base_send_mode_t mode, ompi_communicator_t *comm,
                                                  bool persistent);
/* Returns r to the free list (its operation ended or never started). */
void mca_pml_ucxdt_request_release(mca_pml_ucxdt_request_t *r);
int mca_pml_ucxdt_requests_init(void);
void mca_pml_ucxdt_requests_fini(void);
/* Posts the request's operation (its fields say which); OMPI_SUCCESS or an MPI error. With
 * at_once, a nonpersistent send that ended in its post sets *at_once and leaves r to the
 * caller, which hands out ompi_request_empty instead (as pml ucx does its completed request);
 * else it completes r. The caller reads nothing of r after a post that did not: another thread
 * may have completed and freed it. */
int mca_pml_ucxdt_request_post(mca_pml_ucxdt_request_t *r, bool *at_once);
/* Posts a receive of a message taken by a matched probe (MPI_Imrecv). */
int mca_pml_ucxdt_request_post_matched(mca_pml_ucxdt_request_t *r, ucxdt_tag_message_h message);
/* Completes persistent request r at its start with err: a buffered send (MPI_SUCCESS), or an
 * operation that could not be posted (its error, which MPI_Wait returns and MPI_Waitall puts
 * in its status). */
void mca_pml_ucxdt_request_end_at_start(mca_pml_ucxdt_request_t *r, int err);
/* Finishes the requests whose operations ucxdt ended under its lock (MPI_THREAD_MULTIPLE);
 * returns how many. Called by mca_pml_ucxdt_progress, never under the worker lock. */
int mca_pml_ucxdt_requests_finish_queued(void);

/* pml_ucxdt_bsend.c: a buffered send (MPI_Bsend's semantics), complete when it returns
 * OMPI_SUCCESS. */
int mca_pml_ucxdt_bsend(const void *buf, size_t count, ompi_datatype_t *dt, int dst, int tag, ompi_communicator_t *comm);

/* pml_ucxdt_start.c: MPI_Start and MPI_Startall of the PML's persistent requests. */
int mca_pml_ucxdt_start(size_t count, ompi_request_t **requests);

/* pml_ucxdt_component.c: the PML's progress, registered with opal_progress. */
int mca_pml_ucxdt_progress(void);

END_C_DECLS

#endif /* PML_UCXDT_H */
