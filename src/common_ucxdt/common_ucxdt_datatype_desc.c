/* A ucxdt type from Open MPI's own description of a datatype (opal_datatype_t::desc), for the
 * types Open MPI builds inside itself (collective algorithms, MPI_Sendrecv_replace): those carry
 * no constructor arguments (ompi_datatype_t::args is NULL), so MPI_Type_get_envelope cannot
 * decode them. The description is a list of elements (count blocks of blocklen basic elements,
 * `extent` bytes apart, from `disp`) and loops (`loops` repetitions, `extent` bytes apart, of
 * the items up to their end marker). Basic elements become unsigned integers of their size:
 * the layout is exact, the signature is not MPI's, so messages of these types travel as packed
 * data (UCXDT_*_FLAG_PACKED), which Open MPI's own code pairs correctly by construction. */
#include "common_ucxdt.h"

#include "opal/datatype/opal_datatype_internal.h"

/* A ucxdt type of `size` bytes of one basic element. */
static ucxdt_status_t basic(size_t size, ucxdt_type_t *out) {
    switch (size) {
    case 1: *out = ucxdt_type_primitive(UCXDT_UINT8); return UCXDT_OK;
    case 2: *out = ucxdt_type_primitive(UCXDT_UINT16); return UCXDT_OK;
    case 4: *out = ucxdt_type_primitive(UCXDT_UINT32); return UCXDT_OK;
    case 8: *out = ucxdt_type_primitive(UCXDT_UINT64); return UCXDT_OK;
    default:
        if (size % 8 == 0) return ucxdt_type_contiguous((int64_t)(size / 8), ucxdt_type_primitive(UCXDT_UINT64), out);
        return ucxdt_type_contiguous((int64_t)size, ucxdt_type_primitive(UCXDT_UINT8), out);
    }
}

static void free_all(ucxdt_type_t *types, size_t n) {
    for (size_t i = 0; i < n; ++i) ucxdt_type_free(&types[i]);
}

/* The items desc[begin, end) as one struct type, each at its displacement. */
static ucxdt_status_t items(const dt_elem_desc_t *desc, uint32_t begin, uint32_t end, ucxdt_type_t *out) {
    const size_t cap = end - begin;
    ucxdt_type_t *types = calloc(cap ? cap : 1, sizeof *types);
    int64_t *disps = calloc(cap ? cap : 1, sizeof *disps), *lens = calloc(cap ? cap : 1, sizeof *lens);
    size_t n = 0;
    ucxdt_status_t st = types && disps && lens ? UCXDT_OK : UCXDT_ERR_NO_MEMORY;
    for (uint32_t i = begin; st == UCXDT_OK && i < end;) {
        const dt_elem_desc_t *e = &desc[i];
        const uint16_t id = e->elem.common.type;
        if (id == OPAL_DATATYPE_LOOP) {
            const uint32_t inner_end = i + e->loop.items;  /* its end marker */
            ucxdt_type_t inner = UCXDT_TYPE_NULL;
            if (inner_end >= end || desc[inner_end].elem.common.type != OPAL_DATATYPE_END_LOOP) {
                st = UCXDT_ERR_UNSUPPORTED;
            } else if ((st = items(desc, i + 1, inner_end, &inner)) == UCXDT_OK) {
                st = ucxdt_type_hvector(e->loop.loops, 1, e->loop.extent, inner, &types[n]);
                ucxdt_type_free(&inner);
                if (st == UCXDT_OK) disps[n] = 0, lens[n] = 1, ++n;
            }
            i = inner_end + 1;
        } else if (id >= OPAL_DATATYPE_FIRST_TYPE && id < OPAL_DATATYPE_MAX_PREDEFINED &&
                   (e->elem.common.flags & OPAL_DATATYPE_FLAG_DATA)) {
            ucxdt_type_t b = UCXDT_TYPE_NULL;
            if ((st = basic(opal_datatype_basicDatatypes[id]->size, &b)) == UCXDT_OK) {
                st = ucxdt_type_hvector(e->elem.count, (int64_t)e->elem.blocklen, e->elem.extent, b, &types[n]);
                ucxdt_type_free(&b);  /* a primitive is not freed: the error is ignored */
                if (st == UCXDT_OK) disps[n] = e->elem.disp, lens[n] = 1, ++n;
            }
            ++i;
        } else if (id == OPAL_DATATYPE_LB || id == OPAL_DATATYPE_UB) {
            ++i;  /* bounds come from the datatype itself (the caller resizes) */
        } else {
            st = UCXDT_ERR_UNSUPPORTED;
        }
    }
    if (st == UCXDT_OK) st = ucxdt_type_struct((int64_t)n, lens, disps, types, out);
    if (types) free_all(types, n);
    free(types), free(disps), free(lens);
    return st;
}

ucxdt_status_t mca_common_ucxdt_type_from_desc(const ompi_datatype_t *dt, ucxdt_type_t *out) {
    const opal_datatype_t *d = &dt->super;
    ucxdt_type_t body = UCXDT_TYPE_NULL;
    ucxdt_status_t st = items(d->desc.desc, 0, d->desc.used, &body);
    if (st != UCXDT_OK) return st;
    st = ucxdt_type_resized(body, d->lb, d->ub - d->lb, out);
    ucxdt_type_free(&body);
    if (st == UCXDT_OK && (st = ucxdt_type_commit(*out)) != UCXDT_OK) ucxdt_type_free(out);
    return st;
}
