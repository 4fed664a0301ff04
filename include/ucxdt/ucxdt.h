/*
 * ucxdt: MPI-style derived datatypes for moving non-contiguous data over UCX.
 *
 * This header is the datatype engine's C API: constructors, queries, commit, and
 * MPI_Pack/MPI_Unpack-style packing, plus byte-range packing of the packed stream for
 * fragmented protocols. Semantics follow MPI-4.1 chapter 5 ("Datatypes") unless a
 * function's comment says otherwise.
 *
 * Units: every count, blocklength and element displacement is in elements of the old type;
 * every parameter whose name ends in `_bytes`, and every lb, extent, size, offset, length and
 * position, is in bytes. All are int64_t.
 *
 * Errors: every function returns UCXDT_OK or an error status. A call that fails changes
 * nothing (no handle is created, no byte of an output buffer is written, *position is left as
 * it was) and records a message naming the offending argument, readable with
 * ucxdt_last_error() from the same thread.
 *
 * Thread safety: all functions may be called concurrently from any threads. Type handles are
 * immutable after creation except for commit; committing or freeing a handle while another
 * thread uses the same handle is the caller's race (as in MPI), but never corrupts other
 * handles. A freed handle is detected and rejected with UCXDT_ERR_INVALID_PARAM.
 */
#ifndef UCXDT_UCXDT_H
#define UCXDT_UCXDT_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define UCXDT_API __attribute__((visibility("default")))
#else
#define UCXDT_API
#endif

#define UCXDT_VERSION_MAJOR 0
#define UCXDT_VERSION_MINOR 1

/** Opaque datatype handle. Predefined handles (ucxdt_type_primitive) are never freed. */
typedef struct ucxdt_type *ucxdt_type_t;

/** Null handle, returned in *newtype by ucxdt_type_free. */
#define UCXDT_TYPE_NULL ((ucxdt_type_t)0)

/** Status codes. UCXDT_OK is zero; errors are negative. */
typedef enum {
    UCXDT_OK                = 0,
    UCXDT_ERR_INVALID_PARAM = -1,  /**< bad argument: null array, negative count, freed handle */
    UCXDT_ERR_NO_MEMORY     = -2,  /**< allocation failed */
    UCXDT_ERR_OVERFLOW      = -3,  /**< a size, extent or displacement does not fit in int64 */
    UCXDT_ERR_NOT_COMMITTED = -4,  /**< the type must be committed for this call */
    UCXDT_ERR_TRUNCATED     = -5,  /**< the data does not fit in the buffer / receive layout */
    UCXDT_ERR_TYPE_MISMATCH = -6,  /**< type signatures of the two sides differ */
    UCXDT_ERR_CUDA          = -7,  /**< a CUDA call failed */
    UCXDT_ERR_UCX           = -8,  /**< a UCX call failed */
    UCXDT_ERR_PEER_FAILURE  = -9,  /**< the peer process failed during a transfer */
    UCXDT_ERR_CANCELED      = -10, /**< the request was canceled */
    UCXDT_ERR_UNSUPPORTED   = -11, /**< valid, but not supported by this build or memory type */
    UCXDT_ERR_OUT_OF_RANGE  = -12, /**< a one-sided target outside its registered memory */
    UCXDT_ERR_LAST          = -100 /**< below every status (UCS_ERR_LAST's role): not returned */
} ucxdt_status_t;

/** Predefined (primitive) datatypes. Sizes are the C ABI's on the build platform. */
typedef enum {
    UCXDT_BYTE = 0,        /**< MPI_BYTE, 1 byte, untyped */
    UCXDT_CHAR,            /**< MPI_CHAR, 1 byte */
    UCXDT_INT8,
    UCXDT_INT16,
    UCXDT_INT32,
    UCXDT_INT64,
    UCXDT_UINT8,
    UCXDT_UINT16,
    UCXDT_UINT32,
    UCXDT_UINT64,
    UCXDT_FLOAT,           /**< 4 bytes */
    UCXDT_DOUBLE,          /**< 8 bytes */
    UCXDT_LONG_DOUBLE,     /**< sizeof(long double): 16 bytes on x86-64 */
    UCXDT_FLOAT_COMPLEX,   /**< 8 bytes (MPI_C_FLOAT_COMPLEX) */
    UCXDT_DOUBLE_COMPLEX,  /**< 16 bytes (MPI_C_DOUBLE_COMPLEX) */
    UCXDT_PRIMITIVE_LAST
} ucxdt_primitive_t;

