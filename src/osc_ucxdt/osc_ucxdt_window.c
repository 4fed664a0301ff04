/* A window's life: made (MPI_Win_create, MPI_Win_allocate, MPI_Win_create_dynamic) by
 * registering its memory (none for a dynamic window) and a state region with the osc worker,
 * exchanging addresses, sizes, displacement units, remote
 * keys and worker addresses over a duplicate of the window's communicator, and connecting to
 * every process of the group; freed after a flush and a barrier (MPI-4.1 §12.2.5). */
#include "osc_ucxdt.h"

#include "opal/runtime/opal_progress.h"
#include "opal/util/info.h"
#include "opal/util/output.h"

#include <stdlib.h>
#include <string.h>

static const ompi_osc_base_module_t module_template = {
    .osc_win_shared_query = mca_osc_ucxdt_shared_query,
    .osc_win_attach = mca_osc_ucxdt_attach,
    .osc_win_detach = mca_osc_ucxdt_detach,
    .osc_free = mca_osc_ucxdt_free,
    .osc_put = mca_osc_ucxdt_put,
    .osc_get = mca_osc_ucxdt_get,
    .osc_accumulate = mca_osc_ucxdt_accumulate,
    .osc_compare_and_swap = mca_osc_ucxdt_compare_and_swap,
    .osc_fetch_and_op = mca_osc_ucxdt_fetch_and_op,
    .osc_get_accumulate = mca_osc_ucxdt_get_accumulate,
    .osc_rput = mca_osc_ucxdt_rput,
    .osc_rget = mca_osc_ucxdt_rget,
    .osc_raccumulate = mca_osc_ucxdt_raccumulate,
    .osc_rget_accumulate = mca_osc_ucxdt_rget_accumulate,
    .osc_fence = mca_osc_ucxdt_fence,
    .osc_start = mca_osc_ucxdt_start,
    .osc_complete = mca_osc_ucxdt_complete,
    .osc_post = mca_osc_ucxdt_post,
    .osc_wait = mca_osc_ucxdt_wait,
    .osc_test = mca_osc_ucxdt_test,
    .osc_lock = mca_osc_ucxdt_lock,
    .osc_unlock = mca_osc_ucxdt_unlock,
    .osc_lock_all = mca_osc_ucxdt_lock_all,
    .osc_unlock_all = mca_osc_ucxdt_unlock_all,
    .osc_sync = mca_osc_ucxdt_sync,
    .osc_flush = mca_osc_ucxdt_flush,
    .osc_flush_all = mca_osc_ucxdt_flush_all,
    .osc_flush_local = mca_osc_ucxdt_flush_local,
    .osc_flush_local_all = mca_osc_ucxdt_flush_local_all,
};

/* What each process publishes of itself, fixed-size; its worker address, window key and state
 * key follow in a second exchange. */
typedef struct {
    uint64_t base, size, state;
    int64_t disp_unit;
    uint64_t address_length, rkey_length, state_rkey_length, ucp_rkey_length;
    int64_t error;  /* nonzero: this process could not make its side */
} window_record_t;

static void release(mca_osc_ucxdt_module_t *m) {
    if (m->targets) {
        for (int r = 0; r < m->size; ++r) {
            if (m->targets[r].rkey) ucxdt_rkey_destroy(m->targets[r].rkey);
            if (m->targets[r].state_rkey) ucp_rkey_destroy(m->targets[r].state_rkey);
            if (m->targets[r].ucp_rkey) ucp_rkey_destroy(m->targets[r].ucp_rkey);
            mca_osc_ucxdt_regions_release(&m->targets[r]);
        }
        free(m->targets);
    }
    if (m->memh) ucxdt_mem_unmap(m->memh);
    if (m->ucp_memh) ucp_mem_unmap(ompi_osc_ucxdt.context, m->ucp_memh);
    mca_osc_ucxdt_attached_release(m);
    if (m->state_memh) ucp_mem_unmap(ompi_osc_ucxdt.context, m->state_memh);  /* frees m->state */
    if (m->allocated) free(m->base);
    free(m->start_ranks);
    free(m->posts_seen);
    if (m->comm) ompi_comm_free(&m->comm);
    free(m);
}

