/*
 * ucxdt over UCP: tag-matched, nonblocking sends and receives of (buffer, count, type) with a
 * datatype-aware rendezvous (Wu et al., HPDC'16, section 4.1, moved from Open MPI's BTL onto
 * UCP). The user keeps owning the UCP context, worker and endpoints, as MPI libraries do; a
 * ucxdt worker is bound to a ucp_worker_h and a ucxdt endpoint to a ucp_ep_h.
 *
 * Matching: the first message of every transfer (eager data or the rendezvous RTS) is sent by
 * ucp_tag_send_nbx with the user's tag and matched by ucp_tag_recv_nbx with the user's tag and
 * mask, so order and matching semantics are UCP's (MPI-4.1 3.5 non-overtaking between a pair of
 * endpoints), and an application may mix these calls with its own UCP tag traffic on the same
 * worker as long as the tags do not collide. A message that ucxdt_tag_probe_nb has taken out of
 * UCP matches before UCP's, in the order it arrived. With plain messages
 * (ucxdt_worker_params_t::plain_tag_bit) the worker matches every message itself instead, by the
 * same rules: it takes each out of UCP in arrival order and gives it to the first posted receive
 * that matches it, or keeps it for the next. The tagged messages of one endpoint go in the order
 * of the calls: a send whose first message waits (for its GPU pack, or for staging slots, which
 * sends take in call order) holds back those of later sends on that endpoint.
 *
 * Protocol: a message whose packed size is at most the eager threshold is packed into the
 * tagged message itself: a host layout by UCP, which calls ucxdt to pack it straight into its
 * send buffer (a UCP generic datatype of the header and the packed stream), and whose receive
 * unpacks it straight out of UCP's buffer; a GPU layout by the worker's stream of its GPU into
 * page-locked memory, the message going when the pack is done (its receive unpacks the same way
 * and completes when the GPU has). An eager send that UCP completes at once returns NULL. A larger one sends an RTS carrying the packed size, the type
 * signature, whether the sender's layout is contiguous, and its memory type. Once the
 * receiver's RTR names its receive, the sender sends the message in fragments, each a UCP
 * active message whose data UCP moves by eager or by its own rendezvous, whichever suits the
 * transport: straight from its buffer when that is contiguous host memory (UCXDT_PIPELINE_DEPTH
 * fragments in flight per request), else from the host staging slots it packs them into
 * (UCXDT_PIPELINE_DEPTH slots per request, refilled as UCP completes their sends). The receiver
 * receives each (ucp_am_recv_data_nbx) into its staging, or straight into its buffer when
 * contiguous, and unpacks it. On one node a non-contiguous sender's RTS also carries the rkey
 * of its staging, which UCP allocates in shared memory where a shared-memory transport is
 * enabled; a receiver that can map it (ucp_rkey_ptr) says so in its RTR, and then unpacks each
 * fragment straight from the sender's slot once READY announces it, and ACKs it (no copy by
 * the CPU between the processes: UCXDT_HOST_SHM). UCXDT_HOST_FRAGS=get keeps the pipeline of Wu et al. instead: the
 * RTS carries an rkey (ucp_mem_map + ucp_rkey_pack) of the contiguous buffer, or of the staging
 * ring and the slots of the first fragments; the sender announces later ones (READY), and the
 * receiver GETs each (ucp_get_nbx) and acknowledges it. (UCX 1.13's tcp has no GET and emulates
 * it with active messages at about a quarter of its tag bandwidth.) An ATS completes the
 * sender. GPU layouts pack into and
 * unpack from the page-locked slots on a stream of the worker, so the CPU goes on driving UCP
 * meanwhile.
 *
 * GPU layouts (device or managed memory) are never handed to UCP's RMA: UCP 1.13 GETs device
 * memory only through emulation that reads it with the CPU. Between processes that UCX's own
 * cuda_ipc transport would join, a sender whose layout is in device memory uses CUDA IPC
 * instead: both contexts have cuda_ipc (UCX_TLS), the HELLO shows one node as UCX identifies it
 * (ucs_get_system_id(), the boot ID: network namespaces and containers of one host are one node),
 * and where UCP reports an endpoint's transports (UCX >= 1.14) one of them is cuda_ipc. Then
 * its RTS carries an IPC handle of its contiguous buffer, which the receiver copies or unpacks
 * straight from, or of device staging slots. A non-contiguous sender
 * waits for the receiver's RTR: a contiguous GPU receiver passes its own buffer, which the
 * sender packs straight into; a strided GPU receiver whose runs have the length of the
 * sender's strided runs passes its buffer and layout, and the sender copies each run into it
 * (one kernel or 2-D copy, no staging); a GPU receiver whose layout is the sender's block list
 * (equal layout hashes: the same blocks at the same displacements, however the types were
 * built) passes its buffer, and the sender copies each byte to its own displacement there (one
 * kernel, no staging); any other non-contiguous GPU receiver grants slots of
 * its own device staging, which the sender packs fragments into over the link and the receiver unpacks from
 * locally (waiting for a slot when all are in use); a receiver in host memory asks for
 * fragments that the sender packs into its own device staging and the receiver unpacks from
 * there. Packs and unpacks of different fragments overlap. Strided layouts cross the link
 * through the 2-D copy engine where its per-row cost allows. IPC mappings are cached per peer
 * (exports by the driver's buffer ID, so a freed and reallocated buffer is exported anew).
 * Elsewhere, or with UCXDT_CUDA_IPC=n, GPU layouts are packed by the GPU into page-locked host
 * staging (zero copy; its pages on the GPU's NUMA nodes, by hwloc) and unpacked from it.
 * Memory from cudaMallocAsync pools has no legacy IPC handle and takes the host-staged path.
 *
 * GPU buffers and the application's streams (the CUDA-aware MPI convention, as Open MPI and
 * UCX keep it): a send's or receive's device buffer must be ready when the call is made. Work
 * the application enqueued on its streams (kernels, cudaMemcpyAsync) must have completed; a
 * synchronous copy (cudaMemcpy, cudaMemset) need not have. Such a copy may return before its
 * bytes land in device memory (CUDA runtime guide, "API synchronization behavior"), and a peer's
 * GPU reading or writing the buffer over CUDA IPC is not ordered after it; ucxdt therefore sets
 * CU_POINTER_ATTRIBUTE_SYNC_MEMOPS on each allocation the first time it exports one, which waits
 * for those copies and makes later ones on that allocation complete before they return.
 *
 * Requirements: the UCP context needs UCP_FEATURE_TAG | UCP_FEATURE_AM | UCP_FEATURE_RMA, and
 * both processes must create a ucxdt endpoint to each other before a rendezvous between them
 * completes (the endpoint introduces this worker to the peer). The ucxdt worker sets a UCP
 * active-message handler with id UCXDT_UCP_AM_ID on the worker.
 *
 * Progress: explicit. ucxdt_worker_progress drives ucp_worker_progress and the protocol.
 *
 * Threads: as the UCP worker's thread mode (ucp_worker_query). Over a UCS_THREAD_MODE_MULTI
 * worker (MPI_THREAD_MULTIPLE), any thread may call every function of a ucxdt worker, its
 * endpoints and requests at any time: each takes the worker's lock, and completion callbacks
 * run inside ucxdt_worker_progress under it (they may call the API). UCP must then be driven
 * through ucxdt_worker_progress only, not ucp_worker_progress from another thread.
 * ucxdt_worker_create and ucxdt_worker_destroy are not concurrent with other calls on the
 * worker. Over a single-threaded UCP worker (SINGLE, SERIALIZED), one thread at a time, and no
 * lock is taken. Different workers may always be used concurrently.
 *
 * Errors: ucxdt statuses (ucxdt.h). A request completes with UCXDT_ERR_TYPE_MISMATCH on both
 * sides when the signatures differ, UCXDT_ERR_TRUNCATED on both sides when the message is longer
 * than the receive (nothing is written to the receive buffer in either case),
 * UCXDT_ERR_CANCELED when a posted receive is canceled, UCXDT_ERR_UCX when UCP fails.
 *
 * Peer failure: every UCP endpoint that a ucxdt endpoint is bound to must be created with
 * ucp_ep_params_t::err_mode = UCP_ERR_HANDLING_MODE_PEER and an err_handler that calls
 * ucxdt_worker_handle_ep_error; ucxdt_ep_params_set_err_handler sets both. Then every request
 * that depends on a failed peer completes with UCXDT_ERR_PEER_FAILURE as soon as UCP reports the
 * failure (a UCP operation that fails with a connection error ends its request the same way),
 * and the worker goes on serving other peers. A receive that has not matched yet stays posted,
 * since another peer may still send it: cancel it (ucxdt_request_cancel) when none will. How
 * soon UCP notices depends on the transport (a closed TCP connection at once, shared memory
 * through UCX_KEEPALIVE_INTERVAL). Otherwise: in UCP's default UCP_ERR_HANDLING_MODE_NONE, UCP
 * reports nothing, and a request whose peer died may wait forever (UCP also calls
 * UCP_EP_CLOSE_FLAG_FORCE undefined unless both sides use the peer mode); with an error handler
 * that does not tell the ucxdt worker, a request waiting for a protocol message of the peer (an
 * RTR, a fragment, the ATS) waits forever. Close such endpoints (ucp_ep_close_nbx) before
 * ucxdt_worker_destroy: UCP may call their handler until then.
 *
 * Transports that cannot report a failure (CMA) are left out of peer-mode endpoints. To keep
 * them, bind the ucxdt endpoint to a UCP endpoint in UCP_ERR_HANDLING_MODE_NONE that has an
 * err_handler of its own (UCP then hands it the transport's errors instead of aborting the
 * process), and create a second, idle endpoint to the same worker in the peer mode, whose
 * handler calls ucxdt_worker_handle_ep_error for the first: UCP's keepalive then finds the
 * failure. Operations UCP was running on the first endpoint end with the transport's status
 * (UCXDT_ERR_UCX); pml ucxdt does this for the processes of its node (src/pml_ucxdt/peers.c).
 *
 * Configuration (environment, read when a worker is created; parameters override it):
 *   UCXDT_EAGER_THRESHOLD  bytes packed into the tagged message (default 8192 for GPU layouts,
 *                          131072 for host layouts; when set, the value of both)
 *   UCXDT_HOST_EAGER_THRESHOLD  the same for host layouts alone. Every posted receive accepts an
 *                          eager message up to the larger of the two; both sides should agree.
 *   UCXDT_FRAG_SIZE        bytes per rendezvous fragment (default 1 MiB); a host-staged
 *                          message shorter than that is one fragment, in a staging slot of
 *                          the smallest size that holds it (the fragment size halved, down to
 *                          16 KiB)
 *   UCXDT_HOST_FRAG_SIZE   the largest fragment of a host layout's staged message (default
 *                          128 KiB; rounded up to a staging slot's size, at most
 *                          UCXDT_FRAG_SIZE): the CPU packs one fragment while the peer unpacks
 *                          the one before, where a whole 1 MiB fragment left one copy after the
 *                          other (docs/performance-log.md, runs 45 and 46)
 *   UCXDT_PIPELINE_DEPTH   fragments in flight per request (default 4)
 *   UCXDT_STAGING_SLOTS    host staging slots of UCXDT_FRAG_SIZE bytes per worker and role
 *                          (default 16), each split into smaller slots as messages need
 *   UCXDT_WIRE_POOL_SIZE   bytes of page-locked memory that the tagged messages of GPU
 *                          layouts may take per worker, for sends and for receives each
 *                          (default 16 MiB; at least UCXDT_STAGING_SLOTS messages either way)
 *   UCXDT_CUDA_IPC         y/n: the CUDA IPC path between GPU layouts of one node (default y;
 *                          off, whatever it says, in a UCP context without UCX's cuda_ipc)
 *   UCXDT_IPC_FRAG_SIZE    bytes of the largest IPC fragment (default 32 MiB); a message of P
 *                          bytes is cut into about sqrt(P / 10 MB) fragments (one below 22 MB),
 *                          which balances overlap against per-fragment costs (rndv_ipc.cpp).
 *                          The worker's device staging is 2 x UCXDT_PIPELINE_DEPTH of these per
 *                          GPU, allocated on the first non-contiguous GPU transfer over CUDA IPC.
 *   UCXDT_IPC_SAME_LAYOUT_COPY y/n: a block-list sender copies byte for byte into a receive
 *                          layout of the same block list (default y)
 *   UCXDT_IPC_STRIDED_COPY y/n: a strided sender copies run by run into a strided receive
 *                          layout of the same run length (default y)
 *   UCXDT_IPC_PULL_SIZE    up to this many packed bytes, that run-by-run copy, and the
 *                          copy of a block list into the same block list, is the receiver's,
 *                          from the sender's layout, which saves the receiver's reply before it
 *                          (default 1048576; 0: never; both sides' setting must allow it). A
 *                          contiguous message into a contiguous GPU receive is the receiver's
 *                          copy up to this size (its setting) and the sender's above it: the
 *                          copy engines write a peer GPU faster than they read one
 *   UCXDT_IPC_EAGER_THRESHOLD  a GPU message that the receiver could pull (a strided or
 *                          block-list layout, or a contiguous buffer that CUDA IPC can export,
 *                          up to UCXDT_IPC_PULL_SIZE, to a peer on the CUDA IPC path) goes
 *                          eager only up to this many bytes, below the eager
 *                          threshold too (default 0: never, because the pull's one copy beat
 *                          eager's pack and unpack from 256 B; a receive in host memory, or of
 *                          another layout, then takes the rendezvous without the pull)
 *   UCXDT_GPU_BATCH        GPU operations on one GPU (packs and unpacks of host-staged or eager
 *                          messages, pulls, pushes, one-sided copies of ucxdt_rma.h) issued
 *                          between two progress calls that share one event, and one kernel
 *                          launch per kernel kind (strided, block list), up to 8 copies each;
 *                          default 8; 1: each operation its own launch and event. Such work
 *                          starts at the next ucxdt_worker_progress (or when that many wait),
 *                          not in the call that issued it
 *   UCXDT_GPU_IN_FLIGHT    launches of the rendezvous on one GPU's stream that may run before
 *                          its next host-staged kernels (packs into and unpacks out of
 *                          page-locked memory) wait: they then join one launch once one of
 *                          those ends (default 1; 0: never wait). Under load a launch thus
 *                          takes every message that came while the GPU was busy; an idle stream
 *                          launches at once. Copies by the copy engine and CUDA IPC pulls never
 *                          wait
 *   UCXDT_GPU_STREAMS      streams per GPU for the rendezvous' GPU work (default 8, 1-64)
 *   UCXDT_GPU_STREAM_SPLIT a message of this many packed bytes or more runs its GPU work on the
 *                          next of those streams in turn, so that its kernel starts while the
 *                          one before it drains; smaller messages share the first stream and
 *                          its batched launches (default 3145728; 0: every message). One-sided
 *                          operations of ucxdt_rma.h keep to the first stream
 *   UCXDT_HOST_FRAGS       am|get: how the fragments of a sender outside CUDA IPC travel, as
 *                          active messages or as the receiver's GETs (default am; the
 *                          sender's setting decides)
 *   UCXDT_HOST_SHM y/n:    with am, a receiver on the sender's node unpacks from the sender's
 *                          staging in place when it can map it (default y; both sides' setting
 *                          must allow it). A mapped region stays mapped, and page-locked for
 *                          GPU receives, until the sending worker fails or this one is destroyed
 *   UCXDT_PLAIN_MESSAGES y/n: with ucxdt_worker_params_t::plain_tag_bit set, n sends every
 *                          message in ucxdt's own form and leaves matching to UCP (default y)
 *   UCXDT_TIMELINE         a path prefix: each request's protocol steps (posted, RTS or eager
 *                          sent, received, matched, GPU work issued, launched and done, ATS sent
 *                          and seen, complete) are timed on the steady clock and written when the
 *                          worker is destroyed to <prefix>.<pid>.<worker id>.csv (default unset:
 *                          off); scripts/timeline-report reads a pair's files. For profiling:
 *                          a clock read and a store per step, up to 4 Mi steps per worker
 * Eager messages and RTSs of GPU layouts go in page-locked buffers, which the GPU packs into and
 * unpacks from directly on the worker's stream: UCXDT_STAGING_SLOTS more each time all are in
 * use, up to UCXDT_WIRE_POOL_SIZE; past it a message is packed or unpacked synchronously through
 * pageable memory. A receive holds a buffer of the larger eager threshold, a send one of its own.
 * ucxdt_worker_print_config prints the values in force.
 */
