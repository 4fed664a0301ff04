// What the MPI clients share: memory of either kind, the choice of GPU, the start that skips a
// run without one, a watchdog that turns a hang into MPI_Abort, and medians. Plain MPI-3.1 and
// the CUDA runtime, nothing of ucxdt: a preloaded PMPI interposer stays invisible to them.
#pragma once

// Only MPI's C API: the deprecated C++ bindings' library is not linked.
#ifndef OMPI_SKIP_MPICXX
#define OMPI_SKIP_MPICXX 1
#endif
#ifndef MPICH_SKIP_MPICXX
#define MPICH_SKIP_MPICXX 1
#endif
#include <mpi.h>

#include <cuda_runtime_api.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace clients {

inline const char *g_prog = "client";  // each main sets its name, for messages
constexpr int kSkipped = 77;           // exit status of -m device without a GPU (CTest: Skipped)

inline bool mpi_running() {
    int init = 0, fin = 0;
    MPI_Initialized(&init);
    MPI_Finalized(&fin);
    return init && !fin;
}

inline int world_rank() {
    int r = -1;
    if (mpi_running()) MPI_Comm_rank(MPI_COMM_WORLD, &r);
    return r;
}

// Prints "<prog>: rank R: <message>" and ends the whole job: one rank's failure must not
// leave the others waiting for it.
[[noreturn]] inline void die(const char *fmt, ...) {
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    std::vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    std::fprintf(stderr, "%s: rank %d: %s\n", g_prog, world_rank(), msg);
    std::fflush(stderr);
    if (mpi_running()) MPI_Abort(MPI_COMM_WORLD, 1);
    std::exit(1);
}

inline void cuda_check(cudaError_t e, const char *what) {
    if (e != cudaSuccess) die("%s: %s", what, cudaGetErrorString(e));
}

// "a,b,c" as integers; false when a part is not one.
inline bool parse_list(const char *s, std::vector<long> *out) {
    out->clear();
    for (;;) {
        char *end = nullptr;
        out->push_back(std::strtol(s, &end, 10));
        if (end == s || (*end != ',' && *end != '\0')) return false;
        if (*end == '\0') return true;
        s = end + 1;
    }
}

enum class Mem { host, device };
inline bool parse_mem(const std::string &s, Mem *m) {
    if (s == "host" || s == "device") return *m = s == "host" ? Mem::host : Mem::device, true;
    return false;
}
inline const char *mem_name(Mem m) { return m == Mem::host ? "host" : "device"; }

// A buffer where MPI sees it: page-aligned host memory or cudaMalloc'd device memory.
class Buffer {
public:
    Buffer() = default;
    Buffer(Mem m, size_t bytes) : mem_(m), n_(bytes) {
        const size_t alloc = std::max<size_t>((bytes + 4095) / 4096 * 4096, 4096);
        if (m == Mem::device) cuda_check(cudaMalloc(&p_, alloc), "cudaMalloc");
        else if (!(p_ = std::aligned_alloc(4096, alloc))) die("out of host memory (%zu bytes)", alloc);
    }
    Buffer(Buffer &&o) noexcept : mem_(o.mem_), p_(o.p_), n_(o.n_) { o.p_ = nullptr; }
    Buffer &operator=(Buffer &&o) noexcept {
        std::swap(mem_, o.mem_), std::swap(p_, o.p_), std::swap(n_, o.n_);
        return *this;
    }
    Buffer(const Buffer &) = delete;
    Buffer &operator=(const Buffer &) = delete;
    ~Buffer() {
        if (p_ && mem_ == Mem::device) cudaFree(p_);
        else std::free(p_);
    }
    void *get() const { return p_; }
    template <typename T> T *as() const { return static_cast<T *>(p_); }
    size_t size() const { return n_; }
    void to_host(void *dst) const {
        if (mem_ == Mem::host) std::memcpy(dst, p_, n_);
        else cuda_check(cudaMemcpy(dst, p_, n_, cudaMemcpyDeviceToHost), "cudaMemcpy to host");
    }
    void from_host(const void *src) {
        if (mem_ == Mem::host) std::memcpy(p_, src, n_);
        else cuda_check(cudaMemcpy(p_, src, n_, cudaMemcpyHostToDevice), "cudaMemcpy to device");
    }
    void set_bytes(int byte) {
        if (mem_ == Mem::host) std::memset(p_, byte, n_);
        else cuda_check(cudaMemset(p_, byte, n_), "cudaMemset"), cuda_check(cudaDeviceSynchronize(), "cudaMemset");
    }

private:
    Mem mem_ = Mem::host;
    void *p_ = nullptr;
    size_t n_ = 0;
};

