// A one-sided target killed mid-transfer (include/ucxdt/ucxdt_rma.h): a forked target
// (support/rma_target.hpp) registers a host region and is killed while puts into it are in
// flight. Every outstanding put and the flush end with an error within seconds; none hangs.
#include "support/layout_buffer.hpp"
#include "support/rma_target.hpp"

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

}  // namespace
