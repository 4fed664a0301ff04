/* Erroneous one-sided calls (MPI-4.1 §12) get an error class through the window's error
 * handler, and change nothing: every rank accesses the next rank's window, on host memory, or
 * GPU memory with the argument `device`.
 *  - a put, get or accumulate that reaches outside the window (past its end, or through a target
 *    datatype that runs past the end or starts before the window): MPI_ERR_RMA_RANGE;
 *  - a put whose origin and target type signatures differ (§12.3: they must match): MPI_ERR_TYPE;
 *  - a put outside any access epoch: MPI_ERR_RMA_SYNC;
 *  - on a dynamic window: a put to memory the target has not attached, or has detached:
 *    MPI_ERR_RMA_RANGE; attaching a region that overlaps one attached: MPI_ERR_RMA_ATTACH; detaching
 *    memory never attached: an error.
 * Each window is guarded by sentinel bytes on both sides; after the failed calls the window and
 * the guards are as they were, and a correct put still lands. The handler is a user function
 * that records each class it is called with, so a class that only came back as a return value
 * does not pass. Prints "one_sided_errors: OK" on rank 0; needs 2 or more ranks. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PROGRAM "one_sided_errors"
#include "check.h"

#define N 64      /* ints in a window */
#define GUARD 16  /* ints of sentinel on each side */
#define SENTINEL 0x5a5a5a5a

static int handled;  /* the class the handler last saw; 0 after it is read */

static void record(MPI_Win *win, int *code, ...) {
    (void)win;
    int cls = 0;
    MPI_Error_class(*code, &cls);
    handled = cls;
}

/* The call returned an error of class `want`, and the window's handler saw the same. */
static void expect(int rc, int want, const char *what) {
    int cls = MPI_SUCCESS;
    if (rc != MPI_SUCCESS) MPI_Error_class(rc, &cls);
    CHECK(cls == want, "%s: class %d, not %d", what, cls, want);
    CHECK(handled == want, "%s: the window's handler saw class %d, not %d", what, handled, want);
    handled = 0;
}

/* A failed call may return or its epoch's closing call may: MPI leaves which one open for an
 * operation that starts (§12.3), as osc ucx reports errors it learns later at the flush. */
static void expect_either(int rc, int closing_rc, int want, const char *what) {
    int cls = MPI_SUCCESS, closing = MPI_SUCCESS;
    if (rc != MPI_SUCCESS) MPI_Error_class(rc, &cls);
    if (closing_rc != MPI_SUCCESS) MPI_Error_class(closing_rc, &closing);
    CHECK(cls == want || closing == want, "%s: classes %d and %d, not %d", what, cls, closing, want);
    CHECK(handled == want, "%s: the window's handler saw class %d, not %d", what, handled, want);
    handled = 0;
}

/* The whole guarded buffer (device or host) against what it should hold. */
static void check_buffer(const int *buffer, const int *want, int me, const char *what) {
    int got[N + 2 * GUARD];
    buffer_copy(got, buffer, sizeof got);
    for (int i = 0; i < N + 2 * GUARD; ++i)
        if (got[i] != want[i]) {
            CHECK(0, "%s: rank %d, int %d of the guarded window is %#x, not %#x", what, me, i - GUARD, got[i], want[i]);
            return;
        }
}

/* A window's memory with its guards: want[] gets what it holds, sentinels around 0..N-1. */
static int *guarded(int want[N + 2 * GUARD]) {
    for (int i = 0; i < N + 2 * GUARD; ++i) want[i] = SENTINEL;
    for (int i = 0; i < N; ++i) want[GUARD + i] = i;
    return buffer_from(want, (N + 2 * GUARD) * sizeof(int));
}

