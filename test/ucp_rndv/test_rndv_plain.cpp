// Plain messages (include/ucxdt/ucxdt_ucp.h, ucxdt_worker_params_t::plain_tag_bit): contiguous
// host sends go as UCP's own tagged messages, and the worker matches every message itself, in
// arrival order. Two workers of one process; receives in host memory, and in GPU memory in
// the Gpu cases, which skip without a GPU. The other rendezvous tests run again in this mode
// as ctest variants.
#include "harness/layout_buffer.hpp"
#include "harness/rndv_support.hpp"
#include "harness/scoped_env.hpp"
#include "ucp_rndv/rndv_wire.hpp"

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

constexpr int kBit = 44;
constexpr ucp_tag_t kPlain = ucp_tag_t{1} << kBit;
// Eager threshold 1 KiB; UCP's own rendezvous takes the larger plain messages.
const T::RndvConfig kConfig{1024, 16384, 2, 8, kBit};
const auto dbl = L::named(UCXDT_DOUBLE);

// The tag and length of the oldest message UCP holds on `w` (the receiver's UCP worker, before
// ucxdt's progress takes it out), after progressing it; false when none came in 10 s.
bool ucp_sees(ucp_worker_h w, ucp_tag_recv_info_t *info) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (std::chrono::steady_clock::now() < deadline) {
        ucp_worker_progress(w);
        if (ucp_tag_probe_nb(w, 0, 0, 0, info)) return true;
    }
    return false;
}

// A contiguous host message goes as UCP's message: the tag with the plain bit, the bytes with
// no ucxdt header; eager (128 B) and UCP's rendezvous (80 KB, 1 MiB) alike. Every receive form
// on `mem` takes it: contiguous (straight), a vector layout, and on host memory packed data;
// each reports the sender's tag without the bit and the bytes received, and writes nothing
// outside its layout.
void contiguous_host_sends_to(Mem mem) {
    T::RndvPair p{kConfig};
    ASSERT_EQ(p.error, "");
    for (int i = 0; i < 200; ++i) p.progress();
    for (int64_t n : {16, 10240, 131072}) {
        const auto sd = L::contiguous(n, dbl);
        Type sh(*sd);
        const auto vec = L::vector(n / 4, 4, 6, dbl);
        struct Recv {
            const char *name;
            L::TypeDescPtr d;
            Mem mem;
            uint32_t flags;
        };
        std::vector<Recv> recvs;
        if (mem == Mem::host)
            recvs = {{"contiguous", sd, Mem::host, 0}, {"vector", vec, Mem::host, 0},
                     {"packed bytes", L::contiguous(n * 8, L::named(UCXDT_BYTE)), Mem::host, UCXDT_RECV_FLAG_PACKED}};
        else
            recvs = {{"contiguous, GPU", sd, Mem::cuda, 0}, {"vector, GPU", vec, Mem::cuda, 0}};
        for (const Recv &rv : recvs) {
            const std::string what = std::string(rv.name) + ", " + std::to_string(n * 8) + " bytes";
            Buffer src(*sd, 1, 3 + n), dst(*rv.d, 1, 4 + n);
            const std::vector<std::byte> poison = dst.bytes;
            Placed dst_at(dst, rv.mem);
            const ucp_tag_t tag = 0x700 + static_cast<ucp_tag_t>(n);
            ucxdt_status_ptr_t sreq = ucxdt_tag_send_nbx(p.ep[0], src.ptr(), 1, sh.h, tag, nullptr);
            ASSERT_FALSE(UCXDT_PTR_IS_ERR(sreq)) << what << ": " << ucxdt_last_error();
            ucp_tag_recv_info_t ui{};
            ASSERT_TRUE(ucp_sees(p.ucp.w[1], &ui)) << what << ": no message reached UCP";
            EXPECT_EQ(ui.sender_tag, tag | kPlain) << what;
            EXPECT_EQ(ui.length, static_cast<size_t>(n * 8)) << what << ": not the bare bytes";
            Type rh(*rv.d);
            ucxdt_request_param_t rp{};
            rp.field_mask = UCXDT_REQUEST_PARAM_FIELD_FLAGS;
            rp.flags = rv.flags;
            ucxdt_status_ptr_t rreq = ucxdt_tag_recv_nbx(p.w[1], dst_at.ptr(), 1, rh.h, tag, ~0ull, &rp);
            ASSERT_FALSE(UCXDT_PTR_IS_ERR(rreq)) << what << ": " << ucxdt_last_error();
            ucxdt_tag_recv_info_t info{};
            if (rreq) {
                const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
                while (ucxdt_request_check_status(rreq) == UCXDT_INPROGRESS && std::chrono::steady_clock::now() < deadline)
                    p.progress();
                EXPECT_EQ(status_name(ucxdt_tag_recv_request_test(rreq, &info)), status_name(UCXDT_OK)) << what;
                ucxdt_request_free(rreq);
                EXPECT_EQ(info.sender_tag, tag) << what;
                EXPECT_EQ(info.length, n * 8) << what;
            }
            EXPECT_EQ(status_name(p.wait(sreq)), status_name(UCXDT_OK)) << what;
            dst_at.fetch();
            EXPECT_EQ(T::check_received(*rv.d, 1, dst, poison, packed(*sd, src.ptr(), 1, n * 8), n * 8), "") << what;
        }
    }
}

