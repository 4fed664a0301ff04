// ucxdt_packbench: GPU pack/unpack of datatype layouts against the copy-engine rooflines, in one
// run on one GPU, device memory to device memory.
//
// Per layout: ucxdt_pack_async and ucxdt_unpack_async; cudaMemcpyAsync of the same packed bytes
// (the roofline); cudaMemcpy2DAsync where the layout is one strided level; one cudaMemcpyAsync
// per block (what Open MPI does for GPU buffers); the DRAM-sector bound (each block read moves
// whole 32-byte sectors, so small blocks cannot reach the copy rate); the first use of an
// uncached block-list type against the cached one. Then small messages end to end (host clock
// around the call until the data is complete) against cudaMemcpy of the same bytes.
// Every layout's packed stream and unpacked buffer are checked once against the CPU engine.
//
// Built as ucxdt_packbench_yaksa (UCXDT_PACKBENCH_YAKSA, against a CUDA-aware MPICH 5's Yaksa),
// it also packs and unpacks each layout with Yaksa, MPICH's engine (tools/yaksa_peer.hpp): its
// kernels on the same buffers and stream, verified the same way, and its ipack-and-wait end to end
// on the small messages.
//
// Timing: device events around each run, runs enqueued back to back, median after warm-up.
// Layouts whose touched bytes would sit in L2 rotate among several copies of their buffers.
// GB/s = 1e9 bytes of packed data per second.
//
// Exit: 0 all verified; 1 a mismatch or a failed call; 2 usage; 77 no CUDA device (nothing run).
#include "support/app_layouts.hpp"
#include "support/typemap_walk.hpp"
#ifdef UCXDT_PACKBENCH_YAKSA
#include "yaksa_peer.hpp"
#endif

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

// ---- Timing ----------------------------------------------------------------------------------

struct Gpu {
    int device = 0;
    cudaStream_t stream = nullptr;
    std::vector<cudaEvent_t> events;
    int64_t l2_bytes = 0;
    int sms = 0;
    std::string name;
    double peak_memcpy_gbs = kNaN;  // large device-to-device copy, packed bytes per second

    cudaEvent_t event(size_t i) {
        while (events.size() <= i) {
            cudaEvent_t e;
            cuda_ok(cudaEventCreate(&e), "cudaEventCreate");
            events.push_back(e);
        }
        return events[i];
    }
};

double median(std::vector<double> v) {
    if (v.empty()) return kNaN;
    std::sort(v.begin(), v.end());
    const size_t m = v.size() / 2;
    return v.size() % 2 ? v[m] : 0.5 * (v[m - 1] + v[m]);
}

// Median seconds of op(slot) between a pair of device events. The runs are enqueued back to
// back without a host synchronization, so the GPU does not idle between them unless the host
// is slower than the GPU (then that is the cost a caller sees, as for one memcpy per block).
// The slot number keeps counting across calls so that consecutive runs use different buffers.
// *call_us, when given: the median host time of op() itself, in microseconds.
template <class Op>
double median_event_seconds(Gpu &g, int warmup, int reps, int64_t &slot, Op &&op,
                            double *call_us = nullptr) {
    for (int w = 0; w < warmup; ++w) op(slot++);
    std::vector<double> calls;
    calls.reserve(static_cast<size_t>(reps));  // no reallocation between a run's two events
    for (int r = 0; r < reps; ++r) {
        cuda_ok(cudaEventRecord(g.event(2 * r), g.stream), "cudaEventRecord");
        const auto t0 = Clock::now();
        op(slot++);
        calls.push_back(std::chrono::duration<double>(Clock::now() - t0).count() * 1e6);
        cuda_ok(cudaEventRecord(g.event(2 * r + 1), g.stream), "cudaEventRecord");
    }
    if (call_us) *call_us = median(calls);
    cuda_ok(cudaStreamSynchronize(g.stream), "cudaStreamSynchronize");
    std::vector<double> t;
    for (int r = 0; r < reps; ++r) {
        float ms = 0;
        cuda_ok(cudaEventElapsedTime(&ms, g.event(2 * r), g.event(2 * r + 1)),
                "cudaEventElapsedTime");
        t.push_back(ms * 1e-3);
    }
    return median(t);
}

// Median host seconds of op(), which must return with its work complete.
template <class Op> double median_host_seconds(int warmup, int reps, Op &&op) {
    for (int w = 0; w < warmup; ++w) op();
    std::vector<double> t;
    for (int r = 0; r < reps; ++r) {
        const auto t0 = Clock::now();
        op();
        t.push_back(std::chrono::duration<double>(Clock::now() - t0).count());
    }
    return median(t);
}

double gbs(int64_t bytes, double seconds) {
    return seconds > 0 ? static_cast<double>(bytes) / seconds * 1e-9 : kNaN;
}

// ---- Layouts ---------------------------------------------------------------------------------

L::TypeDescPtr D() { return L::named(UCXDT_DOUBLE); }
L::TypeDescPtr F() { return L::named(UCXDT_FLOAT); }

ucxdt::type build(const L::TypeDesc &desc) {
    ucxdt_type_t h = UCXDT_TYPE_NULL;
    ucxdt_ok(L::build(desc, &h, true), "build type");
    return ucxdt::type::adopt(h);
}

// The family of an application layout: its name without the size, e.g. "nas_mg_x".
std::string family(const std::string &name) { return name.substr(0, name.find('(')); }

