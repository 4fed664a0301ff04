/*
 * ucxdt CUDA API: stream-ordered packing of GPU-resident data.
 *
 * The synchronous calls of ucxdt.h accept CUDA buffers too (device memory of any GPU,
 * managed memory, pinned or registered host memory) and return when the data is complete.
 * Ordering of the synchronous calls: their GPU work runs on internal blocking streams, so it
 * starts after work already queued on the legacy default stream (cudaMemcpy, kernels launched
 * without a stream), as cudaMemcpy itself would. Work on other streams, including per-thread
 * default streams, must be complete (or synchronized) before the call.
 * The calls here instead enqueue the work on the caller's stream and return at once, with no
 * host synchronization, so packing can sit inside an application's stream and inside CUDA
 * graph capture. Semantics of the arguments are those of the synchronous twins.
 *
 * Memory: both buffers must be accessible from the GPU that runs the work: device memory of
 * that GPU (or of a peer with peer access), managed memory, or pinned/registered host memory
 * (the kernel then reads or writes it over PCIe/C2C: zero copy). Pageable host memory cannot be
 * used stream-ordered: UCXDT_ERR_UNSUPPORTED (the synchronous calls stage it instead). The work
 * runs on the GPU that holds the layout-side buffer (inbuf for pack, outbuf for unpack), else
 * on the GPU that holds the packed buffer, else (both pinned host) on the current device;
 * `stream` must belong to that GPU. The current device is left as it was.
 *
 * Graphs: a call captured into a CUDA graph keeps the device-side plan data it uses (work
 * units, type trees) alive for the rest of the process, since the graph holds its pointers.
 *
 * Completion: the data is complete when the stream reaches the work; *position is advanced
 * when the call returns (the packed size is known on the host). Errors detected on the host
 * (bad arguments, truncation, memory that cannot be used) are returned before anything is
 * enqueued; errors of the CUDA runtime are UCXDT_ERR_CUDA with the runtime's message in
 * ucxdt_last_error().
 *
 * The first use of a (type, count) whose plan is a block list uploads its work units to the
 * GPU (once per device; they are cached with an LRU bound, env UCXDT_GPU_PLAN_CACHE_MB,
 * default 256) on an internal stream that the caller's stream then waits for.
 *
 * Thread safety: as ucxdt.h. Sources: Wu et al., HPDC'16 (work units, section 3.1);
 * Jenkins et al., TPDS'14 (zero copy, section 3.2); CUDA runtime stream semantics.
 */
#ifndef UCXDT_UCXDT_CUDA_H
#define UCXDT_UCXDT_CUDA_H

#include <ucxdt/ucxdt.h>

#include <cuda_runtime_api.h>

