// One-sided transfers across two processes (include/ucxdt/ucxdt_rma.h): a forked target
// registers a region and sends its rkey through a pipe. The target killed while puts into it
// are in flight: every outstanding put and the flush end with an error within seconds, none
// hangs. On a GPU: puts from device memory into the target's device region over CUDA IPC, which
// the target checks byte for byte against the walker.
#include "support/layout_buffer.hpp"
#include "support/rndv_support.hpp"
#include "support/two_process.hpp"

#include <ucxdt/ucxdt_rma.h>

#include <gtest/gtest.h>

#include <chrono>
#include <csignal>
#include <cstring>
#include <string>
#include <vector>

#include <poll.h>

namespace {

namespace L = ucxdt::layouts;
namespace T = ucxdt::testing;
using T::Buffer, T::Mem, T::packed, T::Placed, T::ProcessSide, T::status_name, T::Type;

constexpr uint64_t kFeatures = UCP_FEATURE_TAG | UCP_FEATURE_AM | UCP_FEATURE_RMA;
// TCP tells of a killed peer at once (its sockets close).
const std::vector<std::pair<const char *, const char *>> kTcp = {{"TLS", "tcp,self"}};

struct UcxdtSide {
    ProcessSide *s = nullptr;
    ucxdt_worker_h w = nullptr;
    ucxdt_ep_h ep = nullptr;
    std::string open(ProcessSide &side) {
        s = &side;
        return T::create_rndv_worker(side.ctx, side.w, T::RndvConfig{}, &w);
    }
    ~UcxdtSide() {
        if (ep) ucxdt_ep_destroy(ep);
        if (s) s->close_ep();
        if (w) ucxdt_worker_destroy(w);
    }
};

// Both processes: context, worker, and an endpoint to the peer in peer error mode.
std::string connect(int in, int out, const std::vector<std::pair<const char *, const char *>> &cfg, ProcessSide &s,
                    UcxdtSide &x) {
    std::vector<char> peer;
    if (std::string e = s.init(kFeatures, cfg); !e.empty()) return e;
    if (!T::write_blob(out, s.address) || !T::read_blob(in, &peer)) return "address exchange";
    if (std::string e = x.open(s); !e.empty()) return e;
    if (std::string e = s.connect(peer, x.w); !e.empty()) return e;
    return T::create_rndv_ep(x.w, s.ep, &x.ep);
}

// The target: registers `bytes` of memory (host, or device when `device`) filled with `fill`,
// sends the rkey and the region's address, then serves until the parent writes a byte; with
// `check`, it then checks the region against the layouts that check() names and reports.
template <typename Check>
[[noreturn]] void target_main(int in, int out, bool device, size_t bytes,
                              const std::vector<std::pair<const char *, const char *>> &cfg, Check &&check) {
    alarm(120);  // a parent that never ends us must not leave us behind
    ProcessSide s;
    UcxdtSide x;
    if (!connect(in, out, cfg, s, x).empty()) _exit(2);
    std::vector<std::byte> host(bytes, std::byte{0x5a});
    void *region = host.data();
    if (device && (cudaMalloc(&region, bytes) != cudaSuccess || cudaMemcpy(region, host.data(), bytes, cudaMemcpyHostToDevice) != cudaSuccess))
        _exit(3);
    ucxdt_mem_map_params_t mp{};
    mp.field_mask = UCXDT_MEM_MAP_PARAM_FIELD_ADDRESS | UCXDT_MEM_MAP_PARAM_FIELD_LENGTH;
    mp.address = region;
    mp.length = bytes;
    ucxdt_mem_h mem = nullptr;
    void *rkey = nullptr;
    size_t rkey_len = 0;
    if (ucxdt_mem_map(x.w, &mp, &mem) != UCXDT_OK || ucxdt_rkey_pack(mem, &rkey, &rkey_len) != UCXDT_OK) _exit(4);
    std::vector<char> blob(static_cast<char *>(rkey), static_cast<char *>(rkey) + rkey_len);
    const uint64_t at = reinterpret_cast<uint64_t>(region);
    blob.insert(blob.end(), reinterpret_cast<const char *>(&at), reinterpret_cast<const char *>(&at) + sizeof at);
    if (!T::write_blob(out, blob)) _exit(5);
    pollfd p{in, POLLIN, 0};
    while (poll(&p, 1, 0) == 0) ucxdt_worker_progress(x.w);
    char go = 0;
    T::read_all(in, &go, 1);
    if (device && cudaMemcpy(host.data(), region, bytes, cudaMemcpyDeviceToHost) != cudaSuccess) _exit(6);
    const char verdict = check(host);
    T::write_all(out, &verdict, 1);
    ucxdt_rkey_buffer_release(rkey);
    ucxdt_mem_unmap(mem);
    _exit(0);
}

struct Target {
    pid_t pid = -1;
    int to_child[2] = {-1, -1}, to_parent[2] = {-1, -1};
    ProcessSide s;
    UcxdtSide x;
    ucxdt_rkey_h rkey = nullptr;
    uint64_t region = 0;