std::vector<L::Layout> bench_layouts() {
    std::vector<L::Layout> out;
    const char *wu = "Wu et al. HPDC'16";
    const char *jenkins = "Jenkins et al. TPDS'14";
    for (int64_t n : {1000, 4000, 8000})
        for (auto &l : L::paper_layouts(n)) out.push_back(l);
    {   // Column c of the transposed matrix is vector(N, 1, N) at element c: 8-byte blocks.
        const int64_t n = 4096, bytes = n * n * 8;
        out.push_back({"transpose(N=4096)", L::hvector(n, 1, 8, L::vector(n, 1, n, D())), 1,
                       bytes, 0, bytes, -1, -1, n * n, wu});
    }
    {   // The contention experiment's 8-byte blocks every 64 bytes, at 2^24 blocks.
        const int64_t n = int64_t{1} << 24;
        out.push_back({"vector(8B,stride=64B,2^24)", L::vector(n, 1, 8, D()), 1, n * 64, 0, n * 8,
                       -1, -1, n, jenkins});
    }
    {   // SPECFEM3D mt's 3 floats every 24 bytes, at a count far past DDTBench's 7600.
        const int64_t n = int64_t{1} << 24;
        out.push_back({"specfem3d_like(12B,stride=24B,2^24)",
                       L::vector(n, 1, 2, L::contiguous(3, F())), 1, n * 24, 0, n * 12, -1, -1,
                       n, "docs/application-layouts.md 2.5, scaled"});
    }
    for (const auto &l : L::application_layouts())
        if (l.name.rfind("tpds14_subarray4d", 0) == 0) out.push_back(l);
    {   // struct {double; int; int; char}: 17 data bytes every 24.
        auto st = L::structure({1, 1, 1, 1}, {0, 8, 12, 16},
                               {D(), L::named(UCXDT_INT32), L::named(UCXDT_INT32),
                                L::named(UCXDT_CHAR)});
        const int64_t n = int64_t{1} << 20;
        out.push_back({"struct{d,i,i,c}x2^20", L::resized(st, 0, 24), n, 24 * n, 0, 17, 24, 17, n,
                       jenkins});
    }
    {   // Halo faces of a 512^3 double array, C order (x fastest): the second plane of each axis.
        const int64_t e = 512, bytes = e * e * e * 8;
        auto face = [&](const char *name, std::vector<int64_t> sub, std::vector<int64_t> start,
                        int64_t blocks) {
            out.push_back({name, L::subarray({e, e, e}, sub, start, UCXDT_ORDER_C, D()), 1, bytes,
                           0, e * e * 8, bytes, -1, blocks, "3-D halo face (HAND, COMB)"});
        };
        face("face_x(512^3)", {e, e, 1}, {0, 0, 1}, e * e);
        face("face_y(512^3)", {e, 1, e}, {0, 1, 0}, e);
        face("face_z(512^3)", {1, e, e}, {1, 0, 0}, 1);
    }
    // DDTBench's micro-applications at their largest size.
    const std::vector<std::string> ddt = {"nas_mg_", "nas_lu_", "milc_", "wrf_", "specfem3d_",
                                          "fft2_"};
    std::map<std::string, std::pair<int64_t, L::Layout>> largest;
    for (const auto &l : L::application_layouts()) {
        if (std::none_of(ddt.begin(), ddt.end(),
                         [&](const std::string &p) { return l.name.rfind(p, 0) == 0; }))
            continue;
        const int64_t packed = l.count * build(*l.type).size();
        auto it = largest.find(family(l.name));
        if (it == largest.end() || packed > it->second.first)
            largest.insert_or_assign(family(l.name), std::make_pair(packed, l));
    }
    for (auto &[fam, entry] : largest) out.push_back(entry.second);
    return out;
}

// ---- Results ---------------------------------------------------------------------------------

std::string method_name(ucxdt_gpu_method_t m) {
    switch (m) {
    case UCXDT_GPU_METHOD_COPY_ENGINE: return "copy";
    case UCXDT_GPU_METHOD_COPY_ENGINE_2D: return "copy2d";
    case UCXDT_GPU_METHOD_STRIDED_KERNEL: return "strided_kernel";
    case UCXDT_GPU_METHOD_UNIT_KERNEL: return "unit_kernel";
    case UCXDT_GPU_METHOD_POINT_KERNEL: return "point_kernel";
    default: return "method_" + std::to_string(static_cast<int>(m));  // newer than this file
    }
}

struct Row {
    std::string section = "layout";  // "layout" or "small"
    std::string name;
    int64_t count = 0, packed = 0, blocks = -1;
    std::string plan = "-", method = "-";
    double pack_gbs = kNaN, unpack_gbs = kNaN, memcpy_gbs = kNaN;
    double memcpy2d_gbs = kNaN, per_block_gbs = kNaN;
    double sectors_read_bytes = kNaN, bound_gbs = kNaN;
    double first_use_us = kNaN, cached_us = kNaN;
    double pack_us = kNaN, unpack_us = kNaN, memcpy_us = kNaN;
    // Host time of the call that enqueues a pack (median): once the GPU's share is this short,
    // it paces back-to-back runs.
    double pack_call_us = kNaN, memcpy_call_us = kNaN, yaksa_pack_call_us = kNaN;
    double e2e_pack_us = kNaN, e2e_async_us = kNaN, e2e_memcpy_us = kNaN;
    double yaksa_pack_gbs = kNaN, yaksa_unpack_gbs = kNaN, yaksa_e2e_us = kNaN;
    std::string yaksa_verified = "-";  // "yes", "no", or "-" (not run)
    int64_t slots = 0;
    bool verified = false;
    std::string note;
};

void add_note(Row &r, const std::string &s) { r.note += (r.note.empty() ? "" : "; ") + s; }

// ---- One layout ------------------------------------------------------------------------------

// Bytes of `runs` (relative to the slot's base) in distinct 32-byte DRAM sectors.
double sector_bytes(const std::vector<ucxdt::ref::Block> &runs, int64_t to_slot,
                    int64_t slot_bytes) {
    std::vector<bool> touched(static_cast<size_t>(slot_bytes / 32 + 1), false);
    int64_t n = 0;
    for (const auto &[disp, len] : runs) {
        const int64_t a = (disp + to_slot) / 32, b = (disp + to_slot + len - 1) / 32;
        for (int64_t s = a; s <= b; ++s)
            if (!touched[static_cast<size_t>(s)]) touched[static_cast<size_t>(s)] = true, ++n;
    }
    return 32.0 * static_cast<double>(n);
}

// One strided level: equal runs at one positive stride that leaves gaps. Returns rows or 0.
int64_t single_strided_level(const std::vector<ucxdt::ref::Block> &runs, int64_t *len,
                             int64_t *stride) {
    if (runs.size() < 2) return 0;
    *len = runs[0].second, *stride = runs[1].first - runs[0].first;
    if (*stride <= *len) return 0;
    for (size_t i = 1; i < runs.size(); ++i)
        if (runs[i].second != *len || runs[i].first - runs[i - 1].first != *stride) return 0;
    return static_cast<int64_t>(runs.size());
}

// Where a layout's bytes go in a rotation slot. The type map touches [span_lo, span_lo + span)
// of the application's buffer, whose start cudaMalloc aligns to 256 bytes; a slot holds just
// these bytes, at align_off, so kernels see the application's alignment.
struct Placement {
    int64_t span_lo = 0, span = 0, align_off = 0, slot_bytes = 0;
};

Placement place(const L::Layout &l, const ucxdt::type &t) {
    const int64_t ext = t.extent(), tlb = t.true_lb(), text = t.true_extent();
    const int64_t reach = (l.count - 1) * ext;  // element i sits i extents from the first
    Placement p;
    p.span_lo = l.origin_bytes + tlb + std::min<int64_t>(0, reach);
    p.span = text + (reach < 0 ? -reach : reach);
    p.align_off = ((p.span_lo % 256) + 256) % 256;
    p.slot_bytes = round_up(p.align_off + p.span, 256);
    return p;
}

