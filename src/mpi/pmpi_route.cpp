// Which (buffer, count, datatype) triples the interposer takes; its settings and counters.
#include "pmpi.hpp"

#include "base/address.hpp"
#include "base/env.hpp"

#include <atomic>
#include <cstdio>
#include <dlfcn.h>

namespace ucxdt::pmpi {

namespace {
// UCXDT_PMPI_PINNED_MAX's default. A CUDA-aware MPI's small device message costs a GPU
// transfer's setup (Open MPI 5 over UCX 1.13.1: 21-27 us one way at 4 KiB, against 1.8-8 us
// for host memory); up to 16 KiB the pack into page-locked memory and the host message win,
// from 64 KiB the device message does (performance-log.md, run 40).
constexpr int64_t kPinnedMax = 16384;
std::atomic<uint64_t> counters[kNumCounters];
std::atomic<uint64_t> timers_ns[kNumTimers];

}  // namespace

double seconds(Timer t) { return static_cast<double>(timers_ns[t].load()) * 1e-9; }
void add_time(Timer t, double s) { timers_ns[t].fetch_add(static_cast<uint64_t>(s * 1e9), std::memory_order_relaxed); }

const Settings &settings() {
    static const Settings s = [] {
        Settings v;
        v.route_host = env_flag("UCXDT_PMPI_HOST", false);
        const char *ca = std::getenv("UCXDT_PMPI_CUDA_AWARE");
        v.cuda_aware = (ca && *ca) ? (env_flag("UCXDT_PMPI_CUDA_AWARE", false) ? 1 : 0) : -1;
        v.staging_keep = env_integer("UCXDT_PMPI_STAGING_MB", 256, 0, int64_t{1} << 20) << 20;
        v.pinned_max = env_integer("UCXDT_PMPI_PINNED_MAX", kPinnedMax, 0, INT32_MAX);
        v.verbose = env_flag("UCXDT_PMPI_VERBOSE", false);
        return v;
    }();
    return s;
}

bool mpi_cuda_aware() {
    static const bool aware = [] {
        if (settings().cuda_aware >= 0) return settings().cuda_aware == 1;
        // Open MPI's extension (mpi-ext.h); looked up so that one source serves every MPI.
        using Query = int (*)(void);
        auto q = reinterpret_cast<Query>(dlsym(RTLD_DEFAULT, "MPIX_Query_cuda_support"));
        return q && q() == 1;
    }();
    return aware;
}

Where staging_for(int device, int64_t bytes) {
    if (device < 0) return Where::kHost;
    return mpi_cuda_aware() && bytes > settings().pinned_max ? Where::kDevice : Where::kPinned;
}

void count_op(Counter c) { counters[c].fetch_add(1, std::memory_order_relaxed); }

bool route(const void *buf, int64_t count, MPI_Datatype dt, Route *r) {
    if (count <= 0) return false;
    TypeRef t = find_type(dt);
    if (!t || t->size == 0) return false;
    ucxdt_plan_class_t cls;
    int64_t blocks;
    if (ucxdt_type_plan_info(t->type, count, &cls, &blocks) != UCXDT_OK) return false;
    // The first data byte tells the memory: buf may be MPI_BOTTOM with absolute displacements.
    const void *first = at(buf, t->true_lb);
    const int device = gpu_of(first);
    if (device < 0 && (!settings().route_host || cls == UCXDT_PLAN_CONTIGUOUS)) return false;
    // A contiguous derived type on a GPU is routed too: Open MPI 5's pml ucx hands derived types
    // to UCP as generic datatypes and packs them with the CPU, which faults on device memory.
    // Point-to-point then gives the MPI the bytes themselves (Route::contiguous).
    r->bytes = t->size * count;
    if (r->bytes > INT32_MAX) return false;  // sent as one MPI_BYTE count (an int)
    r->type = std::move(t);
    r->device = device;
    r->staging = staging_for(device, r->bytes);
    r->contiguous = cls == UCXDT_PLAN_CONTIGUOUS && device >= 0 && mpi_cuda_aware();
    r->first = first;
    return true;
}

int fail(MPI_Comm comm, int code) {
    PMPI_Comm_call_errhandler(comm, code);
    return code;
}

}  // namespace ucxdt::pmpi

extern "C" __attribute__((visibility("default"))) void ucxdt_pmpi_get_counters(ucxdt_pmpi_counters_t *out) {
    using namespace ucxdt::pmpi;
    if (!out) return;
    out->sends = counters[kSends].load();
    out->recvs = counters[kRecvs].load();
    out->collectives = counters[kCollectives].load();
    out->packs = counters[kPacks].load();
    out->fallbacks = counters[kFallbacks].load();
}