/** Array storage order for ucxdt_type_subarray (MPI_ORDER_C / MPI_ORDER_FORTRAN). */
typedef enum {
    UCXDT_ORDER_C       = 0, /**< last dimension varies fastest */
    UCXDT_ORDER_FORTRAN = 1  /**< first dimension varies fastest */
} ucxdt_order_t;

/** How a type was constructed (MPI_Type_get_envelope's combiner). */
typedef enum {
    UCXDT_COMBINER_NAMED = 0,
    UCXDT_COMBINER_CONTIGUOUS,
    UCXDT_COMBINER_VECTOR,
    UCXDT_COMBINER_HVECTOR,
    UCXDT_COMBINER_INDEXED,
    UCXDT_COMBINER_HINDEXED,
    UCXDT_COMBINER_INDEXED_BLOCK,
    UCXDT_COMBINER_HINDEXED_BLOCK,
    UCXDT_COMBINER_SUBARRAY,
    UCXDT_COMBINER_STRUCT,
    UCXDT_COMBINER_RESIZED,
    UCXDT_COMBINER_DUP
} ucxdt_combiner_t;

/** Plan classes that (type, count) is lowered to at commit (see docs/design.md). */
typedef enum {
    UCXDT_PLAN_CONTIGUOUS = 0, /**< one run of bytes */
    UCXDT_PLAN_STRIDED    = 1, /**< N-D strided array of equal contiguous blocks */
    UCXDT_PLAN_BLOCK_LIST = 2  /**< explicit list of blocks, optionally repeated over strided dims */
} ucxdt_plan_class_t;

/** A type signature: the sequence of primitives of the type map, hashed (MPI-4.1 5.1.1).
 *  Two (type, count) pairs with equal signatures may be sent/received against each other. */
typedef struct {
    uint64_t hash;      /**< polynomial hash of the primitive sequence */
    int64_t  length;    /**< number of primitives in the sequence */
} ucxdt_signature_t;

/** Readable text for a status code; never NULL. */
UCXDT_API const char *ucxdt_status_string(ucxdt_status_t status);

/** The message recorded by the last failed call on this thread ("" if none). The pointer is
 *  valid until the next ucxdt call on this thread. */
UCXDT_API const char *ucxdt_last_error(void);

/** Predefined handle for a primitive; UCXDT_TYPE_NULL if `primitive` is out of range.
 *  Predefined types are committed and must not be freed. */
UCXDT_API ucxdt_type_t ucxdt_type_primitive(ucxdt_primitive_t primitive);

/* ---- Constructors (MPI-4.1 5.1.2 - 5.1.7). The new type is not committed. ---------------- */

/** `count` copies of oldtype, each at the previous one plus oldtype's extent (MPI_Type_contiguous).
 *  Errors: count < 0, invalid oldtype, count x extent overflow. */
UCXDT_API ucxdt_status_t ucxdt_type_contiguous(int64_t count, ucxdt_type_t oldtype,
                                               ucxdt_type_t *newtype);

/** `count` blocks of `blocklength` elements, block starts `stride` extents apart; stride may be
 *  negative or zero (MPI_Type_vector). */
UCXDT_API ucxdt_status_t ucxdt_type_vector(int64_t count, int64_t blocklength, int64_t stride,
                                           ucxdt_type_t oldtype, ucxdt_type_t *newtype);

/** As ucxdt_type_vector with the stride in bytes (MPI_Type_create_hvector). */
UCXDT_API ucxdt_status_t ucxdt_type_hvector(int64_t count, int64_t blocklength,
                                            int64_t stride_bytes, ucxdt_type_t oldtype,
                                            ucxdt_type_t *newtype);

/** Blocks of blocklengths[i] elements at displacements[i] extents (MPI_Type_indexed).
 *  Arrays hold `count` entries and may be NULL only when count == 0. */
UCXDT_API ucxdt_status_t ucxdt_type_indexed(int64_t count, const int64_t blocklengths[],
                                            const int64_t displacements[], ucxdt_type_t oldtype,
                                            ucxdt_type_t *newtype);

/** As ucxdt_type_indexed with displacements in bytes (MPI_Type_create_hindexed). */
UCXDT_API ucxdt_status_t ucxdt_type_hindexed(int64_t count, const int64_t blocklengths[],
                                             const int64_t displacements_bytes[],
                                             ucxdt_type_t oldtype, ucxdt_type_t *newtype);