Row run_layout(const L::Layout &l, const Options &opt, Gpu &g) {
    Row r;
    r.name = l.name, r.count = l.count;
    ucxdt::type t = build(*l.type);
    r.packed = l.count * t.size();
    const ucxdt::plan_info plan = t.plan(l.count);
    r.plan = L::plan_name(plan.plan_class), r.blocks = plan.num_blocks;
    ucxdt_gpu_method_t method;
    ucxdt_ok(ucxdt_gpu_method(t.get(), l.count, &method), "ucxdt_gpu_method");
    r.method = method_name(method);
    if (r.packed == 0) {
        add_note(r, "no data");
        r.verified = true;
        return r;
    }

    const Placement pl = place(l, t);
    const int64_t span_lo = pl.span_lo, span = pl.span, align_off = pl.align_off;
    const int64_t slot_in = pl.slot_bytes, slot_pk = round_up(r.packed, 256);
    // Rotate among enough copies that a run's bytes were evicted from L2 since their last use.
    const int64_t footprint = span + 2 * r.packed, target = 3 * g.l2_bytes;
    r.slots = footprint >= target ? 1
                                  : std::min<int64_t>(1024, (target + footprint - 1) / footprint);

    size_t free_b = 0, total_b = 0;
    cuda_ok(cudaMemGetInfo(&free_b, &total_b), "cudaMemGetInfo");
    const int64_t need = r.slots * (slot_in + 2 * slot_pk);
    if (static_cast<double>(need) > 0.9 * static_cast<double>(free_b))
        throw BenchError("needs " + std::to_string(need >> 20) + " MiB of device memory, " +
                         std::to_string(free_b >> 20) + " MiB free");
    DeviceBuffer in(r.slots * slot_in), pk(r.slots * slot_pk), ref(r.slots * slot_pk);
    // The application's buffer pointer in slot s (its touched bytes start at offset align_off).
    auto buf = [&](int64_t s) {
        return shifted(in.p + (s % r.slots) * slot_in, align_off - span_lo + l.origin_bytes);
    };
    auto packed_at = [&](const DeviceBuffer &b, int64_t s) {
        return b.p + (s % r.slots) * slot_pk;
    };
    auto sync = [&](const char *what) { cuda_ok(cudaStreamSynchronize(g.stream), what); };

    // ---- Verification against the CPU engine, once ----
    HostBuffer h_in(span), h_packed(r.packed), h_got(std::max(span, r.packed)), h_un(span);
    ucxdt::ref::fill_pattern(h_in.data(), span, 0x5eed0000u + static_cast<uint64_t>(r.packed));
    std::byte *const h_buf = shifted(h_in.data(), l.origin_bytes - span_lo);
    int64_t pos = 0;
    ucxdt_ok(ucxdt_pack(h_buf, l.count, t.get(), h_packed.data(), r.packed, &pos), "host pack");
    for (int64_t s = 0; s < r.slots; ++s)
        upload(in.p + s * slot_in + align_off, h_in.data(), span, "upload input");
    // Poison: the complement of the expected stream, so no unwritten byte can pass.
    ucxdt::ref::fill_complement(h_got.data(), h_packed.data(), r.packed);
    upload(pk.p, h_got.data(), r.packed, "upload poison");
    pos = 0;
    ucxdt_ok(ucxdt_pack_async(buf(0), l.count, t.get(), pk.p, r.packed, &pos, g.stream),
             "ucxdt_pack_async");
    sync("pack");
    download(h_got.data(), pk.p, r.packed, "download packed");
    std::string diff = first_difference(h_got.data(), h_packed.data(), r.packed);
    if (!diff.empty()) add_note(r, "PACK MISMATCH at " + diff);
    // Unpack the correct stream into the complement of the input; gaps must keep the poison.
    ucxdt::ref::fill_complement(h_un.data(), h_in.data(), span);
    upload(in.p + align_off, h_un.data(), span, "upload poison");
    pos = 0;
    ucxdt_ok(ucxdt_unpack(h_packed.data(), r.packed, &pos,
                          shifted(h_un.data(), l.origin_bytes - span_lo), l.count, t.get()),
             "host unpack");
    upload(pk.p, h_packed.data(), r.packed, "upload packed");
    pos = 0;
    ucxdt_ok(ucxdt_unpack_async(pk.p, r.packed, &pos, buf(0), l.count, t.get(), g.stream),
             "ucxdt_unpack_async");
    sync("unpack");
    download(h_got.data(), in.p + align_off, span, "download unpacked");
    const std::string udiff = first_difference(h_got.data(), h_un.data(), span);
    if (!udiff.empty()) add_note(r, "UNPACK MISMATCH at " + udiff);
    r.verified = diff.empty() && udiff.empty();
    // The memcpy source holds data too (never time on a buffer nothing wrote).
    for (int64_t s = 0; s < r.slots; ++s)
        upload(ref.p + s * slot_pk, h_packed.data(), r.packed, "upload memcpy source");

    // ---- Timed runs ----
    int64_t slot = 0;
    auto timed = [&](auto &&op, double *call_us = nullptr) {
        return median_event_seconds(g, opt.warmup, opt.iterations, slot, op, call_us);
    };
    const double t_pack = timed([&](int64_t s) {
        int64_t p = 0;
        ucxdt_ok(ucxdt_pack_async(buf(s), l.count, t.get(), packed_at(pk, s), r.packed, &p,
                                  g.stream),
                 "ucxdt_pack_async");
    }, &r.pack_call_us);
    const double t_unpack = timed([&](int64_t s) {
        int64_t p = 0;
        ucxdt_ok(ucxdt_unpack_async(packed_at(pk, s), r.packed, &p, buf(s), l.count, t.get(),
                                    g.stream),
                 "ucxdt_unpack_async");
    });
    const double t_copy = timed([&](int64_t s) {
        cuda_ok(cudaMemcpyAsync(packed_at(pk, s), packed_at(ref, s), static_cast<size_t>(r.packed),
                                cudaMemcpyDeviceToDevice, g.stream), "cudaMemcpyAsync");
    }, &r.memcpy_call_us);
    r.pack_us = t_pack * 1e6, r.unpack_us = t_unpack * 1e6, r.memcpy_us = t_copy * 1e6;
    r.pack_gbs = gbs(r.packed, t_pack), r.unpack_gbs = gbs(r.packed, t_unpack);
    r.memcpy_gbs = gbs(r.packed, t_copy);

#ifdef UCXDT_PACKBENCH_YAKSA
    // Yaksa on the same buffers: checked as ucxdt was (poisoned output, the CPU engine's
    // stream), then timed the same way. A Yaksa failure is noted, and fails no ucxdt result.
    try {
        const ucxdt::bench::YaksaType yt(*l.type);
        if (yt.size() != t.size()) throw ucxdt::bench::YaksaError("Yaksa's size differs");
        ucxdt::ref::fill_complement(h_got.data(), h_packed.data(), r.packed);
        upload(pk.p, h_got.data(), r.packed, "upload poison");
        // Where Yaksa has no kernel for a type it splits it up (a struct: per element and
        // entry), which can take seconds: such a layout is timed by this one run alone.
        auto t0 = Clock::now();
        ucxdt::bench::yaksa_pack_on(buf(0), l.count, yt, pk.p, r.packed, g.stream);
        sync("yaksa pack");
        const double first_pack = std::chrono::duration<double>(Clock::now() - t0).count();
        download(h_got.data(), pk.p, r.packed, "download packed");
        const std::string ydiff = first_difference(h_got.data(), h_packed.data(), r.packed);
        ucxdt::ref::fill_complement(h_got.data(), h_in.data(), span);
        upload(in.p + align_off, h_got.data(), span, "upload poison");
        upload(pk.p, h_packed.data(), r.packed, "upload packed");
        t0 = Clock::now();
        ucxdt::bench::yaksa_unpack_on(pk.p, r.packed, buf(0), l.count, yt, g.stream);
        sync("yaksa unpack");
        const double first_unpack = std::chrono::duration<double>(Clock::now() - t0).count();
        download(h_got.data(), in.p + align_off, span, "download unpacked");
        const std::string yudiff = first_difference(h_got.data(), h_un.data(), span);
        if (!ydiff.empty()) add_note(r, "YAKSA PACK MISMATCH at " + ydiff);
        if (!yudiff.empty()) add_note(r, "YAKSA UNPACK MISMATCH at " + yudiff);
        r.yaksa_verified = ydiff.empty() && yudiff.empty() ? "yes" : "no";
        if (first_pack + first_unpack > 1.0) {
            r.yaksa_pack_gbs = gbs(r.packed, first_pack);
            r.yaksa_unpack_gbs = gbs(r.packed, first_unpack);
            char b[96];
            std::snprintf(b, sizeof b, "yaksa: one run each, host clock (pack %.2f s, unpack %.2f s)",
                          first_pack, first_unpack);
            add_note(r, b);
        } else {
            r.yaksa_pack_gbs = gbs(r.packed, timed([&](int64_t s) {
                ucxdt::bench::yaksa_pack_on(buf(s), l.count, yt, packed_at(pk, s), r.packed,
                                            g.stream);
            }, &r.yaksa_pack_call_us));
            r.yaksa_unpack_gbs = gbs(r.packed, timed([&](int64_t s) {
                ucxdt::bench::yaksa_unpack_on(packed_at(pk, s), r.packed, buf(s), l.count, yt,
                                              g.stream);
            }));
        }
    } catch (const ucxdt::bench::YaksaError &e) {
        sync("yaksa");
        add_note(r, std::string("yaksa: ") + e.what());
    }
#endif

    // The blocks in pack order, from the reference walker (independent of the engine).
    const auto runs = ucxdt::ref::typemap_runs(*l.type, l.count);
    const int64_t to_slot = align_off - span_lo + l.origin_bytes;
    r.sectors_read_bytes = sector_bytes(runs, to_slot, slot_in);
    // Reads of whole sectors plus the contiguous writes, at the DRAM rate that a large copy
    // reaches (counting its read and its write); unpack is the mirror image.
    const double dram_rw = 2 * g.peak_memcpy_gbs;
    r.bound_gbs = dram_rw * static_cast<double>(r.packed) /
                  (r.sectors_read_bytes + static_cast<double>(r.packed));

    int64_t len = 0, stride = 0;
    if (const int64_t rows = single_strided_level(runs, &len, &stride); rows > 0) {
        const int64_t first = runs[0].first;
        const double t2d = timed([&](int64_t s) {
            cuda_ok(cudaMemcpy2DAsync(packed_at(pk, s), static_cast<size_t>(len),
                                      shifted(buf(s), first), static_cast<size_t>(stride),
                                      static_cast<size_t>(len), static_cast<size_t>(rows),
                                      cudaMemcpyDeviceToDevice, g.stream),
                    "cudaMemcpy2DAsync");
        });
        r.memcpy2d_gbs = gbs(r.packed, t2d);
    }

    if (static_cast<int64_t>(runs.size()) <= opt.per_block_cap) {
        // Enough runs to enqueue about a million copies, between 3 and -n.
        const int reps = static_cast<int>(std::clamp<int64_t>(
            1000000 / static_cast<int64_t>(runs.size()), 3, opt.iterations));
        const double tpb = median_event_seconds(g, 1, reps, slot, [&](int64_t s) {
            char *dst = packed_at(pk, s);
            const char *src = buf(s);
            for (const auto &[disp, n] : runs) {
                cuda_ok(cudaMemcpyAsync(dst, shifted(src, disp), static_cast<size_t>(n),
                                        cudaMemcpyDeviceToDevice, g.stream), "cudaMemcpyAsync");
                dst += n;
            }
        });
        r.per_block_gbs = gbs(r.packed, tpb);
    } else {
        add_note(r, "per-block memcpy skipped: " + std::to_string(runs.size()) + " blocks > " +
                        std::to_string(opt.per_block_cap));
    }

    // First use of a block list: a fresh type (committed, never packed) uploads its work units
    // on that call. Host clock from the call until the stream has finished.
    if (plan.plan_class == UCXDT_PLAN_BLOCK_LIST && opt.first_use_reps > 0) {
        auto to_completion = [&](const ucxdt::type &ty) {
            int64_t p = 0;
            const auto t0 = Clock::now();
            ucxdt_ok(ucxdt_pack_async(buf(0), l.count, ty.get(), pk.p, r.packed, &p, g.stream),
                     "ucxdt_pack_async");
            cuda_ok(cudaStreamSynchronize(g.stream), "cudaStreamSynchronize");
            return std::chrono::duration<double>(Clock::now() - t0).count();
        };
        std::vector<double> first;
        for (int i = 0; i < opt.first_use_reps; ++i) {
            ucxdt::type fresh = build(*l.type);
            first.push_back(to_completion(fresh));
        }
        r.first_use_us = median(first) * 1e6;
        r.cached_us =
            median_host_seconds(opt.warmup, opt.iterations, [&] { to_completion(t); }) * 1e6;
    }
    return r;
}

