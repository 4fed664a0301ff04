/* Collectives' messages never match a user's receive (MPI-4.1 §6.2.2: collective and
 * point-to-point traffic on one communicator do not interfere). Open MPI's collectives send with
 * negative tags down to -INT_MAX (neighbourhood collectives start below -INT_MAX/2), which pml
 * ucxdt folds into the tag field's negative half (pml_ucxdt.h). Each rank posts an MPI_Irecv of
 * MPI_ANY_SOURCE and MPI_ANY_TAG, then runs MPI_Neighbor_alltoall on a periodic ring and
 * nonblocking MPI_Ibarrier and MPI_Iallreduce: the collectives' results must be right and the
 * user's receive still pending; then the user's own message, tag 1, completes it. Prints
 * "collective_tags: OK" on rank 0 when all passed; exits non-zero otherwise. 2 or more ranks. */
#include <mpi.h>
#include <stdio.h>

#define PROGRAM "collective_tags"
#include "check.h"


int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int me, n;
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    const int periodic = 1;
    MPI_Comm ring;
    MPI_Cart_create(MPI_COMM_WORLD, 1, &n, &periodic, 0, &ring);
    MPI_Comm_rank(ring, &me);
    int user = -1;
    MPI_Request pending;
    MPI_Irecv(&user, 1, MPI_INT, MPI_ANY_SOURCE, MPI_ANY_TAG, ring, &pending);
    /* To the left neighbour and the right one, from each. */
    int out[2] = {10 * me + 1, 10 * me + 2}, in[2] = {-1, -1};
    MPI_Neighbor_alltoall(out, 1, MPI_INT, in, 1, MPI_INT, ring);
    const int left = (me + n - 1) % n, right = (me + 1) % n;
    CHECK(in[0] == 10 * left + 2 && in[1] == 10 * right + 1, "rank %d: MPI_Neighbor_alltoall gave %d %d, not %d %d", me,
          in[0], in[1], 10 * left + 2, 10 * right + 1);
    MPI_Request r[2];
    int one = 1, sum = 0;
    MPI_Ibarrier(ring, &r[0]);
    MPI_Iallreduce(&one, &sum, 1, MPI_INT, MPI_SUM, ring, &r[1]);
    MPI_Waitall(2, r, MPI_STATUSES_IGNORE);
    CHECK(sum == n, "rank %d: MPI_Iallreduce gave %d, not %d", me, sum, n);
    int done = 0;
    MPI_Test(&pending, &done, MPI_STATUS_IGNORE);
    CHECK(!done, "rank %d: a collective's message completed the user's MPI_ANY_TAG receive (got %d)", me, user);
    MPI_Barrier(ring);
    if (!done) {
        const int mine = 1000 + me;
        MPI_Status st;
        MPI_Sendrecv(&mine, 1, MPI_INT, right, 1, NULL, 0, MPI_INT, MPI_PROC_NULL, 0, ring, MPI_STATUS_IGNORE);
        MPI_Wait(&pending, &st);
        CHECK(user == 1000 + left && st.MPI_TAG == 1, "rank %d: the user's message arrived as %d, tag %d", me, user, st.MPI_TAG);
    }
    MPI_Comm_free(&ring);
    return finish();
}