/* This process's side: memory, keys. Fills rec and the packed keys; OMPI_SUCCESS or an error. */
static int make_local(mca_osc_ucxdt_module_t *m, void **base, size_t size, int flavor, window_record_t *rec,
                      void **rkey, size_t *rkey_length, void **state_rkey, size_t *state_rkey_length,
                      void **ucp_rkey, size_t *ucp_rkey_length) {
    if (flavor == MPI_WIN_FLAVOR_ALLOCATE) {
        *base = NULL;
        if (size > 0 && posix_memalign(base, 64, size) != 0) return OMPI_ERR_OUT_OF_RESOURCE;
        m->allocated = true;
    }
    m->base = base ? *base : NULL;  /* MPI_BOTTOM, no pointer, for a dynamic window */
    m->length = size;
    rec->base = (uint64_t)(uintptr_t)m->base;
    rec->size = size;
    if (size > 0) {
        ucxdt_mem_map_params_t mp = {.field_mask = UCXDT_MEM_MAP_PARAM_FIELD_ADDRESS | UCXDT_MEM_MAP_PARAM_FIELD_LENGTH,
                                     .address = m->base, .length = size};
        ucxdt_status_t st = ucxdt_mem_map(ompi_osc_ucxdt.worker, &mp, &m->memh);
        if (st == UCXDT_OK) st = ucxdt_rkey_pack(m->memh, rkey, rkey_length);
        if (st != UCXDT_OK) {
            opal_output(0, "osc ucxdt: cannot register the window: %s", ucxdt_last_error());
            return mca_osc_ucxdt_mpi_error(st);
        }
        /* Host memory is registered for UCP's own RMA too (osc_ucxdt_direct.c). */
        if (mca_osc_ucxdt_host_memory(NULL, m->base, size)) {
            ucp_mem_map_params_t wp = {.field_mask = UCP_MEM_MAP_PARAM_FIELD_ADDRESS | UCP_MEM_MAP_PARAM_FIELD_LENGTH,
                                       .address = m->base, .length = size};
            ucs_status_t us = ucp_mem_map(ompi_osc_ucxdt.context, &wp, &m->ucp_memh);
            if (us == UCS_OK) us = ucp_rkey_pack(ompi_osc_ucxdt.context, m->ucp_memh, ucp_rkey, ucp_rkey_length);
            if (us != UCS_OK) {
                opal_output(0, "osc ucxdt: cannot register the window with UCP: %s", ucs_status_string(us));
                return OMPI_ERROR;
            }
        }
    }
    size_t bytes = mca_osc_ucxdt_table_word(m) * sizeof(uint64_t);
    if (flavor == MPI_WIN_FLAVOR_DYNAMIC) {
        bytes += mca_osc_ucxdt_table_bytes((size_t)ompi_osc_ucxdt.attach_max);
        m->attached = calloc((size_t)ompi_osc_ucxdt.attach_max, sizeof *m->attached);
        m->attachments = calloc((size_t)ompi_osc_ucxdt.attach_max, sizeof *m->attachments);
        if (!m->attached || !m->attachments) return OMPI_ERR_OUT_OF_RESOURCE;
    }
    /* UCP allocates the state (shared memory first, UCX_ALLOC_PRIO), as osc ucx does its own: a
     * peer on this node then reaches it with the CPU's atomics, where memory of ours, which only
     * CMA reaches, would leave each atomic to the target's progress (UCP's emulation) and a
     * contended lock to the pace of the target's MPI calls. */
    ucp_mem_map_params_t sp = {.field_mask = UCP_MEM_MAP_PARAM_FIELD_LENGTH | UCP_MEM_MAP_PARAM_FIELD_FLAGS,
                               .length = bytes, .flags = UCP_MEM_MAP_ALLOCATE};
    ucs_status_t us = ucp_mem_map(ompi_osc_ucxdt.context, &sp, &m->state_memh);
    if (us == UCS_OK) {
        ucp_mem_attr_t attr = {.field_mask = UCP_MEM_ATTR_FIELD_ADDRESS};
        us = ucp_mem_query(m->state_memh, &attr);
        m->state = attr.address;
        if (us == UCS_OK) memset(m->state, 0, bytes);
    }
    if (us == UCS_OK) us = ucp_rkey_pack(ompi_osc_ucxdt.context, m->state_memh, state_rkey, state_rkey_length);
    if (us != UCS_OK) {
        opal_output(0, "osc ucxdt: cannot register the window's state: %s", ucs_status_string(us));
        return OMPI_ERROR;
    }
    rec->state = (uint64_t)(uintptr_t)m->state;
    rec->address_length = ompi_osc_ucxdt.address_length;
    rec->rkey_length = *rkey_length;
    rec->state_rkey_length = *state_rkey_length;
    rec->ucp_rkey_length = *ucp_rkey_length;
    return OMPI_SUCCESS;
}