// ---- Small messages, end to end --------------------------------------------------------------

// Three shapes of `bytes` packed bytes: 256-byte blocks, 8-byte blocks at 64 bytes, and an
// irregular block list of 24- and 40-byte blocks.
std::vector<L::Layout> small_layouts(int64_t bytes) {
    const std::string sz = "(" + std::to_string(bytes) + ")";
    const char *src = "small-message shapes of ucxdt_packbench";
    std::vector<L::Layout> out;
    const int64_t rows = bytes / 256;
    out.push_back({"small_vec256B" + sz, L::vector(rows, 32, 48, D()), 1, rows * 384, 0, bytes,
                   -1, -1, rows, src});
    const int64_t n8 = bytes / 8;
    out.push_back({"small_vec8B" + sz, L::vector(n8, 1, 8, D()), 1, n8 * 64, 0, bytes, -1, -1,
                   n8, src});
    const int64_t nb = bytes / 32;  // pairs of 3 and 5 doubles: 32 bytes a block on average
    std::vector<int64_t> bl(static_cast<size_t>(nb)), disp(static_cast<size_t>(nb));
    for (int64_t j = 0; j < nb; ++j)
        bl[static_cast<size_t>(j)] = j % 2 ? 5 : 3, disp[static_cast<size_t>(j)] = 8 * j + j % 3;
    out.push_back({"small_list" + sz, L::indexed(bl, disp, D()), 1, (8 * nb + 8) * 8, 0,
                   bytes, -1, -1, nb, src});
    return out;
}

