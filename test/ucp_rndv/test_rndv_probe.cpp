// Probe and matched receive (include/ucxdt/ucxdt_ucp.h: ucxdt_tag_probe_nb,
// ucxdt_tag_msg_recv_nbx; MPI_Iprobe, MPI_Improbe and MPI_Mrecv, MPI-4.1 §3.8), and how they
// keep the order of matching and the completion of synchronous sends. Two workers of one
// process; host memory, and GPU memory in the Gpu cases, which skip without a GPU.
#include "harness/layout_buffer.hpp"
#include "harness/rndv_support.hpp"

#include <ucxdt/ucxdt_ucp.h>

#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace {

namespace L = ucxdt::layouts;
namespace T = ucxdt::testing;
using T::Buffer, T::Mem, T::mem_name, T::packed, T::Placed, T::status_name, T::Type;

// Eager threshold 1 KiB: 16 doubles (128 B) go eager, 10,240 (80 KB) by the rendezvous.
const T::RndvConfig kConfig{1024, 16384, 2, 8};
const auto dbl = L::named(UCXDT_DOUBLE);

// A pair of workers whose HELLOs are through; callers ASSERT_EQ(p.error, "").
struct Pair : T::RndvPair {
    Pair() : T::RndvPair{kConfig} {
        for (int i = 0; error.empty() && i < 200; ++i) progress();
    }
};

#define SKIP_WITHOUT_GPU(what) \
    if (!T::have_gpu()) GTEST_SKIP() << "no CUDA device: " what " on GPU memory are untested here"

// Probes until a message of (tag, mask) is found or 10 s pass, progressing both workers.
ucxdt_tag_message_h probe(T::RndvPair &p, ucp_tag_t tag, ucp_tag_t mask, int remove, ucxdt_tag_recv_info_t *info) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    for (;;) {
        if (ucxdt_tag_message_h m = ucxdt_tag_probe_nb(p.w[1], tag, mask, remove, info)) return m;
        if (std::chrono::steady_clock::now() > deadline) return nullptr;
        p.progress();
    }
}

// One message of `n` doubles (a vector layout, 4 of every 6), its source and a receive of it.
struct Msg {
    L::TypeDescPtr t;
    std::unique_ptr<Type> h;
    std::unique_ptr<Buffer> src, dst;
    std::unique_ptr<Placed> src_at, dst_at;
    std::vector<std::byte> poison;
    int64_t bytes;
    Msg(int64_t n, Mem m, int seed) : t(L::vector(n / 4, 4, 6, dbl)), bytes(n * 8) {
        h = std::make_unique<Type>(*t);
        src = std::make_unique<Buffer>(*t, 1, seed);
        dst = std::make_unique<Buffer>(*t, 1, seed + 1000);
        poison = dst->bytes;
        src_at = std::make_unique<Placed>(*src, m);
        dst_at = std::make_unique<Placed>(*dst, m);
    }
    std::string received() {
        dst_at->fetch();
        return T::check_received(*t, 1, *dst, poison, packed(*t, src->ptr(), 1, bytes), bytes);
    }
    bool untouched() {
        dst_at->fetch();
        return dst->bytes == poison;
    }
};

