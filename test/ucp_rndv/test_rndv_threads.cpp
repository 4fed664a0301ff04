// A ucxdt worker over a UCS_THREAD_MODE_MULTI UCP worker (MPI_THREAD_MULTIPLE): any thread
// posts, progresses, tests, cancels and frees (include/ucxdt/ucxdt_ucp.h, "Threads").
#include "harness/layout_buffer.hpp"
#include "harness/rndv_support.hpp"
#include "harness/ucp_pair.hpp"
#include "support/worker_address.hpp"

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

// ---- First contact under threads: three workers, endpoints made by the threads that use them --
// Three MULTI workers of one context, a UCP endpoint from each to each other made beforehand, no
// ucxdt endpoint. Thread (h, p), one per ordered pair, makes the ucxdt endpoint from worker h to
// worker p as all threads start at once, and sends its first messages on it at once: a
// rendezvous one cannot finish before thread (p, h) has made the endpoint back (its HELLO
// introduces p to h), which races with it. Then per message, kMeshWindow at a time: receives
// on p with the exact tag or (every fourth) any sender's message of that index, sends freed by
// ucxdt_request_free while they run (every sixth: their receive alone says they arrived),
// probes with and without remove, a probe of any tag that races the other threads' receives, and
// receives that nothing matches, canceled and either waited for or freed while the cancel
// runs. Layouts of 128 B (eager), 40 KB and 320 KB (rendezvous); every receive is checked
// byte for byte against its sender's pattern.
constexpr int kMeshWorkers = 3, kMeshThreads = kMeshWorkers * (kMeshWorkers - 1), kMeshWindow = 4;
constexpr int kMeshMessages = 60;  // per thread

L::TypeDescPtr mesh_layout_of(int i) {
    static const L::TypeDescPtr kinds[3] = {L::vector(4, 4, 6, dbl), L::vector(1280, 4, 6, dbl),
                                            L::vector(10240, 4, 6, dbl)};
    return kinds[i % 3];
}

struct Mesh {
    ucp_context_h ctx = nullptr;
    ucp_worker_h uw[kMeshWorkers] = {};
    ucp_ep_h uep[kMeshWorkers][kMeshWorkers] = {};  // uep[h][p]: on uw[h], to uw[p]
    ucxdt_worker_h w[kMeshWorkers] = {};
    ucxdt_ep_h ep[kMeshWorkers][kMeshWorkers] = {};  // made by thread (h, p)
    std::string error;
    Mesh() { error = open(); }
    std::string open() {
        ucp_config_t *cfg = nullptr;
        if (ucp_config_read(nullptr, nullptr, &cfg) != UCS_OK) return "ucp_config_read";
        ucp_params_t params{};
        params.field_mask = UCP_PARAM_FIELD_FEATURES | UCP_PARAM_FIELD_MT_WORKERS_SHARED;
        params.features = UCP_FEATURE_TAG | UCP_FEATURE_AM | UCP_FEATURE_RMA;
        params.mt_workers_shared = 1;
        ucs_status_t st = ucp_init(&params, cfg, &ctx);
        ucp_config_release(cfg);
        if (st != UCS_OK) return std::string("ucp_init: ") + ucs_status_string(st);
        for (auto &x : uw) {
            ucp_worker_params_t wp{};
            wp.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
            wp.thread_mode = UCS_THREAD_MODE_MULTI;
            if ((st = ucp_worker_create(ctx, &wp, &x)) != UCS_OK) return std::string("ucp_worker_create: ") + ucs_status_string(st);
        }
        for (int p = 0; p < kMeshWorkers; ++p) {
            std::string addr;
            if ((st = T::worker_address(uw[p], &addr)) != UCS_OK) return std::string("ucp_worker_query: ") + ucs_status_string(st);
            for (int h = 0; h < kMeshWorkers; ++h) {
                if (h == p) continue;
                ucp_ep_params_t ep_params{};
                ep_params.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS;
                ep_params.address = reinterpret_cast<const ucp_address_t *>(addr.data());
                if ((st = ucp_ep_create(uw[h], &ep_params, &uep[h][p])) != UCS_OK)
                    return std::string("ucp_ep_create: ") + ucs_status_string(st);
            }
        }
        for (int i = 0; i < kMeshWorkers; ++i)
            if (std::string e = T::create_rndv_worker(ctx, uw[i], T::RndvConfig{1024, 16384, 2, 8}, &w[i]); !e.empty()) return e;
        return "";
    }
    ~Mesh() {
        for (auto &row : ep)
            for (auto e : row)
                if (e) ucxdt_ep_destroy(e);
        for (auto x : w)
            if (x) ucxdt_worker_destroy(x);
        for (int h = 0; h < kMeshWorkers; ++h)
            for (int p = 0; p < kMeshWorkers; ++p) {
                if (!uep[h][p]) continue;
                ucp_request_param_t rp{};
                rp.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
                rp.flags = UCP_EP_CLOSE_FLAG_FORCE;
                void *r = ucp_ep_close_nbx(uep[h][p], &rp);
                if (r == nullptr || UCS_PTR_IS_ERR(r)) continue;
                while (ucp_request_check_status(r) == UCS_INPROGRESS)
                    for (auto x : uw) ucp_worker_progress(x);
                ucp_request_free(r);
            }
        for (auto x : uw)
            if (x) ucp_worker_destroy(x);
        if (ctx) ucp_cleanup(ctx);
    }
};

