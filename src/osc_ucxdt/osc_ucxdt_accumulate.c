/* Accumulates (MPI-4.1 §12.3.4): MPI_Accumulate, MPI_Get_accumulate, MPI_Fetch_and_op,
 * MPI_Compare_and_swap and their request-based forms, for every predefined op and type, any
 * origin, result and target datatypes built from one predefined type, in any memory. Each runs
 * under the target's accumulate lock (osc_ucxdt_atomic.c), which makes accumulates to a target
 * atomic with respect to each other per element and, since each ends before the next starts,
 * ordered as MPI's default accumulate_ordering (rar,raw,war,waw) asks: the target layout is read
 * whole into elements of its predefined type, reduced here with Open MPI's op
 * (MPI_Reduce_local), and written back. MPI_REPLACE without a result is one put under the lock. */
#include "osc_ucxdt.h"


#include <stdlib.h>
#include <string.h>

/* n elements of one predefined type, laid out as in memory (its extent apart). */
typedef struct {
    ompi_datatype_t *dt;
    ucxdt_type_t type;
    size_t count;
    void *buf;
} elements_t;

static int elements_init(elements_t *e, ompi_datatype_t *prim, size_t count) {
    ptrdiff_t lb = 0, extent = 0;
    ompi_datatype_get_extent(prim, &lb, &extent);
    e->dt = prim, e->count = count;
    e->buf = malloc((size_t)extent * (count ? count : 1));
    if (!e->buf) return OMPI_ERR_OUT_OF_RESOURCE;
    return mca_osc_ucxdt_type(prim, &e->type);
}

/* The count elements of (addr, dt) copied into e's layout (pack, then unpack: dt's layout may
 * be anywhere, in any memory); or out of it, with to_layout. MPI_ERR_TYPE when the signatures
 * differ. */
static int convert(elements_t *e, void *addr, int count, ompi_datatype_t *dt, bool to_layout) {
    ucxdt_type_t type;
    int rc = mca_osc_ucxdt_type(dt, &type);
    if (rc != OMPI_SUCCESS) return rc;
    int64_t size = 0, esize = 0;
    if (ucxdt_type_size(type, &size) != UCXDT_OK || ucxdt_type_size(e->type, &esize) != UCXDT_OK) return MPI_ERR_TYPE;
    if (size * count != esize * (int64_t)e->count) return MPI_ERR_TYPE;
    char *packed = malloc((size_t)(size * count) + 1);
    if (!packed) return OMPI_ERR_OUT_OF_RESOURCE;
    int64_t pos = 0;
    ucxdt_status_t st = to_layout ? ucxdt_pack(e->buf, (int64_t)e->count, e->type, packed, size * count, &pos)
                                  : ucxdt_pack(addr, count, type, packed, size * count, &pos);
    if (st == UCXDT_OK) {
        pos = 0;
        st = to_layout ? ucxdt_unpack(packed, size * count, &pos, addr, count, type)
                       : ucxdt_unpack(packed, size * count, &pos, e->buf, (int64_t)e->count, e->type);
    }
    free(packed);
    return st == UCXDT_OK ? OMPI_SUCCESS : mca_osc_ucxdt_mpi_error(st);
}

/* Under the accumulate lock: result <- target; target <- origin op target. origin may be NULL
 * (MPI_NO_OP), result may be NULL. */
