/*
 * osc ucxdt: Open MPI 5's one-sided component (ompi/mca/osc/osc.h) on ucxdt's one-sided layer
 * (ucxdt_rma.h), so that MPI_Put and MPI_Get of derived datatypes move each layout whole
 * instead of block by block. Its own UCP context, UCP worker and ucxdt worker per process, as
 * osc ucx has, so it runs under any PML; endpoints to the processes of each window's group,
 * from worker addresses exchanged when the window is made. Passive-target synchronization and
 * accumulates use UCP atomics on a small state region each process exposes per window.
 *
 * Built out of Open MPI's tree as mca_osc_ucxdt.so against Open MPI 5.0.7's developer headers;
 * chosen by priority under pml ucxdt, or with `--mca osc ucxdt`. Windows: MPI_Win_create,
 * MPI_Win_allocate and MPI_Win_create_dynamic (host, device or managed memory).
 * MPI_Win_allocate_shared goes to another component (osc sm).
 */
#ifndef OSC_UCXDT_H
#define OSC_UCXDT_H

#include "ompi_config.h"
#include "ompi/communicator/communicator.h"
#include "ompi/datatype/ompi_datatype.h"
#include "ompi/group/group.h"
#include "ompi/mca/osc/osc.h"
#include "ompi/request/request.h"
#include "ompi/win/win.h"
#include "opal/class/opal_hash_table.h"
#include "opal/mca/threads/mutex.h"

#include <cuda_runtime_api.h>
#include <ucp/api/ucp.h>
#include <ucxdt/ucxdt.h>
#include <ucxdt/ucxdt_cuda.h>
#include <ucxdt/ucxdt_rma.h>
#include <ucxdt/ucxdt_ucp.h>

#include "common_ucxdt.h"

BEGIN_C_DECLS

/* ---- The process's state (osc_ucxdt_component.c) ------------------------------------------ */
/* Per device: the accumulates' device elements and the stream their reduction runs on. */
typedef struct mca_osc_ucxdt_gpu {
    void *stage;
    size_t bytes;
    cudaStream_t stream;
} mca_osc_ucxdt_gpu_t;

typedef struct {
    bool ready;                   /* context and workers made (at the first window) */
    bool threads;                 /* MPI_THREAD_MULTIPLE */
    ucp_context_h context;
    ucp_worker_h ucp_worker;
    ucxdt_worker_h worker;
    ucp_address_t *address;
    size_t address_length;
    opal_hash_table_t peers;      /* ompi_proc_t * -> mca_osc_ucxdt_peer_t * (osc_ucxdt_peer.c) */
    opal_recursive_mutex_t lock;  /* the peer table, the type cache, setup */
    mca_common_ucxdt_types_t types;
    int windows;                  /* alive: progress is registered while there are any */
    int attach_max;               /* regions a dynamic window holds at once, per process */
    int gpu_reduce;               /* accumulates of device memory reduce on its GPU (else the host) */
    void *host_stage;                /* the accumulates' host staging (osc_ucxdt_accumulate.c) */
    size_t host_stage_bytes;
    struct mca_osc_ucxdt_gpu *gpus;  /* per device: the accumulates' staging (osc_ucxdt_accumulate.c) */
    int gpu_count;
    int priority;                 /* under pml ucxdt */
    int priority_other;           /* under another PML */
    int verbose;
} mca_osc_ucxdt_state_t;

extern mca_osc_ucxdt_state_t ompi_osc_ucxdt;
OMPI_DECLSPEC extern ompi_osc_base_component_t mca_osc_ucxdt_component;

/* Makes the context and workers, once; OMPI_SUCCESS or an error. */
int mca_osc_ucxdt_setup(void);
int mca_osc_ucxdt_progress(void);

/* A ucxdt status as an MPI error class. */
static inline int mca_osc_ucxdt_mpi_error(ucxdt_status_t st) { return mca_common_ucxdt_mpi_error(st, "osc ucxdt"); }
/* The committed ucxdt type of dt (MPI_ERR_TYPE for a type built inside Open MPI). */
int mca_osc_ucxdt_type(ompi_datatype_t *dt, ucxdt_type_t *type);

/* ---- Peers (osc_ucxdt_peer.c) ------------------------------------------------------------- */
typedef struct mca_osc_ucxdt_peer {
    ucp_ep_h ucp_ep;
    ucxdt_ep_h ep;
    bool failed;  /* UCP reported the endpoint failed */
} mca_osc_ucxdt_peer_t;