TEST(RndvPlain, ContiguousHostSendsGoAsUcpMessagesToEveryReceive) { contiguous_host_sends_to(Mem::host); }

// The same messages into receives in GPU memory.
TEST(RndvPlain, GpuReceivesOfContiguousHostSends) {
    if (!T::have_gpu()) GTEST_SKIP() << "no CUDA device: plain messages into GPU memory are untested here";
    contiguous_host_sends_to(Mem::cuda);
}

// Sends of one endpoint arrive in call order whatever form each takes (MPI-4.1 §3.5): plain
// and ucxdt messages (a vector layout: eager and rendezvous) of one tag, received by receives
// posted before and after they came, each get the message of their turn.
TEST(RndvPlain, PlainAndUcxdtMessagesMatchInSendOrder) {
    T::RndvPair p{kConfig};
    ASSERT_EQ(p.error, "");
    for (int i = 0; i < 200; ++i) p.progress();
    // Alternating forms and sizes; every receive takes the whole vector layout of its message.
    const int64_t sizes[] = {16, 16, 10240, 10240, 16, 10240, 131072, 16};
    for (bool posted_first : {true, false}) {
        std::vector<std::unique_ptr<Buffer>> src, dst;
        std::vector<std::vector<std::byte>> poison;
        std::vector<L::TypeDescPtr> sds, rds;
        std::vector<std::unique_ptr<Type>> shs, rhs;
        std::vector<ucxdt_status_ptr_t> sreq, rreq;
        for (size_t i = 0; i < std::size(sizes); ++i) {
            const int64_t n = sizes[i];
            sds.push_back(i % 2 ? L::vector(n / 4, 4, 6, dbl) : L::contiguous(n, dbl));
            rds.push_back(L::vector(n / 2, 2, 3, dbl));
            shs.push_back(std::make_unique<Type>(*sds.back()));
            rhs.push_back(std::make_unique<Type>(*rds.back()));
            src.push_back(std::make_unique<Buffer>(*sds.back(), 1, 100 + i));
            dst.push_back(std::make_unique<Buffer>(*rds.back(), 1, 200 + i));
            poison.push_back(dst.back()->bytes);
        }
        auto post_recvs = [&] {
            for (size_t i = 0; i < std::size(sizes); ++i)
                rreq.push_back(ucxdt_tag_recv_nbx(p.w[1], dst[i]->ptr(), 1, rhs[i]->h, 0x42, ~0ull, nullptr));
        };
        if (posted_first) post_recvs();
        for (size_t i = 0; i < std::size(sizes); ++i)
            sreq.push_back(ucxdt_tag_send_nbx(p.ep[0], src[i]->ptr(), 1, shs[i]->h, 0x42, nullptr));
        if (!posted_first) {
            for (int k = 0; k < 2000; ++k) p.progress();  // the messages arrive, unexpected
            post_recvs();
        }
        for (size_t i = 0; i < std::size(sizes); ++i) {
            const std::string what = std::string(posted_first ? "posted first" : "unexpected") + ", message " +
                                     std::to_string(i) + (i % 2 ? " (ucxdt)" : " (plain)");
            ASSERT_FALSE(UCXDT_PTR_IS_ERR(rreq[i])) << what;
            EXPECT_EQ(status_name(p.wait(rreq[i])), status_name(UCXDT_OK)) << what;
            EXPECT_EQ(status_name(p.wait(sreq[i])), status_name(UCXDT_OK)) << what;
            const int64_t bytes = sizes[i] * 8;
            EXPECT_EQ(T::check_received(*rds[i], 1, *dst[i], poison[i], packed(*sds[i], src[i]->ptr(), 1, bytes), bytes), "")
                << what;
        }
    }
}