/** Blocks of one blocklength at displacements[i] extents (MPI_Type_create_indexed_block). */
UCXDT_API ucxdt_status_t ucxdt_type_indexed_block(int64_t count, int64_t blocklength,
                                                  const int64_t displacements[],
                                                  ucxdt_type_t oldtype, ucxdt_type_t *newtype);

/** As ucxdt_type_indexed_block with byte displacements (MPI_Type_create_hindexed_block). */
UCXDT_API ucxdt_status_t ucxdt_type_hindexed_block(int64_t count, int64_t blocklength,
                                                   const int64_t displacements_bytes[],
                                                   ucxdt_type_t oldtype, ucxdt_type_t *newtype);

/** An ndims-dimensional subarray of a sizes[] array of oldtype (MPI_Type_create_subarray).
 *  1 <= ndims <= 32; sizes[i] >= 1; 0 <= subsizes[i] <= sizes[i];
 *  0 <= starts[i] <= sizes[i] - subsizes[i]. The result has lb 0 and extent
 *  prod(sizes) x extent(oldtype). */
UCXDT_API ucxdt_status_t ucxdt_type_subarray(int ndims, const int64_t sizes[],
                                             const int64_t subsizes[], const int64_t starts[],
                                             ucxdt_order_t order, ucxdt_type_t oldtype,
                                             ucxdt_type_t *newtype);

/** Blocks of blocklengths[i] elements of types[i] at byte displacements (MPI_Type_create_struct).
 *  Like every constructor whose bounds are not explicit, the extent is rounded up to a
 *  multiple of the largest alignment of its primitives (MPI-4.1 5.1.6's epsilon, applied once
 *  over the type map), so {double, int, int, char} has extent 24 as in C. Open MPI 4.1 pads
 *  after every block instead, which gives a larger extent for some unaligned layouts. */
UCXDT_API ucxdt_status_t ucxdt_type_struct(int64_t count, const int64_t blocklengths[],
                                           const int64_t displacements_bytes[],
                                           const ucxdt_type_t types[], ucxdt_type_t *newtype);

/** oldtype with lower bound `lb` and extent `extent` bytes; extent may be zero or negative
 *  (MPI_Type_create_resized). The type map, and so the packed data, is unchanged. */
UCXDT_API ucxdt_status_t ucxdt_type_resized(ucxdt_type_t oldtype, int64_t lb, int64_t extent,
                                            ucxdt_type_t *newtype);

/** A new handle for the same type; committed if oldtype is (MPI_Type_dup). */
UCXDT_API ucxdt_status_t ucxdt_type_dup(ucxdt_type_t oldtype, ucxdt_type_t *newtype);

/** Commits the type: normalizes its type map and makes it usable for packing (MPI_Type_commit).
 *  Committing a committed type does nothing. */
UCXDT_API ucxdt_status_t ucxdt_type_commit(ucxdt_type_t type);

/** Frees the handle and sets *type to UCXDT_TYPE_NULL (MPI_Type_free). Types built from it
 *  stay valid. Predefined types cannot be freed (UCXDT_ERR_INVALID_PARAM). */
UCXDT_API ucxdt_status_t ucxdt_type_free(ucxdt_type_t *type);

/* ---- Queries (MPI-4.1 5.1.5 - 5.1.8). Allowed on uncommitted types. ---------------------- */

/** Bytes of data in one element of the type: the packed size (MPI_Type_size_x). */
UCXDT_API ucxdt_status_t ucxdt_type_size(ucxdt_type_t type, int64_t *size);

/** Lower bound and extent (ub - lb) in bytes (MPI_Type_get_extent_x). Without explicit bounds
 *  (resized, subarray), ub is rounded up so that the extent is a multiple of the type's
 *  alignment: the largest natural alignment of its primitives (MPI-4.1 5.1.6, "epsilon"). */
UCXDT_API ucxdt_status_t ucxdt_type_extent(ucxdt_type_t type, int64_t *lb, int64_t *extent);

/** True lower bound and true extent: the span of bytes the type map touches, ignoring
 *  resizing (MPI_Type_get_true_extent_x). Both are 0 for a type with no data. */
UCXDT_API ucxdt_status_t ucxdt_type_true_extent(ucxdt_type_t type, int64_t *true_lb,
                                                int64_t *true_extent);

/** Signature of `count` elements of the type. Equal signatures are required of matching send
 *  and receive (type, count) pairs. */
UCXDT_API ucxdt_status_t ucxdt_type_signature(ucxdt_type_t type, int64_t count,
                                              ucxdt_signature_t *signature);

