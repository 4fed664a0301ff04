/* Contiguous bytes between host memory on both sides: one ucp_put_nbx or ucp_get_nbx on the
 * window's own UCP key, as osc ucx moves them, without a ucxdt request around it: there is no
 * layout for ucxdt to move, and through it a small MPI_Put under a flush took 2.0 us against
 * osc ucx's 1.0 on an H200 host (2026-11-30). The same checks hold: the signatures must match
 * (ucxdt's path reports MPI_ERR_TYPE otherwise) and the bytes must lie in the target's window
 * (MPI_ERR_RMA_RANGE). UCP's flush of the endpoint,
 * which ucxdt's flush ends with, completes these operations too. */
#include "osc_ucxdt.h"

#include <ucxdt/ucxdt_cuda.h>

/* Whether p is host memory: UCP's RMA of host windows reaches it. The query is ucxdt's (a
 * driver call), and it is most of what this path costs beyond osc ucx's, which asks none and
 * leaves memory types to UCP: 0.4-0.5 us a put on an H200 host (osu_put_latency at 1 B 1.04 us
 * without it, 1.46-1.51 with, osc ucx 0.90-0.99; run 50). */
bool mca_osc_ucxdt_host_memory(const void *p) {
    const ucxdt_memory_type_t t = ucxdt_memory_type(p, NULL);
    return t == UCXDT_MEMORY_HOST || t == UCXDT_MEMORY_HOST_PINNED;
}

int mca_osc_ucxdt_direct_fits(mca_osc_ucxdt_module_t *m, int target, const void *origin_addr, int origin_count,
                              ompi_datatype_t *origin_dt, ucxdt_type_t otype, ptrdiff_t target_disp,
                              int target_count, ompi_datatype_t *target_dt, ucxdt_type_t ttype,
                              mca_osc_ucxdt_direct_t *d) {
    const mca_osc_ucxdt_target_t *t = &m->targets[target];
    if (!t->ucp_rkey || origin_count <= 0 || target_count <= 0 ||
        !ompi_datatype_is_contiguous_memory_layout(origin_dt, origin_count) ||
        !ompi_datatype_is_contiguous_memory_layout(target_dt, target_count))
        return OMPI_ERR_NOT_AVAILABLE;
    ucxdt_signature_t os, ts;
    if (ucxdt_type_signature(otype, origin_count, &os) != UCXDT_OK ||
        ucxdt_type_signature(ttype, target_count, &ts) != UCXDT_OK || os.hash != ts.hash || os.length != ts.length)
        return OMPI_ERR_NOT_AVAILABLE;  /* ucxdt's path reports the mismatch */
    size_t size = 0;
    ompi_datatype_type_size(origin_dt, &size);
    ptrdiff_t olb = 0, tlb = 0, extent = 0;
    ompi_datatype_get_true_extent(origin_dt, &olb, &extent);
    ompi_datatype_get_true_extent(target_dt, &tlb, &extent);
    d->bytes = size * (size_t)origin_count;
    d->origin = (char *)origin_addr + olb;
    if (!mca_osc_ucxdt_host_memory(d->origin)) return OMPI_ERR_NOT_AVAILABLE;
    d->remote = mca_osc_ucxdt_address(t, target_disp) + (uint64_t)(int64_t)tlb;
    /* [remote, remote + bytes) within [base, base + size), without overflow. */
    if (d->remote < t->base || d->remote - t->base > t->size || d->bytes > t->size - (d->remote - t->base))
        return MPI_ERR_RMA_RANGE;
    return OMPI_SUCCESS;
}

ucs_status_ptr_t mca_osc_ucxdt_direct_start(mca_osc_ucxdt_module_t *m, int target, bool put,
                                            const mca_osc_ucxdt_direct_t *d, const ucp_request_param_t *param) {
    mca_osc_ucxdt_target_t *t = &m->targets[target];
    return put ? ucp_put_nbx(t->peer->ucp_ep, d->origin, d->bytes, d->remote, t->ucp_rkey, param)
               : ucp_get_nbx(t->peer->ucp_ep, d->origin, d->bytes, d->remote, t->ucp_rkey, param);
}