// The launcher's local rank (Open MPI, MPICH's Hydra, Slurm, PMI), or -1 when it does not say.
inline int launcher_local_rank() {
    for (const char *v : {"OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID", "SLURM_LOCALID",
                          "PMI_LOCAL_RANK", "PALS_LOCAL_RANKID"})
        if (const char *s = std::getenv(v)) return std::atoi(s);
    return -1;
}

// MPI_Init, with the GPU of this process picked first for -m device (one per local rank,
// round robin), so that the MPI and an interposer start on the device the buffers live on.
// Returns -1 to go on, else the exit status with MPI finalized: 2 when `opt_error` is not empty
// (rank 0 prints it and the usage), kSkipped when some rank has no GPU for -m device.
inline int start(int *argc, char ***argv, const std::string &opt_error, const char *usage, Mem mem) {
    int ndev = 0;
    const int local = launcher_local_rank();
    if (opt_error.empty() && mem == Mem::device) {
        if (cudaGetDeviceCount(&ndev) != cudaSuccess) ndev = 0;
        if (ndev > 0 && local >= 0) cuda_check(cudaSetDevice(local % ndev), "cudaSetDevice");
    }
    MPI_Init(argc, argv);
    const int rank = world_rank();
    if (!opt_error.empty()) {
        if (rank == 0) std::fprintf(stderr, "%s: %s\n%s", g_prog, opt_error.c_str(), usage);
        MPI_Finalize();
        return 2;
    }
    if (mem == Mem::host) return -1;
    if (ndev > 0 && local < 0) {  // the launcher did not say: ranks that share a node, by MPI
        MPI_Comm node;
        int node_rank = 0;
        MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &node);
        MPI_Comm_rank(node, &node_rank);
        MPI_Comm_free(&node);
        cuda_check(cudaSetDevice(node_rank % ndev), "cudaSetDevice");
    }
    int have = ndev > 0, all = 0;
    MPI_Allreduce(&have, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    if (all) return -1;
    if (rank == 0) std::fprintf(stderr, "%s: -m device, but a rank found no GPU: skipped\n", g_prog);
    MPI_Finalize();
    return kSkipped;
}

// Bounds every wait: arm() starts a budget of `seconds`; if it runs out before the next arm()
// or disarm(), the watchdog thread says what hung and calls MPI_Abort, so that a lost message
// ends the job instead of hanging it. (MPI_Abort from a second thread under
// MPI_THREAD_SINGLE is outside the standard's promise, but both Open MPI and MPICH honour it,
// and the process is stuck otherwise; asking for MPI_THREAD_MULTIPLE would slow every call.)
class Watchdog {
public:
    explicit Watchdog(double seconds) : budget_(seconds), thread_([this] { watch(); }) {}
    ~Watchdog() {
        {
            std::lock_guard<std::mutex> g(mu_);
            stop_ = true;
        }
        cv_.notify_one();
        thread_.join();
    }
    void arm(const char *what, long step) {
        std::lock_guard<std::mutex> g(mu_);
        what_ = what, step_ = step;
        deadline_ = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                       std::chrono::duration<double>(budget_));
        armed_ = true;
    }
    void disarm() {
        std::lock_guard<std::mutex> g(mu_);
        armed_ = false;
    }

private:
    using Clock = std::chrono::steady_clock;
    void watch() {
        std::unique_lock<std::mutex> lk(mu_);
        while (!stop_) {
            if (armed_ && Clock::now() > deadline_) {
                std::fprintf(stderr,
                             "%s: rank %d: %s %ld did not finish within %g s (-T): a peer is "
                             "stuck or gone; aborting\n",
                             g_prog, world_rank(), what_, step_, budget_);
                std::fflush(stderr);
                MPI_Abort(MPI_COMM_WORLD, 3);
            }
            cv_.wait_for(lk, std::chrono::milliseconds(50));
        }
    }
    double budget_;
    std::mutex mu_;
    std::condition_variable cv_;
    bool stop_ = false, armed_ = false;
    Clock::time_point deadline_{};
    const char *what_ = "";
    long step_ = 0;
    std::thread thread_;  // last: it starts once the fields above exist
};

struct Summary {
    double median = 0, min = 0;
};
inline Summary summarize(std::vector<double> v) {
    if (v.empty()) return {};
    std::sort(v.begin(), v.end());
    const size_t n = v.size();
    return {n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2, v.front()};
}

inline double max_over(double v, MPI_Comm comm) {
    double m = 0;
    MPI_Allreduce(&v, &m, 1, MPI_DOUBLE, MPI_MAX, comm);
    return m;
}

}  // namespace clients
