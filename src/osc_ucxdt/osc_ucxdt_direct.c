/* Contiguous bytes between host memory on both sides: one ucp_put_nbx or ucp_get_nbx on the
 * window's own UCP key, as osc ucx moves them, without a ucxdt request around it: there is no
 * layout for ucxdt to move, and through it a small MPI_Put under a flush took 2.0 us against
 * osc ucx's 1.0 on an H200 host (2026-11-30). The same checks hold: the signatures must match
 * (ucxdt's path reports MPI_ERR_TYPE otherwise) and the bytes must lie in the target's window
 * (MPI_ERR_RMA_RANGE). UCP's flush of the endpoint,
 * which ucxdt's flush ends with, completes these operations too. */
#include "osc_ucxdt.h"

/* Whether origin_count of origin_dt and target_count of target_dt have one type signature: at
 * once for the same datatype and count (most calls), else by ucxdt's signatures. */
static bool same_signature(int origin_count, ompi_datatype_t *origin_dt, int target_count, ompi_datatype_t *target_dt) {
    if (origin_dt == target_dt && origin_count == target_count) return true;
    ucxdt_type_t otype, ttype;
    ucxdt_signature_t os, ts;
    return mca_osc_ucxdt_type(origin_dt, &otype) == OMPI_SUCCESS && mca_osc_ucxdt_type(target_dt, &ttype) == OMPI_SUCCESS &&
           ucxdt_type_signature(otype, origin_count, &os) == UCXDT_OK &&
           ucxdt_type_signature(ttype, target_count, &ts) == UCXDT_OK && os.hash == ts.hash && os.length == ts.length;
}

int mca_osc_ucxdt_direct_fits(mca_osc_ucxdt_module_t *m, int target, const void *origin_addr, int origin_count,
                              ompi_datatype_t *origin_dt, ptrdiff_t target_disp, int target_count,
                              ompi_datatype_t *target_dt, mca_osc_ucxdt_direct_t *d) {
    const mca_osc_ucxdt_target_t *t = &m->targets[target];
    if (m->flavor == MPI_WIN_FLAVOR_DYNAMIC || !t->ucp_rkey || origin_count <= 0 || target_count <= 0 ||
        !ompi_datatype_is_contiguous_memory_layout(origin_dt, origin_count) ||
        !ompi_datatype_is_contiguous_memory_layout(target_dt, target_count) ||
        !same_signature(origin_count, origin_dt, target_count, target_dt))
        return OMPI_ERR_NOT_AVAILABLE;  /* ucxdt's path moves it, or reports the mismatch */
    size_t size = 0;
    ompi_datatype_type_size(origin_dt, &size);
    ptrdiff_t olb = 0, tlb = 0, extent = 0;
    ompi_datatype_get_true_extent(origin_dt, &olb, &extent);
    ompi_datatype_get_true_extent(target_dt, &tlb, &extent);
    d->bytes = size * (size_t)origin_count;
    d->origin = (char *)origin_addr + olb;
    if (!mca_osc_ucxdt_host_memory(m, d->origin, d->bytes)) return OMPI_ERR_NOT_AVAILABLE;
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