Row run_small(const L::Layout &l, const Options &opt, Gpu &g) {
    Row r;
    r.section = "small", r.name = l.name, r.count = l.count;
    ucxdt::type t = build(*l.type);
    r.packed = l.count * t.size();
    const ucxdt::plan_info plan = t.plan(l.count);
    r.plan = L::plan_name(plan.plan_class), r.blocks = plan.num_blocks;
    ucxdt_gpu_method_t method;
    ucxdt_ok(ucxdt_gpu_method(t.get(), l.count, &method), "ucxdt_gpu_method");
    r.method = method_name(method);
    r.slots = 1;
    DeviceBuffer in(l.buffer_bytes), pk(r.packed), ref(r.packed);
    HostBuffer h_in(l.buffer_bytes), h_packed(r.packed), h_got(r.packed);
    ucxdt::ref::fill_pattern(h_in.data(), l.buffer_bytes,
                             0xabcd0000u + static_cast<uint64_t>(r.packed));
    upload(in.p, h_in.data(), l.buffer_bytes, "upload input");
    upload(ref.p, h_in.data(), r.packed, "upload memcpy source");
    int64_t pos = 0;
    ucxdt_ok(ucxdt_pack(h_in.data(), l.count, t.get(), h_packed.data(), r.packed, &pos),
             "host pack");
    ucxdt::ref::fill_complement(h_got.data(), h_packed.data(), r.packed);
    upload(pk.p, h_got.data(), r.packed, "upload poison");

    // The synchronous call on device memory returns with the data complete.
    auto sync_pack = [&] {
        int64_t p = 0;
        ucxdt_ok(ucxdt_pack(in.p, l.count, t.get(), pk.p, r.packed, &p), "ucxdt_pack");
    };
    sync_pack();
    download(h_got.data(), pk.p, r.packed, "download packed");
    const std::string diff = first_difference(h_got.data(), h_packed.data(), r.packed);
    if (!diff.empty()) add_note(r, "PACK MISMATCH at " + diff);
    r.verified = diff.empty();

    const int warm = std::max(opt.warmup, 10);
    r.e2e_pack_us = median_host_seconds(warm, opt.small_reps, sync_pack) * 1e6;
    r.e2e_async_us = median_host_seconds(warm, opt.small_reps, [&] {
        int64_t p = 0;
        ucxdt_ok(ucxdt_pack_async(in.p, l.count, t.get(), pk.p, r.packed, &p, g.stream),
                 "ucxdt_pack_async");
        cuda_ok(cudaStreamSynchronize(g.stream), "cudaStreamSynchronize");
    }) * 1e6;
    // A device-to-device cudaMemcpy may return before the copy is done: wait for it too.
    r.e2e_memcpy_us = median_host_seconds(warm, opt.small_reps, [&] {
        cuda_ok(cudaMemcpy(pk.p, ref.p, static_cast<size_t>(r.packed), cudaMemcpyDeviceToDevice),
                "cudaMemcpy");
        cuda_ok(cudaStreamSynchronize(nullptr), "cudaStreamSynchronize");
    }) * 1e6;
#ifdef UCXDT_PACKBENCH_YAKSA
    // Yaksa's ipack and wait, as MPICH packs a message: checked, then timed the same way.
    try {
        const ucxdt::bench::YaksaType yt(*l.type);
        ucxdt::ref::fill_complement(h_got.data(), h_packed.data(), r.packed);
        upload(pk.p, h_got.data(), r.packed, "upload poison");
        ucxdt::bench::yaksa_pack_wait(in.p, l.count, yt, pk.p, r.packed);
        download(h_got.data(), pk.p, r.packed, "download packed");
        const std::string ydiff = first_difference(h_got.data(), h_packed.data(), r.packed);
        if (!ydiff.empty()) add_note(r, "YAKSA PACK MISMATCH at " + ydiff);
        r.yaksa_verified = ydiff.empty() ? "yes" : "no";
        r.yaksa_e2e_us = median_host_seconds(warm, opt.small_reps, [&] {
            ucxdt::bench::yaksa_pack_wait(in.p, l.count, yt, pk.p, r.packed);
        }) * 1e6;
    } catch (const ucxdt::bench::YaksaError &e) {
        add_note(r, std::string("yaksa: ") + e.what());
    }
#endif
    return r;
}

// ---- Setup -----------------------------------------------------------------------------------

void measure_peak_copy(Gpu &g, const Options &opt) {
    size_t free_b = 0, total_b = 0;
    cuda_ok(cudaMemGetInfo(&free_b, &total_b), "cudaMemGetInfo");
    const int64_t bytes = std::min<int64_t>(int64_t{1} << 30, static_cast<int64_t>(free_b / 4));
    DeviceBuffer a(bytes), b(bytes);
    cuda_ok(cudaMemset(a.p, 0x5a, static_cast<size_t>(bytes)), "cudaMemset");
    int64_t slot = 0;
    const double t = median_event_seconds(g, opt.warmup, opt.iterations, slot, [&](int64_t) {
        cuda_ok(cudaMemcpyAsync(b.p, a.p, static_cast<size_t>(bytes), cudaMemcpyDeviceToDevice,
                                g.stream), "cudaMemcpyAsync");
    });
    g.peak_memcpy_gbs = gbs(bytes, t);
}

// ---- Output ----------------------------------------------------------------------------------

std::string num(double v, int digits = 1) {
    if (std::isnan(v)) return "-";
    char b[64];
    std::snprintf(b, sizeof b, "%.*f", digits, v);
    return b;
}

std::string csv_quote(const std::string &s) {
    std::string o = "\"";
    for (char c : s) o += c == '"' ? std::string("\"\"") : std::string(1, c);
    return o + "\"";
}

