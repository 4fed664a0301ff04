/* Dynamic processes (MPI-4.1 §11.8) under the PML being tested, on host memory or, with the
 * argument `device` (which the children get too), GPU memory (check.h): messages to and from
 * processes of another job, which pml ucxdt reaches through endpoints made from the
 * addresses that job published (issue 61).
 *  - The parents (every rank of this job) spawn 2 children with MPI_Comm_spawn; each parent
 *    sends each child a vector of doubles over the intercommunicator, and each child answers
 *    with a vector of its own; then MPI_Intercomm_merge and an MPI_Allreduce over the merged
 *    communicator;
 *  - rank 0 of the parents opens a port (MPI_Open_port) and sends its name to child 0, which
 *    connects (MPI_Comm_connect, MPI_Comm_accept), and the two exchange a message on the new
 *    intercommunicator;
 *  - every intercommunicator ends with MPI_Comm_disconnect.
 * Every value is checked. Prints "dynamic: OK" on rank 0 of the parents when all passed; exits
 * non-zero otherwise (children report through the merged MPI_Allreduce). */
#define PROGRAM "dynamic"
#include "check.h"

#define CHILDREN 2
#define N 64


static double value(int from, int to, int i) { return 10000.0 * from + 100.0 * to + i; }

/* Every local rank sends each remote rank N doubles at every other element, and receives as
 * many from each; `parent`: which side's numbering `value` uses. */
static void exchange(MPI_Comm inter, int parent) {
    int me, remote;
    MPI_Comm_rank(inter, &me);
    MPI_Comm_remote_size(inter, &remote);
    MPI_Datatype vec;
    MPI_Type_vector(N, 1, 2, MPI_DOUBLE, &vec);
    MPI_Type_commit(&vec);
    double out[2 * N], in[2 * N], *out_buffer = buffer_alloc(sizeof out), *in_buffer = buffer_alloc(sizeof in);
    for (int r = 0; r < remote; ++r) {
        const int from = parent ? me : 100 + me, to = parent ? 100 + r : r;
        for (int i = 0; i < 2 * N; ++i) out[i] = i % 2 ? -1.0 : value(from, to, i / 2);
        for (int i = 0; i < 2 * N; ++i) in[i] = -2.0;
        buffer_copy(out_buffer, out, sizeof out), buffer_copy(in_buffer, in, sizeof in);
        MPI_Sendrecv(out_buffer, 1, vec, r, 5, in_buffer, 1, vec, r, 5, inter, MPI_STATUS_IGNORE);
        buffer_copy(in, in_buffer, sizeof in);
        for (int i = 0; i < 2 * N; ++i) {
            const double want = i % 2 ? -2.0 : value(to, from, i / 2);
            if (in[i] != want) {
                CHECK(0, "%s %d from %d: element %d is %g, not %g", parent ? "parent" : "child", me, r, i, in[i], want);
                break;
            }
        }
    }
    MPI_Type_free(&vec);
    buffer_free(out_buffer), buffer_free(in_buffer);
}

/* Sends `mine` to rank 0 of `inter` and returns what it sent back, through message buffers. */
static int swap_int(int mine, MPI_Comm inter) {
    int both[2] = {mine, 0}, *buffer = buffer_from(both, sizeof both);
    MPI_Sendrecv(buffer, 1, MPI_INT, 0, 7, buffer + 1, 1, MPI_INT, 0, 7, inter, MPI_STATUS_IGNORE);
    buffer_return(both, buffer, sizeof both);
    return both[1];
}

static void merged_sum(MPI_Comm inter, int high) {
    MPI_Comm all;
    MPI_Intercomm_merge(inter, high, &all);
    int n, one = 1, sum = 0;
    MPI_Comm_size(all, &n);
    MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, all);
    CHECK(sum == n, "MPI_Allreduce over the merged communicator: %d, not %d", sum, n);
    int bad = 0;
    MPI_Allreduce(&failures, &bad, 1, MPI_INT, MPI_SUM, all);
    failures = bad;  /* every process of both jobs now knows */
    MPI_Comm_free(&all);
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    MPI_Comm parent;
    MPI_Comm_get_parent(&parent);
    int me;
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    memory_init(argc > 1 ? argv[1] : NULL);
    char port[MPI_MAX_PORT_NAME] = "";
    if (parent == MPI_COMM_NULL) {
        MPI_Comm children;
        int errs[CHILDREN];
        char *child_argv[] = {"device", NULL};
        MPI_Comm_spawn(argv[0], on_device ? child_argv : MPI_ARGV_NULL, CHILDREN, MPI_INFO_NULL, 0, MPI_COMM_WORLD, &children, errs);
        for (int i = 0; i < CHILDREN; ++i) CHECK(errs[i] == MPI_SUCCESS, "spawn error code %d for child %d", errs[i], i);
        exchange(children, 1);
        if (me == 0) {
            MPI_Open_port(MPI_INFO_NULL, port);
            MPI_Send(port, MPI_MAX_PORT_NAME, MPI_CHAR, 0, 6, children);
            MPI_Comm client;
            MPI_Comm_accept(port, MPI_INFO_NULL, 0, MPI_COMM_SELF, &client);
            const int got = swap_int(4242, client);
            CHECK(got == 2424, "accept side got %d, not 2424", got);
            MPI_Comm_disconnect(&client);
            MPI_Close_port(port);
        }
        merged_sum(children, 0);
        MPI_Comm_disconnect(&children);
        if (me == 0 && failures == 0) printf("dynamic: OK\n");
    } else {
        exchange(parent, 0);
        if (me == 0) {
            MPI_Recv(port, MPI_MAX_PORT_NAME, MPI_CHAR, 0, 6, parent, MPI_STATUS_IGNORE);
            MPI_Comm server;
            MPI_Comm_connect(port, MPI_INFO_NULL, 0, MPI_COMM_SELF, &server);
            const int got = swap_int(2424, server);
            CHECK(got == 4242, "connect side got %d, not 4242", got);
            MPI_Comm_disconnect(&server);
        }
        merged_sum(parent, 1);
        MPI_Comm_disconnect(&parent);
    }
    MPI_Finalize();
    return failures == 0 ? 0 : 1;
}
