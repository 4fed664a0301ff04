/* What a receive decides, as every MPI has it (issue 61), on host memory or, with the argument
 * `device`, GPU memory (check.h); rank 0 sends, rank 1 receives, at an eager size and at a
 * rendezvous size each:
 *  - a vector of doubles sent with its type and received as MPI_BYTE: the same bytes arrive
 *    (MPI-4.1 §3.3.1 calls the mismatch erroneous; every MPI delivers them, pml ucx included),
 *    and MPI_Get_count in MPI_BYTE is the packed size;
 *  - a message longer than its receive: the receive fails with MPI_ERR_TRUNCATE (§3.2.4) and
 *    writes nothing past its buffer, and the send, standard and synchronous, completes without
 *    error: truncation is reported at the receiver only.
 * Both ranks set MPI_ERRORS_RETURN and check every return code. Prints "receiver_errors: OK" on
 * rank 0 when all passed; exits non-zero otherwise. Runs on 2 or more ranks (others wait). */
#define PROGRAM "receiver_errors"
#include "check.h"


static const char *class_name(int rc) {
    int c = rc;
    if (rc != MPI_SUCCESS) MPI_Error_class(rc, &c);
    return c == MPI_SUCCESS ? "MPI_SUCCESS" : c == MPI_ERR_TRUNCATE ? "MPI_ERR_TRUNCATE" : "another error";
}

/* n doubles at every other element, received as bytes. */
static void typed_as_bytes(int me, int n) {
    MPI_Datatype vec;
    MPI_Type_vector(n, 1, 2, MPI_DOUBLE, &vec);
    MPI_Type_commit(&vec);
    const size_t bytes = (size_t)n * sizeof(double);
    if (me == 0) {
        double *a = malloc(2 * bytes);
        for (int i = 0; i < 2 * n; ++i) a[i] = i % 2 ? -1.0 : 0.5 * i;
        double *message = buffer_from(a, 2 * bytes);
        const int rc = MPI_Send(message, 1, vec, 1, 1, MPI_COMM_WORLD);
        CHECK(rc == MPI_SUCCESS, "typed send of %zu bytes: %s", bytes, class_name(rc));
        free(a), buffer_free(message);
    } else if (me == 1) {
        double *b = malloc(bytes + 64);
        memset(b, 0xee, bytes + 64);
        double *message = buffer_from(b, bytes + 64);
        MPI_Status st;
        const int rc = MPI_Recv(message, (int)bytes + 64, MPI_BYTE, 0, 1, MPI_COMM_WORLD, &st);
        buffer_return(b, message, bytes + 64);
        int count = -1;
        MPI_Get_count(&st, MPI_BYTE, &count);
        CHECK(rc == MPI_SUCCESS, "MPI_BYTE receive of a typed %zu-byte message: %s", bytes, class_name(rc));
        CHECK(count == (int)bytes, "MPI_BYTE receive: count %d, not %zu", count, bytes);
        for (int i = 0; rc == MPI_SUCCESS && i < n; ++i)
            if (b[i] != 0.5 * (2 * i)) {
                CHECK(0, "MPI_BYTE receive: element %d is %g, not %g", i, b[i], 0.5 * (2 * i));
                break;
            }
        const unsigned char *tail = (const unsigned char *)b + bytes;
        for (int i = 0; i < 64; ++i)
            if (tail[i] != 0xee) {
                CHECK(0, "MPI_BYTE receive wrote past the message");
                break;
            }
        free(b);
    }
    MPI_Type_free(&vec);
}

/* n ints into a receive of n/2, with a standard and a synchronous send. */
static void truncated(int me, int n, int sync) {
    if (me == 0) {
        int *a = calloc(n, sizeof(int)), *message = buffer_from(a, n * sizeof(int));
        const int rc = sync ? MPI_Ssend(message, n, MPI_INT, 1, 2, MPI_COMM_WORLD)
                            : MPI_Send(message, n, MPI_INT, 1, 2, MPI_COMM_WORLD);
        CHECK(rc == MPI_SUCCESS, "%s of %d ints into a shorter receive: the sender got %s", sync ? "MPI_Ssend" : "MPI_Send",
              n, class_name(rc));
        free(a), buffer_free(message);
    } else if (me == 1) {
        const int room = n / 2;
        int *b = malloc((room + 16) * sizeof(int));
        for (int i = 0; i < room + 16; ++i) b[i] = -7;
        int *message = buffer_from(b, (room + 16) * sizeof(int));
        const int rc = MPI_Recv(message, room, MPI_INT, 0, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        buffer_return(b, message, (room + 16) * sizeof(int));
        int c = rc;
        if (rc != MPI_SUCCESS) MPI_Error_class(rc, &c);
        CHECK(c == MPI_ERR_TRUNCATE, "receive of %d ints into %d (%s): %s, not MPI_ERR_TRUNCATE", n, room,
              sync ? "MPI_Ssend" : "MPI_Send", class_name(rc));
        for (int i = room; i < room + 16; ++i)
            if (b[i] != -7) {
                CHECK(0, "a truncated receive wrote past its buffer");
                break;
            }
        free(b);
    }
}

int main(int argc, char **argv) {
    int me, size;
    start(&argc, &argv, 2, &me, &size);
    memory_init(argc > 1 ? argv[1] : NULL);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    const int sizes[] = {100, 1 << 17};  /* 800 B and 1 MiB of doubles: eager, rendezvous */
    for (int k = 0; k < 2; ++k) {
        typed_as_bytes(me, sizes[k]);
        truncated(me, sizes[k], 0);
        truncated(me, sizes[k], 1);
    }
    return finish();
}