std::string json_str(const std::string &s) {
    std::string o = "\"";
    for (char c : s) {
        if (c == '"' || c == '\\') o += '\\', o += c;
        else if (static_cast<unsigned char>(c) < 0x20) o += ' ';
        else o += c;
    }
    return o + "\"";
}

std::string json_num(double v) {
    if (std::isnan(v) || std::isinf(v)) return "null";
    char b[64];
    std::snprintf(b, sizeof b, "%.6g", v);
    return b;
}

// Ratio of two rates, or NaN where either is missing.
double ratio(double a, double b) {
    return (std::isnan(a) || std::isnan(b) || b == 0) ? kNaN : a / b;
}

// One output column: its name and its CSV and JSON renderings of a row.
struct Field {
    const char *name;
    std::function<std::string(const Row &)> csv, json;
};

Field text(const char *name, std::string Row::*m) {
    return {name, [m](const Row &r) { return csv_quote(r.*m); },
            [m](const Row &r) { return json_str(r.*m); }};
}

Field integer(const char *name, int64_t Row::*m) {
    return {name, [m](const Row &r) { return std::to_string(r.*m); },
            [m](const Row &r) { return std::to_string(r.*m); }};
}

// Missing values are empty in CSV and null in JSON.
Field real(const char *name, std::function<double(const Row &)> f, int digits) {
    return {name, [f, digits](const Row &r) { return std::isnan(f(r)) ? "" : num(f(r), digits); },
            [f](const Row &r) { return json_num(f(r)); }};
}

Field real(const char *name, double Row::*m, int digits) {
    return real(name, [m](const Row &r) { return r.*m; }, digits);
}

const std::vector<Field> &fields() {
    static const std::vector<Field> f = {
        text("section", &Row::section),
        text("layout", &Row::name),
        integer("count", &Row::count),
        integer("packed_bytes", &Row::packed),
        integer("blocks", &Row::blocks),
        text("plan", &Row::plan),
        text("gpu_method", &Row::method),
        real("pack_GBps", &Row::pack_gbs, 2),
        real("unpack_GBps", &Row::unpack_gbs, 2),
        real("memcpy_GBps", &Row::memcpy_gbs, 2),
        real("pack_vs_memcpy", [](const Row &r) { return ratio(r.pack_gbs, r.memcpy_gbs); }, 3),
        real("unpack_vs_memcpy", [](const Row &r) { return ratio(r.unpack_gbs, r.memcpy_gbs); }, 3),
        real("memcpy2d_GBps", &Row::memcpy2d_gbs, 2),
        real("per_block_GBps", &Row::per_block_gbs, 3),
        real("sector_read_bytes", &Row::sectors_read_bytes, 0),
        real("sector_bound_GBps", &Row::bound_gbs, 2),
        real("pack_vs_bound", [](const Row &r) { return ratio(r.pack_gbs, r.bound_gbs); }, 3),
        real("unpack_vs_bound", [](const Row &r) { return ratio(r.unpack_gbs, r.bound_gbs); }, 3),
        real("first_use_us", &Row::first_use_us, 1),
        real("cached_us", &Row::cached_us, 1),
        real("pack_us", &Row::pack_us, 2),
        real("unpack_us", &Row::unpack_us, 2),
        real("memcpy_us", &Row::memcpy_us, 2),
        real("pack_call_us", &Row::pack_call_us, 2),
        real("memcpy_call_us", &Row::memcpy_call_us, 2),
        real("e2e_pack_us", &Row::e2e_pack_us, 2),
        real("e2e_async_us", &Row::e2e_async_us, 2),
        real("e2e_memcpy_us", &Row::e2e_memcpy_us, 2),
#ifdef UCXDT_PACKBENCH_YAKSA
        real("yaksa_pack_GBps", &Row::yaksa_pack_gbs, 2),
        real("yaksa_unpack_GBps", &Row::yaksa_unpack_gbs, 2),
        real("yaksa_pack_vs_memcpy",
             [](const Row &r) { return ratio(r.yaksa_pack_gbs, r.memcpy_gbs); }, 3),
        real("yaksa_unpack_vs_memcpy",
             [](const Row &r) { return ratio(r.yaksa_unpack_gbs, r.memcpy_gbs); }, 3),
        real("pack_vs_yaksa", [](const Row &r) { return ratio(r.pack_gbs, r.yaksa_pack_gbs); }, 3),
        real("unpack_vs_yaksa",
             [](const Row &r) { return ratio(r.unpack_gbs, r.yaksa_unpack_gbs); }, 3),
        real("yaksa_e2e_us", &Row::yaksa_e2e_us, 2),
        real("yaksa_pack_call_us", &Row::yaksa_pack_call_us, 2),
        text("yaksa_verified", &Row::yaksa_verified),
#endif
        integer("slots", &Row::slots),
        {"verified", [](const Row &r) { return std::string(r.verified ? "yes" : "no"); },
         [](const Row &r) { return std::string(r.verified ? "true" : "false"); }},
        text("note", &Row::note),
    };
    return f;
}

void write_csv(const std::string &path, const std::vector<Row> &rows) {
    std::ofstream f(path);
    const auto &fs = fields();
    for (size_t k = 0; k < fs.size(); ++k) f << (k ? "," : "") << fs[k].name;
    f << "\n";
    for (const auto &r : rows) {
        for (size_t k = 0; k < fs.size(); ++k) f << (k ? "," : "") << fs[k].csv(r);
        f << "\n";
    }
    if (!f) throw BenchError("cannot write " + path);
}

void write_json(const std::string &path, const std::vector<Row> &rows, const Gpu &g,
                const Options &opt, const std::vector<std::string> &skipped, int failures) {
    std::ofstream f(path);
    f << "{\n  \"device\": " << json_str(g.name) << ",\n  \"l2_bytes\": " << g.l2_bytes
      << ",\n  \"peak_memcpy_GBps\": " << json_num(g.peak_memcpy_gbs)
      << ",\n  \"dram_read_plus_write_GBps\": " << json_num(2 * g.peak_memcpy_gbs)
      << ",\n  \"iterations\": " << opt.iterations << ",\n  \"warmup\": " << opt.warmup
      << ",\n  \"failures\": " << failures << ",\n  \"skipped\": [";
    for (size_t i = 0; i < skipped.size(); ++i) f << (i ? ", " : "") << json_str(skipped[i]);
    f << "],\n  \"results\": [\n";
    const auto &fs = fields();
    for (size_t i = 0; i < rows.size(); ++i) {
        f << "    {";
        for (size_t k = 0; k < fs.size(); ++k)
            f << (k ? ", " : "") << json_str(fs[k].name) << ": " << fs[k].json(rows[i]);
        f << "}" << (i + 1 < rows.size() ? "," : "") << "\n";
    }
    f << "  ]\n}\n";
    if (!f) throw BenchError("cannot write " + path);
}

