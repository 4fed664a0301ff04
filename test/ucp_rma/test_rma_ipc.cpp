// One-sided puts over CUDA IPC into another process (include/ucxdt/ucxdt_rma.h): a forked
// target (support/rma_target.hpp) registers a device region; the parent puts from device memory
// strided into strided, into the same layout, into and out of contiguous, and random types into
// relayouts, each at its own MiB of the region; the target checks every byte there against the
// walker. Its own binary: CUDA must not have started in the parent before the fork, which an
// earlier test's UCP context (its CUDA transports) would do.
#include "support/layout_buffer.hpp"
#include "support/rma_target.hpp"

#include <ucxdt/ucxdt_rma.h>

#include <gtest/gtest.h>

#include <chrono>
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
