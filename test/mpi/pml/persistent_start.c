/* Persistent requests at their start (MPI-4.1 §3.9) where the start itself decides the outcome:
 * - One whose start cannot post its operation: here a type whose extent, 2^62 bytes, overflows
 *   at a count of 4, which ucxdt refuses when the operation is posted. Under MPI_ERRORS_RETURN,
 *   MPI_Start returns the error and the request completes with it: MPI_Wait returns it at once
 *   instead of waiting for an operation that never began, and the request can be freed. The
 *   same for a receive. In an MPI_Startall with valid requests beside it (Open MPI ignores what
 *   the PML's start returns there), the valid ones still run and MPI_Waitall reports the failed
 *   one in its status. Then a valid persistent exchange still works.
 * - A persistent buffered send (MPI_Bsend_init) of 1 MiB, larger than any eager message: it
 *   completes locally (§3.6), so rank 0's MPI_Wait returns before rank 1 posts the receive,
 *   which it does only after a barrier that follows that wait.
 * An alarm fails the test when a wait hangs (10 s). */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static int failures = 0;

static void check(int ok, int rank, const char *what) {
    if (ok) return;
    printf("persistent_start: rank %d: %s\n", rank, what);
    fflush(stdout);
    ++failures;
}

/* Starts *req, which must fail to post, then waits for it and frees it. */
static void failed_start(MPI_Request *req, int rank, const char *what) {
    char line[160];
    const int rc = MPI_Start(req);
    snprintf(line, sizeof line, "%s: MPI_Start returned MPI_SUCCESS for an overflowing count", what);
    check(rc != MPI_SUCCESS, rank, line);
    alarm(10);
    const int wrc = MPI_Wait(req, MPI_STATUS_IGNORE);
    alarm(0);
    int cls = MPI_SUCCESS;
    MPI_Error_class(wrc, &cls);
    snprintf(line, sizeof line, "%s: MPI_Wait after the failed start returned class %d (want MPI_ERR_COUNT)", what, cls);
    check(cls == MPI_ERR_COUNT, rank, line);
    /* Open MPI frees a request whose wait returned an error (ompi_errhandler_request_invoke). */
    snprintf(line, sizeof line, "%s: MPI_Request_free", what);
    if (*req != MPI_REQUEST_NULL) check(MPI_Request_free(req) == MPI_SUCCESS && *req == MPI_REQUEST_NULL, rank, line);
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size != 2) {
        if (rank == 0) printf("persistent_start: needs 2 ranks\n");
        MPI_Finalize();
        return 2;
    }
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);  /* where MPI-4 puts MPI_Start's errors */
    const int peer = 1 - rank;
    MPI_Datatype huge;
    MPI_Type_create_resized(MPI_BYTE, 0, (MPI_Aint)1 << 62, &huge);
    MPI_Type_commit(&huge);
    static char buf[64];
    MPI_Request req;

    MPI_Send_init(buf, 4, huge, peer, 7, MPI_COMM_WORLD, &req);
    failed_start(&req, rank, "send");
    MPI_Recv_init(buf, 4, huge, peer, 7, MPI_COMM_WORLD, &req);
    failed_start(&req, rank, "receive");

    /* MPI_Startall of [the failing send, a valid receive, a valid send]: the valid pair runs.
     * MPI_Waitall may return once the failed one is seen, the others MPI_ERR_PENDING (MPI-4.1
     * §3.7.5), which are then waited for one by one. */
    {
        int out[4] = {1, 2, 3, 4 + rank}, in[4] = {0};
        MPI_Request three[3];
        MPI_Status st[3];
        MPI_Send_init(buf, 4, huge, peer, 7, MPI_COMM_WORLD, &three[0]);
        MPI_Recv_init(in, 4, MPI_INT, peer, 6, MPI_COMM_WORLD, &three[1]);
        MPI_Send_init(out, 4, MPI_INT, peer, 6, MPI_COMM_WORLD, &three[2]);
        alarm(10);
        MPI_Startall(3, three);
        const int wrc = MPI_Waitall(3, three, st);
        int later = MPI_SUCCESS;
        for (int i = 1; i < 3 && wrc == MPI_ERR_IN_STATUS; ++i)
            if (st[i].MPI_ERROR == MPI_ERR_PENDING && MPI_Wait(&three[i], &st[i]) != MPI_SUCCESS) later = MPI_ERR_OTHER;
            else if (st[i].MPI_ERROR != MPI_ERR_PENDING && st[i].MPI_ERROR != MPI_SUCCESS) later = st[i].MPI_ERROR;
        alarm(0);
        int cls = MPI_SUCCESS;
        MPI_Error_class(st[0].MPI_ERROR, &cls);
        check(wrc == MPI_ERR_IN_STATUS && cls == MPI_ERR_COUNT && later == MPI_SUCCESS, rank,
              "MPI_Startall with a failing request: MPI_Waitall's statuses");
        check(in[0] == 1 && in[1] == 2 && in[2] == 3 && in[3] == 4 + peer, rank,
              "MPI_Startall with a failing request: the valid requests beside it");
        for (int i = 0; i < 3; ++i)
            if (three[i] != MPI_REQUEST_NULL) MPI_Request_free(&three[i]);
    }
    MPI_Type_free(&huge);

    /* The PML still moves messages: three rounds of a persistent exchange. */
    int out[4], in[4];
    MPI_Request rq[2];
    MPI_Recv_init(in, 4, MPI_INT, peer, 8, MPI_COMM_WORLD, &rq[0]);
    MPI_Send_init(out, 4, MPI_INT, peer, 8, MPI_COMM_WORLD, &rq[1]);
    for (int round = 0; round < 3; ++round) {
        for (int i = 0; i < 4; ++i) out[i] = 1000 * rank + 10 * round + i, in[i] = -1;
        alarm(10);
        const int rc = MPI_Startall(2, rq) == MPI_SUCCESS && MPI_Waitall(2, rq, MPI_STATUSES_IGNORE) == MPI_SUCCESS;
        alarm(0);
        int ok = rc;
        for (int i = 0; i < 4; ++i) ok = ok && in[i] == 1000 * peer + 10 * round + i;
        check(ok, rank, "a valid persistent exchange after the failed starts");
    }
    MPI_Request_free(&rq[0]);
    MPI_Request_free(&rq[1]);

    enum { big = 1 << 17 };  /* doubles: 1 MiB */
    static double bsent[big], brecv[big];
    static char attached[2 * (big * sizeof(double) + MPI_BSEND_OVERHEAD)];  /* both rounds: the first may still be in flight */
    MPI_Buffer_attach(attached, sizeof attached);
    for (int round = 0; round < 2; ++round) {
        if (rank == 0) {
            for (int i = 0; i < big; ++i) bsent[i] = round * 1e6 + i;
            MPI_Request b;
            MPI_Bsend_init(bsent, big, MPI_DOUBLE, 1, 9, MPI_COMM_WORLD, &b);
            alarm(10);
            check(MPI_Start(&b) == MPI_SUCCESS && MPI_Wait(&b, MPI_STATUS_IGNORE) == MPI_SUCCESS, rank,
                  "a persistent buffered send");
            alarm(0);
            MPI_Request_free(&b);
            MPI_Barrier(MPI_COMM_WORLD);  /* only now does rank 1 post its receive */
        } else {
            MPI_Barrier(MPI_COMM_WORLD);
            alarm(10);
            const int rc = MPI_Recv(brecv, big, MPI_DOUBLE, 0, 9, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            alarm(0);
            int ok = rc == MPI_SUCCESS;
            for (int i = 0; i < big && ok; ++i) ok = brecv[i] == round * 1e6 + i;
            check(ok, rank, "the receive of a persistent buffered send");
        }
    }
    void *detached;
    int detached_size;
    MPI_Buffer_detach(&detached, &detached_size);

    int all = 0;
    MPI_Allreduce(&failures, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0) printf("persistent_start: %s (%d failures)\n", all ? "FAILED" : "OK", all);
    MPI_Finalize();
    return all ? 1 : 0;
}