/* proc's peer, connected from its worker address (at window creation) if not yet. */
int mca_osc_ucxdt_peer_connect(ompi_proc_t *proc, const void *address, size_t length, mca_osc_ucxdt_peer_t **peer);
void mca_osc_ucxdt_peers_close(void);

/* ---- A window (osc_ucxdt_window.c) -------------------------------------------------------- */
/* The state region each process exposes per window, in uint64_t words: the lock word, the
 * accumulate lock, completions counted by MPI_Win_complete, then one post counter per rank. */
enum { OSC_UCXDT_LOCK = 0, OSC_UCXDT_ACC_LOCK = 1, OSC_UCXDT_COMPLETES = 2, OSC_UCXDT_POSTS = 3 };
#define OSC_UCXDT_LOCK_EXCLUSIVE ((uint64_t)1 << 32)  /* the lock word: readers count below it */

/* A range of memory: a region attached to a dynamic window (address, bytes). */
typedef struct {
    uint64_t base, size;
} mca_osc_ucxdt_span_t;

/* A region a target attached to a dynamic window, as its origin knows it. */
typedef struct {
    uint64_t id, base, size;
    ucxdt_rkey_h rkey;       /* NULL for 0 bytes */
} mca_osc_ucxdt_region_t;

typedef struct {
    mca_osc_ucxdt_peer_t *peer;
    uint64_t base;           /* the window's address there (0 for a dynamic window) */
    uint64_t size;           /* bytes */
    int disp_unit;
    ucxdt_rkey_h rkey;       /* NULL for a window of 0 bytes */
    ucp_rkey_h ucp_rkey;     /* the window's UCP key, where it is host memory (osc_ucxdt_direct.c) */
    uint64_t state;          /* its state region's address */
    ucp_rkey_h state_rkey;
    int lock;                /* 0, MPI_LOCK_SHARED or MPI_LOCK_EXCLUSIVE: held by this process */
    /* A dynamic window: the target's attached regions, as of its table's version. */
    mca_osc_ucxdt_region_t *regions;
    int regions_n;
    uint64_t table_version;  /* OSC_UCXDT_TABLE_UNREAD until read */
    /* ucxdt operations started on it, and how many of them a flush has waited for
     * (mca_osc_ucxdt_flush_target). */
    uint64_t ucxdt_started, ucxdt_flushed;
} mca_osc_ucxdt_target_t;

typedef struct {
    ompi_osc_base_module_t super;
    ompi_win_t *win;
    ompi_communicator_t *comm;   /* a duplicate of the window's, for its collectives */
    int rank, size;
    int flavor;                  /* MPI_WIN_FLAVOR_CREATE, _ALLOCATE or _DYNAMIC */
    void *base;
    size_t length;
    bool allocated;              /* base is ours (MPI_Win_allocate) */
    ucxdt_mem_h memh;            /* NULL for 0 bytes */
    ucp_mem_h ucp_memh;          /* the same memory registered for UCP's own RMA (host memory) */
    uint64_t *state;             /* this process's state region (then its attached-memory table) */
    ucp_mem_h state_memh;
    mca_osc_ucxdt_target_t *targets;
    /* Epochs (MPI-4.1 §12.5). */
    bool fence;                  /* between fences: every rank may be accessed */
    int *start_ranks, start_n;   /* an access epoch of MPI_Win_start: its targets */
    int post_n;                  /* an exposure epoch of MPI_Win_post: its origins */
    uint64_t *posts_seen;        /* posts consumed, per origin rank */
    uint64_t completes_seen;
    int locks;                   /* targets locked */
    bool lock_all;
    bool no_locks;
    int op_error;                /* the first error of an operation that ended since the last
                                    synchronization, which reports it (0: none) */
    ucxdt_mem_h *attached;       /* a dynamic window: the memory handle of each table slot */
    mca_osc_ucxdt_span_t *attachments;  /* what the user attached (MPI_Win_attach) */
    int attach_n;
    uint64_t attach_ids;         /* attachments so far */
} mca_osc_ucxdt_module_t;

static inline mca_osc_ucxdt_module_t *mca_osc_ucxdt_module(ompi_win_t *win) {
    return (mca_osc_ucxdt_module_t *)win->w_osc_module;
}

int mca_osc_ucxdt_window_select(ompi_win_t *win, void **base, size_t size, int disp_unit,
                                ompi_communicator_t *comm, opal_info_t *info, int flavor, int *model);
