/* MPI_THREAD_MULTIPLE (MPI-4.1 §11.6): 4 threads per rank, each exchanging 200 messages of a
 * vector type with the same thread of the ring neighbours (its own tag), blocking and
 * nonblocking calls mixed, with MPI_ANY_SOURCE on every other receive. Exit status 0 when
 * every message arrived whole and in order (non-overtaking, §3.5, within each thread's tag). */
#include <mpi.h>
#include <pthread.h>
#include <stdio.h>

enum { kThreads = 4, kMessages = 200, kCount = 64 };

static int rank, size;
static MPI_Datatype vec;  /* kCount doubles, every other one */

static void *exchange(void *arg) {
    const int t = (int)(long)arg, right = (rank + 1) % size, left = (rank + size - 1) % size;
    double out[2 * kCount], in[2 * kCount];
    long bad = 0;
    for (int m = 0; m < kMessages; ++m) {
        for (int i = 0; i < 2 * kCount; ++i) out[i] = rank * 1e6 + t * 1e4 + m * 10 + (i % 2 ? -1 : i), in[i] = -2;
        MPI_Request r[2];
        const int src = m % 2 ? MPI_ANY_SOURCE : left;
        if (m % 3 == 0) {
            MPI_Sendrecv(out, 1, vec, right, t, in, 1, vec, src, t, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        } else {
            MPI_Irecv(in, 1, vec, src, t, MPI_COMM_WORLD, &r[0]);
            MPI_Isend(out, 1, vec, right, t, MPI_COMM_WORLD, &r[1]);
            MPI_Waitall(2, r, MPI_STATUSES_IGNORE);
        }
        for (int i = 0; i < 2 * kCount; ++i) {
            const double want = i % 2 ? -2 : left * 1e6 + t * 1e4 + m * 10 + i;
            if (in[i] != want) ++bad;
        }
    }
    return (void *)bad;
}

int main(int argc, char **argv) {
    int provided;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (provided != MPI_THREAD_MULTIPLE) {
        if (rank == 0) printf("threads: FAIL, MPI_THREAD_MULTIPLE not provided (%d)\n", provided);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    MPI_Type_vector(kCount, 1, 2, MPI_DOUBLE, &vec);
    MPI_Type_commit(&vec);
    pthread_t th[kThreads];
    for (long t = 0; t < kThreads; ++t) pthread_create(&th[t], NULL, exchange, (void *)t);
    long bad = 0;
    for (int t = 0; t < kThreads; ++t) {
        void *b;
        pthread_join(th[t], &b);
        bad += (long)b;
    }
    long allbad = 0;
    MPI_Allreduce(&bad, &allbad, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0)
        printf("threads: %d ranks x %d threads x %d messages: %s (%ld wrong)\n", size, kThreads, kMessages,
               allbad ? "FAIL" : "ok", allbad);
    MPI_Type_free(&vec);
    MPI_Finalize();
    return allbad != 0;
}