std::string mb(int64_t bytes) { return num(static_cast<double>(bytes) / 1e6, 2); }

void print_layout_table(const std::vector<Row> &rows) {
    int w = 6;
    for (const auto &r : rows) w = std::max(w, static_cast<int>(r.name.size()));
    std::printf("\n%-*s %9s %9s %-10s %-14s %8s %8s %8s %5s %5s %8s %8s %8s %5s %s\n", w, "layout",
                "packed MB", "blocks", "plan", "method", "pack", "unpack", "memcpy", "p/m", "u/m",
                "2D", "perblk", "bound", "p/bnd", "(GB/s)");
    for (const auto &r : rows) {
        if (r.section != "layout") continue;
        std::printf("%-*s %9s %9lld %-10s %-14s %8s %8s %8s %5s %5s %8s %8s %8s %5s%s\n", w,
                    r.name.c_str(), mb(r.packed).c_str(), static_cast<long long>(r.blocks),
                    r.plan.c_str(), r.method.c_str(), num(r.pack_gbs).c_str(),
                    num(r.unpack_gbs).c_str(), num(r.memcpy_gbs).c_str(),
                    num(ratio(r.pack_gbs, r.memcpy_gbs), 2).c_str(),
                    num(ratio(r.unpack_gbs, r.memcpy_gbs), 2).c_str(), num(r.memcpy2d_gbs).c_str(),
                    num(r.per_block_gbs, 2).c_str(), num(r.bound_gbs).c_str(),
                    num(ratio(r.pack_gbs, r.bound_gbs), 2).c_str(),
                    r.verified ? "" : "  NOT VERIFIED");
    }
    bool any = false;
    for (const auto &r : rows) any = any || !std::isnan(r.first_use_us);
    if (any) {
        std::printf("\n%-*s %9s %12s %10s %8s\n", w, "block list: first use", "packed MB",
                    "first use us", "cached us", "ratio");
        for (const auto &r : rows)
            if (!std::isnan(r.first_use_us))
                std::printf("%-*s %9s %12s %10s %8s\n", w, r.name.c_str(), mb(r.packed).c_str(),
                            num(r.first_use_us).c_str(), num(r.cached_us).c_str(),
                            num(ratio(r.first_use_us, r.cached_us), 1).c_str());
    }
}

void print_small_table(const std::vector<Row> &rows) {
    bool any = false;
    for (const auto &r : rows) any = any || r.section == "small";
    if (!any) return;
    std::printf("\n%-22s %8s %7s %-10s %-14s %9s %9s %9s %8s  (host clock, call to completion)\n",
                "small message", "bytes", "blocks", "plan", "method", "pack us", "async us",
                "memcpy us", "pack/mc");
    for (const auto &r : rows)
        if (r.section == "small")
            std::printf("%-22s %8lld %7lld %-10s %-14s %9s %9s %9s %8s%s\n", r.name.c_str(),
                        static_cast<long long>(r.packed), static_cast<long long>(r.blocks),
                        r.plan.c_str(), r.method.c_str(), num(r.e2e_pack_us, 2).c_str(),
                        num(r.e2e_async_us, 2).c_str(), num(r.e2e_memcpy_us, 2).c_str(),
                        num(ratio(r.e2e_pack_us, r.e2e_memcpy_us), 2).c_str(),
                        r.verified ? "" : "  NOT VERIFIED");
}

#ifdef UCXDT_PACKBENCH_YAKSA
// ucxdt against Yaksa on each layout, both as ratios to cudaMemcpy of the packed bytes, and the
// small messages end to end.
void print_yaksa_table(const std::vector<Row> &rows) {
    int w = 6;
    for (const auto &r : rows) w = std::max(w, static_cast<int>(r.name.size()));
    std::printf("\n%-*s %9s %7s %7s %7s %7s %7s %7s %7s %7s %7s %7s %7s %s\n", w, "layout vs Yaksa",
                "packed MB", "pack", "y.pack", "unpack", "y.unpk", "p/m", "y.p/m", "u/m", "y.u/m",
                "call", "y.call", "mc.call",
                "(GB/s; ratios to memcpy; host us of the enqueuing pack call)");
    for (const auto &r : rows) {
        if (r.section != "layout") continue;
        std::printf("%-*s %9s %7s %7s %7s %7s %7s %7s %7s %7s %7s %7s %7s%s\n", w, r.name.c_str(),
                    mb(r.packed).c_str(), num(r.pack_gbs).c_str(), num(r.yaksa_pack_gbs).c_str(),
                    num(r.unpack_gbs).c_str(), num(r.yaksa_unpack_gbs).c_str(),
                    num(ratio(r.pack_gbs, r.memcpy_gbs), 2).c_str(),
                    num(ratio(r.yaksa_pack_gbs, r.memcpy_gbs), 2).c_str(),
                    num(ratio(r.unpack_gbs, r.memcpy_gbs), 2).c_str(),
                    num(ratio(r.yaksa_unpack_gbs, r.memcpy_gbs), 2).c_str(),
                    num(r.pack_call_us, 2).c_str(), num(r.yaksa_pack_call_us, 2).c_str(),
                    num(r.memcpy_call_us, 2).c_str(),
                    r.yaksa_verified == "no" ? "  YAKSA NOT VERIFIED" : "");
    }
    std::printf("\n%-22s %8s %9s %9s %9s  (host clock, call to completion)\n", "small vs Yaksa",
                "bytes", "ucxdt us", "yaksa us", "memcpy us");
    for (const auto &r : rows)
        if (r.section == "small")
            std::printf("%-22s %8lld %9s %9s %9s\n", r.name.c_str(),
                        static_cast<long long>(r.packed), num(r.e2e_pack_us, 2).c_str(),
                        num(r.yaksa_e2e_us, 2).c_str(), num(r.e2e_memcpy_us, 2).c_str());
}
#endif

bool selected(const std::string &name, const Options &opt) {
    if (opt.filters.empty()) return true;
    return std::any_of(opt.filters.begin(), opt.filters.end(),
                       [&](const std::string &f) { return name.find(f) != std::string::npos; });
}

}  // namespace