#ifdef __cplusplus
extern "C" {
#endif

/** ucxdt_pack, enqueued on `stream`. */
UCXDT_API ucxdt_status_t ucxdt_pack_async(const void *inbuf, int64_t incount, ucxdt_type_t type,
                                          void *outbuf, int64_t outsize, int64_t *position,
                                          cudaStream_t stream);

/** ucxdt_unpack, enqueued on `stream`. */
UCXDT_API ucxdt_status_t ucxdt_unpack_async(const void *inbuf, int64_t insize, int64_t *position,
                                            void *outbuf, int64_t outcount, ucxdt_type_t type,
                                            cudaStream_t stream);

/** ucxdt_pack_range, enqueued on `stream`. */
UCXDT_API ucxdt_status_t ucxdt_pack_range_async(const void *buf, int64_t count, ucxdt_type_t type,
                                                int64_t offset, void *packed, int64_t length,
                                                cudaStream_t stream);

/** ucxdt_unpack_range, enqueued on `stream`. */
UCXDT_API ucxdt_status_t ucxdt_unpack_range_async(const void *packed, int64_t offset,
                                                  int64_t length, void *buf, int64_t count,
                                                  ucxdt_type_t type, cudaStream_t stream);

/** How the GPU engine moves a plan (diagnostics, tests and benchmarks). Block lists take
 *  the point-based kernel when their unit list (24 bytes a run) would outweigh their data. */
typedef enum {
    UCXDT_GPU_METHOD_COPY_ENGINE   = 0, /**< cudaMemcpyAsync: contiguous */
    UCXDT_GPU_METHOD_COPY_ENGINE_2D = 1, /**< cudaMemcpy2DAsync: few long strided runs */
    UCXDT_GPU_METHOD_STRIDED_KERNEL = 2, /**< strided kernel over N-D runs */
    UCXDT_GPU_METHOD_UNIT_KERNEL   = 3, /**< kernel over cached work units of a block list */
    UCXDT_GPU_METHOD_POINT_KERNEL  = 4  /**< point-based kernel over the layout tree: block
                                             lists of runs too small for a unit list */
} ucxdt_gpu_method_t;

/** The method the GPU engine uses for `count` elements of a committed type on the current
 *  device (the choice depends on measured costs of that device). */
UCXDT_API ucxdt_status_t ucxdt_gpu_method(ucxdt_type_t type, int64_t count,
                                          ucxdt_gpu_method_t *method);

/** What memory a pointer refers to, as ucxdt's transfers tell it apart. */
typedef enum {
    UCXDT_MEMORY_HOST = 0,     /**< pageable host memory, or memory CUDA does not know */
    UCXDT_MEMORY_HOST_PINNED,  /**< page-locked or registered host memory */
    UCXDT_MEMORY_DEVICE,       /**< device memory of a GPU (*device: its ordinal) */
    UCXDT_MEMORY_MANAGED       /**< managed (unified) memory */
} ucxdt_memory_type_t;

/** The memory `ptr` points into, and for device and managed memory its GPU in *device (if not
 *  NULL): one driver query of three pointer attributes (0.11-0.13 us on an H200 host, where
 *  cudaPointerGetAttributes takes more), none where no GPU is present (every pointer is then
 *  host memory). For callers that must know before handing a buffer to a transport that reaches
 *  host memory only (osc ucxdt's direct UCP path). Thread safety: any thread. */
UCXDT_API ucxdt_memory_type_t ucxdt_memory_type(const void *ptr, int *device);

/** MPI's predefined reduction operations (MPI-4.1 §6.9.2) that ucxdt_reduce_local_async applies. */
typedef enum {
    UCXDT_OP_SUM = 0,
    UCXDT_OP_PROD,
    UCXDT_OP_MIN,
    UCXDT_OP_MAX,
    UCXDT_OP_LAND, /**< logical: nonzero is true, the result 1 or 0 */
    UCXDT_OP_LOR,
    UCXDT_OP_LXOR,
    UCXDT_OP_BAND, /**< bitwise */
    UCXDT_OP_BOR,
    UCXDT_OP_BXOR,
    UCXDT_OP_LAST
} ucxdt_op_t;

/** inoutbuf[i] = inbuf[i] op inoutbuf[i] for `count` elements of `primitive`, enqueued on
 *  `stream` (MPI_Reduce_local, MPI-4.1 §6.9.7, on GPU-resident arrays; what one-sided
 *  accumulates of device memory reduce with). Both arrays contiguous, aligned to the element
 *  and accessible from the GPU that owns `stream` (its device memory, managed memory, pinned
 *  host memory); they may be the same array but must not otherwise overlap.
 *  The ops on each primitive are MPI's (§6.9.2): SUM, PROD, MIN, MAX and the logical ops on
 *  integers (UCXDT_INT*, UCXDT_UINT*); the bitwise ops on integers and UCXDT_BYTE; SUM, PROD,
 *  MIN, MAX on UCXDT_FLOAT and UCXDT_DOUBLE; SUM and PROD on the complex primitives.
 *  Errors: UCXDT_ERR_INVALID_PARAM (a null array with count > 0, a negative count, op or
 *  primitive out of range); UCXDT_ERR_UNSUPPORTED for an op MPI does not define on the
 *  primitive, and for UCXDT_CHAR and UCXDT_LONG_DOUBLE (no GPU arithmetic of their own here);
 *  UCXDT_ERR_CUDA when the launch fails. Nothing is enqueued on an error.
 *  Thread safety: any thread, any stream. */
UCXDT_API ucxdt_status_t ucxdt_reduce_local_async(const void *inbuf, void *inoutbuf, int64_t count,
                                                  ucxdt_primitive_t primitive, ucxdt_op_t op,
                                                  cudaStream_t stream);

#ifdef __cplusplus
}
#endif

#endif /* UCXDT_UCXDT_CUDA_H */
