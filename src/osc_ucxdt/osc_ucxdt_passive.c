/* Passive-target synchronization (MPI-4.1 §12.5.3-4): each window's lock word at the target
 * (word OSC_UCXDT_LOCK of its state region) holds OSC_UCXDT_LOCK_EXCLUSIVE while an exclusive
 * lock is held and counts shared holders below it, changed by UCP atomics; MPI_MODE_NOCHECK
 * takes no lock word. Flushes wait for this process's operations at their targets. */
#include "osc_ucxdt.h"

#include "opal/runtime/opal_progress.h"

#define OSC_UCXDT_LOCK_NOCHECK 0x100  /* with the lock type in a target's `lock`: no word taken */

static int take(mca_osc_ucxdt_module_t *m, int target, int type) {
    if (type == MPI_LOCK_EXCLUSIVE) {
        for (;;) {
            uint64_t found = 1;
            const int rc = mca_osc_ucxdt_state_atomic(m, target, OSC_UCXDT_LOCK, UCP_ATOMIC_OP_CSWAP, 0,
                                                      OSC_UCXDT_LOCK_EXCLUSIVE, &found);
            if (rc != OMPI_SUCCESS || found == 0) return rc;
            opal_progress();
        }
    }
    for (;;) {
        uint64_t was = 0;
        int rc = mca_osc_ucxdt_state_atomic(m, target, OSC_UCXDT_LOCK, UCP_ATOMIC_OP_ADD, 1, 0, &was);
        if (rc != OMPI_SUCCESS || was < OSC_UCXDT_LOCK_EXCLUSIVE) return rc;
        /* Held exclusively: withdraw and try again. */
        if ((rc = mca_osc_ucxdt_state_post(m, target, OSC_UCXDT_LOCK, UCP_ATOMIC_OP_ADD, (uint64_t)-1)) != OMPI_SUCCESS)
            return rc;
        opal_progress();
    }
}

/* Posted, as osc ucx releases a shared lock: the flush before it completed the epoch's operations,
 * and no one waits for the release but the next holder. */
static int drop(mca_osc_ucxdt_module_t *m, int target, int lock) {
    if (lock & OSC_UCXDT_LOCK_NOCHECK) return OMPI_SUCCESS;
    const uint64_t by = (lock == MPI_LOCK_EXCLUSIVE) ? OSC_UCXDT_LOCK_EXCLUSIVE : 1;
    return mca_osc_ucxdt_state_post(m, target, OSC_UCXDT_LOCK, UCP_ATOMIC_OP_ADD, (uint64_t)0 - by);
}

int mca_osc_ucxdt_lock(int lock_type, int target, int mpi_assert, ompi_win_t *win) {
    mca_osc_ucxdt_module_t *m = mca_osc_ucxdt_module(win);
    if (target < 0 || target >= m->size) return MPI_ERR_RANK;
    if (m->targets[target].lock || m->lock_all || m->start_n || m->post_n) return OMPI_ERR_RMA_SYNC;
    const int rc = mpi_assert & MPI_MODE_NOCHECK ? OMPI_SUCCESS : take(m, target, lock_type);
    if (rc != OMPI_SUCCESS) return rc;
    m->targets[target].lock = lock_type | (mpi_assert & MPI_MODE_NOCHECK ? OSC_UCXDT_LOCK_NOCHECK : 0);
    ++m->locks;
    return OMPI_SUCCESS;
}

int mca_osc_ucxdt_unlock(int target, ompi_win_t *win) {
    mca_osc_ucxdt_module_t *m = mca_osc_ucxdt_module(win);
    if (target < 0 || target >= m->size) return MPI_ERR_RANK;
    const int lock = m->targets[target].lock;
    if (!lock || m->lock_all) return OMPI_ERR_RMA_SYNC;
    int rc = mca_osc_ucxdt_flush_target(m, target);
    const int op = mca_osc_ucxdt_take_op_error(m);
    /* The exclusive holder's own accumulates skipped the accumulate lock (osc_ucxdt_atomic.c):
     * the lock is dropped only once they are done, as the flush above made sure. */
    m->targets[target].lock = 0;
    --m->locks;
    const int drc = drop(m, target, lock);
    return rc != OMPI_SUCCESS ? rc : op != OMPI_SUCCESS ? op : drc;
}