// A probe finds nothing before the send; once the message is here it reports the sender's full
// tag and the packed length (eager and rendezvous) with nothing written to any receive; without
// `remove` the message stays, a second probe finds it again, and a receive of the tag takes it.
void shows_tag_and_length(T::RndvPair &p, Mem m) {
    for (int64_t n : {16, 10240}) {
        const std::string what = std::string(mem_name(m)) + ", " + std::to_string(n * 8) + " bytes";
        Msg a(n, m, static_cast<int>(n));
        const ucp_tag_t tag = 0x5100000000000000ull + static_cast<ucp_tag_t>(n);
        ucxdt_tag_recv_info_t info{777, 777};
        EXPECT_EQ(ucxdt_tag_probe_nb(p.w[1], tag, ~0ull, 0, &info), nullptr) << what << ": a message before the send";
        EXPECT_EQ(info.sender_tag, 777u) << what;
        ucxdt_status_ptr_t sreq = ucxdt_tag_send_nbx(p.ep[0], a.src_at->ptr(), 1, a.h->h, tag, nullptr);
        ASSERT_FALSE(UCXDT_PTR_IS_ERR(sreq)) << what << ": " << ucxdt_last_error();
        // The low 32 bits matched only: the sender's whole tag comes back.
        ASSERT_NE(probe(p, tag & 0xffffffffull, 0xffffffffull, 0, &info), nullptr) << what;
        EXPECT_EQ(info.sender_tag, tag) << what;
        EXPECT_EQ(info.length, a.bytes) << what;
        ucxdt_tag_recv_info_t again{};
        EXPECT_NE(ucxdt_tag_probe_nb(p.w[1], tag, ~0ull, 0, &again), nullptr) << what << ": a probe removed it";
        EXPECT_EQ(again.length, a.bytes) << what;
        EXPECT_TRUE(a.untouched()) << what;
        ucxdt_status_ptr_t rreq = ucxdt_tag_recv_nbx(p.w[1], a.dst_at->ptr(), 1, a.h->h, tag, ~0ull, nullptr);
        ASSERT_TRUE(UCXDT_PTR_IS_PTR(rreq)) << what;
        EXPECT_EQ(status_name(p.wait(rreq)), status_name(UCXDT_OK)) << what;
        EXPECT_EQ(a.received(), "") << what;
        if (sreq) {
            EXPECT_EQ(status_name(p.wait(sreq)), status_name(UCXDT_OK)) << what;
        }
        EXPECT_EQ(ucxdt_tag_probe_nb(p.w[1], tag, ~0ull, 0, &info), nullptr) << what << ": received twice";
    }
}

TEST(RndvProbe, ShowsTagAndPackedLengthAndLeavesTheMessage) {
    Pair p;
    ASSERT_EQ(p.error, "");
    shows_tag_and_length(p, Mem::host);
    ucxdt_tag_recv_info_t info{};
    EXPECT_EQ(ucxdt_tag_probe_nb(nullptr, 0, 0, 0, &info), nullptr);
    EXPECT_EQ(ucxdt_tag_probe_nb(p.w[1], 0, 0, 0, nullptr), nullptr);
}

TEST(RndvProbe, GpuShowsTagAndPackedLengthAndLeavesTheMessage) {
    SKIP_WITHOUT_GPU("probes");
    Pair p;
    ASSERT_EQ(p.error, "");
    shows_tag_and_length(p, Mem::cuda);
}

