/* A killed rank (issue 45: "a peer that fails mid-transfer"): rank 1 dies (SIGKILL) while rank
 * 0 waits in MPI_Recv for a vector from it, with MPI_ERRORS_RETURN on MPI_COMM_WORLD.
 * - Under ULFM (`mpirun --with-ft ulfm`), rank 0 must get an error back (MPI_ERR_PROC_FAILED)
 *   instead of hanging: it prints what it got and exits 0 when the call returned an error. Open
 *   MPI 5.0.7 runs ULFM with pml ob1 only (its agreement needs ob1's BML: pml ucx and pml
 *   ucxdt crash in MPI_Init).
 * - Without ULFM the launcher ends the job once a rank dies; the test (test/CMakeLists.txt)
 *   then asks only that it ends, non-zero, before its time limit: no rank hangs in the PML. */
#include <mpi.h>
#include <signal.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Datatype v;
    MPI_Type_vector(1000, 2, 4, MPI_DOUBLE, &v);
    MPI_Type_commit(&v);
    static double buf[4000];
    MPI_Barrier(MPI_COMM_WORLD);  /* both connected */
    if (rank == 1) raise(SIGKILL);
    int rc = MPI_SUCCESS;
    double took = 0;
    if (rank == 0) {
        struct timespec t0, t1;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        rc = MPI_Recv(buf, 1, v, 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        clock_gettime(CLOCK_MONOTONIC, &t1);
        took = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) * 1e-9;
        char msg[MPI_MAX_ERROR_STRING];
        int len = 0, cls = 0;
        MPI_Error_class(rc, &cls);
        MPI_Error_string(rc, msg, &len);
        printf("killed_rank: MPI_Recv from the killed rank returned after %.1f s: %s (class %d)\n", took, msg, cls);
        fflush(stdout);
    }
    _exit(rank == 0 && rc == MPI_SUCCESS);  /* no MPI_Finalize: a peer is gone */
}
