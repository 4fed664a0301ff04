/* A killed rank (issue 45: "a peer that fails mid-transfer"): rank 1 dies (SIGKILL) while rank
 * 0 waits for it, with MPI_ERRORS_RETURN on MPI_COMM_WORLD:
 * - no argument: in MPI_Recv of a vector it never sent;
 * - `send`: in MPI_Send of 16 MiB of contiguous host memory to it (UCP's rendezvous, whose
 *   reply never comes);
 * - `recv_big`: in MPI_Recv of the 64 MiB it had started to send just before it died (a
 *   transfer that fails midway: between processes of a node, CMA reads of a process gone).
 * Rank 0,
 * the survivor, prints the class of the error it got (`killed_rank: survivor got
 * MPI_ERR_PROC_FAILED`, by name where it is one of class_name's) and exits 0 when the call
 * returned an error.
 * - With peer failure reported (pml ucxdt's default) under `mpirun --enable-recovery`, which
 *   keeps the survivor running, the PML alone can end that receive: the test
 *   (test/CMakeLists.txt) requires exit status 0 and MPI_ERR_PROC_FAILED within 30 s.
 * - Under ULFM (`mpirun --with-ft ulfm`) the MPI layer does it. Open MPI 5.0.7 runs ULFM with
 *   pml ob1 only (its agreement needs ob1's BML: pml ucx and pml ucxdt crash in MPI_Init).
 * - Without either the launcher ends the job once a rank dies; the test then asks only that
 *   it ends, non-zero, before its time limit: no rank hangs in the PML. */
#include <mpi.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* The name of an error class the survivor may see, or NULL. */
static const char *class_name(int cls) {
    switch (cls) {
    case MPI_SUCCESS: return "MPI_SUCCESS";
    case MPI_ERR_PROC_FAILED: return "MPI_ERR_PROC_FAILED";
    case MPI_ERR_PROC_FAILED_PENDING: return "MPI_ERR_PROC_FAILED_PENDING";
    case MPI_ERR_OTHER: return "MPI_ERR_OTHER";
    case MPI_ERR_INTERN: return "MPI_ERR_INTERN";
    case MPI_ERR_TRUNCATE: return "MPI_ERR_TRUNCATE";
    case MPI_ERR_COMM: return "MPI_ERR_COMM";
    case MPI_ERR_RANK: return "MPI_ERR_RANK";
    case MPI_ERR_UNKNOWN: return "MPI_ERR_UNKNOWN";
    default: return NULL;
    }
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Datatype v;
    MPI_Type_vector(1000, 2, 4, MPI_DOUBLE, &v);
    MPI_Type_commit(&v);
    static double buf[4000];
    const char *mode = argc > 1 ? argv[1] : "";
    const int send = strcmp(mode, "send") == 0, recv_big = strcmp(mode, "recv_big") == 0;
    const int big = recv_big ? 1 << 23 : 1 << 21;  /* doubles: 64 or 16 MiB */
    double *data = send || recv_big ? calloc(big, sizeof(double)) : NULL;
    MPI_Barrier(MPI_COMM_WORLD);  /* both connected */
    if (rank == 1) {
        MPI_Request r;
        if (recv_big) MPI_Isend(data, big, MPI_DOUBLE, 0, 0, MPI_COMM_WORLD, &r);
        raise(SIGKILL);
    }
    int rc = MPI_SUCCESS;
    double took = 0;
    if (rank == 0) {
        struct timespec t0, t1;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        rc = send       ? MPI_Send(data, big, MPI_DOUBLE, 1, 0, MPI_COMM_WORLD)
             : recv_big ? MPI_Recv(data, big, MPI_DOUBLE, 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE)
                        : MPI_Recv(buf, 1, v, 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        clock_gettime(CLOCK_MONOTONIC, &t1);
        took = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) * 1e-9;
        char msg[MPI_MAX_ERROR_STRING];
        int len = 0, cls = 0;
        MPI_Error_class(rc, &cls);
        MPI_Error_string(rc, msg, &len);
        printf("killed_rank: %s the killed rank returned after %.1f s: %s (class %d)\n",
               send ? "MPI_Send to" : "MPI_Recv from", took, msg, cls);
        const char *name = class_name(cls);
        if (name)
            printf("killed_rank: survivor got %s\n", name);
        else
            printf("killed_rank: survivor got error class %d\n", cls);
        fflush(stdout);
    }
    _exit(rank == 0 && rc == MPI_SUCCESS);  /* no MPI_Finalize: a peer is gone */
}
