/* What the programs of mpi/pml share: CHECK counts and reports a failed check, prefixed with
 * the program's name (PROGRAM, defined before this header), and finish ends the program with the
 * verdict its CTest entry reads ("<PROGRAM>: OK" on rank 0, exit status 0).
 *
 * Where the messages live: host memory by default; GPU memory (cudaMalloc) when the program's
 * argument is `device`. A program keeps its values in host arrays, as it always did, and
 * moves them to and from its message buffers with buffer_copy: memcpy on host memory,
 * cudaMemcpy otherwise, so the checks read the same values either way. */
#ifndef PML_TEST_CHECK_H
#define PML_TEST_CHECK_H

#include <cuda_runtime.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int failures __attribute__((unused));
static int on_device;

#define CHECK(cond, ...)                             \
    do {                                             \
        if (!(cond)) {                               \
            fprintf(stderr, PROGRAM ": " __VA_ARGS__); \
            fputc('\n', stderr);                     \
            ++failures;                              \
        }                                            \
    } while (0)

/* MPI_Init, then this rank and the size of MPI_COMM_WORLD; aborts with 2 below `min` ranks. */
static inline void start(int *argc, char ***argv, int min, int *me, int *size) {
    MPI_Init(argc, argv);
    MPI_Comm_rank(MPI_COMM_WORLD, me);
    MPI_Comm_size(MPI_COMM_WORLD, size);
    if (*size < min) {
        if (*me == 0) fprintf(stderr, PROGRAM ": needs %d or more ranks\n", min);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
}

/* After MPI_Init: the memory kind from the program's argument `arg` (`device`, or NULL for host
 * memory; anything else aborts with 2).
 * For `device`, each rank takes GPU (node-local rank mod GPU count); a rank with no GPU says so,
 * finalizes and exits 77, which CTest reads as Skipped (SKIP_RETURN_CODE). No message moves here:
 * a program may need its first messages to make the endpoints. */
static inline void memory_init(const char *arg) {
    if (arg == NULL) return;
    if (strcmp(arg, "device") != 0) {
        fprintf(stderr, PROGRAM ": unknown argument '%s' (only `device`)\n", arg);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    int gpus = 0;
    if (cudaGetDeviceCount(&gpus) != cudaSuccess || gpus == 0) {
        int me = 0;
        MPI_Comm_rank(MPI_COMM_WORLD, &me);
        printf(PROGRAM ": skipped on rank %d, device memory asked for and no GPU\n", me);
        MPI_Finalize();
        exit(77);
    }
    const char *local = getenv("OMPI_COMM_WORLD_LOCAL_RANK");
    if (cudaSetDevice((local ? atoi(local) : 0) % gpus) != cudaSuccess) MPI_Abort(MPI_COMM_WORLD, 2);
    on_device = 1;
}

/* A message buffer of `bytes` bytes, of the program's memory kind; aborts when none is left. */
static inline void *buffer_alloc(size_t bytes) {
    void *p = NULL;
    if (on_device ? cudaMalloc(&p, bytes ? bytes : 1) != cudaSuccess : (p = malloc(bytes ? bytes : 1)) == NULL) {
        fprintf(stderr, PROGRAM ": no memory for a %zu-byte buffer\n", bytes);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    return p;
}

static inline void buffer_free(void *p) {
    if (on_device)
        cudaFree(p);
    else
        free(p);
}

/* Copies `bytes` bytes between host arrays and message buffers, either way. */
static inline void buffer_copy(void *dst, const void *src, size_t bytes) {
    if (!on_device) {
        memcpy(dst, src, bytes);
    } else if (cudaMemcpy(dst, src, bytes, cudaMemcpyDefault) != cudaSuccess) {
        fprintf(stderr, PROGRAM ": cudaMemcpy of %zu bytes failed\n", bytes);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
}

/* A message buffer holding a copy of `bytes` bytes of host array `host`; NULL for NULL, so that
 * arguments that MPI lets be NULL stay NULL. */
static inline void *buffer_from(const void *host, size_t bytes) {
    if (host == NULL) return NULL;
    void *buffer = buffer_alloc(bytes);
    buffer_copy(buffer, host, bytes);
    return buffer;
}

/* Copies `buffer` (from buffer_from; NULL: nothing) back to `host` and frees it. */
static inline void buffer_return(void *host, void *buffer, size_t bytes) {
    if (buffer == NULL) return;
    buffer_copy(host, buffer, bytes);
    buffer_free(buffer);
}

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
