/* ThreadSanitizer's build of the MPI test programs (test/CMakeLists.txt): the waits and tests of
 * the program, which run inside libmpi (uninstrumented), tell ThreadSanitizer that what the
 * request's completion wrote (the receive buffer, the status) comes before what the program
 * reads after it, as MPI guarantees (MPI-4.1 §3.7.3). The component releases the request when
 * it completes it (test/tsan/ompi_inline_sync.h); these acquire it once the program has seen it
 * complete. An MPI_Request of Open MPI is the request's address. Only the calls the programs
 * use. */
#include <mpi.h>
#include <sanitizer/tsan_interface.h>
#include <stdlib.h>

int MPI_Wait(MPI_Request *request, MPI_Status *status) {
    const MPI_Request r = *request;
    const int rc = PMPI_Wait(request, status);
    if (r != MPI_REQUEST_NULL) __tsan_acquire(r);
    return rc;
}

int MPI_Test(MPI_Request *request, int *flag, MPI_Status *status) {
    const MPI_Request r = *request;
    const int rc = PMPI_Test(request, flag, status);
    if (*flag && r != MPI_REQUEST_NULL) __tsan_acquire(r);
    return rc;
}

static MPI_Request *copy(int count, const MPI_Request *requests) {
    MPI_Request *c = malloc(sizeof *c * (size_t)(count > 0 ? count : 1));
    if (!c) abort();
    for (int i = 0; i < count; ++i) c[i] = requests[i];
    return c;
}
static void acquire_all(int count, MPI_Request *c) {
    for (int i = 0; i < count; ++i)
        if (c[i] != MPI_REQUEST_NULL) __tsan_acquire(c[i]);
    free(c);
}

int MPI_Waitall(int count, MPI_Request requests[], MPI_Status statuses[]) {
    MPI_Request *c = copy(count, requests);
    const int rc = PMPI_Waitall(count, requests, statuses);
    acquire_all(count, c);
    return rc;
}

int MPI_Testall(int count, MPI_Request requests[], int *flag, MPI_Status statuses[]) {
    MPI_Request *c = copy(count, requests);
    const int rc = PMPI_Testall(count, requests, flag, statuses);
    if (*flag) acquire_all(count, c);
    else free(c);
    return rc;
}
