// ucxdt_demo: every application layout through the CPU engine on host memory.
// For each layout it packs from a patterned buffer, unpacks into a poisoned one, checks every
// byte of the type map and every gap byte against the reference type-map walker, packs the
// stream again as byte ranges in random order, and reports pack/unpack bandwidth.
//
// Bandwidth counts packed bytes; MB = 2^20 bytes, as ucx_perftest prints it. Each figure is the
// median over -n samples; a sample repeats the operation until it lasts about a millisecond so
// that tiny layouts are not timer noise.
#include "support/app_layouts.hpp"
#include "support/typemap_walk.hpp"

#include <ucxdt/ucxdt.hpp>

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

namespace {

namespace L = ucxdt::layouts;
using Clock = std::chrono::steady_clock;

struct Options {
    int iterations = 5;
    std::string layout;  // empty: all
    bool csv = false;
};

void usage(const char *prog) {
    std::fprintf(stderr,
                 "usage: %s [-n iterations] [-l layout] [-f table|csv]\n"
                 "  -n  timed samples per operation, median reported (default 5)\n"
                 "  -l  run the layout of this name, or every layout whose name contains it\n"
                 "  -f  output format (default table)\n",
                 prog);
}

// Page-aligned, so that timings do not depend on where malloc put the buffer.
struct Buffer {
    std::byte *p = nullptr;
    int64_t n = 0;
    explicit Buffer(int64_t bytes) : n(bytes) {
        const size_t size = (static_cast<size_t>(std::max<int64_t>(bytes, 1)) + 4095) / 4096 * 4096;
        p = static_cast<std::byte *>(std::aligned_alloc(4096, size));
        if (p == nullptr) throw std::bad_alloc();
    }
    ~Buffer() { std::free(p); }
    Buffer(const Buffer &) = delete;
    Buffer &operator=(const Buffer &) = delete;
};

struct Row {
    std::string name;
    int64_t count = 0, packed = 0, extent = 0, blocks = -1;
    std::string plan = "-";
    double pack_mbs = 0, unpack_mbs = 0;
    bool verified = false;
};

// Median seconds per call of op(), over `samples` samples of about a millisecond each.
template <class Op> double median_seconds(int samples, Op &&op) {
    auto t0 = Clock::now();
    op();  // warm-up, and a first estimate of the cost
    const double once = std::chrono::duration<double>(Clock::now() - t0).count();
    const int64_t reps =
        std::clamp<int64_t>(static_cast<int64_t>(1e-3 / std::max(once, 1e-9)), 1, 100000);
    std::vector<double> per_call;
    for (int s = 0; s < samples; ++s) {
        t0 = Clock::now();
        for (int64_t r = 0; r < reps; ++r) op();
        per_call.push_back(std::chrono::duration<double>(Clock::now() - t0).count() / reps);
    }
    std::nth_element(per_call.begin(), per_call.begin() + per_call.size() / 2, per_call.end());
    return per_call[per_call.size() / 2];
}

bool fail(const Row &r, const std::string &what) {
    std::fprintf(stderr, "FAIL %s: %s\n", r.name.c_str(), what.c_str());
    return false;
}

// Runs one layout; returns whether everything verified. Throws ucxdt::error on engine errors.
bool run_layout(const L::Layout &l, const Options &opt, Row &row) {
    row.name = l.name, row.count = l.count;
    ucxdt_type_t h = UCXDT_TYPE_NULL;
    if (const ucxdt_status_t st = L::build(*l.type, &h, true); st != UCXDT_OK)
        throw ucxdt::error(st, std::string("build: ") + ucxdt_last_error());
    const ucxdt::type t = ucxdt::type::adopt(h);
    row.extent = t.extent();
    row.packed = l.count * t.size();
    const ucxdt::plan_info plan = t.plan(l.count);
    row.blocks = plan.num_blocks, row.plan = L::plan_name(plan.plan_class);

    const auto runs = ucxdt::ref::typemap_runs(*l.type, l.count);
    int64_t ref_total = 0;
    for (const auto &r : runs) ref_total += r.second;
    bool ok = true;
    if (ref_total != row.packed)
        ok = fail(row, "packed size " + std::to_string(row.packed) + ", reference " +
                           std::to_string(ref_total));
    if (row.blocks != static_cast<int64_t>(runs.size()))
        ok = fail(row, "engine reports " + std::to_string(row.blocks) + " blocks, reference " +
                           std::to_string(runs.size()));
    if (!ok) return false;

    Buffer src(l.buffer_bytes), dst(l.buffer_bytes), packed(row.packed), ranged(row.packed);
    ucxdt::ref::fill_pattern(src.p, src.n, 0xdeadbeef);
    ucxdt::ref::fill_complement(dst.p, src.p, dst.n);
    const std::byte *in = src.p + l.origin_bytes;
    std::byte *out = dst.p + l.origin_bytes;
    const std::span<std::byte> packed_span(packed.p, static_cast<size_t>(packed.n));

    int64_t pos = 0;
    t.pack(in, l.count, packed_span, pos);
    if (std::string e = ucxdt::ref::check_packed(runs, in, packed.p); !e.empty())
        ok = fail(row, "pack: " + e);
    pos = 0;
    t.unpack(packed_span, pos, out, l.count);
    if (std::string e = ucxdt::ref::check_scattered(runs, l.origin_bytes, dst.p, src.p, dst.n);
        !e.empty())
        ok = fail(row, "unpack: " + e);

    // The packed stream again, as a fragmenting protocol would ask for it: pieces of mixed
    // sizes, in random order.
    std::mt19937_64 rng(row.packed);
    std::vector<std::pair<int64_t, int64_t>> pieces;
    for (int64_t off = 0; off < row.packed;) {
        const int64_t cap = rng() % 2 ? 64 : std::max<int64_t>(1, row.packed / 8);
        const int64_t len =
            std::min<int64_t>(row.packed - off, 1 + static_cast<int64_t>(rng() % cap));
        pieces.emplace_back(off, len);
        off += len;
    }
    std::shuffle(pieces.begin(), pieces.end(), rng);
    for (const auto &[off, len] : pieces)
        t.pack_range(in, l.count, off,
                     std::span<std::byte>(ranged.p + off, static_cast<size_t>(len)));
    if (std::memcmp(ranged.p, packed.p, static_cast<size_t>(row.packed)) != 0)
        ok = fail(row, "pack_range in random order differs from pack");

    const double mb = static_cast<double>(row.packed) / (1 << 20);
    const double tp = median_seconds(opt.iterations, [&] {
        int64_t p = 0;
        t.pack(in, l.count, packed_span, p);
    });
    const double tu = median_seconds(opt.iterations, [&] {
        int64_t p = 0;
        t.unpack(packed_span, p, out, l.count);
    });
    row.pack_mbs = mb / tp, row.unpack_mbs = mb / tu;
    return ok;
}

void print_rule(const std::vector<int> &w) {
    for (int x : w) std::printf("+%s", std::string(static_cast<size_t>(x) + 2, '-').c_str());
    std::printf("+\n");
}

}  // namespace

