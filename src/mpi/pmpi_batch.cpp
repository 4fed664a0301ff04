// Packing and unpacking of routed layouts (pmpi.hpp): at once (pack, unpack), or as a Batch, the
// packs and unpacks of one MPI call on the interposer's per-GPU streams with one
// synchronization per stream at the end. Each is timed for UCXDT_PMPI_VERBOSE.
#include "pmpi.hpp"

#include <cuda_runtime_api.h>
#include <ucxdt/ucxdt_cuda.h>

#include <algorithm>
#include <chrono>
#include <cstdio>

namespace ucxdt::pmpi {
namespace {
double now() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

// Runs `call` (a ucxdt status), adds its time to `t`: MPI_SUCCESS, or MPI_ERR_INTERN with
// ucxdt's message printed.
template <typename Call>
int timed(Timer t, const char *what, Call &&call) {
    const double t0 = now();
    const ucxdt_status_t st = call();
    add_time(t, now() - t0);
    if (st == UCXDT_OK) return MPI_SUCCESS;
    std::fprintf(stderr, "ucxdt_pmpi: %s failed: %s\n", what, ucxdt_last_error());
    return MPI_ERR_INTERN;
}
}  // namespace

int pack(const Route &r, const void *buf, int64_t count, void *packed) {
    return timed(kPackTime, "pack", [&] { return ucxdt_pack_range(buf, count, r.type->type, 0, packed, r.bytes); });
}

int unpack(const Route &r, const void *packed, int64_t bytes, void *buf, int64_t count) {
    if (bytes == 0) return MPI_SUCCESS;
    return timed(kUnpackTime, "unpack",
                 [&] { return ucxdt_unpack_range(packed, 0, bytes, buf, count, r.type->type); });
}

void *Batch::stream_for(const Route &r) {
    if (r.device < 0) return nullptr;
    void *s = stream_of(r.device);
    if (s && std::find(streams_.begin(), streams_.end(), s) == streams_.end()) streams_.push_back(s);
    return s;
}

int Batch::pack(const Route &r, const void *buf, int64_t count, void *packed) {
    void *s = stream_for(r);
    if (!s) return pmpi::pack(r, buf, count, packed);
    return timed(kPackTime, "pack", [&] {
        return ucxdt_pack_range_async(buf, count, r.type->type, 0, packed, r.bytes, static_cast<cudaStream_t>(s));
    });
}

int Batch::unpack(const Route &r, const void *packed, int64_t bytes, void *buf, int64_t count) {
    if (bytes == 0) return MPI_SUCCESS;
    void *s = stream_for(r);
    if (!s) return pmpi::unpack(r, packed, bytes, buf, count);
    return timed(kUnpackTime, "unpack", [&] {
        return ucxdt_unpack_range_async(packed, 0, bytes, buf, count, r.type->type, static_cast<cudaStream_t>(s));
    });
}

void Batch::release_after(Staging s) {
    if (streams_.empty()) put_staging(s);
    else staging_.push_back(s);
}

int Batch::wait() {
    int rc = MPI_SUCCESS;
    for (void *s : streams_)
        if (cudaStreamSynchronize(static_cast<cudaStream_t>(s)) != cudaSuccess) rc = MPI_ERR_INTERN;
    if (rc != MPI_SUCCESS) {
        std::fprintf(stderr, "ucxdt_pmpi: GPU pack or unpack failed: %s\n", cudaGetErrorString(cudaGetLastError()));
        if (comm != MPI_COMM_NULL) fail(comm, rc);
    }
    for (Staging &s : staging_) put_staging(s);
    streams_.clear();
    staging_.clear();
    return rc;
}

}  // namespace ucxdt::pmpi
