/*
 * ucxdt one-sided transfers: put and get of (buffer, count, type) into and out of a peer's
 * registered memory, where the target's layout is a ucxdt type too. The semantics are those of
 * MPI_Put and MPI_Get (MPI-4.1 12.3.1, 12.3.2) on UCP's RMA model (ucp_put_nbx, ucp_get_nbx,
 * ucp_ep_flush_nbx; UCX 1.13 ucp.h): the origin names the target's address, count and type;
 * the packed stream of the origin (count, type) goes, in type-map order, to the bytes of the
 * target's type map at that address.
 *
 * Objects: a ucxdt worker and endpoint of ucxdt_ucp.h (the context needs UCP_FEATURE_RMA and
 * UCP_FEATURE_AM). A memory handle registers a region of this process with the worker's UCP
 * context (ucp_mem_map); its packed rkey goes to peers out of band, and a peer's endpoint
 * unpacks it into a remote key. The rkey carries the region's address, length and memory type,
 * the exporting worker's node, UCP's rkey (host memory; device memory too on UCX 1.22 and
 * later) and a CUDA IPC handle (device memory).
 *
 * Paths, chosen per operation:
 *   - the target region is CUDA device memory that UCX's cuda_ipc would reach (one node by
 *     UCX's system ID, cuda_ipc in both contexts and, where UCP reports it, on the endpoint;
 *     UCXDT_CUDA_IPC not off on either side), and the origin layout is on a GPU: the region is
 *     mapped by CUDA IPC (once per region, cached) and the origin's GPU copies the origin
 *     layout straight into the target layout, or out of it for a get: one strided copy when
 *     both are strided with runs of one length, one byte-for-byte copy for equal block lists,
 *     a pack into a contiguous target (or unpack from a contiguous origin), else a pack into
 *     device staging and an unpack from it. Completion is the GPU's, so local and remote
 *     completion coincide. The strided and block-list copies start at the next
 *     ucxdt_worker_progress, which launches those issued since the last one together
 *     (UCXDT_GPU_BATCH of ucxdt_ucp.h); the others start in the call, after them.
 *   - a host region, or a device region out of CUDA IPC's reach, is served by one of two paths.
 *     The origin is packed first (by the CPU, or by its GPU into page-locked staging).
 *       - runs: one ucp_put_nbx per contiguous run of the target layout (runs that touch are
 *         merged); a get issues one ucp_get_nbx per run into staging and unpacks it when all
 *         have landed. Truly one-sided. A contiguous target always takes this path.
 *       - target unpack: one active message (UCXDT_UCP_AM_ID_RMA) carries the packed stream and
 *         the target layout's description; the target's worker checks the layout against its
 *         registered regions, unpacks (CPU for host memory, its GPU for device memory) and
 *         acknowledges; a get asks, and the target packs and replies. The target must call
 *         ucxdt_worker_progress, as for UCP's software-emulated RMA.
 *     A device region takes the runs path only where UCP's RMA reaches device memory: UCX
 *     1.22 or later, whose endpoint has a lane of cuda_ipc, rc_mlx5, rc_verbs or dc_mlx5
 *     (ucp_ep_query); the runs' origin is then device staging for a GPU origin. Elsewhere
 *     (UCX 1.13, whose shared-memory emulation of RMA touches device memory with the CPU and
 *     faults; TCP-only endpoints) it takes the target-unpack path. Otherwise the worker
 *     chooses by measured cost (HAND's rule), apart for host and device regions: it measures
 *     the runs path, then one active message (the target reports its unpack time in the
 *     acknowledgement), then takes the cheaper of runs x (seconds per ucp_put_nbx) and
 *     (seconds per active message) + runs x (target seconds per run). UCXDT_RMA_PATH=runs|am
 *     forces one where both are open.
 *
 * Completion: a put request completes when the origin buffer may be reused (the bytes may not
 * have reached the target yet, as for ucp_put_nbx); a get request when the data is in the origin
 * layout. ucxdt_ep_flush_nbx / ucxdt_worker_flush_nbx complete once every put and get started
 * before them on the endpoint (on the worker) is complete at the target (ucp_ep_flush_nbx).
 *
 * Errors (the request, or the call's status pointer): UCXDT_ERR_TYPE_MISMATCH when the origin
 * and target signatures differ (MPI-4.1 12.3: they must match); UCXDT_ERR_OUT_OF_RANGE when
 * any byte of the target layout at remote_address lies outside the rkey's region;
 * UCXDT_ERR_INVALID_PARAM for a null or freed handle, an uncommitted type or a negative count;
 * UCXDT_ERR_OUT_OF_RANGE too from the target on the target-unpack path, when the layout lies in
 * none of its registered regions (the region was unmapped); UCXDT_ERR_PEER_FAILURE when the target process fails (with
 * the peer error handling of ucxdt_ucp.h). In every error case that the call itself returns,
 * nothing was moved.
 *
 * Threads: as ucxdt_ucp.h, one thread at a time per worker. Progress: ucxdt_worker_progress.
 */
#ifndef UCXDT_UCXDT_RMA_H
#define UCXDT_UCXDT_RMA_H

#include <ucxdt/ucxdt_ucp.h>

