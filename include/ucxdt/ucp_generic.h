/*
 * ucxdt UCP API: a ucxdt type as a UCP generic datatype, so that (buffer, count, datatype)
 * can be given to ucp_tag_send_nbx / ucp_tag_recv_nbx, ucp_am_send_nbx / ucp_am_recv_data_nbx
 * and ucp_stream_send_nbx / ucp_stream_recv_nbx (ucp_request_param_t.datatype with
 * UCP_OP_ATTR_FIELD_DATATYPE), with `count` in elements of the type.
 *
 * Semantics (UCX 1.13 ucp.h, ucp_dt_create_generic and ucp_generic_dt_ops_t): UCP calls
 * start_pack / start_unpack when a request starts, packed_size, then pack(offset, max_length)
 * or unpack(offset, length) for each fragment (the receive side in any order), then finish
 * when the request ends, also on error or cancel. ucxdt serves each fragment with
 * ucxdt_pack_range / ucxdt_unpack_range of the packed stream of (buffer, count, type); the
 * packed stream is MPI_Pack's (MPI-4.1 5.2), so send and receive types need only equal
 * signatures, not equal layouts.
 *
 * Truncation: a message longer than the receive's packed size (count x type size) completes
 * the receive with UCS_ERR_MESSAGE_TRUNCATED; no byte outside the receive layout's type map is
 * written (UCP checks the length itself; the unpack callback refuses it too).
 *
 * Memory: the buffer may be host memory, or CUDA device or managed memory (told by the
 * driver from the layout's first data byte). UCP's generic path treats the buffer as host
 * memory and hands pack/unpack host bounce buffers of a few KiB, so for a GPU layout each
 * request takes a ring of pinned host staging (UCXDT_RING_DEPTH slots, default 4, of
 * UCXDT_RING_SLOT_KB KiB, default 256; at most UCXDT_RINGS_PER_DEVICE rings, default 64, per
 * device): a send packs on the GPU into the ring ahead of UCP, chunk by chunk, and UCP's
 * fragments are copied out of it; a receive collects fragments (in any order) into the ring
 * and the GPU unpacks each chunk once complete. The receive's GPU work is finished before UCP
 * completes the request. Memory per request is bounded by the ring; when no ring is free,
 * each fragment is staged on its own (correct, slower). Rings are released in finish, also on
 * error or cancel. This path is for compatibility with any UCP program; its bandwidth is
 * bounded by UCP's host copies of small fragments.
 *
 * Thread safety: the functions may be called from any thread. Requests of one datatype may run
 * concurrently on any workers. Destroying a datatype while a request that uses it is
 * outstanding is the caller's race (ucp_dt_destroy: "an access to this object may cause an
 * undefined failure").
 */
#ifndef UCXDT_UCP_GENERIC_H
#define UCXDT_UCP_GENERIC_H

#include <ucxdt/ucxdt.h>

#include <ucp/api/ucp.h>

#ifdef __cplusplus
extern "C" {
#endif

/** Creates a UCP generic datatype (ucp_dt_create_generic) for the committed ucxdt `type`.
 *  The datatype holds its own reference to the type (a ucxdt_type_dup), so the caller may free
 *  `type` at once; each request holds another until UCP calls finish, so requests in flight are
 *  unaffected by ucxdt_type_free of either handle.
 *  Errors: UCS_ERR_INVALID_PARAM for a NULL `datatype`, an invalid (null, freed) or uncommitted
 *  `type`, with the reason in ucxdt_last_error(); UCS_ERR_NO_MEMORY; or the status of
 *  ucp_dt_create_generic. On error *datatype is untouched and nothing is held.
 *  A request whose count x type size would exceed INT64_MAX, or whose state cannot be
 *  allocated, has packed size 0 (generic ops cannot fail at start). */
UCXDT_API ucs_status_t ucxdt_ucp_dt_create(ucxdt_type_t type, ucp_datatype_t *datatype);

/** Destroys a datatype made by ucxdt_ucp_dt_create (ucp_dt_destroy) and drops its reference
 *  to the type. No request using it may be outstanding. A datatype this library did not
 *  create is left alone. */
UCXDT_API void ucxdt_ucp_dt_destroy(ucp_datatype_t datatype);

#ifdef __cplusplus
}
#endif

#endif /* UCXDT_UCP_GENERIC_H */