// A probe with `remove` takes the message out of matching: no later probe finds it and a
// receive whose tag and mask match it is left waiting; ucxdt_tag_msg_recv_nbx receives exactly
// it. A bad type fails that call and leaves the message for the next; a spent or unknown handle
// is refused.
void removed_message(T::RndvPair &p, Mem m) {
    for (int64_t n : {16, 10240}) {
        const std::string what = std::string(mem_name(m)) + ", " + std::to_string(n * 8) + " bytes";
        Msg a(n, m, 7 + static_cast<int>(n)), b(n, m, 9 + static_cast<int>(n));
        ucxdt_status_ptr_t sa = ucxdt_tag_send_nbx(p.ep[0], a.src_at->ptr(), 1, a.h->h, 0x61, nullptr);
        ASSERT_FALSE(UCXDT_PTR_IS_ERR(sa)) << what << ": " << ucxdt_last_error();
        ucxdt_tag_recv_info_t info{};
        ucxdt_tag_message_h msg = probe(p, 0x61, ~0ull, 1, &info);
        ASSERT_NE(msg, nullptr) << what;
        EXPECT_EQ(info.length, a.bytes) << what;
        EXPECT_EQ(ucxdt_tag_probe_nb(p.w[1], 0x61, ~0ull, 0, &info), nullptr) << what << ": found after removal";
        // A receive of any tag does not take it; it takes the next message, b.
        ucxdt_status_ptr_t rb = ucxdt_tag_recv_nbx(p.w[1], b.dst_at->ptr(), 1, b.h->h, 0, 0, nullptr);
        ASSERT_TRUE(UCXDT_PTR_IS_PTR(rb)) << what;
        for (int i = 0; i < 500; ++i) p.progress();
        EXPECT_EQ(ucxdt_request_check_status(rb), UCXDT_INPROGRESS) << what << ": a receive took a removed message";
        EXPECT_TRUE(b.untouched()) << what;
        ucxdt_status_ptr_t sb = ucxdt_tag_send_nbx(p.ep[0], b.src_at->ptr(), 1, b.h->h, 0x62, nullptr);
        ASSERT_FALSE(UCXDT_PTR_IS_ERR(sb));
        EXPECT_EQ(status_name(p.wait(rb)), status_name(UCXDT_OK)) << what;
        EXPECT_EQ(b.received(), "") << what;
        // A freed type fails the call and the message stays.
        ucxdt_type_t gone = UCXDT_TYPE_NULL;
        ASSERT_EQ(ucxdt_type_dup(a.h->h, &gone), UCXDT_OK);
        ASSERT_EQ(ucxdt_type_free(&gone), UCXDT_OK);
        ucxdt_status_ptr_t bad = ucxdt_tag_msg_recv_nbx(p.w[1], a.dst_at->ptr(), 1, gone, msg, nullptr);
        EXPECT_TRUE(UCXDT_PTR_IS_ERR(bad)) << what;
        EXPECT_TRUE(a.untouched()) << what;
        ucxdt_status_ptr_t ra = ucxdt_tag_msg_recv_nbx(p.w[1], a.dst_at->ptr(), 1, a.h->h, msg, nullptr);
        ASSERT_FALSE(UCXDT_PTR_IS_ERR(ra)) << what << ": " << ucxdt_last_error();
        ucxdt_request_cancel(p.w[1], ra);  // matched already: runs to completion
        ucxdt_tag_recv_info_t got{};
        const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
        while (ucxdt_request_check_status(ra) == UCXDT_INPROGRESS && std::chrono::steady_clock::now() < deadline)
            p.progress();
        EXPECT_EQ(status_name(ucxdt_tag_recv_request_test(ra, &got)), status_name(UCXDT_OK)) << what;
        EXPECT_EQ(got.sender_tag, 0x61u) << what;
        EXPECT_EQ(got.length, a.bytes) << what;
        ucxdt_request_free(ra);
        EXPECT_EQ(a.received(), "") << what;
        EXPECT_EQ(UCXDT_PTR_STATUS(ucxdt_tag_msg_recv_nbx(p.w[1], a.dst_at->ptr(), 1, a.h->h, msg, nullptr)),
                  UCXDT_ERR_INVALID_PARAM)
            << what << ": a spent handle";
        for (ucxdt_status_ptr_t s : {sa, sb})
            if (s) {
                EXPECT_EQ(status_name(p.wait(s)), status_name(UCXDT_OK)) << what;
            }
    }
}

TEST(RndvProbe, RemovedMessageIsReceivedOnlyByItsHandle) {
    Pair p;
    ASSERT_EQ(p.error, "");
    removed_message(p, Mem::host);
    if (HasFatalFailure()) return;
    // A handle that a probe without `remove` returned is not for a matched receive.
    const auto t = L::vector(4, 4, 6, dbl);
    Type h(*t);
    Buffer src(*t, 1, 1), dst(*t, 1, 2);
    ucxdt_status_ptr_t s = ucxdt_tag_send_nbx(p.ep[0], src.ptr(), 1, h.h, 0x63, nullptr);
    ucxdt_tag_recv_info_t info{};
    ucxdt_tag_message_h kept = probe(p, 0x63, ~0ull, 0, &info);
    ASSERT_NE(kept, nullptr);
    EXPECT_EQ(UCXDT_PTR_STATUS(ucxdt_tag_msg_recv_nbx(p.w[1], dst.ptr(), 1, h.h, kept, nullptr)), UCXDT_ERR_INVALID_PARAM);
    EXPECT_EQ(status_name(p.wait(ucxdt_tag_recv_nbx(p.w[1], dst.ptr(), 1, h.h, 0x63, ~0ull, nullptr))), status_name(UCXDT_OK));
    if (s) p.wait(s);
}