static int locked_accumulate(mca_osc_ucxdt_module_t *m, const void *origin_addr, int origin_count,
                             ompi_datatype_t *origin_dt, void *result_addr, int result_count,
                             ompi_datatype_t *result_dt, int target, ptrdiff_t target_disp, int target_count,
                             ompi_datatype_t *target_dt, struct ompi_op_t *op) {
    mca_osc_ucxdt_target_t *t = &m->targets[target];
    ucxdt_type_t ttype;
    int rc = mca_osc_ucxdt_type(target_dt, &ttype);
    if (rc != OMPI_SUCCESS) return rc;
    size_t tsize = 0;
    ompi_datatype_type_size(target_dt, &tsize);
    if (tsize * (size_t)target_count == 0) return OMPI_SUCCESS;
    uint64_t remote = 0;
    ucxdt_rkey_h rkey = NULL;
    if ((rc = mca_osc_ucxdt_resolve(m, target, target_disp, target_dt, &remote, &rkey)) != OMPI_SUCCESS) return rc;
    if (op == MPI_REPLACE && !result_addr) {
        ucxdt_type_t otype;
        if ((rc = mca_osc_ucxdt_type(origin_dt, &otype)) != OMPI_SUCCESS) return rc;
        const ucxdt_request_param_t none = {0};
        return mca_osc_ucxdt_wait_op(m, target, ucxdt_put_nbx(t->peer->ep, origin_addr, origin_count, otype, remote, rkey,
                                                target_count, ttype, &none));
    }
    /* The one predefined type the target's is built of (MPI_Accumulate checks the origin's is
     * the same, §12.3.4); a target of mixed types is erroneous but for MPI_REPLACE. */
    ompi_datatype_t *prim = ompi_datatype_get_single_predefined_type_from_args(target_dt);
    size_t psize = 0;
    if (!prim || ompi_datatype_type_size(prim, &psize) != OMPI_SUCCESS || psize == 0) return MPI_ERR_TYPE;
    elements_t cur = {0}, in = {0};
    const size_t n = tsize * (size_t)target_count / psize;
    if ((rc = elements_init(&cur, prim, n)) == OMPI_SUCCESS) {
        const ucxdt_request_param_t none = {0};
        rc = mca_osc_ucxdt_wait_op(m, target, ucxdt_get_nbx(t->peer->ep, cur.buf, (int64_t)n, cur.type, remote, rkey, target_count,
                                              ttype, &none));
    }
    if (rc == OMPI_SUCCESS && result_addr) rc = convert(&cur, result_addr, result_count, result_dt, true);
    if (rc == OMPI_SUCCESS && op != MPI_NO_OP) {
        if ((rc = elements_init(&in, prim, n)) == OMPI_SUCCESS)
            rc = convert(&in, (void *)origin_addr, origin_count, origin_dt, false);
        if (rc == OMPI_SUCCESS) {
            void *next = in.buf;
            if (op != MPI_REPLACE) {
                /* cur <- in op cur, as Open MPI reduces (MPI_Reduce_local, MPI-4.1 §6.9.7). */
                if ((rc = MPI_Reduce_local(in.buf, cur.buf, (int)n, prim, op)) != MPI_SUCCESS) goto out;
                next = cur.buf;
            }
            const ucxdt_request_param_t none = {0};
            rc = mca_osc_ucxdt_wait_op(m, target, ucxdt_put_nbx(t->peer->ep, next, (int64_t)n, cur.type, remote, rkey,
                                                  target_count, ttype, &none));
        }
    }
out:
    free(cur.buf), free(in.buf);
    return rc;
}

static int accumulate(mca_osc_ucxdt_module_t *m, const void *origin_addr, int origin_count, ompi_datatype_t *origin_dt,
                      void *result_addr, int result_count, ompi_datatype_t *result_dt, int target,
                      ptrdiff_t target_disp, int target_count, ompi_datatype_t *target_dt, struct ompi_op_t *op,
                      ompi_request_t **request) {
    int rc = mca_osc_ucxdt_check_access(m, target, request != NULL);
    if (rc != OMPI_SUCCESS) return rc;
    if ((rc = mca_osc_ucxdt_acc_lock(m, target)) != OMPI_SUCCESS) return rc;
    rc = locked_accumulate(m, origin_addr, origin_count, origin_dt, result_addr, result_count, result_dt, target,
                           target_disp, target_count, target_dt, op);
    const int urc = mca_osc_ucxdt_acc_unlock(m, target);
    if (rc == OMPI_SUCCESS) rc = urc;
    if (request && rc == OMPI_SUCCESS) {
        /* Complete at the origin already. */
        mca_osc_ucxdt_request_t *r = mca_osc_ucxdt_request_new(m->win);
        if (!r) return OMPI_ERR_OUT_OF_RESOURCE;
        mca_osc_ucxdt_request_complete(r, MPI_SUCCESS);
        *request = &r->ompi;
    }
    return rc;
}

int mca_osc_ucxdt_accumulate(const void *origin_addr, int origin_count, ompi_datatype_t *origin_dt, int target,
                             ptrdiff_t target_disp, int target_count, ompi_datatype_t *target_dt, struct ompi_op_t *op,
                             ompi_win_t *win) {
    return accumulate(mca_osc_ucxdt_module(win), origin_addr, origin_count, origin_dt, NULL, 0, NULL, target,
                      target_disp, target_count, target_dt, op, NULL);
}

