// ucxdt_packbench (ucxdt_packbench.cpp): shared helpers, errors and buffers.
// One translation unit includes these headers, in order; their names stay in an anonymous namespace, as
// when they were one file.
#pragma once

#include "support/app_layouts.hpp"
#include "support/typemap_walk.hpp"
#include <ucxdt/ucxdt.hpp>
#include <ucxdt/ucxdt_cuda.h>
#include <cuda_runtime_api.h>
#include <unistd.h>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#ifdef UCXDT_PACKBENCH_YAKSA
#include "yaksa_peer.hpp"
#endif

namespace {


namespace L = ucxdt::layouts;
using Clock = std::chrono::steady_clock;
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr int kExitNoDevice = 77;  // the automake/CTest convention for "skipped"

struct Options {
    int iterations = 30;
    int warmup = 3;
    std::vector<std::string> filters;  // -l: a layout runs if its name contains any of them
    std::string csv_path, json_path;
    int64_t per_block_cap = 200000;    // more blocks than this: no per-block memcpy baseline
    int first_use_reps = 5;            // fresh types timed for the first use of a block list
    int small_reps = 200;              // end-to-end samples per small message
    bool small = true;
    bool list_only = false;
    double time_budget_s = 0;          // 0: none; else later layouts are skipped
    int device = 0;
};

void usage(const char *prog) {
    std::fprintf(stderr,
        "usage: %s [-l substr]... [-n iters] [-w warmup] [-o file.csv] [-j file.json]\n"
        "          [-b max_blocks] [-f first_use_reps] [-s small_reps] [-S] [-t seconds]\n"
        "          [-d device] [-L]\n"
        "  -l  run layouts whose name contains substr (repeatable; default all)\n"
        "  -n  timed runs per measurement, median reported (default 30)\n"
        "  -w  warm-up runs before each measurement (default 3)\n"
        "  -o  write every result as CSV      -j  write every result as JSON\n"
        "  -b  per-block cudaMemcpyAsync baseline only up to this many blocks (default 200000)\n"
        "  -f  fresh types timed for a block list's first use (default 5; 0 skips)\n"
        "  -s  samples per small-message end-to-end time (default 200)\n"
        "  -S  skip the small-message section\n"
        "  -t  stop starting new layouts after this many seconds (default: no limit)\n"
        "  -d  CUDA device (default 0)\n"
        "  -L  list the layouts and exit (needs no GPU)\n"
        "exit: 0 verified, 1 mismatch or failure, 2 usage, %d no CUDA device\n",
        prog, kExitNoDevice);
}

// ---- Errors ----------------------------------------------------------------------------------

struct BenchError : std::runtime_error {
    using std::runtime_error::runtime_error;
};

void cuda_ok(cudaError_t e, const char *what) {
    if (e != cudaSuccess)
        throw BenchError(std::string(what) + ": " + cudaGetErrorName(e) + " (" +
                         cudaGetErrorString(e) + ")");
}

void ucxdt_ok(ucxdt_status_t s, const char *what) {
    if (s != UCXDT_OK)
        throw BenchError(std::string(what) + ": " + ucxdt_status_string(s) + ": " +
                         ucxdt_last_error());
}

// ---- Buffers ---------------------------------------------------------------------------------

struct DeviceBuffer {
    char *p = nullptr;
    explicit DeviceBuffer(int64_t bytes) {
        const size_t n = static_cast<size_t>(std::max<int64_t>(bytes, 1));
        cuda_ok(cudaMalloc(reinterpret_cast<void **>(&p), n), "cudaMalloc");
    }
    ~DeviceBuffer() { cudaFree(p); }
    DeviceBuffer(const DeviceBuffer &) = delete;
    DeviceBuffer &operator=(const DeviceBuffer &) = delete;
};

// Pageable and left uninitialized: every byte is written by a fill before it is read.
struct HostBuffer {
    std::unique_ptr<std::byte[]> p;
    int64_t n;
    explicit HostBuffer(int64_t bytes)
        : p(new std::byte[static_cast<size_t>(std::max<int64_t>(bytes, 1))]), n(bytes) {}
    std::byte *data() const { return p.get(); }
};

// A pointer `delta` bytes from `p`, which may lie outside the allocation: the engine is handed
// the application's buffer pointer and touches only the type map's bytes, which lie inside.
template <class T> T *shifted(T *p, int64_t delta) {
    return reinterpret_cast<T *>(reinterpret_cast<uintptr_t>(p) + static_cast<uintptr_t>(delta));
}

int64_t round_up(int64_t v, int64_t a) { return (v + a - 1) / a * a; }

void upload(void *dev, const void *host, int64_t n, const char *what) {
    cuda_ok(cudaMemcpy(dev, host, static_cast<size_t>(n), cudaMemcpyHostToDevice), what);
}

void download(void *host, const void *dev, int64_t n, const char *what) {
    cuda_ok(cudaMemcpy(host, dev, static_cast<size_t>(n), cudaMemcpyDeviceToHost), what);
}

std::string first_difference(const std::byte *got, const std::byte *want, int64_t n) {
    if (std::memcmp(got, want, static_cast<size_t>(n)) == 0) return "";
    for (int64_t i = 0; i < n; ++i)
        if (got[i] != want[i]) {
            char b[96];
            std::snprintf(b, sizeof b, "byte %lld of %lld: got 0x%02x, want 0x%02x",
                          static_cast<long long>(i), static_cast<long long>(n),
                          static_cast<unsigned>(got[i]), static_cast<unsigned>(want[i]));
            return b;
        }
    return "";
}

}  // namespace
