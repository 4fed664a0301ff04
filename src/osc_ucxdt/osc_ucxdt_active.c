/* Active-target synchronization (MPI-4.1 §12.5.1-2). MPI_Win_fence: the operations this process
 * started are complete at their targets, then a barrier. General active target: MPI_Win_post adds
 * one to a counter per origin in each origin's state region (word OSC_UCXDT_POSTS + this rank),
 * which MPI_Win_start waits for and consumes; MPI_Win_complete flushes, then adds one to each
 * target's completion counter, which MPI_Win_wait waits to see grow by the size of its group. */
#include "osc_ucxdt.h"

#include "opal/runtime/opal_progress.h"

#include <stdlib.h>

static uint64_t local_word(const mca_osc_ucxdt_module_t *m, size_t index) {
    return __atomic_load_n(&m->state[index], __ATOMIC_ACQUIRE);
}

int mca_osc_ucxdt_fence(int mpi_assert, ompi_win_t *win) {
    mca_osc_ucxdt_module_t *m = mca_osc_ucxdt_module(win);
    if (m->start_n || m->post_n || m->locks || m->lock_all) return OMPI_ERR_RMA_SYNC;
    int rc = mpi_assert & MPI_MODE_NOPRECEDE ? OMPI_SUCCESS : mca_osc_ucxdt_flush_all_targets(m);
    const int op = mca_osc_ucxdt_take_op_error(m);
    const int brc = m->comm->c_coll->coll_barrier(m->comm, m->comm->c_coll->coll_barrier_module);
    m->fence = !(mpi_assert & MPI_MODE_NOSUCCEED);
    return rc != OMPI_SUCCESS ? rc : op != OMPI_SUCCESS ? op : brc;
}

/* The window ranks of group's members into ranks[]; OMPI_SUCCESS or an error. */
static int window_ranks(mca_osc_ucxdt_module_t *m, ompi_group_t *group, int *ranks, int *n) {
    *n = ompi_group_size(group);
    int *in = malloc(sizeof(int) * (size_t)(*n ? *n : 1));
    if (!in) return OMPI_ERR_OUT_OF_RESOURCE;
    for (int i = 0; i < *n; ++i) in[i] = i;
    int rc = ompi_group_translate_ranks(group, *n, in, m->win->w_group, ranks);
    for (int i = 0; i < *n && rc == OMPI_SUCCESS; ++i)
        if (ranks[i] < 0 || ranks[i] >= m->size) rc = MPI_ERR_GROUP;  /* not in the window's group */
    free(in);
    return rc;
}

int mca_osc_ucxdt_post(ompi_group_t *group, int mpi_assert, ompi_win_t *win) {
    mca_osc_ucxdt_module_t *m = mca_osc_ucxdt_module(win);
    if (m->post_n) return OMPI_ERR_RMA_SYNC;
    int n = 0, *origins = malloc(sizeof(int) * (size_t)(m->size ? m->size : 1));
    if (!origins) return OMPI_ERR_OUT_OF_RESOURCE;
    int rc = window_ranks(m, group, origins, &n);
    /* With MPI_MODE_NOCHECK the origins' starts do not wait for this post (the matching start
     * carries it too), so none is counted. */
    for (int i = 0; i < n && rc == OMPI_SUCCESS && !(mpi_assert & MPI_MODE_NOCHECK); ++i)
        rc = mca_osc_ucxdt_state_atomic(m, origins[i], OSC_UCXDT_POSTS + (size_t)m->rank, UCP_ATOMIC_OP_ADD, 1, 0, NULL);
    free(origins);
    if (rc == OMPI_SUCCESS) m->post_n = n;
    return rc;
}

int mca_osc_ucxdt_start(ompi_group_t *group, int mpi_assert, ompi_win_t *win) {
    mca_osc_ucxdt_module_t *m = mca_osc_ucxdt_module(win);
    if (m->start_n) return OMPI_ERR_RMA_SYNC;
    int n = 0;
    const int rc = window_ranks(m, group, m->start_ranks, &n);
    if (rc != OMPI_SUCCESS) return rc;
    if (!(mpi_assert & MPI_MODE_NOCHECK)) {
        for (int i = 0; i < n; ++i) {
            const int r = m->start_ranks[i];
            while (local_word(m, OSC_UCXDT_POSTS + (size_t)r) <= m->posts_seen[r]) opal_progress();
            ++m->posts_seen[r];
        }
    }
    m->start_n = n;
    return OMPI_SUCCESS;
}

int mca_osc_ucxdt_complete(ompi_win_t *win) {
    mca_osc_ucxdt_module_t *m = mca_osc_ucxdt_module(win);
    if (!m->start_n) return OMPI_ERR_RMA_SYNC;
    int rc = OMPI_SUCCESS;
    for (int i = 0; i < m->start_n; ++i) {
        int one = mca_osc_ucxdt_flush_target(m, m->start_ranks[i]);
        if (one == OMPI_SUCCESS)
            one = mca_osc_ucxdt_state_atomic(m, m->start_ranks[i], OSC_UCXDT_COMPLETES, UCP_ATOMIC_OP_ADD, 1, 0, NULL);
        if (rc == OMPI_SUCCESS) rc = one;
    }
    m->start_n = 0;
    const int op = mca_osc_ucxdt_take_op_error(m);
    return rc != OMPI_SUCCESS ? rc : op;
}

static bool origins_completed(const mca_osc_ucxdt_module_t *m) {
    return local_word(m, OSC_UCXDT_COMPLETES) >= m->completes_seen + (uint64_t)m->post_n;
}

static void end_exposure(mca_osc_ucxdt_module_t *m) {
    m->completes_seen += (uint64_t)m->post_n;
    m->post_n = 0;
}

int mca_osc_ucxdt_wait(ompi_win_t *win) {
    mca_osc_ucxdt_module_t *m = mca_osc_ucxdt_module(win);
    if (!m->post_n) return OMPI_ERR_RMA_SYNC;
    while (!origins_completed(m)) opal_progress();
    end_exposure(m);
    return OMPI_SUCCESS;
}

int mca_osc_ucxdt_test(ompi_win_t *win, int *flag) {
    mca_osc_ucxdt_module_t *m = mca_osc_ucxdt_module(win);
    if (!m->post_n) return OMPI_ERR_RMA_SYNC;
    opal_progress();
    *flag = origins_completed(m);
    if (*flag) end_exposure(m);
    return OMPI_SUCCESS;
}