// What one thread leaves for the case to check, and the source buffers of its freed sends,
// which the case keeps until the workers are gone (nothing says when a freed send ended).
struct MeshThreadResult {
    std::string error;
    int freed_sends = 0, canceled = 0, freed_canceled = 0, probed_any = 0;
    std::vector<std::unique_ptr<Buffer>> kept;
};

std::string run_mesh_thread(Mesh &m, int h, int p, int t, std::atomic<int> &ready, std::atomic<bool> &stop,
                            MeshThreadResult &out) {
    std::vector<std::unique_ptr<Type>> types;
    std::vector<int64_t> sizes;
    for (int k = 0; k < 3; ++k) {
        types.push_back(std::make_unique<Type>(*mesh_layout_of(k)));
        int64_t size = 0;
        ucxdt_type_size(types.back()->h, &size);
        sizes.push_back(size);
    }
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(240);
    auto progress = [&] {
        ucxdt_worker_progress(m.w[h]);
        ucxdt_worker_progress(m.w[p]);
    };
    auto late = [&] { return stop || std::chrono::steady_clock::now() > deadline; };
    std::deque<Msg> window;
    auto finish = [&](Msg &msg) -> std::string {
        while (ucxdt_request_check_status(msg.rreq) == UCXDT_INPROGRESS ||
               (msg.sreq && ucxdt_request_check_status(msg.sreq) == UCXDT_INPROGRESS)) {
            if (late()) return "message " + std::to_string(msg.i) + " did not complete";
            progress();
        }
        ucxdt_tag_recv_info_t info{};
        const int rs = ucxdt_tag_recv_request_test(msg.rreq, &info);
        ucxdt_request_free(msg.rreq);
        const int ss = msg.sreq ? ucxdt_request_check_status(msg.sreq) : UCXDT_OK;
        if (msg.sreq) ucxdt_request_free(msg.sreq);
        const std::string what = "message " + std::to_string(msg.i) + " of thread " + std::to_string(t);
        if (rs != UCXDT_OK || ss != UCXDT_OK) return what + ": receive " + status_name(rs) + ", send " + status_name(ss);
        if (static_cast<int>(info.sender_tag & 0xffffffffu) != msg.i) return what + " matched tag " + std::to_string(info.sender_tag);
        const auto lt = mesh_layout_of(msg.i);
        if (info.length != sizes[msg.i % 3])
            return what + ": the receive reports " + std::to_string(info.length) + " bytes of " + std::to_string(sizes[msg.i % 3]);
        Buffer sent(*lt, 1, info.sender_tag);
        const std::string bad = T::check_received(*lt, 1, *msg.dst, msg.poison, packed(*lt, sent.ptr(), 1, info.length), info.length);
        return bad.empty() ? "" : what + ": " + bad;
    };
    // All threads start together: the endpoints are made at once.
    ++ready;
    while (ready.load() < kMeshThreads) {
        if (late()) return "the other threads did not start";
        std::this_thread::yield();
    }
    if (std::string e = T::create_rndv_ep(m.w[h], m.uep[h][p], &m.ep[h][p]); !e.empty()) return e;
    // The first messages, indexes 2 (320 KB, rendezvous) and 0 (128 B), go before their
    // receives are posted; then index 1 and on in order.
    for (int i = 0; i < kMeshMessages; ++i) {
        if (static_cast<int>(window.size()) >= kMeshWindow) {
            if (std::string e = finish(window.front()); !e.empty()) return e;
            window.pop_front();
        }
        const int idx = i == 0 ? 2 : i == 1 ? 0 : i == 2 ? 1 : i;
        Msg &msg = window.emplace_back();
        msg.i = idx;
        const auto lt = mesh_layout_of(idx);
        const ucp_tag_t tag = (static_cast<ucp_tag_t>(t) << 32) | static_cast<ucp_tag_t>(idx);
        auto src = std::make_unique<Buffer>(*lt, 1, tag);
        msg.dst = std::make_unique<Buffer>(*lt, 1, ~tag);
        msg.poison = msg.dst->bytes;
        Type &type = *types[idx % 3];
        const bool first = i < 2, probe = !first && idx % 8 == 5, freed = !first && idx % 6 == 1;
        const ucp_tag_t mask = !first && idx % 4 == 3 ? 0xffffffffull : ~0ull;
        auto send = [&]() -> std::string {
            msg.sreq = ucxdt_tag_send_nbx(m.ep[h][p], src->ptr(), 1, type.h, tag, nullptr);
            if (UCXDT_PTR_IS_ERR(msg.sreq)) return "send " + std::to_string(idx) + " failed: " + status_name(UCXDT_PTR_STATUS(msg.sreq));
            if (freed && msg.sreq) ucxdt_request_free(msg.sreq), msg.sreq = nullptr, ++out.freed_sends;
            return "";
        };
        if (first || probe) {
            if (std::string e = send(); !e.empty()) return e;
        }
        if (probe) {
            const int remove = idx % 16 == 13;
            ucxdt_tag_recv_info_t info{};
            ucxdt_tag_message_h found;
            while (!(found = ucxdt_tag_probe_nb(m.w[p], tag, ~0ull, remove, &info))) {
                if (late()) return "message " + std::to_string(idx) + " never probed";
                progress();
            }
            if (info.sender_tag != tag || info.length != sizes[idx % 3]) return "probe " + std::to_string(idx) + ": wrong tag or length";
            msg.rreq = remove ? ucxdt_tag_msg_recv_nbx(m.w[p], msg.dst->ptr(), 1, type.h, found, nullptr)
                              : ucxdt_tag_recv_nbx(m.w[p], msg.dst->ptr(), 1, type.h, tag, ~0ull, nullptr);
        } else {
            msg.rreq = ucxdt_tag_recv_nbx(m.w[p], msg.dst->ptr(), 1, type.h, tag, mask, nullptr);
        }
        if (!UCXDT_PTR_IS_PTR(msg.rreq)) return "receive " + std::to_string(idx) + " not posted: " + ucxdt_last_error();
        if (!first && !probe) {
            if (std::string e = send(); !e.empty()) return e;
        }
        if (freed) out.kept.push_back(std::move(src));
        else msg.src = std::move(src);
        if (idx % 7 == 2) {  // any message of any thread on p: one that some thread sends there
            ucxdt_tag_recv_info_t info{};
            if (ucxdt_tag_probe_nb(m.w[p], 0, 0, 0, &info)) {
                ++out.probed_any;
                const uint64_t from = info.sender_tag >> 32, index = info.sender_tag & 0xffffffffu;
                if (from >= kMeshThreads || index >= static_cast<uint64_t>(kMeshMessages) || info.length != sizes[index % 3])
                    return "a probe of any tag saw tag " + std::to_string(info.sender_tag) + ", " + std::to_string(info.length) + " bytes";
            }
        }
        if (idx % 10 == 3) {  // a receive nothing matches, canceled
            auto none = std::make_unique<Buffer>(*mesh_layout_of(idx), 1, 1);
            const std::vector<std::byte> before = none->bytes;
            ucxdt_status_ptr_t c = ucxdt_tag_recv_nbx(m.w[p], none->ptr(), 1, type.h, kUnsent | tag, ~0ull, nullptr);
            if (!UCXDT_PTR_IS_PTR(c)) return "a receive to cancel was not posted";
            ucxdt_request_cancel(m.w[p], c);
            if (idx % 20 == 13) {
                // Freed while its cancel may still run (it ends on its own): its buffer is kept
                // until the workers are gone.
                ucxdt_request_free(c);
                out.kept.push_back(std::move(none));
                ++out.freed_canceled;
            } else {
                int cs;
                while ((cs = ucxdt_request_check_status(c)) == UCXDT_INPROGRESS) {
                    if (late()) return "a canceled receive did not end";
                    progress();
                }
                ucxdt_request_free(c);
                if (cs != UCXDT_ERR_CANCELED) return "a canceled receive ended with " + status_name(cs);
                if (none->bytes != before) return "a canceled receive wrote its buffer";
                ++out.canceled;
            }
        }
        progress();
    }
    for (Msg &msg : window)
        if (std::string e = finish(msg); !e.empty()) return e;
    return "";
}

