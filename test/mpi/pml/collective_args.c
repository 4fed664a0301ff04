/* Collectives whose arguments are significant on some ranks only, and intercommunicators, on
 * host memory or, with the argument `device`, GPU memory (check.h): what coll ucxdt must pass
 * through untouched (issue 61).
 *  - MPI_Gatherv and MPI_Igatherv with NULL receive buffer, counts and displacements on the
 *    non-root ranks (MPI-4.1 §6.5.2: significant only at the root); MPI_Scatterv and
 *    MPI_Iscatterv with NULL send arguments there (§6.6.2);
 *  - MPI_Alltoallv and MPI_Alltoall with MPI_IN_PLACE and NULL send arguments (§6.9.1: ignored);
 *  - MPI_Intercomm_create and MPI_Intercomm_merge (whose own collectives gather over the local
 *    group with NULL arguments), then an MPI_Allgatherv and an MPI_Bcast over the
 *    intercommunicator and an MPI_Allgather over the merged one.
 * Every received value is checked. Prints "collective_args: OK" on rank 0 when all passed;
 * exits non-zero on the first wrong value. Needs 2 or more ranks. */
#define PROGRAM "collective_args"
#include "check.h"


static int value(int rank, int i) { return 1000 * rank + i; }

static void gatherv_scatterv(MPI_Comm comm, int nonblocking) {
    int me, n;
    MPI_Comm_rank(comm, &me);
    MPI_Comm_size(comm, &n);
    for (int root = 0; root < n; ++root) {
        /* Rank r contributes r + 1 ints. */
        int mine[64], *all = NULL, *counts = NULL, *disps = NULL, total = 0;
        for (int i = 0; i <= me; ++i) mine[i] = value(me, i);
        if (me == root) {
            counts = malloc(n * sizeof(int)), disps = malloc(n * sizeof(int));
            for (int r = 0; r < n; ++r) counts[r] = r + 1, disps[r] = total, total += r + 1;
            all = malloc(total * sizeof(int));
            for (int i = 0; i < total; ++i) all[i] = -1;
        }
        MPI_Request req;
        int *mine_b = buffer_from(mine, sizeof mine), *all_b = buffer_from(all, total * sizeof(int));
        if (nonblocking) {
            MPI_Igatherv(mine_b, me + 1, MPI_INT, all_b, counts, disps, MPI_INT, root, comm, &req);
            MPI_Wait(&req, MPI_STATUS_IGNORE);
        } else {
            MPI_Gatherv(mine_b, me + 1, MPI_INT, all_b, counts, disps, MPI_INT, root, comm);
        }
        buffer_return(all, all_b, total * sizeof(int));
        if (me == root)
            for (int r = 0; r < n; ++r)
                for (int i = 0; i <= r; ++i)
                    CHECK(all[disps[r] + i] == value(r, i), "%sgatherv root %d: block %d[%d] = %d", nonblocking ? "i" : "",
                          root, r, i, all[disps[r] + i]);
        /* And back: the root scatters block r to rank r. */
        if (me == root)
            for (int i = 0; i < total; ++i) all[i] = -all[i];
        for (int i = 0; i <= me; ++i) mine[i] = 0;
        buffer_copy(mine_b, mine, sizeof mine);
        all_b = buffer_from(all, total * sizeof(int));
        if (nonblocking) {
            MPI_Iscatterv(all_b, counts, disps, MPI_INT, mine_b, me + 1, MPI_INT, root, comm, &req);
            MPI_Wait(&req, MPI_STATUS_IGNORE);
        } else {
            MPI_Scatterv(all_b, counts, disps, MPI_INT, mine_b, me + 1, MPI_INT, root, comm);
        }
        buffer_return(mine, mine_b, sizeof mine), buffer_return(all, all_b, total * sizeof(int));
        for (int i = 0; i <= me; ++i)
            CHECK(mine[i] == -value(me, i), "%sscatterv root %d: [%d] = %d", nonblocking ? "i" : "", root, i, mine[i]);
        free(all), free(counts), free(disps);
    }
}

static void alltoall_in_place(MPI_Comm comm) {
    int me, n;
    MPI_Comm_rank(comm, &me);
    MPI_Comm_size(comm, &n);
    int *buf = malloc(n * sizeof(int)), *counts = malloc(n * sizeof(int)), *disps = malloc(n * sizeof(int));
    for (int r = 0; r < n; ++r) buf[r] = value(me, r), counts[r] = 1, disps[r] = r;
    int *buf_b = buffer_from(buf, n * sizeof(int));
    MPI_Alltoallv(MPI_IN_PLACE, NULL, NULL, MPI_DATATYPE_NULL, buf_b, counts, disps, MPI_INT, comm);
    buffer_copy(buf, buf_b, n * sizeof(int));
    for (int r = 0; r < n; ++r) CHECK(buf[r] == value(r, me), "alltoallv in place: from %d = %d", r, buf[r]);
    for (int r = 0; r < n; ++r) buf[r] = value(me, r);
    buffer_copy(buf_b, buf, n * sizeof(int));
    MPI_Alltoall(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, buf_b, 1, MPI_INT, comm);
    buffer_return(buf, buf_b, n * sizeof(int));
    for (int r = 0; r < n; ++r) CHECK(buf[r] == value(r, me), "alltoall in place: from %d = %d", r, buf[r]);
    free(buf), free(counts), free(disps);
}

