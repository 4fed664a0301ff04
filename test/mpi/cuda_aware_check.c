/*
 * Checks that an MPI moves derived datatypes between CUDA device buffers: rank 0 sends a
 * vector type (blocks of 3 doubles every 5) from device memory, rank 1 receives it into a
 * contiguous device buffer, and each rank prints what it checked. Run with 2 ranks (or as a
 * singleton, which sends to itself). Used on the GPU machine with the CUDA-aware Open MPI 5 of
 * scripts/setup-deps --ompi5 (the device's `mpi` phase, scripts/device/phases/mpi.sh) and the
 * MPICH 5 of --mpich-cuda (its `mpich` phase).
 * Exit status: 0 when the data arrived exactly, 1 on a wrong byte, 2 when it could not run.
 */
#include <mpi.h>
#if defined(OPEN_MPI) && OPEN_MPI
#include <mpi-ext.h>
#endif
#include <cuda_runtime.h>

#include <stdio.h>
#include <stdlib.h>

enum { kBlocks = 4096, kBlock = 3, kStride = 5 };

static int check_cuda(cudaError_t e, const char *what) {
    if (e == cudaSuccess) return 0;
    fprintf(stderr, "cuda_aware_check: %s: %s\n", what, cudaGetErrorString(e));
    return 1;
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    int rank = 0, size = 1;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int cuda_aware = -1;  /* unknown: the MPI has no query */
#if defined(MPIX_CUDA_AWARE_SUPPORT) || defined(MPIX_GPU_SUPPORT_CUDA)
    cuda_aware = MPIX_Query_cuda_support();  /* Open MPI's mpi-ext.h; MPICH's mpi.h */
#endif
    const int src_rank = 0, dst_rank = size > 1 ? 1 : 0;
    const size_t span = (size_t)kBlocks * kStride, packed = (size_t)kBlocks * kBlock;
    double *host = malloc(span * sizeof(double)), *dev_src = NULL, *dev_dst = NULL;
    int failed = host == NULL;
    failed |= check_cuda(cudaMalloc((void **)&dev_src, span * sizeof(double)), "cudaMalloc");
    failed |= check_cuda(cudaMalloc((void **)&dev_dst, packed * sizeof(double)), "cudaMalloc");
    if (failed) MPI_Abort(MPI_COMM_WORLD, 2);
    for (size_t i = 0; i < span; ++i) host[i] = (double)i;
    failed |= check_cuda(cudaMemcpy(dev_src, host, span * sizeof(double), cudaMemcpyHostToDevice), "cudaMemcpy");
    failed |= check_cuda(cudaMemset(dev_dst, 0xff, packed * sizeof(double)), "cudaMemset");

    MPI_Datatype vec;
    MPI_Type_vector(kBlocks, kBlock, kStride, MPI_DOUBLE, &vec);
    MPI_Type_commit(&vec);
    MPI_Request reqs[2];
    int n = 0, rc = MPI_SUCCESS;
    if (rank == dst_rank)
        rc |= MPI_Irecv(dev_dst, (int)packed, MPI_DOUBLE, src_rank, 7, MPI_COMM_WORLD, &reqs[n++]);
    if (rank == src_rank) rc |= MPI_Isend(dev_src, 1, vec, dst_rank, 7, MPI_COMM_WORLD, &reqs[n++]);
    rc |= MPI_Waitall(n, reqs, MPI_STATUSES_IGNORE);
    if (rc != MPI_SUCCESS) {
        fprintf(stderr, "cuda_aware_check: rank %d: MPI error %d\n", rank, rc);
        failed = 1;
    }
    if (rank == dst_rank && !failed) {
        failed |= check_cuda(cudaMemcpy(host, dev_dst, packed * sizeof(double), cudaMemcpyDeviceToHost), "cudaMemcpy");
        size_t bad = 0;
        for (size_t b = 0; b < kBlocks; ++b)
            for (size_t k = 0; k < kBlock; ++k)
                bad += host[b * kBlock + k] != (double)(b * kStride + k);
        if (bad) fprintf(stderr, "cuda_aware_check: %zu of %zu doubles wrong\n", bad, packed);
        failed |= bad != 0;
    }
    printf("cuda_aware_check: rank %d of %d, MPIX_Query_cuda_support %d, vector(%d, %d, %d, double) "
           "device to device: %s\n", rank, size, cuda_aware, kBlocks, kBlock, kStride,
           rank == dst_rank ? (failed ? "WRONG" : "verified") : (failed ? "failed" : "sent"));
    MPI_Type_free(&vec);
    cudaFree(dev_src);
    cudaFree(dev_dst);
    free(host);
    int any = 0;
    MPI_Allreduce(&failed, &any, 1, MPI_INT, MPI_LOR, MPI_COMM_WORLD);
    MPI_Finalize();
    return any ? 1 : 0;
}