static void fixed_window(int me, int n, MPI_Errhandler handler) {
    const int next = (me + 1) % n, prev = (me + n - 1) % n;
    int want[N + 2 * GUARD];
    int *buffer = guarded(want);
    MPI_Win win;
    MPI_Win_create(buffer + GUARD, N * sizeof(int), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &win);
    MPI_Win_set_errhandler(win, handler);
    int ones[2 * N];
    for (int i = 0; i < 2 * N; ++i) ones[i] = -1;
    int *origin = buffer_from(ones, sizeof ones);
    MPI_Datatype tail;  /* 4 ints, stride 8: from displacement 40 it ends at int 64 */
    MPI_Type_vector(4, 1, 8, MPI_INT, &tail);
    MPI_Type_commit(&tail);
    MPI_Datatype before;  /* one int, 4 bytes before its displacement */
    const int one = 1;
    const MPI_Aint minus_one = -(MPI_Aint)sizeof(int);
    MPI_Type_create_hindexed(1, &one, &minus_one, MPI_INT, &before);
    MPI_Type_commit(&before);

    /* Outside any epoch. */
    expect(MPI_Put(origin, 1, MPI_INT, next, 0, 1, MPI_INT, win), MPI_ERR_RMA_SYNC, "a put outside an epoch");

    MPI_Win_fence(0, win);
    int rc = MPI_Put(origin, 4, MPI_INT, next, N - 2, 4, MPI_INT, win);
    expect_either(rc, MPI_SUCCESS, MPI_ERR_RMA_RANGE, "a put past the window's end");
    rc = MPI_Put(origin, 1, MPI_INT, next, 0, 1, before, win);
    expect_either(rc, MPI_SUCCESS, MPI_ERR_RMA_RANGE, "a put through a type that starts before the window");
    rc = MPI_Put(origin, 4, MPI_INT, next, 40, 1, tail, win);
    expect_either(rc, MPI_SUCCESS, MPI_ERR_RMA_RANGE, "a put through a type that runs past the end");
    rc = MPI_Get(origin, 4, MPI_INT, next, N, 4, MPI_INT, win);
    expect_either(rc, MPI_SUCCESS, MPI_ERR_RMA_RANGE, "a get past the window's end");
    rc = MPI_Accumulate(origin, 4, MPI_INT, next, N - 1, 4, MPI_INT, MPI_SUM, win);
    expect_either(rc, MPI_SUCCESS, MPI_ERR_RMA_RANGE, "an accumulate past the window's end");
    rc = MPI_Put(origin, 4, MPI_INT, next, 0, 3, MPI_INT, win);
    expect_either(rc, MPI_SUCCESS, MPI_ERR_TYPE, "a put of 4 ints into 3");
    MPI_Win_fence(0, win);
    check_buffer(buffer, want, me, "after the failed calls");
    int got[2 * N];
    buffer_copy(got, origin, sizeof got);
    CHECK(got[0] == -1 && got[3] == -1, "a failed get wrote into its origin buffer on rank %d", me);

    /* The window still works: prev puts 7s into ints 1..3 of this rank's window. */
    int sevens[3] = {7, 7, 7};
    int *seven = buffer_from(sevens, sizeof sevens);
    MPI_Win_fence(0, win);
    CHECK(MPI_Put(seven, 3, MPI_INT, next, 1, 3, MPI_INT, win) == MPI_SUCCESS, "a put after the errors failed");
    MPI_Win_fence(0, win);
    want[GUARD + 1] = want[GUARD + 2] = want[GUARD + 3] = 7;
    check_buffer(buffer, want, me, "after a correct put");
    (void)prev;
    MPI_Win_free(&win);
    MPI_Type_free(&tail);
    MPI_Type_free(&before);
    buffer_free(seven);
    buffer_free(origin);
    buffer_free(buffer);
}

static void dynamic_window(int me, int n, MPI_Errhandler handler) {
    const int next = (me + 1) % n, prev = (me + n - 1) % n;
    int want[N + 2 * GUARD];
    int *buffer = guarded(want);
    MPI_Win win;
    MPI_Win_create_dynamic(MPI_INFO_NULL, MPI_COMM_WORLD, &win);
    MPI_Win_set_errhandler(win, handler);
    expect(MPI_Win_attach(win, buffer + GUARD, N * sizeof(int)), MPI_SUCCESS, "attaching");
    expect(MPI_Win_attach(win, buffer + GUARD + N / 2, N * sizeof(int)), MPI_ERR_RMA_ATTACH,
           "attaching a region that overlaps an attached one");
    CHECK(MPI_Win_detach(win, buffer) != MPI_SUCCESS, "detaching memory never attached succeeded on rank %d", me);
    handled = 0;
    MPI_Aint mine = 0, theirs = 0;
    MPI_Get_address(buffer + GUARD, &mine);
    MPI_Sendrecv(&mine, 1, MPI_AINT, prev, 0, &theirs, 1, MPI_AINT, next, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    int minus[4] = {-2, -2, -2, -2};
    int *origin = buffer_from(minus, sizeof minus);

    MPI_Win_lock_all(0, win);
    int rc = MPI_Put(origin, 4, MPI_INT, next, theirs + (N - 2) * (MPI_Aint)sizeof(int), 4, MPI_INT, win);
    int closing = MPI_Win_flush(next, win);
    expect_either(rc, closing, MPI_ERR_RMA_RANGE, "a put past the attached region");
    rc = MPI_Put(origin, 1, MPI_INT, next, theirs - (MPI_Aint)sizeof(int), 1, MPI_INT, win);
    closing = MPI_Win_flush(next, win);
    expect_either(rc, closing, MPI_ERR_RMA_RANGE, "a put before the attached region");
    CHECK(MPI_Put(origin, 4, MPI_INT, next, theirs, 4, MPI_INT, win) == MPI_SUCCESS, "a put into the attached region failed");
    MPI_Win_unlock_all(win);
    MPI_Barrier(MPI_COMM_WORLD);
    for (int i = 0; i < 4; ++i) want[GUARD + i] = -2;
    check_buffer(buffer, want, me, "dynamic window, after the failed calls and a correct put");

    /* Detached: the origin learns it, and its put fails. */
    MPI_Win_detach(win, buffer + GUARD);
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Win_lock_all(0, win);
    rc = MPI_Put(origin, 4, MPI_INT, next, theirs, 4, MPI_INT, win);
    closing = MPI_Win_flush(next, win);
    expect_either(rc, closing, MPI_ERR_RMA_RANGE, "a put into a detached region");
    MPI_Win_unlock_all(win);
    MPI_Barrier(MPI_COMM_WORLD);
    check_buffer(buffer, want, me, "dynamic window, after a put into detached memory");
    MPI_Win_free(&win);
    buffer_free(origin);
    buffer_free(buffer);
}

int main(int argc, char **argv) {
    int me, n;
    start(&argc, &argv, 2, &me, &n);
    memory_init(argc > 1 ? argv[1] : NULL);
    MPI_Errhandler handler;
    MPI_Win_create_errhandler(record, &handler);
    fixed_window(me, n, handler);
    dynamic_window(me, n, handler);
    MPI_Errhandler_free(&handler);
    return finish();
}