/* Every process's side, connected: the second exchange and the endpoints and keys. */
static int connect_all(mca_osc_ucxdt_module_t *m, const window_record_t *recs, const void *mine, size_t mine_length) {
    ompi_communicator_t *c = m->comm;
    int *lengths = calloc((size_t)m->size, sizeof *lengths), *displs = calloc((size_t)m->size, sizeof *displs);
    size_t total = 0;
    for (int r = 0; r < m->size && lengths && displs; ++r) {
        const uint64_t n = recs[r].address_length + recs[r].rkey_length + recs[r].state_rkey_length +
                           recs[r].ucp_rkey_length;
        displs[r] = (int)total, lengths[r] = (int)n, total += n;
    }
    char *all = lengths && displs ? malloc(total ? total : 1) : NULL;
    int rc = all ? c->c_coll->coll_allgatherv(mine, (int)mine_length, MPI_BYTE, all, lengths, displs, MPI_BYTE, c,
                                              c->c_coll->coll_allgatherv_module)
                 : OMPI_ERR_OUT_OF_RESOURCE;
    for (int r = 0; r < m->size && rc == OMPI_SUCCESS; ++r) {
        const char *p = all + displs[r];
        mca_osc_ucxdt_target_t *t = &m->targets[r];
        t->base = recs[r].base, t->size = recs[r].size, t->disp_unit = (int)recs[r].disp_unit;
        t->table_version = OSC_UCXDT_TABLE_UNREAD;  /* a dynamic window's, read at first access */
        t->state = recs[r].state;
        if ((rc = mca_osc_ucxdt_peer_connect(ompi_comm_peer_lookup(c, r), p, recs[r].address_length, &t->peer)) != OMPI_SUCCESS)
            break;
        p += recs[r].address_length;
        if (recs[r].rkey_length) {
            const ucxdt_status_t st = ucxdt_ep_rkey_unpack(t->peer->ep, p, recs[r].rkey_length, &t->rkey);
            if (st != UCXDT_OK) {
                opal_output(0, "osc ucxdt: rank %d's window key: %s", r, ucxdt_last_error());
                rc = mca_osc_ucxdt_mpi_error(st);
                break;
            }
        }
        p += recs[r].rkey_length;
        ucs_status_t us = ucp_ep_rkey_unpack(t->peer->ucp_ep, p, &t->state_rkey);
        p += recs[r].state_rkey_length;
        if (us == UCS_OK && recs[r].ucp_rkey_length) us = ucp_ep_rkey_unpack(t->peer->ucp_ep, p, &t->ucp_rkey);
        if (us != UCS_OK) {
            opal_output(0, "osc ucxdt: rank %d's state or window key: %s", r, ucs_status_string(us));
            rc = OMPI_ERROR;
        }
    }
    free(all), free(lengths), free(displs);
    return rc;
}

int mca_osc_ucxdt_window_select(ompi_win_t *win, void **base, size_t size, int disp_unit,
                                ompi_communicator_t *comm, opal_info_t *info, int flavor, int *model) {
    OPAL_THREAD_LOCK(&ompi_osc_ucxdt.lock);
    int rc = mca_osc_ucxdt_setup();
    OPAL_THREAD_UNLOCK(&ompi_osc_ucxdt.lock);
    mca_osc_ucxdt_module_t *m = calloc(1, sizeof *m);
    if (!m) return OMPI_ERR_OUT_OF_RESOURCE;
    m->super = module_template;
    m->win = win;
    m->size = ompi_comm_size(comm);
    m->rank = ompi_comm_rank(comm);
    m->flavor = flavor;
    const int dup = ompi_comm_dup(comm, &m->comm);
    if (dup != OMPI_SUCCESS) {
        m->comm = NULL;
        release(m);
        return dup;
    }
    /* From here every process takes part in each collective, whatever failed on its side, and
     * all fail together. */
    window_record_t rec = {.disp_unit = disp_unit};
    void *rkey = NULL, *state_rkey = NULL, *ucp_rkey = NULL;
    size_t rkey_length = 0, state_rkey_length = 0, ucp_rkey_length = 0;
    m->targets = calloc((size_t)m->size, sizeof *m->targets);
    m->posts_seen = calloc((size_t)m->size, sizeof *m->posts_seen);
    m->start_ranks = calloc((size_t)m->size, sizeof *m->start_ranks);
    if (rc == OMPI_SUCCESS && (!m->targets || !m->posts_seen || !m->start_ranks)) rc = OMPI_ERR_OUT_OF_RESOURCE;
    if (rc == OMPI_SUCCESS)
        rc = make_local(m, base, size, flavor, &rec, &rkey, &rkey_length, &state_rkey, &state_rkey_length, &ucp_rkey,
                        &ucp_rkey_length);
    rec.error = rc != OMPI_SUCCESS;
    if (rec.error) rec.address_length = rec.rkey_length = rec.state_rkey_length = rec.ucp_rkey_length = 0;
    window_record_t *recs = calloc((size_t)m->size, sizeof *recs);
    ompi_communicator_t *c = m->comm;
    int crc = recs ? c->c_coll->coll_allgather(&rec, sizeof rec, MPI_BYTE, recs, sizeof rec, MPI_BYTE, c,
                                               c->c_coll->coll_allgather_module)
                   : OMPI_ERR_OUT_OF_RESOURCE;
    bool any_error = crc != OMPI_SUCCESS;
    for (int r = 0; r < m->size && !any_error; ++r) any_error = recs[r].error != 0;
    if (!any_error) {
        /* This process's worker address, window key, state key and UCP window key, in turn. */
        const size_t n = rec.address_length + rec.rkey_length + rec.state_rkey_length + rec.ucp_rkey_length;
        char *mine = malloc(n ? n : 1);
        if (mine) {
            memcpy(mine, ompi_osc_ucxdt.address, rec.address_length);
            if (rkey_length) memcpy(mine + rec.address_length, rkey, rkey_length);
            memcpy(mine + rec.address_length + rkey_length, state_rkey, state_rkey_length);
            if (ucp_rkey_length) memcpy(mine + rec.address_length + rkey_length + state_rkey_length, ucp_rkey, ucp_rkey_length);
        }
        rc = mine ? connect_all(m, recs, mine, n) : OMPI_ERR_OUT_OF_RESOURCE;
        free(mine);
        int failed = rc != OMPI_SUCCESS, any = 0;
        crc = c->c_coll->coll_allreduce(&failed, &any, 1, MPI_INT, MPI_MAX, c, c->c_coll->coll_allreduce_module);
        any_error = crc != OMPI_SUCCESS || any;
    }
    free(recs);
    if (rkey) ucxdt_rkey_buffer_release(rkey);
    if (state_rkey) ucp_rkey_buffer_release(state_rkey);
    if (ucp_rkey) ucp_rkey_buffer_release(ucp_rkey);
    if (any_error) {
        release(m);
        return rc != OMPI_SUCCESS ? rc : crc != OMPI_SUCCESS ? crc : MPI_ERR_WIN;
    }
    bool no_locks = false;
    int found = 0;
    if (info && opal_info_get_bool(info, "no_locks", &no_locks, &found) == OPAL_SUCCESS && found && no_locks) {
        m->no_locks = true;
        win->w_flags |= OMPI_WIN_NO_LOCKS;
    }
    win->w_osc_module = &m->super;
    *model = MPI_WIN_UNIFIED;
    OPAL_THREAD_LOCK(&ompi_osc_ucxdt.lock);
    if (ompi_osc_ucxdt.windows++ == 0) opal_progress_register(mca_osc_ucxdt_progress);
    OPAL_THREAD_UNLOCK(&ompi_osc_ucxdt.lock);
    return OMPI_SUCCESS;
}