    template <typename Check>
    std::string start(bool device, size_t bytes, const std::vector<std::pair<const char *, const char *>> &cfg,
                      Check &&check) {
        if (pipe(to_child) || pipe(to_parent)) return "pipe";
        pid = fork();
        if (pid < 0) return "fork";
        if (pid == 0) target_main(to_child[0], to_parent[1], device, bytes, cfg, check);
        if (std::string e = connect(to_parent[0], to_child[1], cfg, s, x); !e.empty()) return e;
        std::vector<char> blob;
        if (!T::read_blob(to_parent[0], &blob) || blob.size() < sizeof region) return "the target sent no rkey";
        std::memcpy(&region, blob.data() + blob.size() - sizeof region, sizeof region);
        if (ucxdt_ep_rkey_unpack(x.ep, blob.data(), blob.size() - sizeof region, &rkey) != UCXDT_OK)
            return std::string("ucxdt_ep_rkey_unpack: ") + ucxdt_last_error();
        return "";
    }
    // Tells the target to check, and returns its verdict (0: good), or -1.
    int verdict() {
        const char go = 1;
        char v = -1;
        if (!T::write_all(to_child[1], &go, 1)) return -1;
        const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(60);
        pollfd p{to_parent[0], POLLIN, 0};
        while (poll(&p, 1, 0) == 0 && std::chrono::steady_clock::now() < until) ucxdt_worker_progress(x.w);
        return T::read_all(to_parent[0], &v, 1) ? v : -1;
    }
    ~Target() {
        ucxdt_rkey_destroy(rkey);
        if (pid > 0) T::wait_child(pid, std::chrono::seconds(10));
        for (int fd : {to_child[0], to_child[1], to_parent[0], to_parent[1]})
            if (fd >= 0) close(fd);
    }
};

int wait_request(ucxdt_worker_h w, ucxdt_status_ptr_t req, std::chrono::seconds limit) {
    return T::wait_request(req, [w] { ucxdt_worker_progress(w); }, limit);
}

TEST(RmaFaults, TargetKilledMidPutsEndsEveryRequestWithinSeconds) {
    const auto t = L::vector(256, 512, 768, L::named(UCXDT_DOUBLE));  // 1 MiB packed in 256 runs
    Type h(*t);
    int64_t lb = 0, extent = 0;
    ucxdt_type_extent(h.h, &lb, &extent);
    constexpr int kPuts = 32;
    Target target;
    ASSERT_EQ(target.start(false, static_cast<size_t>(extent) * kPuts, kTcp, [](const std::vector<std::byte> &) { return 0; }), "");
    Buffer src(*t, 1, 5);
    std::vector<ucxdt_status_ptr_t> reqs;
    for (int i = 0; i < kPuts; ++i)
        reqs.push_back(ucxdt_put_nbx(target.x.ep, src.ptr(), 1, h.h, target.region + static_cast<uint64_t>(i * extent),
                                     target.rkey, 1, h.h, nullptr));
    ucxdt_status_ptr_t flush = ucxdt_ep_flush_nbx(target.x.ep, nullptr);
    ASSERT_TRUE(UCXDT_PTR_IS_PTR(flush)) << "the flush ended before the kill";
    kill(target.pid, SIGKILL);
    EXPECT_NE(T::wait_child(target.pid, std::chrono::seconds(10)), -1);
    target.pid = -1;
    const auto killed = std::chrono::steady_clock::now();
    int failed = 0;
    for (ucxdt_status_ptr_t r : reqs) {
        const int st = wait_request(target.x.w, r, std::chrono::seconds(30));
        ASSERT_NE(st, T::kStillRunning) << "a put outlived its target";
        failed += st != UCXDT_OK;
    }
    EXPECT_EQ(status_name(wait_request(target.x.w, flush, std::chrono::seconds(30))), status_name(UCXDT_ERR_PEER_FAILURE));
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - killed).count();
    EXPECT_LT(seconds, 30.0);
    RecordProperty("puts_failed", std::to_string(failed));
    RecordProperty("seconds_to_fail", std::to_string(seconds));
}