// The case above, its threads all started at once.
TEST(RndvThreads, FirstContactProbeCancelAndFreeOnThreeWorkers) {
    std::vector<MeshThreadResult> results(kMeshThreads);  // outlives the workers (kept buffers)
    Mesh m;
    ASSERT_EQ(m.error, "");
    std::atomic<int> ready{0};
    std::atomic<bool> stop{false};
    std::vector<std::thread> threads;
    int t = 0;
    for (int h = 0; h < kMeshWorkers; ++h)
        for (int p = 0; p < kMeshWorkers; ++p) {
            if (h == p) continue;
            threads.emplace_back([&, h, p, t] {
                results[t].error = run_mesh_thread(m, h, p, t, ready, stop, results[t]);
                if (!results[t].error.empty()) stop = true;
            });
            ++t;
        }
    for (auto &th : threads) th.join();
    int freed = 0, canceled = 0, freed_canceled = 0;
    for (int i = 0; i < kMeshThreads; ++i) {
        EXPECT_EQ(results[i].error, "") << "thread " << i;
        freed += results[i].freed_sends, canceled += results[i].canceled, freed_canceled += results[i].freed_canceled;
    }
    // What the case says it does, it did (none of these is left to chance).
    EXPECT_GT(freed, 0);
    EXPECT_GT(canceled, 0);
    EXPECT_GT(freed_canceled, 0);
}

}  // namespace