int mca_osc_ucxdt_free(ompi_win_t *win);
int mca_osc_ucxdt_shared_query(ompi_win_t *win, int rank, size_t *size, int *disp_unit, void *baseptr);
int mca_osc_ucxdt_attach(ompi_win_t *win, void *base, size_t size);
int mca_osc_ucxdt_detach(ompi_win_t *win, const void *base);

/* Whether the module's epochs allow access to target now, by a request-based call
 * (request_based) or another: OMPI_SUCCESS or OMPI_ERR_RMA_SYNC. */
int mca_osc_ucxdt_check_access(mca_osc_ucxdt_module_t *m, int target, bool request_based);
/* The target's address of target_disp. */
static inline uint64_t mca_osc_ucxdt_address(const mca_osc_ucxdt_target_t *t, ptrdiff_t target_disp) {
    return t->base + (uint64_t)((int64_t)target_disp * t->disp_unit);
}

/* ---- Dynamic windows (osc_ucxdt_dynamic.c) ------------------------------------------------ */
/* The table of attached memory a process exposes after its state words, read by origins. */
#define OSC_UCXDT_ATTACH_KEY_MAX 1024  /* bytes of a packed ucxdt key in a slot */
typedef struct {
    uint64_t id;          /* the attachment's number, never reused by the window */
    uint64_t base, size;  /* address, bytes */
    uint64_t key_length;
    char key[OSC_UCXDT_ATTACH_KEY_MAX];
} mca_osc_ucxdt_attachment_t;
#define OSC_UCXDT_TABLE_UNREAD UINT64_MAX  /* odd: no table read whole has this version */
typedef struct {
    uint64_t version;     /* odd while the table changes */
    uint64_t count;       /* slots in use */
    mca_osc_ucxdt_attachment_t slots[];
} mca_osc_ucxdt_table_t;

/* The table's first word in the state region (after the post counters), and its bytes. */
static inline size_t mca_osc_ucxdt_table_word(const mca_osc_ucxdt_module_t *m) {
    return OSC_UCXDT_POSTS + (size_t)m->size;
}
size_t mca_osc_ucxdt_table_bytes(size_t slots);
/* The address and key through which target_count elements of target_dt at target_disp are
 * reached: the window's, or the attached region holding the layout's first byte (read from
 * the target's table when it changed). MPI_ERR_RMA_RANGE when there is none. */
int mca_osc_ucxdt_resolve(mca_osc_ucxdt_module_t *m, int target, ptrdiff_t target_disp, ompi_datatype_t *target_dt,
                          uint64_t *remote, ucxdt_rkey_h *rkey);
/* At free: the origin's copy of t's regions; this process's attached memory. */
void mca_osc_ucxdt_regions_release(mca_osc_ucxdt_target_t *t);
void mca_osc_ucxdt_attached_release(mca_osc_ucxdt_module_t *m);

/* The error an ended operation left, cleared; OMPI_SUCCESS if none. */
static inline int mca_osc_ucxdt_take_op_error(mca_osc_ucxdt_module_t *m) {
    return __atomic_exchange_n(&m->op_error, 0, __ATOMIC_ACQ_REL);
}

/* ---- Memory types (osc_ucxdt_memtype.c) --------------------------------------------------- */
/* The memory type of [p, p + bytes) as ucxdt_memory_type tells it of p (*device, if not NULL,
 * as there), but UCXDT_MEMORY_HOST without the driver's query for host memory known already:
 * within m's own host window (m may be NULL), or a range this thread found pageable.
 * host_memory: whether that is host memory (pageable or page-locked), which UCP's RMA reaches
 * itself. Thread-safe. init (at setup) installs the UCM handler that lets a thread keep the
 * pageable ranges; fini (at finalize) removes it. */
ucxdt_memory_type_t mca_osc_ucxdt_memory_type(const mca_osc_ucxdt_module_t *m, const void *p, size_t bytes,
                                              int *device);
bool mca_osc_ucxdt_host_memory(const mca_osc_ucxdt_module_t *m, const void *p, size_t bytes);
void mca_osc_ucxdt_memtype_init(void);
void mca_osc_ucxdt_memtype_fini(void);

/* ---- Contiguous host transfers straight on UCP (osc_ucxdt_direct.c) ------------------------ */
typedef struct {
    char *origin;     /* the origin's first byte */
    uint64_t remote;  /* the target's first byte */
    size_t bytes;
} mca_osc_ucxdt_direct_t;
/* OMPI_SUCCESS and *d when origin and target are contiguous bytes of one signature, the origin
 * in host memory and the target in a host window (its UCP key; not a dynamic window);
 * MPI_ERR_RMA_RANGE when such a target lies outside the window; OMPI_ERR_NOT_AVAILABLE when
 * ucxdt's path is to move it. Asks ucxdt nothing when the two sides have one datatype and count. */