// Small plain sends that UCP cannot send at once (its shared-memory queue full: the receiver
// does not progress) get their request after UCP took them, and still complete in order with
// their data once the receives come; the sender saw at least one such send.
TEST(RndvPlain, SmallSendsThatUcpKeepsCompleteInOrder) {
    T::RndvPair p{kConfig};
    ASSERT_EQ(p.error, "");
    for (int i = 0; i < 200; ++i) p.progress();
    const int n = 1024;
    const auto d = L::contiguous(512, dbl);  // 4 KiB
    Type h(*d);
    std::vector<std::unique_ptr<Buffer>> src, dst;
    std::vector<std::vector<std::byte>> poison;
    std::vector<ucxdt_status_ptr_t> sreq;
    int kept = 0;
    for (int i = 0; i < n; ++i) {
        src.push_back(std::make_unique<Buffer>(*d, 1, 500 + i));
        dst.push_back(std::make_unique<Buffer>(*d, 1, 900 + i));
        poison.push_back(dst.back()->bytes);
        sreq.push_back(ucxdt_tag_send_nbx(p.ep[0], src.back()->ptr(), 1, h.h, 0x77, nullptr));
        ASSERT_FALSE(UCXDT_PTR_IS_ERR(sreq.back())) << i << ": " << ucxdt_last_error();
        kept += sreq.back() != nullptr;
        ucxdt_worker_progress(p.w[0]);  // the sender only
    }
    EXPECT_GT(kept, 0) << "UCP sent every message at once: the case is not covered";
    std::vector<ucxdt_status_ptr_t> rreq;
    for (int i = 0; i < n; ++i) rreq.push_back(ucxdt_tag_recv_nbx(p.w[1], dst[i]->ptr(), 1, h.h, 0x77, ~0ull, nullptr));
    for (int i = 0; i < n; ++i) {
        EXPECT_EQ(status_name(p.wait(rreq[i])), status_name(UCXDT_OK)) << i;
        EXPECT_EQ(status_name(p.wait(sreq[i])), status_name(UCXDT_OK)) << i;
        EXPECT_EQ(T::check_received(*d, 1, *dst[i], poison[i], packed(*d, src[i]->ptr(), 1, 4096), 4096), "") << i;
    }
}