#ifdef __cplusplus
extern "C" {
#endif

/** UCP active-message id of the target-unpack path (see "Paths"); the worker sets its handler
 *  once the first region is registered or the first operation starts. */
#define UCXDT_UCP_AM_ID_RMA (UCXDT_UCP_AM_ID + 1)

typedef struct ucxdt_mem *ucxdt_mem_h;
typedef struct ucxdt_rkey *ucxdt_rkey_h;

enum ucxdt_mem_map_params_field {
    UCXDT_MEM_MAP_PARAM_FIELD_ADDRESS = 1u << 0,
    UCXDT_MEM_MAP_PARAM_FIELD_LENGTH  = 1u << 1
};

typedef struct {
    uint64_t field_mask; /**< UCXDT_MEM_MAP_PARAM_FIELD_* of the fields set */
    void *address;       /**< required: the region's first byte, host or CUDA device memory */
    size_t length;       /**< required: the region's size in bytes, > 0 */
} ucxdt_mem_map_params_t;

/** Registers [address, address + length): host memory with the worker's UCP context
 *  (ucp_mem_map); CUDA device memory by a CUDA IPC handle of its allocation, which must hold
 *  the whole region (memory of cudaMallocAsync pools has none: puts and gets on it take UCP's
 *  RMA or the target-unpack path), and with UCP too on UCX 1.22 and later. Errors: UCXDT_ERR_INVALID_PARAM (missing fields, null
 *  address, zero length, a device region not inside one allocation), UCXDT_ERR_UCX
 *  (ucp_mem_map), UCXDT_ERR_NO_MEMORY.
 *  The handle stays valid until ucxdt_mem_unmap, which the user calls before destroying the
 *  worker; peers must not target the region after it. */
UCXDT_API ucxdt_status_t ucxdt_mem_map(ucxdt_worker_h worker, const ucxdt_mem_map_params_t *params,
                                       ucxdt_mem_h *memh);
/** Deregisters the region (ucp_mem_unmap) and frees the handle. NULL is ignored. */
UCXDT_API void ucxdt_mem_unmap(ucxdt_mem_h memh);

/** The remote key of the region as bytes to send to peers: *rkey_buffer (released with
 *  ucxdt_rkey_buffer_release) of *size bytes. Errors: UCXDT_ERR_INVALID_PARAM, UCXDT_ERR_UCX
 *  (ucp_rkey_pack), UCXDT_ERR_NO_MEMORY. */
UCXDT_API ucxdt_status_t ucxdt_rkey_pack(ucxdt_mem_h memh, void **rkey_buffer, size_t *size);
UCXDT_API void ucxdt_rkey_buffer_release(void *rkey_buffer);

/** A remote key for operations on `ep` from the bytes of a peer's ucxdt_rkey_pack
 *  (ucp_ep_rkey_unpack). Errors: UCXDT_ERR_INVALID_PARAM when the bytes are not such an rkey
 *  (wrong size, magic or version: nothing is unpacked), UCXDT_ERR_UCX, UCXDT_ERR_NO_MEMORY.
 *  Destroy it before the endpoint. */
UCXDT_API ucxdt_status_t ucxdt_ep_rkey_unpack(ucxdt_ep_h ep, const void *rkey_buffer, size_t size,
                                              ucxdt_rkey_h *rkey);
/** Destroys the remote key (no operation with it may be outstanding). NULL is ignored. */
UCXDT_API void ucxdt_rkey_destroy(ucxdt_rkey_h rkey);

/** Puts `origin_count` elements of `origin_type` at `origin` (host or CUDA memory) into the
 *  target's `target_count` elements of `target_type` at `remote_address` (an address in the
 *  target process, inside the region of `rkey`; the target type's displacements are bytes
 *  from it). Returns NULL when complete at once, a request (ucxdt_request_check_status,
 *  ucxdt_request_free, the send callback of `param`), or an error (UCXDT_PTR_IS_ERR). The
 *  origin buffer stays untouched until the request completes. */
UCXDT_API ucxdt_status_ptr_t ucxdt_put_nbx(ucxdt_ep_h ep, const void *origin, int64_t origin_count,
                                           ucxdt_type_t origin_type, uint64_t remote_address,
                                           ucxdt_rkey_h rkey, int64_t target_count,
                                           ucxdt_type_t target_type, const ucxdt_request_param_t *param);
/** Gets the target's `target_count` elements of `target_type` at `remote_address` into
 *  `origin_count` elements of `origin_type` at `origin`; as ucxdt_put_nbx otherwise. Only bytes
 *  of the origin type map are written, and only once the data has arrived. */
UCXDT_API ucxdt_status_ptr_t ucxdt_get_nbx(ucxdt_ep_h ep, void *origin, int64_t origin_count,
                                           ucxdt_type_t origin_type, uint64_t remote_address,
                                           ucxdt_rkey_h rkey, int64_t target_count,
                                           ucxdt_type_t target_type, const ucxdt_request_param_t *param);

/** Completes once every put and get started on `ep` before this call is complete at its
 *  target: it waits for them to complete here, then for ucp_ep_flush_nbx. A request as for
 *  put; its status is the UCP flush's (each operation reports its own errors). */
UCXDT_API ucxdt_status_ptr_t ucxdt_ep_flush_nbx(ucxdt_ep_h ep, const ucxdt_request_param_t *param);
/** ucxdt_ep_flush_nbx for every endpoint of the worker (ucp_worker_flush_nbx). */
UCXDT_API ucxdt_status_ptr_t ucxdt_worker_flush_nbx(ucxdt_worker_h worker, const ucxdt_request_param_t *param);

#ifdef __cplusplus
}
#endif

#endif /* UCXDT_UCXDT_RMA_H */