int mca_osc_ucxdt_direct_fits(mca_osc_ucxdt_module_t *m, int target, const void *origin_addr, int origin_count,
                              ompi_datatype_t *origin_dt, ptrdiff_t target_disp, int target_count,
                              ompi_datatype_t *target_dt, mca_osc_ucxdt_direct_t *d);
/* ucp_put_nbx or ucp_get_nbx of d on target's endpoint. */
ucs_status_ptr_t mca_osc_ucxdt_direct_start(mca_osc_ucxdt_module_t *m, int target, bool put,
                                            const mca_osc_ucxdt_direct_t *d, const ucp_request_param_t *param);

/* ---- Remote atomics on the state regions (osc_ucxdt_atomic.c) ----------------------------- */
/* op on word `index` of target's state region with `value` (UCP_ATOMIC_OP_CSWAP: the word is
 * compared with `value` and, if equal, becomes `swap`); *fetched, if not NULL, gets the word as
 * it was. Blocks until done. OMPI_SUCCESS or an MPI error. */
int mca_osc_ucxdt_state_atomic(mca_osc_ucxdt_module_t *m, int target, size_t index, ucp_atomic_op_t op,
                               uint64_t value, uint64_t swap, uint64_t *fetched);
/* op (no reply: ADD, AND, OR, XOR) on word `index` of target's state region with `value`, posted:
 * returns once the transport has it, not when it is done (a release, which no one waits for). */
int mca_osc_ucxdt_state_post(mca_osc_ucxdt_module_t *m, int target, size_t index, ucp_atomic_op_t op,
                             uint64_t value);
/* len bytes at byte offset `offset` of target's state region into buf; blocks until done. */
int mca_osc_ucxdt_state_get(mca_osc_ucxdt_module_t *m, int target, uint64_t offset, void *buf, size_t len);
/* One turn of a wait's progress loop (turn: the loop's count, from 0). */
void mca_osc_ucxdt_wait_turn(unsigned *turn);
/* Waits for a UCP operation on target's endpoint (NULL: done, or an error pointer), frees it:
 * OMPI_SUCCESS or an MPI error class. */
int mca_osc_ucxdt_wait_ucp(mca_osc_ucxdt_module_t *m, int target, ucs_status_ptr_t req);
/* Waits for a ucxdt operation started without a callback (op as the call returned it): an MPI
 * error class, MPI_ERR_PROC_FAILED when target's process failed. */
int mca_osc_ucxdt_wait_op(mca_osc_ucxdt_module_t *m, int target, ucxdt_status_ptr_t op);
/* Flushes the endpoint of target (every put, get and atomic to it done), or all of them. */
int mca_osc_ucxdt_flush_target(mca_osc_ucxdt_module_t *m, int target);
int mca_osc_ucxdt_flush_all_targets(mca_osc_ucxdt_module_t *m);
/* Takes and drops target's accumulate lock (serializes accumulates, MPI-4.1 §12.7.1). */
int mca_osc_ucxdt_acc_lock(mca_osc_ucxdt_module_t *m, int target);
int mca_osc_ucxdt_acc_unlock(mca_osc_ucxdt_module_t *m, int target);

/* ---- Data movement (osc_ucxdt_comm.c, osc_ucxdt_accumulate.c) ------------------------------ */
/* ucxdt_put_nbx (put) or ucxdt_get_nbx of (buf, count, type) and the target layout at remote on
 * target's endpoint, counted as started there when it starts: the next flush waits for it
 * (mca_osc_ucxdt_flush_target). Returns as those calls do. */
ucxdt_status_ptr_t mca_osc_ucxdt_start_op(mca_osc_ucxdt_module_t *m, int target, bool put, void *buf, int count,
                                       ucxdt_type_t type, uint64_t remote, ucxdt_rkey_h rkey, int target_count,
                                       ucxdt_type_t target_type, const ucxdt_request_param_t *param);
int mca_osc_ucxdt_put(const void *origin_addr, int origin_count, ompi_datatype_t *origin_dt, int target,
                      ptrdiff_t target_disp, int target_count, ompi_datatype_t *target_dt, ompi_win_t *win);
int mca_osc_ucxdt_get(void *origin_addr, int origin_count, ompi_datatype_t *origin_dt, int target,
                      ptrdiff_t target_disp, int target_count, ompi_datatype_t *target_dt, ompi_win_t *win);
