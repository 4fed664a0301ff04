/* MPI one-sided communication (MPI-4.1 §12) under the PML being tested, on host memory: the
 * window component that Open MPI picks with no setting given (osc ucxdt under pml ucxdt) moves
 * derived datatypes both ways, in the three synchronisation modes.
 *  - MPI_Win_create + MPI_Win_fence: MPI_Put of a vector into the next rank's window, and MPI_Get
 *    of the previous rank's window through a vector type on the target side;
 *  - MPI_Win_allocate + MPI_Win_lock/unlock (passive target): MPI_Accumulate(MPI_SUM) of every
 *    rank into rank 0, and MPI_Fetch_and_op; MPI_Get_accumulate through a dup and a contiguous
 *    type of MPI_LONG;
 *  - MPI_Win_post/start/complete/wait (general active target) with a neighbour pair.
 * Every value is checked. Prints "one_sided: OK" on rank 0 when all passed; exits non-zero on
 * the first wrong value. Needs 2 or more ranks. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

#define PROGRAM "one_sided"
#include "check.h"

#define N 16


static double value(int rank, int i) { return 100.0 * rank + i; }

static void fence(int me, int n) {
    const int next = (me + 1) % n, prev = (me + n - 1) % n;
    double base[2 * N], got[N], mine[N];
    MPI_Datatype every_other;  /* N/2 doubles, stride 2 */
    MPI_Type_vector(N / 2, 1, 2, MPI_DOUBLE, &every_other);
    MPI_Type_commit(&every_other);
    for (int i = 0; i < 2 * N; ++i) base[i] = -1.0;
    for (int i = 0; i < N; ++i) mine[i] = value(me, i);
    MPI_Win win;
    MPI_Win_create(base, sizeof base, sizeof(double), MPI_INFO_NULL, MPI_COMM_WORLD, &win);
    MPI_Win_fence(0, win);
    /* mine[0..N/2) lands at every other element of next's window, from element 1. */
    MPI_Put(mine, N / 2, MPI_DOUBLE, next, 1, 1, every_other, win);
    MPI_Win_fence(0, win);
    for (int i = 0; i < 2 * N; ++i) {
        const double want = (i % 2 == 1 && i < N + 1) ? value(prev, i / 2) : -1.0;
        CHECK(base[i] == want, "fence put: rank %d element %d is %g, not %g", me, i, base[i], want);
    }
    MPI_Win_fence(0, win);
    /* Back through the target's vector: prev's odd elements, contiguous here. */
    MPI_Get(got, N / 2, MPI_DOUBLE, prev, 1, 1, every_other, win);
    MPI_Win_fence(0, win);
    const int pp = (prev + n - 1) % n;
    for (int i = 0; i < N / 2; ++i)
        CHECK(got[i] == value(pp, i), "fence get: rank %d element %d is %g, not %g", me, i, got[i], value(pp, i));
    MPI_Win_free(&win);
    MPI_Type_free(&every_other);
}

static void passive(int me, int n) {
    long *base;
    MPI_Win win;
    MPI_Win_allocate(N * sizeof(long), sizeof(long), MPI_INFO_NULL, MPI_COMM_WORLD, &base, &win);
    MPI_Win_lock(MPI_LOCK_EXCLUSIVE, me, 0, win);
    for (int i = 0; i < N; ++i) base[i] = 0;
    MPI_Win_unlock(me, win);
    MPI_Barrier(MPI_COMM_WORLD);
    long add[N];
    for (int i = 0; i < N; ++i) add[i] = (long)(me + 1) * (i + 1);
    MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, win);
    MPI_Accumulate(add, N, MPI_LONG, 0, 0, N, MPI_LONG, MPI_SUM, win);
    MPI_Win_unlock(0, win);
    long one = 1, before = -1;
    MPI_Win_lock(MPI_LOCK_SHARED, n - 1, 0, win);
    MPI_Fetch_and_op(&one, &before, MPI_LONG, n - 1, N - 1, MPI_SUM, win);
    MPI_Win_unlock(n - 1, win);
    CHECK(before >= 0 && before < n * (n + 1) / 2 * N + n, "fetch_and_op: rank %d fetched %ld", me, before);
    MPI_Barrier(MPI_COMM_WORLD);
    if (me == 0) {
        MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 0, 0, win);
        const long ranks = (long)n * (n + 1) / 2;
        for (int i = 0; i < N; ++i) {
            const long want = ranks * (i + 1) + (n == 1 && i == N - 1 ? n : 0);
            if (i < N - 1 || n > 1) CHECK(base[i] == want, "accumulate: element %d is %ld, not %ld", i, base[i], want);
        }
        MPI_Win_unlock(0, win);
    }
    if (me == n - 1) {
        MPI_Win_lock(MPI_LOCK_EXCLUSIVE, me, 0, win);
        const long want = (me == 0 ? (long)n * (n + 1) / 2 * N : 0) + n;
        CHECK(base[N - 1] == want, "fetch_and_op: rank %d's last element is %ld, not %ld", me, base[N - 1], want);
        MPI_Win_unlock(me, win);
    }
    MPI_Win_free(&win);
}