int mca_osc_ucxdt_raccumulate(const void *origin_addr, int origin_count, ompi_datatype_t *origin_dt, int target,
                              ptrdiff_t target_disp, int target_count, ompi_datatype_t *target_dt, struct ompi_op_t *op,
                              ompi_win_t *win, ompi_request_t **request) {
    return accumulate(mca_osc_ucxdt_module(win), origin_addr, origin_count, origin_dt, NULL, 0, NULL, target,
                      target_disp, target_count, target_dt, op, request);
}

int mca_osc_ucxdt_get_accumulate(const void *origin_addr, int origin_count, ompi_datatype_t *origin_dt,
                                 void *result_addr, int result_count, ompi_datatype_t *result_dt, int target,
                                 ptrdiff_t target_disp, int target_count, ompi_datatype_t *target_dt,
                                 struct ompi_op_t *op, ompi_win_t *win) {
    return accumulate(mca_osc_ucxdt_module(win), origin_addr, origin_count, origin_dt, result_addr, result_count,
                      result_dt, target, target_disp, target_count, target_dt, op, NULL);
}

int mca_osc_ucxdt_rget_accumulate(const void *origin_addr, int origin_count, ompi_datatype_t *origin_dt,
                                  void *result_addr, int result_count, ompi_datatype_t *result_dt, int target,
                                  ptrdiff_t target_disp, int target_count, ompi_datatype_t *target_dt,
                                  struct ompi_op_t *op, ompi_win_t *win, ompi_request_t **request) {
    return accumulate(mca_osc_ucxdt_module(win), origin_addr, origin_count, origin_dt, result_addr, result_count,
                      result_dt, target, target_disp, target_count, target_dt, op, request);
}

int mca_osc_ucxdt_fetch_and_op(const void *origin_addr, void *result_addr, ompi_datatype_t *dt, int target,
                               ptrdiff_t target_disp, struct ompi_op_t *op, ompi_win_t *win) {
    return accumulate(mca_osc_ucxdt_module(win), origin_addr, 1, dt, result_addr, 1, dt, target, target_disp, 1, dt, op,
                      NULL);
}

/* The element at the target is read, compared with compare_addr's bytes here, and replaced by
 * origin_addr's if equal, under the accumulate lock (MPI-4.1 §12.3.4: integer, logical and byte
 * types compare bitwise). */
int mca_osc_ucxdt_compare_and_swap(const void *origin_addr, const void *compare_addr, void *result_addr,
                                   ompi_datatype_t *dt, int target, ptrdiff_t target_disp, ompi_win_t *win) {
    mca_osc_ucxdt_module_t *m = mca_osc_ucxdt_module(win);
    int rc = mca_osc_ucxdt_check_access(m, target, false);
    if (rc != OMPI_SUCCESS) return rc;
    elements_t cur = {0}, cmp = {0};
    if ((rc = elements_init(&cur, dt, 1)) != OMPI_SUCCESS || (rc = elements_init(&cmp, dt, 1)) != OMPI_SUCCESS ||
        (rc = convert(&cmp, (void *)compare_addr, 1, dt, false)) != OMPI_SUCCESS) {
        free(cur.buf), free(cmp.buf);
        return rc;
    }
    mca_osc_ucxdt_target_t *t = &m->targets[target];
    size_t size = 0;
    ompi_datatype_type_size(dt, &size);
    uint64_t remote = 0;
    ucxdt_rkey_h rkey = NULL;
    if ((rc = mca_osc_ucxdt_acc_lock(m, target)) == OMPI_SUCCESS) {
        const ucxdt_request_param_t none = {0};
        rc = mca_osc_ucxdt_resolve(m, target, target_disp, dt, &remote, &rkey);
        if (rc == OMPI_SUCCESS)
            rc = mca_osc_ucxdt_wait_op(m, target, ucxdt_get_nbx(t->peer->ep, cur.buf, 1, cur.type, remote, rkey, 1, cur.type, &none));
        if (rc == OMPI_SUCCESS) rc = convert(&cur, result_addr, 1, dt, true);
        if (rc == OMPI_SUCCESS && memcmp(cur.buf, cmp.buf, size) == 0) {
            ucxdt_type_t type;
            if ((rc = mca_osc_ucxdt_type(dt, &type)) == OMPI_SUCCESS)
                rc = mca_osc_ucxdt_wait_op(m, target, ucxdt_put_nbx(t->peer->ep, origin_addr, 1, type, remote, rkey, 1, type, &none));
        }
        const int urc = mca_osc_ucxdt_acc_unlock(m, target);
        if (rc == OMPI_SUCCESS) rc = urc;
    }
    free(cur.buf), free(cmp.buf);
    return rc;
}