// Layouts of the GPU case, the same in both processes: (origin, target) pairs of one signature
// at successive offsets of the target's region.
struct Case {
    L::TypeDescPtr origin, target;
};
std::vector<Case> gpu_cases() {
    const auto d = L::named(UCXDT_DOUBLE);
    std::vector<Case> c = {{L::vector(4096, 4, 6, d), L::vector(2048, 8, 11, d)},   // strided into strided
                           {L::vector(4096, 4, 6, d), L::vector(4096, 4, 6, d)},    // the same layout
                           {L::vector(4096, 4, 6, d), L::contiguous(16384, d)},     // into contiguous
                           {L::contiguous(16384, d), L::vector(2048, 8, 11, d)}};   // from contiguous
    for (int i = 0; i < 12; ++i) {
        T::Rng rng(0x71c00000 + i);
        const auto o = T::random_desc(rng);
        c.push_back({o, T::relayout(*o, rng)});
    }
    return c;
}
constexpr int64_t kSlot = 1 << 20;  // each case's target at its own MiB of the region

TEST(RmaFaults, GpuPutsAcrossProcessesOverCudaIpc) {
    if (!T::have_gpu()) GTEST_SKIP() << "no CUDA device: one-sided CUDA IPC between processes is untested here";
    const std::vector<Case> cases = gpu_cases();
    const size_t bytes = static_cast<size_t>(kSlot) * cases.size();
    // The target checks each case's slot: the origin's packed stream at the target type map
    // (placed at the slot's middle), 0x5a everywhere else.
    const auto check = [&](const std::vector<std::byte> &got) -> char {
        for (size_t i = 0; i < cases.size(); ++i) {
            Buffer want_src(*cases[i].origin, 1, 40 + i);
            int64_t size = 0;
            Type oh(*cases[i].origin);
            ucxdt_type_size(oh.h, &size);
            const auto sent = packed(*cases[i].origin, want_src.ptr(), 1, size);
            int64_t seen = 0;
            std::vector<bool> in_map(kSlot, false);
            for (const auto &[disp, len] : ucxdt::ref::typemap_runs(*cases[i].target, 1))
                for (int64_t k = 0; k < len; ++k, ++seen) {
                    const int64_t at = kSlot / 2 + disp + k;
                    if (at < 0 || at >= kSlot) return 10;
                    in_map[at] = true;
                    if (got[i * kSlot + at] != sent[seen]) return 11;
                }
            for (int64_t k = 0; k < kSlot; ++k)
                if (!in_map[k] && got[i * kSlot + k] != std::byte{0x5a}) return 12;
        }
        return 0;
    };
    Target target;
    ASSERT_EQ(target.start(true, bytes, {}, check), "");
    for (size_t i = 0; i < cases.size(); ++i) {
        Type oh(*cases[i].origin), th(*cases[i].target);
        Buffer src(*cases[i].origin, 1, 40 + i);
        Placed at(src, Mem::cuda);
        const uint64_t to = target.region + i * kSlot + kSlot / 2;
        EXPECT_EQ(status_name(wait_request(target.x.w, ucxdt_put_nbx(target.x.ep, at.ptr(), 1, oh.h, to, target.rkey, 1, th.h, nullptr),
                                           std::chrono::seconds(60))),
                  status_name(UCXDT_OK))
            << "case " << i;
    }
    EXPECT_EQ(status_name(wait_request(target.x.w, ucxdt_ep_flush_nbx(target.x.ep, nullptr), std::chrono::seconds(60))),
              status_name(UCXDT_OK));
    EXPECT_EQ(target.verdict(), 0) << "10: a layout leaves its slot, 11: a byte of the map differs, 12: a byte outside it changed";
}

}  // namespace