#ifndef UCXDT_UCXDT_UCP_H
#define UCXDT_UCXDT_UCP_H

#include <ucxdt/ucxdt.h>

#include <stdio.h>
#include <ucp/api/ucp.h>

#ifdef __cplusplus
extern "C" {
#endif

/** UCP active-message id the ucxdt worker uses for its control messages. */
#define UCXDT_UCP_AM_ID 0x7d7

typedef struct ucxdt_worker *ucxdt_worker_h;
typedef struct ucxdt_ep *ucxdt_ep_h;

/** A request handle, an error status, or NULL (completed at once), as UCP's ucs_status_ptr_t. */
typedef void *ucxdt_status_ptr_t;
#define UCXDT_PTR_IS_ERR(_p) ((uintptr_t)(_p) >= (uintptr_t)(intptr_t)UCXDT_ERR_LAST)
#define UCXDT_PTR_IS_PTR(_p) (((uintptr_t)(_p) - 1) < ((uintptr_t)(intptr_t)UCXDT_ERR_LAST - 1))
#define UCXDT_PTR_STATUS(_p) ((ucxdt_status_t)(intptr_t)(_p))

enum ucxdt_worker_params_field {
    UCXDT_WORKER_PARAM_FIELD_UCP_WORKER      = 1u << 0,
    UCXDT_WORKER_PARAM_FIELD_EAGER_THRESHOLD = 1u << 1,
    UCXDT_WORKER_PARAM_FIELD_FRAG_SIZE       = 1u << 2,
    UCXDT_WORKER_PARAM_FIELD_PIPELINE_DEPTH  = 1u << 3,
    UCXDT_WORKER_PARAM_FIELD_STAGING_SLOTS   = 1u << 4,
    UCXDT_WORKER_PARAM_FIELD_UCP_CONTEXT     = 1u << 5,
    UCXDT_WORKER_PARAM_FIELD_PLAIN_TAG_BIT   = 1u << 6
};

typedef struct {
    uint64_t field_mask;       /**< UCXDT_WORKER_PARAM_FIELD_* of the fields set */
    ucp_worker_h ucp_worker;   /**< required */
    int64_t eager_threshold;   /**< bytes */
    int64_t frag_size;         /**< bytes, >= 4096 */
    int depth;                 /**< fragments in flight per request, >= 1 */
    int staging_slots;         /**< fragments of staging per worker and memory kind, >= depth */
    ucp_context_h ucp_context; /**< required: the context of ucp_worker (memory registration) */
    /** One bit of UCP's 64-bit tag (e.g. 1ull << 40) that the user's tags never set. With it,
     *  sends of contiguous host memory (a dense layout, not UCXDT_SEND_FLAG_SYNC) go as plain
     *  UCP tagged messages with that bit set: ucp_tag_send_nbx of the bytes, UCP's own eager and
     *  rendezvous protocols, no ucxdt header (so no type signature: the receive takes them as
     *  packed data, UCXDT_SEND_FLAG_PACKED). Since a receive cannot know which form its sender
     *  chose, the worker then matches every tagged message itself, in arrival order: it takes
     *  messages out of UCP with ucp_tag_probe_nb(remove) as progress finds them and receives
     *  each with ucp_tag_msg_recv_nbx, a plain one straight into a contiguous host receive
     *  (else through a host buffer, as an eager message). The worker must then own every
     *  tagged message of its ucp_worker_h (no tag traffic of the application's own on it).
     *  Unset, or UCXDT_PLAIN_MESSAGES=n in the environment: every message is ucxdt's, matched
     *  by UCP. Semantics as UCP's tag matching (MPI-4.1 §3.5, non-overtaking per sender);
     *  pml ucxdt sets it (docs/pml.md). Errors: not exactly one bit fails ucxdt_worker_create
     *  with UCXDT_ERR_INVALID_PARAM; so does a send whose tag sets the bit, and a receive's tag
     *  and mask ignore it. Threads: as the worker's other calls. */
    ucp_tag_t plain_tag_bit;
} ucxdt_worker_params_t;

enum ucxdt_ep_params_field { UCXDT_EP_PARAM_FIELD_UCP_EP = 1u << 0 };

typedef struct {
    uint64_t field_mask;
    ucp_ep_h ucp_ep;           /**< required: an endpoint of the worker's ucp_worker_h */
} ucxdt_ep_params_t;

/** Completion callbacks: `status` is the request's final status; `user_data` as given. */
typedef void (*ucxdt_send_callback_t)(void *request, ucxdt_status_t status, void *user_data);
/** `length`: bytes received (packed size), valid when status is UCXDT_OK. */
typedef void (*ucxdt_recv_callback_t)(void *request, ucxdt_status_t status, int64_t length,
                                      ucp_tag_t sender_tag, void *user_data);

enum ucxdt_request_param_field {
    UCXDT_REQUEST_PARAM_FIELD_CALLBACK  = 1u << 0,
    UCXDT_REQUEST_PARAM_FIELD_USER_DATA = 1u << 1,
    UCXDT_REQUEST_PARAM_FIELD_FLAGS     = 1u << 2
};

/** Flags of a send (ucxdt_request_param_t::flags). */
enum ucxdt_send_flags {
    /** Synchronous send (MPI_Ssend and MPI_Issend, MPI-4.1 §3.4; as UCP's
     *  ucp_tag_send_sync_nbx): the send completes only once a receive has matched its message,
     *  eager messages included (the receiver answers when a receive, not a probe, takes it);
     *  with UCXDT_ERR_TYPE_MISMATCH or UCXDT_ERR_TRUNCATED when that receive fails so. Rendezvous
     *  sends complete at the receiver's answer anyway. */
    UCXDT_SEND_FLAG_SYNC = 1u << 0,
    /** Packed data (MPI_PACKED, MPI-4.1 §5.2): the message carries no type signature, and a
     *  receive of any type takes it if it has room for its packed bytes. */
    UCXDT_SEND_FLAG_PACKED = 1u << 1
};

/** Flags of a receive (ucxdt_request_param_t::flags). */
enum ucxdt_recv_flags {
    /** Takes the message's packed bytes whatever its type signature (a receive of MPI_PACKED,
     *  MPI-4.1 §5.2: a message sent with any datatype may be received as packed data): the
     *  packed stream lands in the receive's layout as its bytes come, so the receive's type
     *  should be bytes (UCXDT_BYTE). Truncation is still an error. */
    UCXDT_RECV_FLAG_PACKED = 1u << 0
};

typedef struct {
    uint64_t field_mask;
    union {
        ucxdt_send_callback_t send;
        ucxdt_recv_callback_t recv;
    } cb;                      /**< called from ucxdt_worker_progress, not if completed at once */
    void *user_data;
    uint32_t flags;            /**< UCXDT_SEND_FLAG_* on tagged sends, UCXDT_RECV_FLAG_* on
                                    tagged receives; another bit, or any on another call (put,
                                    get, flush), fails the call with UCXDT_ERR_INVALID_PARAM */
} ucxdt_request_param_t;

/** Creates a ucxdt worker on params->ucp_worker. Errors: UCXDT_ERR_INVALID_PARAM (missing or
 *  out-of-range fields), UCXDT_ERR_UCX (the AM handler cannot be set), UCXDT_ERR_NO_MEMORY. */
UCXDT_API ucxdt_status_t ucxdt_worker_create(const ucxdt_worker_params_t *params,
                                             ucxdt_worker_h *worker);
/** Destroys the worker. Unmatched receives are cancelled; it then progresses for up to one
 *  second, so that outstanding requests, and peers' puts and gets arriving at its registered
 *  memory (ucxdt_rma.h), can end and be served; requests still outstanding then complete with
 *  UCXDT_ERR_CANCELED, and no handle of the worker's may be used after the call. Where UCP
 *  still holds an operation of such a request (a send to a peer that stopped progressing,
 *  which UCP cannot cancel), the request and the staging it uses stay allocated until UCP
 *  completes the operation: when the user closes the UCP endpoint (UCP then completes it with
 *  UCS_ERR_CANCELED) or progresses the ucp_worker_h. As with UCP, the user's buffers of such a
 *  send must stay valid until then. Not thread-safe with other calls on the worker. */
UCXDT_API void ucxdt_worker_destroy(ucxdt_worker_h worker);
/** Drives UCP and the protocol; returns nonzero if anything progressed. */
UCXDT_API unsigned ucxdt_worker_progress(ucxdt_worker_h worker);
/** Reports that UCP endpoint `ep` of the worker's ucp_worker_h failed, as UCP's error handler
 *  (ucp_ep_params_t::err_handler, with err_mode UCP_ERR_HANDLING_MODE_PEER) tells it; `status`
 *  is the handler's. May be called from that handler (ucxdt_ep_params_set_err_handler sets up
 *  one that does). In the next ucxdt_worker_progress every send on a ucxdt endpoint bound to
 *  `ep` and every matched receive from the worker behind `ep` completes with
 *  UCXDT_ERR_PEER_FAILURE once no UCP operation of its own is outstanding; their staging slots
 *  return to the pool, and nothing more is sent on `ep`. Receives not yet matched stay posted,
 *  and a later match of a message from that worker fails the same way. The user still closes
 *  `ep` (ucp_ep_close_nbx with UCP_EP_CLOSE_FLAG_FORCE), after destroying ucxdt endpoints bound
 *  to it. Other peers are not affected. */
UCXDT_API void ucxdt_worker_handle_ep_error(ucxdt_worker_h worker, ucp_ep_h ep, ucs_status_t status);
/** Fills the error handling of `params`, for a UCP endpoint of the worker's ucp_worker_h, as
 *  the section "Peer failure" above requires: adds UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE |
 *  UCP_EP_PARAM_FIELD_ERR_HANDLER to params->field_mask, sets err_mode to
 *  UCP_ERR_HANDLING_MODE_PEER and err_handler to a handler that calls
 *  ucxdt_worker_handle_ep_error(worker, ep, status) and then, when `cb` is not NULL,
 *  cb(arg, ep, status). UCP calls it from ucp_worker_progress (so from ucxdt_worker_progress),
 *  once per failed endpoint. Other fields are left alone; call it before ucp_ep_create, and
 *  close the endpoint before ucxdt_worker_destroy. The worker keeps one small record per
 *  distinct (cb, arg) until it is destroyed. Errors (params unchanged): UCXDT_ERR_INVALID_PARAM
 *  when params or worker is NULL, when params sets user_data (UCP would pass it to the handler
 *  instead of its argument), an err_mode other than UCP_ERR_HANDLING_MODE_PEER, or an
 *  err_handler of its own (pass that as cb); UCXDT_ERR_NO_MEMORY. Threads: as the worker's
 *  other calls, one thread at a time. */
UCXDT_API ucxdt_status_t ucxdt_ep_params_set_err_handler(ucp_ep_params_t *params,
                                                         ucxdt_worker_h worker,
                                                         ucp_err_handler_cb_t cb, void *arg);
/** Prints the configuration in force (UCXDT_* values) to `stream`. */
UCXDT_API void ucxdt_worker_print_config(ucxdt_worker_h worker, FILE *stream);

/** Binds a ucxdt endpoint to params->ucp_ep and introduces this worker to the peer. */
UCXDT_API ucxdt_status_t ucxdt_ep_create(ucxdt_worker_h worker, const ucxdt_ep_params_t *params,
                                         ucxdt_ep_h *ep);
/** Destroys the endpoint; its outstanding sends complete with UCXDT_ERR_CANCELED. The
 *  ucp_ep_h is the user's and stays open. */
UCXDT_API void ucxdt_ep_destroy(ucxdt_ep_h ep);

/** Sends `count` elements of the committed `type` at `buffer` (host or CUDA memory) with `tag`.
 *  The buffer must stay untouched until completion. Returns NULL when complete at once, a
 *  request, or an error (UCXDT_PTR_IS_ERR): invalid or uncommitted type, negative count. */
UCXDT_API ucxdt_status_ptr_t ucxdt_tag_send_nbx(ucxdt_ep_h ep, const void *buffer, int64_t count,
                                                ucxdt_type_t type, ucp_tag_t tag,
                                                const ucxdt_request_param_t *param);
/** Receives up to `count` elements of `type` into `buffer` from a message whose tag matches
 *  `tag` under `tag_mask`. Only bytes of the type map are written, and only on success. A
 *  message may end inside an element: the receive takes the whole primitives that arrived
 *  (MPI-4.1 §3.2.5), and ucxdt_type_get_elements counts them. Errors at completion:
 *  UCXDT_ERR_TRUNCATED (a longer message), UCXDT_ERR_TYPE_MISMATCH (the message's primitives
 *  are not the receive's first ones). */
UCXDT_API ucxdt_status_ptr_t ucxdt_tag_recv_nbx(ucxdt_worker_h worker, void *buffer,
                                                int64_t count, ucxdt_type_t type, ucp_tag_t tag,
                                                ucp_tag_t tag_mask,
                                                const ucxdt_request_param_t *param);

/** UCXDT_INPROGRESS (1) while the request runs, else its final status. */
#define UCXDT_INPROGRESS 1
UCXDT_API int ucxdt_request_check_status(void *request);
/** For a completed receive: the packed bytes received (0 otherwise). */
UCXDT_API int64_t ucxdt_request_length(void *request);

/** What a receive matched, as ucp_tag_recv_info_t: an MPI status is built from it. */
typedef struct {
    ucp_tag_t sender_tag;  /**< the matched message's tag, all 64 bits (the receive's mask
                                aside): source and tag of MPI's status */
    int64_t length;        /**< packed bytes received; 0 unless the receive succeeded */
} ucxdt_tag_recv_info_t;

/** As ucxdt_request_check_status for a receive request, and once it has completed, fills *info
 *  (as ucp_tag_recv_request_test does); sender_tag is 0 where no message matched (a canceled
 *  receive). Returns UCXDT_ERR_INVALID_PARAM, and fills nothing, for a send request or a NULL
 *  argument. Threads: as the worker's other calls. */
UCXDT_API int ucxdt_tag_recv_request_test(void *request, ucxdt_tag_recv_info_t *info);
/** A message that ucxdt_tag_probe_nb found (MPI_Message, MPI-4.1 §3.8.2). */
typedef struct ucxdt_tag_message *ucxdt_tag_message_h;

/** Looks for a message whose tag matches `tag` under `tag_mask`, without receiving its data
 *  (UCP's ucp_tag_probe_nb; MPI_Iprobe and, with `remove`, MPI_Improbe, MPI-4.1 §3.8.1-2).
 *  When one is there, fills *info with the sender's full tag and the message's packed length
 *  in bytes (of the sender's type map: ucxdt_type_get_elements turns it into elements of a
 *  receive type), and returns non-NULL; else returns NULL. Without `remove` the message stays
 *  to be matched by a later receive or probe, and the handle must not be used. With `remove`
 *  it is taken out of matching, and the handle is for exactly one ucxdt_tag_msg_recv_nbx.
 *  Matching keeps the order of ucxdt_tag_recv_nbx: the first matching message in arrival order
 *  is found, and a probe without `remove` followed by a receive of the same tag and mask
 *  receives the message the probe saw (MPI-4.1 §3.8.1), unless another thread's receive took it
 *  in between. How: UCP shows a message's length, not its packed
 *  length, which the ucxdt header holds, so the probe receives the tagged message from UCP
 *  (ucp_tag_probe_nb with remove, then ucp_tag_msg_recv_nbx into host memory): an eager
 *  message's data, or a rendezvous' RTS (its data moves only when a receive takes it). Until a
 *  receive takes it, the message holds that memory, and a synchronous send stays incomplete
 *  (a probe matches no receive). A message UCP has not wholly received yet (one UCP sends by
 *  its own rendezvous) is taken out and NULL returned; a later probe returns it once it is
 *  here. A probe does not progress the worker (as UCP's). The tag space is ucxdt's: a probe
 *  whose tag and mask match an application's own UCP tag traffic takes that message too, and
 *  the receive that takes it then fails with UCXDT_ERR_UCX. Errors: NULL is returned, with the
 *  reason in ucxdt_last_error(), for a NULL worker or info (UCXDT_ERR_INVALID_PARAM) or no
 *  memory. Threads: as the worker's other calls. */
UCXDT_API ucxdt_tag_message_h ucxdt_tag_probe_nb(ucxdt_worker_h worker, ucp_tag_t tag, ucp_tag_t tag_mask,
                                                 int remove, ucxdt_tag_recv_info_t *info);
/** Receives `message` (returned by ucxdt_tag_probe_nb with `remove`) into up to `count`
 *  elements of `type` at `buffer`, as ucxdt_tag_recv_nbx would have received it: the same
 *  completion, statuses and errors (UCP's ucp_tag_msg_recv_nbx; MPI_Mrecv and MPI_Imrecv,
 *  MPI-4.1 §3.8.3). The request is matched already, so ucxdt_request_cancel leaves it alone.
 *  Errors (UCXDT_PTR_IS_ERR): UCXDT_ERR_INVALID_PARAM when `message` is not a removed message
 *  of this worker that no receive has taken (the handle is spent once a receive takes it), and
 *  those of ucxdt_tag_recv_nbx's arguments; the message then stays for another call. */
UCXDT_API ucxdt_status_ptr_t ucxdt_tag_msg_recv_nbx(ucxdt_worker_h worker, void *buffer, int64_t count,
                                                    ucxdt_type_t type, ucxdt_tag_message_h message,
                                                    const ucxdt_request_param_t *param);

/** Cancels a receive that has not matched yet (it completes with UCXDT_ERR_CANCELED); a
 *  matched receive runs to completion, and a completed one that is not freed yet is left
 *  alone. A send is not canceled: UCP cancels tag receives only
 *  (ucp_request_cancel, UCX 1.13), and a message once posted may have matched already. So
 *  MPI_Cancel of a send (MPI-4.1 §3.8.4) has no counterpart here; ucxdt_ep_destroy ends an
 *  endpoint's sends with UCXDT_ERR_CANCELED. */
UCXDT_API void ucxdt_request_cancel(ucxdt_worker_h worker, void *request);
/** Ends with UCXDT_ERR_PEER_FAILURE every receive of the worker that has not matched yet and
 *  can match only messages whose tag equals `tag` in the bits of `tag_mask` (its mask covers
 *  `tag_mask` and its tag agrees with `tag` there): the receives that wait for one peer, once
 *  that peer has failed (ucxdt_worker_handle_ep_error leaves unmatched receives posted, since
 *  another peer may still send what they wait for). An MPI layer whose tag holds the
 *  communicator and the source passes those bits: a receive from a failed process then ends
 *  with MPI_ERR_PROC_FAILED, as ULFM (the MPI Forum's fault-tolerance proposal) reports it,
 *  where MPI-4.1 leaves what follows a failure to the implementation; MPI_ANY_SOURCE receives
 *  stay posted. Each completes through its
 *  callback, in this call (receives the worker matches itself, with a plain_tag_bit) or in a
 *  later ucxdt_worker_progress (those posted to UCP, whose cancel ends them). Returns how many
 *  it ends. Threads: as the worker's other calls. */
UCXDT_API size_t ucxdt_tag_recv_peer_failed(ucxdt_worker_h worker, ucp_tag_t tag, ucp_tag_t tag_mask);
/** Releases the request; if still running, it completes on its own and is released then. */
UCXDT_API void ucxdt_request_free(void *request);

#ifdef __cplusplus
}
#endif

#endif /* UCXDT_UCXDT_UCP_H */
