/* What the programs of mpi/pml share: CHECK counts and reports a failed check, prefixed with
 * the program's name (PROGRAM, defined before this header), and finish ends the program with the
 * verdict its CTest entry reads ("<PROGRAM>: OK" on rank 0, exit status 0). */
#ifndef PML_TEST_CHECK_H
#define PML_TEST_CHECK_H

#include <mpi.h>
#include <stdio.h>

static int failures;

#define CHECK(cond, ...)                             \
    do {                                             \
        if (!(cond)) {                               \
            fprintf(stderr, PROGRAM ": " __VA_ARGS__); \
            fputc('\n', stderr);                     \
            ++failures;                              \
        }                                            \
    } while (0)

/* Sums every rank's failures over MPI_COMM_WORLD, prints "<PROGRAM>: OK" on rank 0 when there
 * were none, finalizes MPI and returns the exit status: 0 when all passed. */
static inline int finish(void) {
    int me = 0, all = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Allreduce(&failures, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (me == 0 && all == 0) printf(PROGRAM ": OK\n");
    MPI_Finalize();
    return all == 0 ? 0 : 1;
}

#endif /* PML_TEST_CHECK_H */