/* MPI_Get_accumulate with the origin a dup of MPI_LONG and the result N/4 contiguous runs of 4:
 * types of the target's one predefined type alone, whose bytes a component may take as its
 * elements where they lie (osc ucxdt does), counts other than the elements' included. */
static void passive_contiguous_types(int me, int n) {
    long *base;
    MPI_Win win;
    MPI_Win_allocate(N * sizeof(long), sizeof(long), MPI_INFO_NULL, MPI_COMM_WORLD, &base, &win);
    MPI_Win_lock(MPI_LOCK_EXCLUSIVE, me, 0, win);
    for (int i = 0; i < N; ++i) base[i] = 1000L * me + i;
    MPI_Win_unlock(me, win);
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Datatype dup, four;
    MPI_Type_dup(MPI_LONG, &dup);
    MPI_Type_commit(&dup);
    MPI_Type_contiguous(4, MPI_LONG, &four);
    MPI_Type_commit(&four);
    const int next = (me + 1) % n, prev = (me + n - 1) % n;
    long add[N], got[N];
    for (int i = 0; i < N; ++i) add[i] = (long)(me + 1) * (i + 1), got[i] = -1;
    MPI_Win_lock(MPI_LOCK_SHARED, next, 0, win);
    MPI_Get_accumulate(add, N, dup, got, N / 4, four, next, 0, N, MPI_LONG, MPI_SUM, win);
    MPI_Win_unlock(next, win);
    for (int i = 0; i < N; ++i)
        CHECK(got[i] == 1000L * next + i, "get_accumulate: rank %d result %d is %ld, not %ld", me, i, got[i],
              1000L * next + i);
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Win_lock(MPI_LOCK_EXCLUSIVE, me, 0, win);
    for (int i = 0; i < N; ++i) {
        const long want = 1000L * me + i + (long)(prev + 1) * (i + 1);
        CHECK(base[i] == want, "get_accumulate: rank %d element %d is %ld, not %ld", me, i, base[i], want);
    }
    MPI_Win_unlock(me, win);
    MPI_Win_free(&win);
    MPI_Type_free(&dup);
    MPI_Type_free(&four);
}

static void pscw(int me, int n) {
    /* Even ranks put into the odd rank above them. */
    const int partner = me % 2 == 0 ? me + 1 : me - 1;
    if (partner >= n) return;
    int base[N];
    for (int i = 0; i < N; ++i) base[i] = -1;
    MPI_Group world, peer;
    MPI_Comm_group(MPI_COMM_WORLD, &world);
    MPI_Group_incl(world, 1, &partner, &peer);
    MPI_Comm pair;
    MPI_Comm_split(MPI_COMM_WORLD, me / 2, me, &pair);
    MPI_Win win;
    MPI_Win_create(base, sizeof base, sizeof(int), MPI_INFO_NULL, pair, &win);
    MPI_Group pair_group, pair_peer;
    MPI_Win_get_group(win, &pair_group);
    const int other = me % 2 == 0 ? 1 : 0;
    MPI_Group_incl(pair_group, 1, &other, &pair_peer);
    if (me % 2 == 0) {
        int mine[N];
        for (int i = 0; i < N; ++i) mine[i] = 1000 * me + i;
        MPI_Win_start(pair_peer, 0, win);
        MPI_Put(mine, N, MPI_INT, other, 0, N, MPI_INT, win);
        MPI_Win_complete(win);
    } else {
        MPI_Win_post(pair_peer, 0, win);
        MPI_Win_wait(win);
        for (int i = 0; i < N; ++i)
            CHECK(base[i] == 1000 * partner + i, "pscw: rank %d element %d is %d", me, i, base[i]);
    }
    MPI_Win_free(&win);
    MPI_Group_free(&pair_peer);
    MPI_Group_free(&pair_group);
    MPI_Comm_free(&pair);
    MPI_Group_free(&peer);
    MPI_Group_free(&world);
}

int main(int argc, char **argv) {
    int me, n;
    start(&argc, &argv, 2, &me, &n);
    fence(me, n);
    passive(me, n);
    passive_contiguous_types(me, n);
    pscw(me, n);
    return finish();
}