int mca_osc_ucxdt_free(ompi_win_t *win) {
    mca_osc_ucxdt_module_t *m = mca_osc_ucxdt_module(win);
    int rc = mca_osc_ucxdt_flush_all_targets(m);
    /* No process frees its memory while another may still reach it. */
    const int brc = m->comm->c_coll->coll_barrier(m->comm, m->comm->c_coll->coll_barrier_module);
    release(m);
    win->w_osc_module = NULL;
    OPAL_THREAD_LOCK(&ompi_osc_ucxdt.lock);
    if (--ompi_osc_ucxdt.windows == 0) opal_progress_unregister(mca_osc_ucxdt_progress);
    OPAL_THREAD_UNLOCK(&ompi_osc_ucxdt.lock);
    return rc != OMPI_SUCCESS ? rc : brc;
}

/* MPI-4.1 §12.2.3: a window of another flavor may be queried too; only memory the caller can
 * load and store is returned, here its own window (this process's memory is no other's), and
 * for any other rank size 0 and no base. */
int mca_osc_ucxdt_shared_query(ompi_win_t *win, int rank, size_t *size, int *disp_unit, void *baseptr) {
    mca_osc_ucxdt_module_t *m = mca_osc_ucxdt_module(win);
    const bool mine = (rank == m->rank || rank == MPI_PROC_NULL) && m->flavor != MPI_WIN_FLAVOR_DYNAMIC;
    *size = mine ? m->length : 0;
    *disp_unit = rank == MPI_PROC_NULL ? m->targets[m->rank].disp_unit : m->targets[rank].disp_unit;
    *(void **)baseptr = mine && m->length ? m->base : NULL;
    return OMPI_SUCCESS;
}

int mca_osc_ucxdt_check_access(mca_osc_ucxdt_module_t *m, int target, bool request_based) {
    if (target < 0 || target >= m->size) return MPI_ERR_RANK;
    if (m->lock_all || m->targets[target].lock) return OMPI_SUCCESS;
    /* Request-based calls belong to passive-target epochs (MPI-4.1 §12.3.5), as osc ucx has it. */
    if (request_based) return OMPI_ERR_RMA_SYNC;
    if (m->fence) return OMPI_SUCCESS;
    for (int i = 0; i < m->start_n; ++i)
        if (m->start_ranks[i] == target) return OMPI_SUCCESS;
    return OMPI_ERR_RMA_SYNC;
}