int mca_osc_ucxdt_rput(const void *origin_addr, int origin_count, ompi_datatype_t *origin_dt, int target,
                       ptrdiff_t target_disp, int target_count, ompi_datatype_t *target_dt, ompi_win_t *win,
                       ompi_request_t **request);
int mca_osc_ucxdt_rget(void *origin_addr, int origin_count, ompi_datatype_t *origin_dt, int target,
                       ptrdiff_t target_disp, int target_count, ompi_datatype_t *target_dt, ompi_win_t *win,
                       ompi_request_t **request);
int mca_osc_ucxdt_accumulate(const void *origin_addr, int origin_count, ompi_datatype_t *origin_dt, int target,
                             ptrdiff_t target_disp, int target_count, ompi_datatype_t *target_dt, struct ompi_op_t *op,
                             ompi_win_t *win);
int mca_osc_ucxdt_raccumulate(const void *origin_addr, int origin_count, ompi_datatype_t *origin_dt, int target,
                              ptrdiff_t target_disp, int target_count, ompi_datatype_t *target_dt, struct ompi_op_t *op,
                              ompi_win_t *win, ompi_request_t **request);
int mca_osc_ucxdt_get_accumulate(const void *origin_addr, int origin_count, ompi_datatype_t *origin_dt,
                                 void *result_addr, int result_count, ompi_datatype_t *result_dt, int target,
                                 ptrdiff_t target_disp, int target_count, ompi_datatype_t *target_dt,
                                 struct ompi_op_t *op, ompi_win_t *win);
int mca_osc_ucxdt_rget_accumulate(const void *origin_addr, int origin_count, ompi_datatype_t *origin_dt,
                                  void *result_addr, int result_count, ompi_datatype_t *result_dt, int target,
                                  ptrdiff_t target_disp, int target_count, ompi_datatype_t *target_dt,
                                  struct ompi_op_t *op, ompi_win_t *win, ompi_request_t **request);
int mca_osc_ucxdt_fetch_and_op(const void *origin_addr, void *result_addr, ompi_datatype_t *dt, int target,
                               ptrdiff_t target_disp, struct ompi_op_t *op, ompi_win_t *win);
int mca_osc_ucxdt_compare_and_swap(const void *origin_addr, const void *compare_addr, void *result_addr,
                                   ompi_datatype_t *dt, int target, ptrdiff_t target_disp, ompi_win_t *win);

/* ---- Synchronization (osc_ucxdt_active.c, osc_ucxdt_passive.c) ---------------------------- */
int mca_osc_ucxdt_fence(int mpi_assert, ompi_win_t *win);
int mca_osc_ucxdt_start(ompi_group_t *group, int mpi_assert, ompi_win_t *win);
int mca_osc_ucxdt_complete(ompi_win_t *win);
int mca_osc_ucxdt_post(ompi_group_t *group, int mpi_assert, ompi_win_t *win);
int mca_osc_ucxdt_wait(ompi_win_t *win);
int mca_osc_ucxdt_test(ompi_win_t *win, int *flag);
int mca_osc_ucxdt_lock(int lock_type, int target, int mpi_assert, ompi_win_t *win);
int mca_osc_ucxdt_unlock(int target, ompi_win_t *win);
int mca_osc_ucxdt_lock_all(int mpi_assert, ompi_win_t *win);
int mca_osc_ucxdt_unlock_all(ompi_win_t *win);
int mca_osc_ucxdt_sync(ompi_win_t *win);
int mca_osc_ucxdt_flush(int target, ompi_win_t *win);
int mca_osc_ucxdt_flush_all(ompi_win_t *win);
int mca_osc_ucxdt_flush_local(int target, ompi_win_t *win);
int mca_osc_ucxdt_flush_local_all(ompi_win_t *win);

/* ---- Requests of MPI_Rput and the others (osc_ucxdt_request.c) ----------------------------- */
typedef struct {
    ompi_request_t ompi;
    bool free_called;
} mca_osc_ucxdt_request_t;
OBJ_CLASS_DECLARATION(mca_osc_ucxdt_request_t);

mca_osc_ucxdt_request_t *mca_osc_ucxdt_request_new(ompi_win_t *win);
/* Completes r with err (an MPI error class); frees it if MPI_Request_free came first. */
void mca_osc_ucxdt_request_complete(mca_osc_ucxdt_request_t *r, int err);

END_C_DECLS

#endif /* OSC_UCXDT_H */
