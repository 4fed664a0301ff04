// A ucxdt worker over a UCS_THREAD_MODE_MULTI UCP worker (MPI_THREAD_MULTIPLE): any thread
// posts, progresses, tests, cancels and frees (include/ucxdt/ucxdt_ucp.h, "Threads").
#include "support/layout_buffer.hpp"
#include "support/rndv_support.hpp"
#include "support/ucp_pair.hpp"

#include <ucxdt/ucxdt_ucp.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <deque>
#include <memory>
#include <string>
#include <thread>
#include <vector>

namespace {

namespace L = ucxdt::layouts;
namespace T = ucxdt::testing;
using T::Buffer, T::have_gpu, T::Mem, T::mem_name, T::packed, T::Placed, T::status_name, T::Type;

const auto dbl = L::named(UCXDT_DOUBLE);
constexpr int kThreads = 8, kWindow = 8;
// Per thread each way; UCXDT_THREAD_MESSAGES lowers it under compute-sanitizer.
const int kMessages = [] {
    const char *v = std::getenv("UCXDT_THREAD_MESSAGES");
    return v ? std::max(1, std::atoi(v)) : 1000;
}();
constexpr ucp_tag_t kUnsent = 1ull << 62;  // tags no thread sends: receives to cancel

// Two MULTI workers of one process with a ucxdt worker and endpoint on each.
struct MtPair {
    T::UcpPair ucp;
    ucxdt_worker_h w[2] = {};
    ucxdt_ep_h ep[2] = {};
    std::string error;
    MtPair() {
        error = ucp.open(UCP_FEATURE_TAG | UCP_FEATURE_AM | UCP_FEATURE_RMA, {}, UCS_THREAD_MODE_MULTI);
        for (int i = 0; i < 2 && error.empty(); ++i) error = T::create_rndv_worker(ucp.ctx, ucp.w[i], T::RndvConfig{1024, 16384, 2, 8}, &w[i]);
        for (int i = 0; i < 2 && error.empty(); ++i) error = T::create_rndv_ep(w[i], ucp.ep[i], &ep[i]);
    }
    ~MtPair() {
        for (auto e : ep)
            if (e) ucxdt_ep_destroy(e);
        for (auto x : w)
            if (x) ucxdt_worker_destroy(x);
    }
};

// Message i of any thread has layout i % 3: 128 B eager, 8 KB and 40 KB rendezvous (one
// fragment and three); its data is a pattern of its full tag, so a receive that matched
// another thread's message (a mask that ignores the thread) can still check it.
L::TypeDescPtr layout_of(int i) {
    static const L::TypeDescPtr kinds[3] = {L::vector(4, 4, 6, dbl), L::vector(256, 4, 6, dbl), L::vector(1280, 4, 6, dbl)};
    return kinds[i % 3];
}

int64_t packed_size(int i) {
    int64_t size = 0;
    ucxdt::testing::Type h(*layout_of(i));
    ucxdt_type_size(h.h, &size);
    return size;
}

struct Msg {
    int i = 0;
    std::unique_ptr<Buffer> src, dst;
    std::unique_ptr<Placed> src_at, dst_at;
    std::vector<std::byte> poison;
    ucxdt_status_ptr_t sreq = nullptr, rreq = nullptr;
};

// Thread t: sends kMessages on ep[t % 2] with tags (t << 32 | i) and receives as many on the
// other worker, kWindow at a time, progressing both workers while it waits. Every fourth
// receive takes any thread's message i (the mask ignores the thread); every eighth message is
// probed before its receive (ucxdt_tag_probe_nb; every other of those removed and received by
// ucxdt_tag_msg_recv_nbx); every 50th iteration it also posts a receive nothing matches and
// cancels it. Returns "" or the first problem.
std::string run_thread(MtPair &p, int t, Mem mem, std::atomic<bool> &stop) {
    const int d = t % 2;
    std::vector<std::unique_ptr<Type>> types;
    for (int k = 0; k < 3; ++k) types.push_back(std::make_unique<Type>(*layout_of(k)));
    std::deque<Msg> window;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(240);
    auto progress = [&] {
        ucxdt_worker_progress(p.w[0]);
        ucxdt_worker_progress(p.w[1]);
    };
    auto finish = [&](Msg &m) -> std::string {
        while (ucxdt_request_check_status(m.rreq) == UCXDT_INPROGRESS || (m.sreq && ucxdt_request_check_status(m.sreq) == UCXDT_INPROGRESS)) {
            if (stop || std::chrono::steady_clock::now() > deadline) return "message " + std::to_string(m.i) + " did not complete";
            progress();
        }
        ucxdt_tag_recv_info_t info{};
        const int rs = ucxdt_tag_recv_request_test(m.rreq, &info);
        ucxdt_request_free(m.rreq);
        const int ss = m.sreq ? ucxdt_request_check_status(m.sreq) : UCXDT_OK;
        if (m.sreq) ucxdt_request_free(m.sreq);
        if (rs != UCXDT_OK || ss != UCXDT_OK) return "message " + std::to_string(m.i) + ": receive " + status_name(rs) + ", send " + status_name(ss);
        if (static_cast<int>(info.sender_tag & 0xffffffffu) != m.i) return "message " + std::to_string(m.i) + " matched tag " + std::to_string(info.sender_tag);
        // The sender's data: the pattern of the sender's tag, in the layout of i.
        const auto lt = layout_of(m.i);
        Buffer sent(*lt, 1, info.sender_tag);
        m.dst_at->fetch();
        // The whole message, not only the bytes the receive says came: a short one fails here.
        const int64_t bytes = packed_size(m.i);
        if (info.length != bytes)
            return "message " + std::to_string(m.i) + ": the receive reports " + std::to_string(info.length) +
                   " bytes, the message packs to " + std::to_string(bytes);
        const std::string bad = T::check_received(*lt, 1, *m.dst, m.poison, packed(*lt, sent.ptr(), 1, bytes), bytes);
        return bad.empty() ? "" : "message " + std::to_string(m.i) + ": " + bad;
    };
    for (int i = 0; i < kMessages; ++i) {
        if (static_cast<int>(window.size()) >= kWindow) {
            if (std::string e = finish(window.front()); !e.empty()) return e;
            window.pop_front();
        }
        Msg &m = window.emplace_back();
        m.i = i;
        const auto lt = layout_of(i);
        const ucp_tag_t tag = (static_cast<ucp_tag_t>(t) << 32) | static_cast<ucp_tag_t>(i);
        m.src = std::make_unique<Buffer>(*lt, 1, tag);
        m.dst = std::make_unique<Buffer>(*lt, 1, ~tag);
        m.poison = m.dst->bytes;
        m.src_at = std::make_unique<Placed>(*m.src, mem);
        m.dst_at = std::make_unique<Placed>(*m.dst, mem);
        const ucp_tag_t mask = i % 4 == 3 ? 0xffffffffull : ~0ull;
        if (i % 8 == 5) {
            // Sent first, then probed (every other one with remove, and received by its handle).
            // Its index is never one that the receives of any thread's message take.
            m.sreq = ucxdt_tag_send_nbx(p.ep[d], m.src_at->ptr(), 1, types[i % 3]->h, tag, nullptr);
            if (UCXDT_PTR_IS_ERR(m.sreq)) return "send " + std::to_string(i) + " failed: " + status_name(UCXDT_PTR_STATUS(m.sreq));
            const int remove = i % 16 == 13;
            ucxdt_tag_recv_info_t info{};
            ucxdt_tag_message_h msg;
            while (!(msg = ucxdt_tag_probe_nb(p.w[1 - d], tag, ~0ull, remove, &info))) {
                if (stop || std::chrono::steady_clock::now() > deadline) return "message " + std::to_string(i) + " never probed";
                progress();
            }
            if (info.sender_tag != tag || info.length != packed_size(i)) return "probe " + std::to_string(i) + ": wrong tag or length";
            m.rreq = remove ? ucxdt_tag_msg_recv_nbx(p.w[1 - d], m.dst_at->ptr(), 1, types[i % 3]->h, msg, nullptr)
                            : ucxdt_tag_recv_nbx(p.w[1 - d], m.dst_at->ptr(), 1, types[i % 3]->h, tag, ~0ull, nullptr);
            if (!UCXDT_PTR_IS_PTR(m.rreq)) return "receive " + std::to_string(i) + " not posted: " + ucxdt_last_error();
        } else {
            m.rreq = ucxdt_tag_recv_nbx(p.w[1 - d], m.dst_at->ptr(), 1, types[i % 3]->h, tag, mask, nullptr);
            if (!UCXDT_PTR_IS_PTR(m.rreq)) return "receive " + std::to_string(i) + " not posted: " + ucxdt_last_error();
            m.sreq = ucxdt_tag_send_nbx(p.ep[d], m.src_at->ptr(), 1, types[i % 3]->h, tag, nullptr);
            if (UCXDT_PTR_IS_ERR(m.sreq)) return "send " + std::to_string(i) + " failed: " + status_name(UCXDT_PTR_STATUS(m.sreq));
        }
        if (i % 50 == 0) {
            Buffer none(*layout_of(0), 1, 1);
            ucxdt_status_ptr_t c = ucxdt_tag_recv_nbx(p.w[1 - d], none.ptr(), 1, types[0]->h, kUnsent | tag, ~0ull, nullptr);
            if (!UCXDT_PTR_IS_PTR(c)) return "cancel receive not posted";
            ucxdt_request_cancel(p.w[1 - d], c);
            while (ucxdt_request_check_status(c) == UCXDT_INPROGRESS && std::chrono::steady_clock::now() < deadline) progress();
            const int cs = ucxdt_request_check_status(c);
            ucxdt_request_free(c);
            if (cs != UCXDT_ERR_CANCELED) return "a canceled receive ended with " + status_name(cs);
        }
        progress();
    }
    for (Msg &m : window)
        if (std::string e = finish(m); !e.empty()) return e;
    return "";
}

void threads_case(Mem mem) {
    MtPair p;
    ASSERT_EQ(p.error, "");
    std::atomic<bool> stop{false};
    std::vector<std::string> results(kThreads);
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t)
        threads.emplace_back([&, t] {
            results[t] = run_thread(p, t, mem, stop);
            if (!results[t].empty()) stop = true;  // the others give up rather than wait out their limit
        });
    for (auto &th : threads) th.join();
    for (int t = 0; t < kThreads; ++t) EXPECT_EQ(results[t], "") << mem_name(mem) << ", thread " << t;
}

// 8 threads, each posting 1,000 sends and 1,000 receives with layouts of 128 B-40 KB (eager
// and rendezvous), masks that take any thread's message, probes, matched receives and canceled
// receives: every message
// arrives with its data, none is lost, nothing hangs.
TEST(RndvThreads, EightThreadsOnOneMultiThreadedWorkerPair) { threads_case(Mem::host); }

TEST(RndvThreads, EightThreadsOnGpuLayouts) {
    if (!have_gpu()) GTEST_SKIP() << "no CUDA device: GPU layouts under threads are untested here";
    threads_case(Mem::cuda);
}

}  // namespace