int main(int argc, char **argv) {
    Options opt;
    for (int c; (c = getopt(argc, argv, "n:l:f:h")) != -1;) {
        switch (c) {
        case 'n': opt.iterations = std::atoi(optarg); break;
        case 'l': opt.layout = optarg; break;
        case 'f':
            if (std::strcmp(optarg, "csv") == 0) opt.csv = true;
            else if (std::strcmp(optarg, "table") != 0) return usage(argv[0]), 2;
            break;
        default: return usage(argv[0]), c == 'h' ? 0 : 2;
        }
    }
    if (opt.iterations < 1 || optind != argc) return usage(argv[0]), 2;

    const auto all = L::application_layouts();
    std::vector<const L::Layout *> chosen;
    if (const L::Layout *exact = L::find_layout(all, opt.layout); exact != nullptr) {
        chosen.push_back(exact);
    } else {
        for (const auto &l : all)
            if (l.name.find(opt.layout) != std::string::npos) chosen.push_back(&l);
    }
    if (chosen.empty()) {
        std::fprintf(stderr, "no layout matches \"%s\"\n", opt.layout.c_str());
        return 2;
    }

    int name_w = 6;
    for (const auto *l : chosen) name_w = std::max(name_w, static_cast<int>(l->name.size()));
    const std::vector<int> w{name_w, 5, 10, 10, 8, 10, 11, 11, 8};
    if (opt.csv) {
        std::printf("layout,count,packed_bytes,extent_bytes,blocks,plan,pack_MBps,unpack_MBps,"
                    "verified\n");
    } else {
        print_rule(w);
        std::printf("| %-*s | %5s | %10s | %10s | %8s | %-10s | %11s | %11s | %-8s |\n", name_w,
                    "layout", "count", "packed B", "extent B", "blocks", "plan", "pack MB/s",
                    "unpack MB/s", "verified");
        print_rule(w);
    }

    const auto start = Clock::now();
    int failures = 0;
    for (const auto *l : chosen) {
        Row row;
        row.name = l->name;
        try {
            row.verified = run_layout(*l, opt, row);
        } catch (const std::exception &e) {
            std::fprintf(stderr, "FAIL %s: %s\n", l->name.c_str(), e.what());
        }
        failures += row.verified ? 0 : 1;
        if (opt.csv) {
            std::printf("\"%s\",%lld,%lld,%lld,%lld,%s,%.1f,%.1f,%s\n", row.name.c_str(),
                        static_cast<long long>(row.count), static_cast<long long>(row.packed),
                        static_cast<long long>(row.extent), static_cast<long long>(row.blocks),
                        row.plan.c_str(), row.pack_mbs, row.unpack_mbs,
                        row.verified ? "yes" : "no");
        } else {
            std::printf("| %-*s | %5lld | %10lld | %10lld | %8lld | %-10s | %11.1f | %11.1f "
                        "| %-8s |\n",
                        name_w, row.name.c_str(), static_cast<long long>(row.count),
                        static_cast<long long>(row.packed), static_cast<long long>(row.extent),
                        static_cast<long long>(row.blocks), row.plan.c_str(), row.pack_mbs,
                        row.unpack_mbs, row.verified ? "yes" : "no");
        }
        std::fflush(stdout);
    }
    if (!opt.csv) {
        print_rule(w);
        std::printf("%zu layouts, %d failed, %.1f s\n", chosen.size(), failures,
                    std::chrono::duration<double>(Clock::now() - start).count());
    }
    return failures == 0 ? 0 : 1;
}