// A plain message that its receive cannot hold fails that receive and writes nothing: too long
// (UCXDT_ERR_TRUNCATED, eager and UCP's rendezvous, contiguous and vector receives), or ending
// inside one of its primitives (12 bytes for doubles: UCXDT_ERR_TYPE_MISMATCH). A shorter one is
// a partial receive of its whole primitives. The next message still arrives.
TEST(RndvPlain, ReceivesThatCannotHoldTheBytesFailAndWriteNothing) {
    T::RndvPair p{kConfig};
    ASSERT_EQ(p.error, "");
    for (int i = 0; i < 200; ++i) p.progress();
    struct Case {
        int64_t sent_bytes;
        L::TypeDescPtr recv;
        int expect;
        int64_t got;
    };
    const Case cases[] = {
        {1024, L::contiguous(64, dbl), UCXDT_ERR_TRUNCATED, 0},
        {1 << 20, L::contiguous(1024, dbl), UCXDT_ERR_TRUNCATED, 0},
        {1024, L::vector(32, 1, 2, dbl), UCXDT_ERR_TRUNCATED, 0},
        {12, L::contiguous(8, dbl), UCXDT_ERR_TYPE_MISMATCH, 0},
        {12, L::vector(4, 1, 2, dbl), UCXDT_ERR_TYPE_MISMATCH, 0},
        {40, L::contiguous(8, dbl), UCXDT_OK, 40},
        {40, L::vector(8, 1, 2, dbl), UCXDT_OK, 40},
    };
    for (const Case &c : cases) {
        const std::string what = std::to_string(c.sent_bytes) + " bytes into " + L::to_string(*c.recv);
        const auto sd = L::contiguous(c.sent_bytes, L::named(UCXDT_BYTE));
        Type sh(*sd), rh(*c.recv);
        Buffer src(*sd, 1, 31), dst(*c.recv, 1, 32);
        const std::vector<std::byte> poison = dst.bytes;
        ucxdt_status_ptr_t rreq = ucxdt_tag_recv_nbx(p.w[1], dst.ptr(), 1, rh.h, 0x51, ~0ull, nullptr);
        ucxdt_status_ptr_t sreq = ucxdt_tag_send_nbx(p.ep[0], src.ptr(), 1, sh.h, 0x51, nullptr);
        ASSERT_TRUE(UCXDT_PTR_IS_PTR(rreq)) << what;
        ASSERT_FALSE(UCXDT_PTR_IS_ERR(sreq)) << what;
        ucxdt_tag_recv_info_t info{};
        const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
        while (ucxdt_request_check_status(rreq) == UCXDT_INPROGRESS && std::chrono::steady_clock::now() < deadline)
            p.progress();
        EXPECT_EQ(status_name(ucxdt_tag_recv_request_test(rreq, &info)), status_name(c.expect)) << what;
        ucxdt_request_free(rreq);
        if (sreq) p.wait(sreq);
        if (c.expect == UCXDT_OK) {
            EXPECT_EQ(info.length, c.got) << what;
            EXPECT_EQ(T::check_received(*c.recv, 1, dst, poison, packed(*sd, src.ptr(), 1, c.got), c.got), "") << what;
        } else {
            EXPECT_EQ(dst.bytes, poison) << what << ": a failed receive wrote its buffer";
        }
        // The worker goes on: the next message of the tag arrives whole.
        const auto next = L::contiguous(4, dbl);
        Type nh(*next);
        Buffer nsrc(*next, 1, 41), ndst(*next, 1, 42);
        const std::vector<std::byte> npoison = ndst.bytes;
        ucxdt_status_ptr_t ns = ucxdt_tag_send_nbx(p.ep[0], nsrc.ptr(), 1, nh.h, 0x51, nullptr);
        ucxdt_status_ptr_t nr = ucxdt_tag_recv_nbx(p.w[1], ndst.ptr(), 1, nh.h, 0x51, ~0ull, nullptr);
        EXPECT_EQ(status_name(p.wait(nr)), status_name(UCXDT_OK)) << what << ": the message after";
        EXPECT_EQ(status_name(p.wait(ns)), status_name(UCXDT_OK)) << what;
        EXPECT_EQ(T::check_received(*next, 1, ndst, npoison, packed(*next, nsrc.ptr(), 1, 32), 32), "") << what;
    }
}

// A probe reports a plain message's tag and length without receiving it; a removed one is
// received by its handle only, into a vector layout; a receive posted in arrival-order
// matching is canceled without UCP (it never went there).
TEST(RndvPlain, ProbeMatchedReceiveAndCancel) {
    T::RndvPair p{kConfig};
    ASSERT_EQ(p.error, "");
    for (int i = 0; i < 200; ++i) p.progress();
    const int64_t n = 10240;
    const auto sd = L::contiguous(n, dbl);
    const auto rd = L::vector(n, 1, 2, dbl);
    Type sh(*sd), rh(*rd);
    Buffer src(*sd, 1, 61), dst(*rd, 1, 62);
    const std::vector<std::byte> poison = dst.bytes;
    ucxdt_status_ptr_t sreq = ucxdt_tag_send_nbx(p.ep[0], src.ptr(), 1, sh.h, 0x99, nullptr);
    ASSERT_FALSE(UCXDT_PTR_IS_ERR(sreq));
    ucxdt_tag_recv_info_t info{};
    ucxdt_tag_message_h m = nullptr;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (!(m = ucxdt_tag_probe_nb(p.w[1], 0x99, ~0ull, 1, &info)) && std::chrono::steady_clock::now() < deadline)
        p.progress();
    ASSERT_NE(m, nullptr);
    EXPECT_EQ(info.sender_tag, 0x99u);
    EXPECT_EQ(info.length, n * 8);
    EXPECT_EQ(ucxdt_tag_probe_nb(p.w[1], 0x99, ~0ull, 0, &info), nullptr) << "found after removal";
    ucxdt_status_ptr_t rreq = ucxdt_tag_msg_recv_nbx(p.w[1], dst.ptr(), 1, rh.h, m, nullptr);
    EXPECT_EQ(status_name(p.wait(rreq)), status_name(UCXDT_OK));
    EXPECT_EQ(status_name(p.wait(sreq)), status_name(UCXDT_OK));
    EXPECT_EQ(T::check_received(*rd, 1, dst, poison, packed(*sd, src.ptr(), 1, n * 8), n * 8), "");
    // Cancel.
    Buffer cdst(*rd, 1, 63);
    ucxdt_status_ptr_t c = ucxdt_tag_recv_nbx(p.w[1], cdst.ptr(), 1, rh.h, 0x98, ~0ull, nullptr);
    ASSERT_TRUE(UCXDT_PTR_IS_PTR(c));
    ucxdt_request_cancel(p.w[1], c);
    EXPECT_EQ(status_name(p.wait(c)), status_name(UCXDT_ERR_CANCELED));
}