TEST(RndvProbe, GpuRemovedMessageIsReceivedOnlyByItsHandle) {
    SKIP_WITHOUT_GPU("removing probes");
    Pair p;
    ASSERT_EQ(p.error, "");
    removed_message(p, Mem::cuda);
}

// Probes keep MPI's non-overtaking order (MPI-4.1 §3.5, §3.8.1): of five messages with one tag
// from one endpoint (eager and rendezvous mixed), a probe shows the first; a receive then takes
// that one; a removing probe takes the second, and a plain receive posted after it the third;
// the matched receive of the second and receives of the rest get theirs.
void send_order(Mem m) {
    Pair p;
    ASSERT_EQ(p.error, "");
    const int64_t sizes[] = {16, 10240, 4, 1024, 8};
    std::vector<std::unique_ptr<Msg>> msgs;
    std::vector<ucxdt_status_ptr_t> sends;
    for (int k = 0; k < 5; ++k) {
        msgs.push_back(std::make_unique<Msg>(sizes[k], m, 40 + k));
        sends.push_back(ucxdt_tag_send_nbx(p.ep[0], msgs[k]->src_at->ptr(), 1, msgs[k]->h->h, 0x70, nullptr));
        ASSERT_FALSE(UCXDT_PTR_IS_ERR(sends[k])) << ucxdt_last_error();
    }
    auto recv = [&](int k) {
        return ucxdt_tag_recv_nbx(p.w[1], msgs[k]->dst_at->ptr(), 1, msgs[k]->h->h, 0x70, ~0ull, nullptr);
    };
    ucxdt_tag_recv_info_t info{};
    ASSERT_NE(probe(p, 0x70, ~0ull, 0, &info), nullptr) << mem_name(m);
    EXPECT_EQ(info.length, msgs[0]->bytes) << mem_name(m) << ": the probe showed a later message";
    EXPECT_EQ(status_name(p.wait(recv(0))), status_name(UCXDT_OK)) << mem_name(m);
    ucxdt_tag_message_h second = probe(p, 0x70, ~0ull, 1, &info);
    ASSERT_NE(second, nullptr) << mem_name(m);
    EXPECT_EQ(info.length, msgs[1]->bytes) << mem_name(m);
    EXPECT_EQ(status_name(p.wait(recv(2))), status_name(UCXDT_OK)) << mem_name(m) << ": the third message";
    EXPECT_EQ(status_name(p.wait(ucxdt_tag_msg_recv_nbx(p.w[1], msgs[1]->dst_at->ptr(), 1, msgs[1]->h->h, second, nullptr))),
              status_name(UCXDT_OK))
        << mem_name(m);
    EXPECT_EQ(status_name(p.wait(recv(3))), status_name(UCXDT_OK)) << mem_name(m);
    EXPECT_EQ(status_name(p.wait(recv(4))), status_name(UCXDT_OK)) << mem_name(m);
    for (int k = 0; k < 5; ++k) EXPECT_EQ(msgs[k]->received(), "") << mem_name(m) << ", message " << k;
    for (ucxdt_status_ptr_t s : sends)
        if (s) {
            EXPECT_EQ(status_name(p.wait(s)), status_name(UCXDT_OK)) << mem_name(m);
        }
}

TEST(RndvProbe, ProbesAndReceivesKeepSendOrder) { send_order(Mem::host); }

TEST(RndvProbe, GpuProbesAndReceivesKeepSendOrder) {
    SKIP_WITHOUT_GPU("probes in send order");
    send_order(Mem::cuda);
}