/* Even and odd ranks of `world` as two groups of an intercommunicator, then merged with the
 * even group first. */
static void intercommunicators(MPI_Comm world) {
    int me, n;
    MPI_Comm_rank(world, &me);
    MPI_Comm_size(world, &n);
    const int odd = me % 2;
    MPI_Comm local, inter, merged;
    MPI_Comm_split(world, odd, me, &local);
    MPI_Intercomm_create(local, 0, world, odd ? 0 : 1, 7, &inter);
    int lme, lsize, rsize;
    MPI_Comm_rank(local, &lme);
    MPI_Comm_size(local, &lsize);
    MPI_Comm_remote_size(inter, &rsize);
    CHECK(lsize + rsize == n, "intercommunicator of %d + %d ranks", lsize, rsize);

    /* Allgatherv over the intercommunicator: each rank receives the remote group's world ranks,
     * remote rank r sending r + 1 copies. */
    int mine[64], *counts = malloc(rsize * sizeof(int)), *disps = malloc(rsize * sizeof(int)), total = 0;
    for (int i = 0; i <= lme; ++i) mine[i] = me;
    for (int r = 0; r < rsize; ++r) counts[r] = r + 1, disps[r] = total, total += r + 1;
    int *theirs = malloc(total * sizeof(int)), *mine_b = buffer_from(mine, sizeof mine),
        *theirs_b = buffer_alloc(total * sizeof(int));
    MPI_Allgatherv(mine_b, lme + 1, MPI_INT, theirs_b, counts, disps, MPI_INT, inter);
    buffer_free(mine_b), buffer_return(theirs, theirs_b, total * sizeof(int));
    for (int r = 0; r < rsize; ++r)
        for (int i = 0; i <= r; ++i)
            CHECK(theirs[disps[r] + i] == 2 * r + !odd, "intercomm allgatherv: remote %d[%d] = %d", r, i,
                  theirs[disps[r] + i]);
    free(theirs), free(counts), free(disps);

    /* Bcast from the even group's rank 0 to the odd group. */
    int token = odd ? -1 : 4242, *token_b = buffer_from(&token, sizeof token);
    if (!odd)
        MPI_Bcast(token_b, 1, MPI_INT, lme == 0 ? MPI_ROOT : MPI_PROC_NULL, inter);
    else
        MPI_Bcast(token_b, 1, MPI_INT, 0, inter);
    buffer_return(&token, token_b, sizeof token);
    CHECK(token == 4242, "intercomm bcast: %d", token);

    MPI_Intercomm_merge(inter, odd, &merged);
    int mme, msize;
    MPI_Comm_rank(merged, &mme);
    MPI_Comm_size(merged, &msize);
    CHECK(msize == n, "merged size %d", msize);
    CHECK(mme == (odd ? (n + 1) / 2 + me / 2 : me / 2), "merged rank %d of world rank %d", mme, me);
    int *worlds = malloc(msize * sizeof(int)), *me_b = buffer_from(&me, sizeof me),
        *worlds_b = buffer_alloc(msize * sizeof(int));
    MPI_Allgather(me_b, 1, MPI_INT, worlds_b, 1, MPI_INT, merged);
    buffer_free(me_b), buffer_return(worlds, worlds_b, msize * sizeof(int));
    for (int r = 0; r < msize; ++r) {
        const int evens = (n + 1) / 2;
        CHECK(worlds[r] == (r < evens ? 2 * r : 2 * (r - evens) + 1), "merged allgather: [%d] = %d", r, worlds[r]);
    }
    free(worlds);
    gatherv_scatterv(merged, 0);
    MPI_Comm_free(&merged);
    MPI_Comm_free(&inter);
    MPI_Comm_free(&local);
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int me, n;
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    if (n < 2 || n > 63) {
        if (me == 0) fprintf(stderr, "collective_args: needs 2 to 63 ranks\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    memory_init(argc > 1 ? argv[1] : NULL);
    gatherv_scatterv(MPI_COMM_WORLD, 0);
    gatherv_scatterv(MPI_COMM_WORLD, 1);
    alltoall_in_place(MPI_COMM_WORLD);
    intercommunicators(MPI_COMM_WORLD);
    return finish();
}
