// One-sided puts over CUDA IPC into another process (include/ucxdt/ucxdt_rma.h): a forked
// target (harness/rma_target.hpp) registers a device region; the parent puts from device memory
// strided into strided, into the same layout, into and out of contiguous, and random types into
// relayouts, each at its own MiB of the region; the target checks every byte there against the
// walker. Its own binary: CUDA must not have started in the parent before the fork, which an
// earlier test's UCP context (its CUDA transports) would do. With UCXDT_CUDA_IPC=n (the
// test_rma_ipc_ucp variant) the same puts take UCP's own RMA where it reaches device memory.
#include "harness/layout_buffer.hpp"
#include "harness/rma_support.hpp"
#include "harness/rma_target.hpp"

#include <ucxdt/ucxdt_rma.h>

#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

namespace {

namespace L = ucxdt::layouts;
namespace T = ucxdt::testing;
using T::Buffer, T::Mem, T::packed, T::Placed, T::status_name, T::Type;

int wait_request(ucxdt_worker_h w, ucxdt_status_ptr_t req, std::chrono::seconds limit) {
    return T::wait_request(req, [w] { ucxdt_worker_progress(w); }, limit);
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

TEST(RmaIpc, GpuPutsIntoAnotherProcessCheckedThere) {
    // No CUDA call here before the fork: a forked child cannot use CUDA that its parent started.
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
    T::Target target;
    const std::string started = target.start(true, bytes, {}, check);
    if (target.no_gpu()) GTEST_SKIP() << "no CUDA device: one-sided CUDA IPC between processes is untested here";
    ASSERT_EQ(started, "");
    uint64_t moved = 0;  // operations with data (an empty one takes no path)
    for (size_t i = 0; i < cases.size(); ++i) {
        Type oh(*cases[i].origin), th(*cases[i].target);
        int64_t size = 0;
        ucxdt_type_size(oh.h, &size);
        moved += size > 0;
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
    // The path taken: ucxdt's CUDA IPC; without it (UCXDT_CUDA_IPC=n), UCP's own RMA where it
    // reaches device memory on this endpoint, else the target's GPU unpacks. Forcing the runs
    // path never hands UCP a device region that it would read with the CPU (UCX 1.13).
    const auto &c = T::rma_of(target.x.w).counters;
    const auto env = [](const char *name) { const char *v = std::getenv(name); return std::string(v ? v : ""); };
    if (env("UCXDT_CUDA_IPC") != "n") {
        EXPECT_EQ(c.ipc, moved);
        return;
    }
    // What the worker decided, against what UCP reports here: a UCX of 1.22 or later whose
    // endpoint has a cuda_ipc lane (no RDMA lanes on these machines). It asks once per endpoint,
    // and only of a region registered with UCP (1.22 and later): else it stays -1, unasked.
    const int8_t decided = reinterpret_cast<const ucxdt::rndv::Ep *>(target.x.ep)->rma_device;
    unsigned major = 0, minor = 0, release = 0;
    ucp_get_version(&major, &minor, &release);
    bool cuda_ipc_lane = false;
#if UCP_API_VERSION >= UCP_VERSION(1, 14)
    ucp_transport_entry_t lanes[32] = {};
    ucp_ep_attr_t attr{};
    attr.field_mask = UCP_EP_ATTR_FIELD_TRANSPORTS;
    attr.transports.entries = lanes;
    attr.transports.num_entries = 32;
    attr.transports.entry_size = sizeof lanes[0];
    ASSERT_EQ(ucp_ep_query(target.x.s->ep, &attr), UCS_OK);
    for (unsigned i = 0; i < attr.transports.num_entries; ++i)
        cuda_ipc_lane |= lanes[i].transport_name && std::string(lanes[i].transport_name) == "cuda_ipc";
#endif
    const bool ucp = UCP_VERSION(major, minor) >= UCP_VERSION(1, 22) && cuda_ipc_lane;
    if (ucp) EXPECT_EQ(decided, 1) << "UCX " << major << "." << minor;
    else EXPECT_NE(decided, 1) << "UCX " << major << "." << minor << ", cuda_ipc lane " << cuda_ipc_lane;
    std::fprintf(stderr, "device target out of ucxdt's CUDA IPC: %s (UCP's RMA %s device memory here)\n",
                 ucp ? "UCP's RMA" : "the target unpacks", ucp ? "reaches" : "does not reach");
    EXPECT_EQ(c.ipc, 0u);
    if (!ucp) {
        EXPECT_EQ(c.am, moved);
    } else if (env("UCXDT_RMA_PATH") == "runs") {
        EXPECT_EQ(c.runs, moved);
    } else {
        EXPECT_EQ(c.runs + c.am, moved);
    }
}

}  // namespace