ucxdt_request_param_t sync_param() {
    ucxdt_request_param_t sync{};
    sync.field_mask = UCXDT_REQUEST_PARAM_FIELD_FLAGS;
    sync.flags = UCXDT_SEND_FLAG_SYNC;
    return sync;
}

// A probe is no receive: a synchronous send stays incomplete after a probe, with or without
// `remove`, found its message (MPI-4.1 §3.4), eager and rendezvous, and completes once the
// receive takes it. An eager synchronous send whose receive fails (a longer message) ends with
// the receive's error (host memory).
void sync_send_and_probe(T::RndvPair &p, Mem m) {
    const ucxdt_request_param_t sync = sync_param();
    for (int remove : {0, 1})
        for (int64_t n : {16, 10240}) {
            const std::string what = std::string(mem_name(m)) + ", remove " + std::to_string(remove) + ", " +
                                     std::to_string(n * 8) + " bytes";
            Msg a(n, m, 3 + static_cast<int>(n));
            ucxdt_status_ptr_t sreq = ucxdt_tag_send_nbx(p.ep[0], a.src_at->ptr(), 1, a.h->h, 0x80, &sync);
            ASSERT_TRUE(UCXDT_PTR_IS_PTR(sreq)) << what << ": " << ucxdt_last_error();
            ucxdt_tag_recv_info_t info{};
            ucxdt_tag_message_h msg = probe(p, 0x80, ~0ull, remove, &info);
            ASSERT_NE(msg, nullptr) << what;
            for (int i = 0; i < 2000; ++i) p.progress();
            EXPECT_EQ(ucxdt_request_check_status(sreq), UCXDT_INPROGRESS) << what << ": completed by a probe";
            ucxdt_status_ptr_t rreq =
                remove ? ucxdt_tag_msg_recv_nbx(p.w[1], a.dst_at->ptr(), 1, a.h->h, msg, nullptr)
                       : ucxdt_tag_recv_nbx(p.w[1], a.dst_at->ptr(), 1, a.h->h, 0x80, ~0ull, nullptr);
            EXPECT_EQ(status_name(p.wait(rreq)), status_name(UCXDT_OK)) << what;
            EXPECT_EQ(status_name(p.wait(sreq)), status_name(UCXDT_OK)) << what;
            EXPECT_EQ(a.received(), "") << what;
        }
}

TEST(RndvProbe, SynchronousSendWaitsForTheReceiveNotTheProbe) {
    Pair p;
    ASSERT_EQ(p.error, "");
    sync_send_and_probe(p, Mem::host);
    if (HasFatalFailure()) return;
    const ucxdt_request_param_t sync = sync_param();
    const auto big = L::contiguous(32, dbl), small = L::contiguous(8, dbl);
    Type bh(*big), sh(*small);
    Buffer src(*big, 1, 1), dst(*small, 1, 2);
    const std::vector<std::byte> poison = dst.bytes;
    ucxdt_status_ptr_t sreq = ucxdt_tag_send_nbx(p.ep[0], src.ptr(), 1, bh.h, 0x81, &sync);
    ASSERT_TRUE(UCXDT_PTR_IS_PTR(sreq)) << ucxdt_last_error();
    EXPECT_EQ(status_name(p.wait(ucxdt_tag_recv_nbx(p.w[1], dst.ptr(), 1, sh.h, 0x81, ~0ull, nullptr))),
              status_name(UCXDT_ERR_TRUNCATED));
    EXPECT_EQ(status_name(p.wait(sreq)), status_name(UCXDT_ERR_TRUNCATED));
    EXPECT_EQ(dst.bytes, poison);
}

TEST(RndvProbe, GpuSynchronousSendWaitsForTheReceiveNotTheProbe) {
    SKIP_WITHOUT_GPU("synchronous sends and probes");
    Pair p;
    ASSERT_EQ(p.error, "");
    sync_send_and_probe(p, Mem::cuda);
}

}  // namespace
