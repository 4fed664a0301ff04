/*
 * The strided put and get of OpenSHMEM 1.5 (section 9.5.3, shmem_TYPE_iput / shmem_TYPE_iget
 * and the sized shmem_iputSIZE / shmem_igetSIZE) over ucxdt's one-sided calls (ucxdt_rma.h):
 * the thin layer an OpenSHMEM implementation calls once it has turned the symmetric address
 * into the target PE's address, endpoint and remote key. Each side is a vector of `nelems`
 * elements of `elem_size` bytes, one every `stride` elements (strides in elements, as OpenSHMEM
 * gives them, positive or negative, not zero); the vector types are made and committed once
 * per (nelems, stride, elem_size) and kept (up to 64 shapes, least recently used dropped).
 *
 * Completion is ucxdt_put_nbx's: a put request completes when `source` may be reused, and
 * shmem_quiet maps onto ucxdt_worker_flush_nbx (shmem_fence onto ucxdt_ep_flush_nbx of each
 * endpoint). A blocking shmem_iput is this call, then waiting for its request. Errors as
 * ucxdt_put_nbx's, and UCXDT_ERR_INVALID_PARAM for a zero stride or element size.
 * Threads: as the worker.
 */
#ifndef UCXDT_UCXDT_SHMEM_H
#define UCXDT_UCXDT_SHMEM_H

#include <ucxdt/ucxdt_rma.h>

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/** dest[k * dst] on the target (at remote_dest, in the region of rkey) = source[k * sst] here,
 *  for k < nelems, each element `elem_size` bytes. */
UCXDT_API ucxdt_status_ptr_t ucxdt_shmem_iput_nbx(ucxdt_ep_h ep, uint64_t remote_dest, ucxdt_rkey_h rkey,
                                                  const void *source, ptrdiff_t dst, ptrdiff_t sst,
                                                  size_t nelems, size_t elem_size,
                                                  const ucxdt_request_param_t *param);
/** dest[k * dst] here = source[k * sst] on the target (at remote_source), for k < nelems. */
UCXDT_API ucxdt_status_ptr_t ucxdt_shmem_iget_nbx(ucxdt_ep_h ep, void *dest, uint64_t remote_source,
                                                  ucxdt_rkey_h rkey, ptrdiff_t dst, ptrdiff_t sst,
                                                  size_t nelems, size_t elem_size,
                                                  const ucxdt_request_param_t *param);

#ifdef __cplusplus
}
#endif

#endif /* UCXDT_UCXDT_SHMEM_H */