/** How many primitive (basic) elements the first `bytes` bytes of the packed stream of any
 *  count of elements of `type` hold: for a message of `bytes` packed bytes received with `type`,
 *  MPI_Get_elements_x (MPI-4.1 §5.1.11). MPI_Get_count (§3.2.5) is bytes / size where size
 *  (ucxdt_type_size) divides it, else MPI_UNDEFINED. Walks the type's constructors, not its
 *  type map. Errors: UCXDT_ERR_INVALID_PARAM (NULL elements, bytes < 0, an unknown or freed
 *  type), UCXDT_ERR_TYPE_MISMATCH (bytes ends inside a primitive, or a type of size 0 with
 *  bytes > 0: no message of whole primitives is that long). Allowed on uncommitted types. */
UCXDT_API ucxdt_status_t ucxdt_type_get_elements(ucxdt_type_t type, int64_t bytes, int64_t *elements);

/** The constructor that built the type (like MPI_Type_get_envelope's combiner). */
UCXDT_API ucxdt_status_t ucxdt_type_combiner(ucxdt_type_t type, ucxdt_combiner_t *combiner);

/** Plan of `count` elements of a committed type: its class and the number of contiguous
 *  runs it copies (for diagnostics and tests; see docs/design.md). Runs that touch in memory
 *  are merged within one element and wherever a whole strided level is contiguous; runs that
 *  touch only across element boundaries of a non-contiguous level are counted apart, so
 *  num_blocks is at least the number of maximal contiguous runs of the type map. */
UCXDT_API ucxdt_status_t ucxdt_type_plan_info(ucxdt_type_t type, int64_t count,
                                              ucxdt_plan_class_t *plan_class,
                                              int64_t *num_blocks);

/* ---- Packing (MPI-4.1 5.2). Host memory. ------------------------------------------------- */

/** Packs `incount` elements of `type` from `inbuf` into outbuf[*position ...] and advances
 *  *position by the packed size (MPI_Pack). outsize is outbuf's size in bytes.
 *  inbuf may be NULL when the type's displacements are absolute addresses (MPI_BOTTOM).
 *  Errors: UCXDT_ERR_TRUNCATED if *position + packed size > outsize (nothing written);
 *  UCXDT_ERR_NOT_COMMITTED; UCXDT_ERR_INVALID_PARAM for null outbuf or position, negative
 *  counts or positions. */
UCXDT_API ucxdt_status_t ucxdt_pack(const void *inbuf, int64_t incount, ucxdt_type_t type,
                                    void *outbuf, int64_t outsize, int64_t *position);

/** Unpacks `outcount` elements of `type` from inbuf[*position ...] into outbuf and advances
 *  *position (MPI_Unpack). insize is inbuf's size in bytes. Errors: UCXDT_ERR_TRUNCATED if
 *  fewer than the packed size remain in inbuf (nothing written); as ucxdt_pack otherwise.
 *  Only bytes of the type map are written; gaps in outbuf are left untouched. */
UCXDT_API ucxdt_status_t ucxdt_unpack(const void *inbuf, int64_t insize, int64_t *position,
                                      void *outbuf, int64_t outcount, ucxdt_type_t type);

/** Upper bound of the bytes ucxdt_pack needs for incount elements (MPI_Pack_size). */
UCXDT_API ucxdt_status_t ucxdt_pack_size(int64_t incount, ucxdt_type_t type, int64_t *size);

/** Writes bytes [offset, offset + length) of the packed stream of (buf, count, type) to
 *  `packed` (length bytes). Ranges may be produced in any order; the cost of finding
 *  `offset` is logarithmic in the number of blocks. Errors: UCXDT_ERR_INVALID_PARAM if the
 *  range is outside [0, count x size]. */
UCXDT_API ucxdt_status_t ucxdt_pack_range(const void *buf, int64_t count, ucxdt_type_t type,
                                          int64_t offset, void *packed, int64_t length);

/** Scatters `length` packed bytes, which are bytes [offset, offset + length) of the packed
 *  stream of (buf, count, type), into buf. Errors: UCXDT_ERR_TRUNCATED if offset + length
 *  exceeds count x size (nothing written). */
UCXDT_API ucxdt_status_t ucxdt_unpack_range(const void *packed, int64_t offset, int64_t length,
                                            void *buf, int64_t count, ucxdt_type_t type);

#ifdef __cplusplus
}
#endif

#endif /* UCXDT_UCXDT_H */
