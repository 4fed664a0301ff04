// A one-sided target killed mid-transfer (include/ucxdt/ucxdt_rma.h): a forked target
// (harness/rma_target.hpp) registers a host region and is killed while puts into it are in
// flight. Every outstanding put and the flush end with an error within seconds; none hangs.
#include "harness/layout_buffer.hpp"
#include "harness/rma_support.hpp"
#include "harness/rma_target.hpp"

#include <ucxdt/ucxdt_rma.h>

#include <gtest/gtest.h>

#include <chrono>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include <poll.h>

namespace {

namespace L = ucxdt::layouts;
namespace T = ucxdt::testing;
using T::Buffer, T::status_name, T::Type;

// TCP tells of a killed peer at once (its sockets close).
const T::UcxConfig kTcp = {{"TLS", "tcp,self"}};

int wait_request(ucxdt_worker_h w, ucxdt_status_ptr_t req, std::chrono::seconds limit) {
    return T::wait_request(req, [w] { ucxdt_worker_progress(w); }, limit);
}

TEST(RmaFaults, TargetKilledMidPutsEndsEveryRequestWithinSeconds) {
    const auto t = L::vector(256, 512, 768, L::named(UCXDT_DOUBLE));  // 1 MiB packed in 256 runs
    Type h(*t);
    int64_t lb = 0, extent = 0;
    ucxdt_type_extent(h.h, &lb, &extent);
    constexpr int kPuts = 32;
    T::Target target;
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

// The target's side of the test below: serves until a put is arriving (its data by UCP's
// rendezvous), then unmaps its region and destroys its ucxdt worker, as ucxdt_rma.h asks, with
// the put in flight; reports whether it caught it so (1) or too late (0), and keeps its UCP
// worker progressing until told to go.
[[noreturn]] void destroying_target(int in, int out, size_t bytes) {
    alarm(120);
    T::ProcessSide s;
    T::UcxdtSide x;
    if (!T::connect_pair(in, out, {}, s, x).empty()) _exit(2);
    std::vector<std::byte> region(bytes, std::byte{0x5a});
    ucxdt_mem_h mem = nullptr;
    void *rkey = nullptr;
    if (!T::publish_region(x, out, region.data(), bytes, &mem, &rkey)) _exit(4);
    const ucxdt::rma::Rma &rma = T::rma_of(x.w);
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (!rma.busy() && std::chrono::steady_clock::now() < until) ucxdt_worker_progress(x.w);
    const char caught = rma.busy() && rma.counters.served == 0 ? 1 : 0;
    ucxdt_rkey_buffer_release(rkey);
    ucxdt_mem_unmap(mem);
    ucxdt_ep_destroy(x.ep), x.ep = nullptr;
    ucxdt_worker_destroy(x.w), x.w = nullptr;
    T::write_all(out, &caught, 1);
    pollfd p{in, POLLIN, 0};
    while (poll(&p, 1, 0) == 0) ucp_worker_progress(s.w);  // its ACK goes out
    _exit(0);
}

// A target that unmaps its region and destroys its worker while a peer's put arrives answers
// the put first (the destruction waits for it, bounded, as for its own requests): the region
// is gone, so the origin's put ends with UCXDT_ERR_OUT_OF_RANGE instead of waiting for an answer
// that never comes; nothing of the target's one-sided layer is touched by UCP after it is gone.
void destroyed_target_case() {
    setenv("UCXDT_RMA_PATH", "am", 1);  // the target unpacks (read when the layer is made: the put)
    const auto t = L::vector(1 << 21, 1, 2, L::named(UCXDT_DOUBLE));  // 16 MiB packed, 32 MiB extent
    Type h(*t);
    int64_t lb = 0, extent = 0;
    ucxdt_type_extent(h.h, &lb, &extent);
    T::Target target;
    const size_t bytes = static_cast<size_t>(extent);
    const std::string started = target.spawn({}, [bytes](int in, int out) { destroying_target(in, out, bytes); });
    ASSERT_EQ(started, "");
    Buffer src(*t, 1, 6);
    ucxdt_status_ptr_t put = ucxdt_put_nbx(target.x.ep, src.ptr(), 1, h.h, target.region, target.rkey, 1, h.h, nullptr);
    unsetenv("UCXDT_RMA_PATH");
    ASSERT_TRUE(UCXDT_PTR_IS_PTR(put)) << status_name(UCXDT_PTR_STATUS(put)) << ": " << ucxdt_last_error();
    ASSERT_EQ(T::rma_of(target.x.w).counters.am, 1u) << "the put did not take the target-unpack path";
    EXPECT_EQ(status_name(wait_request(target.x.w, put, std::chrono::seconds(30))), status_name(UCXDT_ERR_OUT_OF_RANGE));
    char caught = -1;
    pollfd p{target.to_parent[0], POLLIN, 0};
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (poll(&p, 1, 0) == 0 && std::chrono::steady_clock::now() < until) ucxdt_worker_progress(target.x.w);
    ASSERT_TRUE(T::read_all(target.to_parent[0], &caught, 1)) << "the target ended without a report";
    EXPECT_EQ(caught, 1) << "the target's worker went before the put arrived, or after it was served";
    const char go = 1;
    T::write_all(target.to_child[1], &go, 1);
}

// In a process of its own (a death-test child, re-executed from main): its target is forked,
// and a forked child cannot use CUDA once its parent initialized it, which the UCP context of
// an earlier test of this binary does on a GPU machine.
TEST(RmaFaults, TargetWorkerDestroyedWhileAPutArrivesAnswersItFirst) {
    GTEST_FLAG_SET(death_test_style, "threadsafe");
    EXPECT_EXIT(
        {
            destroyed_target_case();
            std::exit(::testing::Test::HasFailure() ? 1 : 0);
        },
        ::testing::ExitedWithCode(0), "");
}

}  // namespace
