// ucxdt_packbench (ucxdt_packbench.cpp): timing, and the layouts measured.
// One translation unit includes these headers, in order; their names stay in an anonymous namespace, as
// when they were one file.
#pragma once

#include "packbench/common.hpp"

namespace {

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

}  // namespace
