// What the MPI clients share: the common options, memory of either kind, the choice of GPU, the
// start that skips a run without one, a watchdog that turns a hang into MPI_Abort, the timing
// loop and medians. Plain MPI-3.1 and
// the CUDA runtime, nothing of ucxdt: a preloaded PMPI interposer stays invisible to them.
#pragma once

// MPI's C API only: clients/CMakeLists.txt defines OMPI_SKIP_MPICXX and MPICH_SKIP_MPICXX.
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

inline const char *g_prog = "client";  // the program's name in messages (start sets it)
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
inline const char *mem_name(Mem m) { return m == Mem::host ? "host" : "device"; }

// The options every client takes: -m host|device, -n, -W, -f table|csv, -T. Each program sets
// its own iteration defaults and passes the letters it does not know to take().
struct CommonOptions {
    static constexpr const char *kLetters = "m:n:W:f:T:";
    Mem mem = Mem::host;
    long iters = 100, warmup = 10;
    bool csv = false;
    double budget = 60;  // seconds per iteration

    // Their lines of the usage text, with these values as the defaults.
    std::string usage(const char *mem_what) const {
        char text[512];
        std::snprintf(text, sizeof text,
                      "  -m host|device  memory of %s (host)\n"
                      "  -n N  timed iterations (%ld)   -W N  warm-up iterations (%ld)\n"
                      "  -T S  abort when one iteration takes over S seconds (%g)\n"
                      "  -f table|csv  (csv: see below)\n",
                      mem_what, iters, warmup, budget);
        return text;
    }
    // Whether getopt's `c` is one of these; its argument is taken then.
    bool take(int c, const char *arg) {
        switch (c) {
        case 'm': mem_ = arg; return true;
        case 'n': iters = std::atol(arg); return true;
        case 'W': warmup = std::atol(arg); return true;
        case 'f': fmt_ = arg; return true;
        case 'T': budget = std::atof(arg); return true;
        default: return false;
        }
    }
    // After getopt: "" or what is wrong (arguments left over included).
    std::string check(int argc, char **argv, int optind) {
        if (optind != argc) return std::string("unexpected argument ") + argv[optind];
        if (mem_ != "host" && mem_ != "device") return "-m takes host or device";
        if (fmt_ != "table" && fmt_ != "csv") return "-f takes table or csv";
        mem = mem_ == "host" ? Mem::host : Mem::device, csv = fmt_ == "csv";
        if (iters < 1 || warmup < 0 || budget <= 0) return "-n must be >= 1, -W >= 0, -T > 0";
        return "";
    }

private:
    std::string mem_ = "host", fmt_ = "table";
};

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

struct World {
    int rank = 0, size = 1;
};

// MPI_Init as program `prog`, with the GPU of this process picked first for -m device (one per
// local rank, round robin), so that the MPI and an interposer start on the device the buffers
// live on. Returns -1 to go on, with *world set, else the exit status with MPI finalized: 2 when
// `opt_error` is not empty (rank 0 prints it and the usage), kSkipped when some rank has no GPU
// for -m device.
inline int start(const char *prog, int *argc, char ***argv, const std::string &opt_error, const std::string &usage,
                 Mem mem, World *world) {
    g_prog = prog;
    int ndev = 0;
    const int local = launcher_local_rank();
    if (opt_error.empty() && mem == Mem::device) {
        if (cudaGetDeviceCount(&ndev) != cudaSuccess) ndev = 0;
        if (ndev > 0 && local >= 0) cuda_check(cudaSetDevice(local % ndev), "cudaSetDevice");
    }
    MPI_Init(argc, argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &world->rank);
    MPI_Comm_size(MPI_COMM_WORLD, &world->size);
    if (!opt_error.empty()) {
        if (world->rank == 0) std::fprintf(stderr, "%s: %s\n%s", g_prog, opt_error.c_str(), usage.c_str());
        MPI_Finalize();
        return 2;
    }
    if (mem == Mem::host) return -1;
    if (ndev > 0 && local < 0) {  // the launcher did not say: ranks that share a node, by MPI
        MPI_Comm node;
        int node_rank = 0;
        MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, world->rank, MPI_INFO_NULL, &node);
        MPI_Comm_rank(node, &node_rank);
        MPI_Comm_free(&node);
        cuda_check(cudaSetDevice(node_rank % ndev), "cudaSetDevice");
    }
    int have = ndev > 0, all = 0;
    MPI_Allreduce(&have, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    if (all) return -1;
    if (world->rank == 0) std::fprintf(stderr, "%s: -m device, but a rank found no GPU: skipped\n", g_prog);
    MPI_Finalize();
    return kSkipped;
}

// A committed C-order subarray of `elem`; every extent must fit MPI's int.
inline MPI_Datatype subarray(int ndims, const int64_t *sizes, const int64_t *subs, const int64_t *starts,
                             MPI_Datatype elem) {
    std::vector<int> a(sizes, sizes + ndims), b(subs, subs + ndims), c(starts, starts + ndims);
    MPI_Datatype t;
    MPI_Type_create_subarray(ndims, a.data(), b.data(), c.data(), MPI_ORDER_C, elem, &t);
    MPI_Type_commit(&t);
    return t;
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

// Exchange times, the slowest rank's of each iteration after the warm-up, and the values found
// wrong on all ranks.
struct Steps {
    std::vector<double> times;
    long long wrong = 0;
};

// The timing loop of halo3d and transpose: for each step, fill(step) outside the clock, then
// MPI_Barrier and the exchange alone between two MPI_Wtime (exchange(step) must finish its own
// device work), then check(step), the number of wrong values on this rank. Stops after the first
// step with wrong values anywhere; the watchdog bounds each step.
template <typename Fill, typename Exchange, typename Check>
Steps run_steps(const CommonOptions &o, Watchdog &wd, MPI_Comm comm, Fill &&fill, Exchange &&exchange,
                Check &&check) {
    Steps r;
    for (long step = 0; step < o.warmup + o.iters && r.wrong == 0; ++step) {
        wd.arm("step", step);
        fill(step);
        MPI_Barrier(comm);
        const double t0 = MPI_Wtime();
        exchange(step);
        const double t = MPI_Wtime() - t0;
        long long wrong = check(step);
        MPI_Allreduce(&wrong, &r.wrong, 1, MPI_LONG_LONG, MPI_SUM, comm);
        const double slowest = max_over(t, comm);
        if (step >= o.warmup) r.times.push_back(slowest);
        if (r.wrong && world_rank() == 0)
            std::fprintf(stderr, "%s: step %ld: %lld values wrong (all ranks)\n", g_prog, step, r.wrong);
    }
    wd.disarm();
    return r;
}

}  // namespace clients