// The parameter and the tags: a plain_tag_bit of no bit or of two fails the worker's creation;
// a send whose tag sets the bit fails (the next message is the one UCP sees); UCXDT_PLAIN_MESSAGES=n keeps every
// message ucxdt's (its header before the data), so the setting is what changes the form.
TEST(RndvPlain, ParameterTagsAndSwitch) {
    T::UcpPair u;
    ASSERT_EQ(u.open(UCP_FEATURE_TAG | UCP_FEATURE_AM | UCP_FEATURE_RMA), "");
    ucxdt_worker_params_t wp{};
    wp.field_mask = UCXDT_WORKER_PARAM_FIELD_UCP_WORKER | UCXDT_WORKER_PARAM_FIELD_UCP_CONTEXT |
                    UCXDT_WORKER_PARAM_FIELD_PLAIN_TAG_BIT;
    wp.ucp_worker = u.w[0];
    wp.ucp_context = u.ctx;
    ucxdt_worker_h w = nullptr;
    for (ucp_tag_t bad : {ucp_tag_t{0}, ucp_tag_t{3} << 40}) {
        wp.plain_tag_bit = bad;
        EXPECT_EQ(ucxdt_worker_create(&wp, &w), UCXDT_ERR_INVALID_PARAM) << bad;
    }
    for (const char *setting : {"y", "n"}) {
        T::ScopedEnv env{{"UCXDT_PLAIN_MESSAGES", setting}};
        T::RndvPair p{kConfig};
        ASSERT_EQ(p.error, "");
        for (int i = 0; i < 200; ++i) p.progress();
        const auto d = L::contiguous(16, dbl);
        Type h(*d);
        Buffer src(*d, 1, 71);
        const bool plain = *setting == 'y';
        if (plain) {  // with the setting off the bit is the user's, as any other
            ucxdt_status_ptr_t bad = ucxdt_tag_send_nbx(p.ep[0], src.ptr(), 1, h.h, 0x5 | kPlain, nullptr);
            EXPECT_EQ(UCXDT_PTR_STATUS(bad), UCXDT_ERR_INVALID_PARAM);
        }
        ucxdt_status_ptr_t sreq = ucxdt_tag_send_nbx(p.ep[0], src.ptr(), 1, h.h, 0x5, nullptr);
        ASSERT_FALSE(UCXDT_PTR_IS_ERR(sreq));
        ucp_tag_recv_info_t ui{};
        ASSERT_TRUE(ucp_sees(p.ucp.w[1], &ui)) << setting;
        EXPECT_EQ(ui.sender_tag, plain ? 0x5 | kPlain : 0x5) << setting;
        EXPECT_EQ(ui.length, plain ? 128u : 128u + ucxdt::rndv::kEagerHeaderBytes) << setting;
        Buffer dst(*d, 1, 72);
        ucxdt_status_ptr_t rreq = ucxdt_tag_recv_nbx(p.w[1], dst.ptr(), 1, h.h, 0x5, ~0ull, nullptr);
        EXPECT_EQ(status_name(p.wait(rreq)), status_name(UCXDT_OK)) << setting;
        EXPECT_EQ(status_name(p.wait(sreq)), status_name(UCXDT_OK)) << setting;
    }
}

}  // namespace