int main(int argc, char **argv) {
    Options opt;
    for (int c; (c = getopt(argc, argv, "l:n:w:o:j:b:f:s:St:d:Lh")) != -1;) {
        switch (c) {
        case 'l': opt.filters.push_back(optarg); break;
        case 'n': opt.iterations = std::atoi(optarg); break;
        case 'w': opt.warmup = std::atoi(optarg); break;
        case 'o': opt.csv_path = optarg; break;
        case 'j': opt.json_path = optarg; break;
        case 'b': opt.per_block_cap = std::atoll(optarg); break;
        case 'f': opt.first_use_reps = std::atoi(optarg); break;
        case 's': opt.small_reps = std::atoi(optarg); break;
        case 'S': opt.small = false; break;
        case 't': opt.time_budget_s = std::atof(optarg); break;
        case 'd': opt.device = std::atoi(optarg); break;
        case 'L': opt.list_only = true; break;
        default: return usage(argv[0]), c == 'h' ? 0 : 2;
        }
    }
    if (opt.iterations < 1 || opt.warmup < 0 || opt.small_reps < 1 || opt.first_use_reps < 0 ||
        optind != argc)
        return usage(argv[0]), 2;

    std::vector<L::Layout> layouts;
    std::vector<L::Layout> small;
    try {
        for (auto &l : bench_layouts())
            if (selected(l.name, opt)) layouts.push_back(l);
        if (opt.small)
            for (int64_t bytes = 4096; bytes <= 65536; bytes *= 2)
                for (auto &l : small_layouts(bytes))
                    if (selected(l.name, opt)) small.push_back(l);
    } catch (const std::exception &e) {
        std::fprintf(stderr, "ucxdt_packbench: building the layouts failed: %s\n", e.what());
        return 1;
    }
    if (layouts.empty() && small.empty()) {
        std::fprintf(stderr, "ucxdt_packbench: no layout matches the -l filters\n");
        return 2;
    }
    if (opt.list_only) {
        try {
            for (const auto *set : {&layouts, &small})
                for (const auto &l : *set) {
                    const ucxdt::type t = build(*l.type);
                    const auto p = t.plan(l.count);
                    std::printf("%-40s packed %12lld  blocks %10lld  %s\n", l.name.c_str(),
                                static_cast<long long>(l.count * t.size()),
                                static_cast<long long>(p.num_blocks), L::plan_name(p.plan_class));
                }
        } catch (const std::exception &ex) {
            std::fprintf(stderr, "ucxdt_packbench: %s\n", ex.what());
            return 1;
        }
        return 0;
    }

    int ndev = 0;
    const cudaError_t e = cudaGetDeviceCount(&ndev);
    if (e != cudaSuccess || ndev == 0) {
        std::fprintf(stderr, "ucxdt_packbench: no CUDA device (%s); nothing measured, exit %d\n",
                     e != cudaSuccess ? cudaGetErrorString(e) : "0 devices", kExitNoDevice);
        return kExitNoDevice;
    }

    Gpu g;
    std::vector<Row> rows;
    std::vector<std::string> skipped;
    int failures = 0;
    const auto start = Clock::now();
#ifdef UCXDT_PACKBENCH_YAKSA
    std::optional<ucxdt::bench::Yaksa> yaksa;
#endif
    try {
        g.device = opt.device;
        cuda_ok(cudaSetDevice(g.device), "cudaSetDevice");
        cudaDeviceProp prop{};
        cuda_ok(cudaGetDeviceProperties(&prop, g.device), "cudaGetDeviceProperties");
        g.name = prop.name;
        g.sms = prop.multiProcessorCount;
        int l2 = 0;
        cuda_ok(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, g.device), "L2 size");
        g.l2_bytes = l2;
        cuda_ok(cudaStreamCreateWithFlags(&g.stream, cudaStreamNonBlocking), "cudaStreamCreate");
        measure_peak_copy(g, opt);
#ifdef UCXDT_PACKBENCH_YAKSA
        yaksa.emplace();
#endif
    } catch (const std::exception &ex) {
        std::fprintf(stderr, "ucxdt_packbench: setup failed: %s\n", ex.what());
        return 1;
    }
    std::printf("device %d: %s, %d SMs, L2 %.0f MB; large memcpy %.1f GB/s"
                " (%.1f GB/s read+write)\n",
                g.device, g.name.c_str(), g.sms, static_cast<double>(g.l2_bytes) / 1e6,
                g.peak_memcpy_gbs, 2 * g.peak_memcpy_gbs);
    std::printf("median of %d runs after %d warm-up, device events; GB/s of packed bytes\n",
                opt.iterations, opt.warmup);

    auto over_budget = [&] {
        return opt.time_budget_s > 0 &&
               std::chrono::duration<double>(Clock::now() - start).count() > opt.time_budget_s;
    };
    auto run = [&](const L::Layout &l, bool is_small) {
        if (over_budget()) {
            skipped.push_back(l.name);
            return;
        }
        Row r;
        try {
            r = is_small ? run_small(l, opt, g) : run_layout(l, opt, g);
        } catch (const std::exception &ex) {
            r.section = is_small ? "small" : "layout", r.name = l.name, r.count = l.count;
            add_note(r, std::string("FAILED: ") + ex.what());
            cudaGetLastError();  // a later layout should not see this one's error
        }
        if (!r.verified) {
            ++failures;
            std::fprintf(stderr, "FAIL %s: %s\n", r.name.c_str(), r.note.c_str());
        }
        const std::string note = r.note.empty() ? "" : "  (" + r.note + ")";
        std::string peer;
#ifdef UCXDT_PACKBENCH_YAKSA
        peer = "; yaksa pack " + num(r.yaksa_pack_gbs) + ", unpack " + num(r.yaksa_unpack_gbs) +
               (r.section == "small" ? ", " + num(r.yaksa_e2e_us, 1) + " us" : "");
#endif
        std::fprintf(stderr, "[packbench %6.1f s] %s: pack %s, unpack %s, memcpy %s GB/s%s%s\n",
                     std::chrono::duration<double>(Clock::now() - start).count(), r.name.c_str(),
                     num(r.pack_gbs).c_str(), num(r.unpack_gbs).c_str(), num(r.memcpy_gbs).c_str(),
                     peer.c_str(), note.c_str());
        rows.push_back(std::move(r));
    };
    for (const auto &l : layouts) run(l, false);
    for (const auto &l : small) run(l, true);

    print_layout_table(rows);
    print_small_table(rows);
#ifdef UCXDT_PACKBENCH_YAKSA
    print_yaksa_table(rows);
#endif
    if (!skipped.empty())
        std::printf("\n%zu skipped by the %.0f s budget (-t)\n", skipped.size(), opt.time_budget_s);
    std::printf("\n%zu results, %d failed, %.1f s\n", rows.size(), failures,
                std::chrono::duration<double>(Clock::now() - start).count());
    try {
        if (!opt.csv_path.empty()) write_csv(opt.csv_path, rows);
        if (!opt.json_path.empty()) write_json(opt.json_path, rows, g, opt, skipped, failures);
    } catch (const std::exception &ex) {
        std::fprintf(stderr, "ucxdt_packbench: %s\n", ex.what());
        return 1;
    }
    if (g.stream) cudaStreamDestroy(g.stream);
    for (cudaEvent_t ev : g.events) cudaEventDestroy(ev);
    return failures == 0 ? 0 : 1;
}