int mca_osc_ucxdt_lock_all(int mpi_assert, ompi_win_t *win) {
    mca_osc_ucxdt_module_t *m = mca_osc_ucxdt_module(win);
    if (m->lock_all || m->locks || m->start_n || m->post_n) return OMPI_ERR_RMA_SYNC;
    const int lock = MPI_LOCK_SHARED | (mpi_assert & MPI_MODE_NOCHECK ? OSC_UCXDT_LOCK_NOCHECK : 0);
    int rc = OMPI_SUCCESS, r = 0;
    for (; r < m->size; ++r) {
        if (!(mpi_assert & MPI_MODE_NOCHECK) && (rc = take(m, r, MPI_LOCK_SHARED)) != OMPI_SUCCESS) break;
        m->targets[r].lock = lock;
    }
    if (rc != OMPI_SUCCESS) {  /* give back what was taken */
        for (int k = 0; k < r; ++k) (void)drop(m, k, m->targets[k].lock), m->targets[k].lock = 0;
        return rc;
    }
    m->lock_all = true;
    return OMPI_SUCCESS;
}

int mca_osc_ucxdt_unlock_all(ompi_win_t *win) {
    mca_osc_ucxdt_module_t *m = mca_osc_ucxdt_module(win);
    if (!m->lock_all) return OMPI_ERR_RMA_SYNC;
    int rc = mca_osc_ucxdt_flush_all_targets(m);
    const int op = mca_osc_ucxdt_take_op_error(m);
    for (int r = 0; r < m->size; ++r) {
        const int one = drop(m, r, m->targets[r].lock);
        m->targets[r].lock = 0;
        if (rc == OMPI_SUCCESS) rc = one;
    }
    m->lock_all = false;
    return rc != OMPI_SUCCESS ? rc : op;
}

/* The unified model (MPI_WIN_UNIFIED): public and private copies are one memory; a full memory
 * barrier orders this process's loads and stores against the window's (§12.4). */
int mca_osc_ucxdt_sync(ompi_win_t *win) {
    (void)win;
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
    return OMPI_SUCCESS;
}

int mca_osc_ucxdt_flush(int target, ompi_win_t *win) {
    mca_osc_ucxdt_module_t *m = mca_osc_ucxdt_module(win);
    if (target < 0 || target >= m->size) return MPI_ERR_RANK;
    if (!m->targets[target].lock && !m->lock_all) return OMPI_ERR_RMA_SYNC;
    const int rc = mca_osc_ucxdt_flush_target(m, target);
    const int op = mca_osc_ucxdt_take_op_error(m);
    return rc != OMPI_SUCCESS ? rc : op;
}

int mca_osc_ucxdt_flush_all(ompi_win_t *win) {
    mca_osc_ucxdt_module_t *m = mca_osc_ucxdt_module(win);
    if (!m->locks && !m->lock_all) return OMPI_ERR_RMA_SYNC;
    const int rc = mca_osc_ucxdt_flush_all_targets(m);
    const int op = mca_osc_ucxdt_take_op_error(m);
    return rc != OMPI_SUCCESS ? rc : op;
}

/* Local completion is remote completion here: every operation completes at the origin only
 * when its bytes are out of the origin buffer, and the flush is what waits for that. */
int mca_osc_ucxdt_flush_local(int target, ompi_win_t *win) { return mca_osc_ucxdt_flush(target, win); }
int mca_osc_ucxdt_flush_local_all(ompi_win_t *win) { return mca_osc_ucxdt_flush_all(win); }
