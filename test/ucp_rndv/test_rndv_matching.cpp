// What an MPI point-to-point layer needs of the rendezvous' matching (include/ucxdt/ucxdt_ucp.h):
// synchronous sends (MPI-4.1 §3.4), and the matched message's full tag and length on every
// completed receive (an MPI status). Host layouts between two workers of one process, and GPU
// memory in the Gpu cases, which skip without a GPU.
#include "harness/layout_buffer.hpp"
#include "support/prefix_type.hpp"
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

const T::RndvConfig kConfig{1024, 16384, 2, 8};
const auto dbl = L::named(UCXDT_DOUBLE);

ucxdt_request_param_t sync_param() {
    ucxdt_request_param_t p{};
    p.field_mask = UCXDT_REQUEST_PARAM_FIELD_FLAGS;
    p.flags = UCXDT_SEND_FLAG_SYNC;
    return p;
}

// Whether req is still running after `spins` progress calls of both workers.
bool still_running(T::RndvPair &p, ucxdt_status_ptr_t req, int spins) {
    for (int i = 0; i < spins; ++i) p.progress();
    return req != nullptr && ucxdt_request_check_status(req) == UCXDT_INPROGRESS;
}

// A synchronous send completes only once a receive matched it: posted with no receive, it
// stays running through many progress calls, eager (128 B) and rendezvous (80 KB) alike, and
// completes once the receive is posted, the data intact. The same eager message without the
// flag completes with no receive posted: the test can tell the two apart.
TEST(RndvSync, SendCompletesOnlyOnceAReceiveMatchedIt) {
    T::RndvPair p{kConfig};
    ASSERT_EQ(p.error, "");
    for (int i = 0; i < 200; ++i) p.progress();  // the HELLOs
    const ucxdt_request_param_t sync = sync_param();
    for (int64_t n : {16, 10240}) {
        const auto t = L::vector(n / 4, 4, 6, dbl);
        Type h(*t);
        Buffer src(*t, 1, 70 + n), dst(*t, 1, 80 + n);
        const std::vector<std::byte> poison = dst.bytes;
        const int64_t bytes = n * 8;
        ucxdt_status_ptr_t sreq = ucxdt_tag_send_nbx(p.ep[0], src.ptr(), 1, h.h, 0x500 + n, &sync);
        ASSERT_FALSE(UCXDT_PTR_IS_ERR(sreq)) << ucxdt_last_error();
        EXPECT_TRUE(still_running(p, sreq, 2000)) << bytes << " bytes: a synchronous send completed unmatched";
        ucxdt_status_ptr_t rreq = ucxdt_tag_recv_nbx(p.w[1], dst.ptr(), 1, h.h, 0x500 + n, ~0ull, nullptr);
        ASSERT_FALSE(UCXDT_PTR_IS_ERR(rreq));
        EXPECT_EQ(status_name(p.wait(rreq)), status_name(UCXDT_OK)) << bytes << " bytes";
        EXPECT_EQ(status_name(p.wait(sreq)), status_name(UCXDT_OK)) << bytes << " bytes";
        EXPECT_EQ(T::check_received(*t, 1, dst, poison, packed(*t, src.ptr(), 1, bytes), bytes), "") << bytes << " bytes";
    }
    // Without the flag, an eager send completes with no receive posted.
    const auto t = L::vector(4, 4, 6, dbl);
    Type h(*t);
    Buffer src(*t, 1, 90), dst(*t, 1, 91);
    ucxdt_status_ptr_t sreq = ucxdt_tag_send_nbx(p.ep[0], src.ptr(), 1, h.h, 0x600, nullptr);
    ASSERT_FALSE(UCXDT_PTR_IS_ERR(sreq));
    EXPECT_FALSE(still_running(p, sreq, 2000)) << "a standard eager send waited for its receive";
    if (sreq) {
        EXPECT_EQ(status_name(p.wait(sreq)), status_name(UCXDT_OK));
    }
    ucxdt_status_ptr_t rreq = ucxdt_tag_recv_nbx(p.w[1], dst.ptr(), 1, h.h, 0x600, ~0ull, nullptr);
    EXPECT_EQ(status_name(p.wait(rreq)), status_name(UCXDT_OK));
}

// Every completed receive reports the matched message's whole tag (the bits its mask ignored
// too) and its packed length, eager and rendezvous; a canceled one reports no message; a send
// request or a missing info is refused.
TEST(RndvRecvInfo, ReceiveReportsTheSenderTagAndLength) {
    T::RndvPair p{kConfig};
    ASSERT_EQ(p.error, "");
    for (int64_t n : {16, 10240}) {
        const auto t = L::vector(n / 4, 4, 6, dbl);
        Type h(*t);
        Buffer src(*t, 1, 30 + n), dst(*t, 1, 40 + n);
        const ucp_tag_t tag = 0xabcd000000001234ull + static_cast<ucp_tag_t>(n);
        // Only the low 32 bits are matched: the high ones stand for a source the receive left open.
        ucxdt_status_ptr_t rreq = ucxdt_tag_recv_nbx(p.w[1], dst.ptr(), 1, h.h, tag & 0xffffffffull, 0xffffffffull, nullptr);
        ASSERT_TRUE(UCXDT_PTR_IS_PTR(rreq));
        ucxdt_tag_recv_info_t info{777, 777};
        EXPECT_EQ(ucxdt_tag_recv_request_test(rreq, &info), UCXDT_INPROGRESS);
        EXPECT_EQ(info.sender_tag, 777u) << "info filled before the receive completed";
        ucxdt_status_ptr_t sreq = ucxdt_tag_send_nbx(p.ep[0], src.ptr(), 1, h.h, tag, nullptr);
        ASSERT_FALSE(UCXDT_PTR_IS_ERR(sreq));
        const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
        while (ucxdt_request_check_status(rreq) == UCXDT_INPROGRESS && std::chrono::steady_clock::now() < deadline)
            p.progress();
        EXPECT_EQ(ucxdt_tag_recv_request_test(rreq, &info), UCXDT_OK);
        EXPECT_EQ(info.sender_tag, tag) << n * 8 << " bytes";
        EXPECT_EQ(info.length, n * 8);
        if (sreq) {
            EXPECT_EQ(ucxdt_tag_recv_request_test(sreq, &info), UCXDT_ERR_INVALID_PARAM) << "a send request";
            EXPECT_EQ(status_name(p.wait(sreq)), status_name(UCXDT_OK));
        }
        EXPECT_EQ(ucxdt_tag_recv_request_test(rreq, nullptr), UCXDT_ERR_INVALID_PARAM);
        ucxdt_request_free(rreq);
    }
    const auto t = L::vector(4, 4, 6, dbl);
    Type h(*t);
    Buffer dst(*t, 1, 5);
    ucxdt_status_ptr_t rreq = ucxdt_tag_recv_nbx(p.w[1], dst.ptr(), 1, h.h, 0x999, ~0ull, nullptr);
    ASSERT_TRUE(UCXDT_PTR_IS_PTR(rreq));
    ucxdt_request_cancel(p.w[1], rreq);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (ucxdt_request_check_status(rreq) == UCXDT_INPROGRESS && std::chrono::steady_clock::now() < deadline)
        p.progress();
    ucxdt_tag_recv_info_t info{777, 777};
    EXPECT_EQ(ucxdt_tag_recv_request_test(rreq, &info), UCXDT_ERR_CANCELED);
    EXPECT_EQ(info.sender_tag, 0u);
    EXPECT_EQ(info.length, 0);
    ucxdt_request_free(rreq);
}

// Send flags other than UCXDT_SEND_FLAG_SYNC and _PACKED, and receive flags other than
// UCXDT_RECV_FLAG_PACKED, fail the call with UCXDT_ERR_INVALID_PARAM and send nothing; flags
// the field mask does not name are not read.
TEST(RndvSync, UnknownFlagsAreRefused) {
    T::RndvPair p{kConfig};
    ASSERT_EQ(p.error, "");
    const auto t = L::vector(4, 4, 6, dbl);
    Type h(*t);
    Buffer src(*t, 1, 1), dst(*t, 1, 2);
    const std::vector<std::byte> poison = dst.bytes;
    ucxdt_request_param_t bad = sync_param();
    bad.flags = UCXDT_SEND_FLAG_SYNC | (1u << 5);
    ucxdt_status_ptr_t r = ucxdt_tag_send_nbx(p.ep[0], src.ptr(), 1, h.h, 0x42, &bad);
    EXPECT_EQ(UCXDT_PTR_STATUS(r), UCXDT_ERR_INVALID_PARAM);
    ucxdt_request_param_t on_recv = sync_param();
    on_recv.flags = 1u << 5;
    r = ucxdt_tag_recv_nbx(p.w[1], dst.ptr(), 1, h.h, 0x42, ~0ull, &on_recv);
    EXPECT_EQ(UCXDT_PTR_STATUS(r), UCXDT_ERR_INVALID_PARAM);
    // Nothing went: a receive posted now finds no message.
    ucxdt_status_ptr_t rreq = ucxdt_tag_recv_nbx(p.w[1], dst.ptr(), 1, h.h, 0x42, ~0ull, nullptr);
    ASSERT_TRUE(UCXDT_PTR_IS_PTR(rreq));
    EXPECT_TRUE(still_running(p, rreq, 2000)) << "a refused send delivered a message";
    EXPECT_EQ(dst.bytes, poison);
    // Flags present in the struct but not named by the mask are ignored.
    ucxdt_request_param_t unnamed{};
    unnamed.flags = 1u << 7;
    ucxdt_status_ptr_t sreq = ucxdt_tag_send_nbx(p.ep[0], src.ptr(), 1, h.h, 0x42, &unnamed);
    ASSERT_FALSE(UCXDT_PTR_IS_ERR(sreq)) << ucxdt_last_error();
    EXPECT_EQ(status_name(p.wait(rreq)), status_name(UCXDT_OK));
    if (sreq) {
        EXPECT_EQ(status_name(p.wait(sreq)), status_name(UCXDT_OK));
    }
}

ucxdt_request_param_t flags_param(uint32_t flags) {
    ucxdt_request_param_t p{};
    p.field_mask = UCXDT_REQUEST_PARAM_FIELD_FLAGS;
    p.flags = flags;
    return p;
}

// Packed data (MPI_PACKED, MPI-4.1 §5.2): a message of any type is received as its packed bytes
// by a receive flagged UCXDT_RECV_FLAG_PACKED, and a send flagged UCXDT_SEND_FLAG_PACKED
// (bytes) is taken by a receive of any type with room for them; eager (128 B) and rendezvous
// (32 KB) alike. Without the flags the same pairs fail with UCXDT_ERR_TYPE_MISMATCH, and a
// packed receive too short for the message fails with UCXDT_ERR_TRUNCATED.
TEST(RndvPacked, PackedDataMatchesAnySignature) {
    T::RndvPair p{kConfig};
    ASSERT_EQ(p.error, "");
    for (const auto &t : {L::vector(4, 4, 6, dbl), L::vector(1000, 4, 6, dbl)}) {
        Type h(*t);
        int64_t size = 0;
        ASSERT_EQ(ucxdt_type_size(h.h, &size), UCXDT_OK);
        const auto bytes = L::contiguous(size, L::named(UCXDT_BYTE));
        Type hb(*bytes);
        Buffer src(*t, 1, 1), as_bytes(*bytes, 1, 2), dst(*t, 1, 3);
        const std::vector<std::byte> stream = packed(*t, src.ptr(), 1, size);
        const std::string what = "message of " + std::to_string(size) + " bytes";
        const std::vector<std::byte> bytes_poison = as_bytes.bytes;
        // A typed message, received as packed bytes.
        ucxdt_request_param_t rp = flags_param(UCXDT_RECV_FLAG_PACKED);
        ucxdt_status_ptr_t rreq = ucxdt_tag_recv_nbx(p.w[1], as_bytes.ptr(), 1, hb.h, 0x51, ~0ull, &rp);
        ucxdt_status_ptr_t sreq = ucxdt_tag_send_nbx(p.ep[0], src.ptr(), 1, h.h, 0x51, nullptr);
        ASSERT_TRUE(UCXDT_PTR_IS_PTR(rreq)) << what;
        EXPECT_EQ(status_name(p.wait(rreq)), status_name(UCXDT_OK)) << what;
        if (sreq) {
            EXPECT_EQ(status_name(p.wait(sreq)), status_name(UCXDT_OK)) << what;
        }
        EXPECT_EQ(T::check_received(*bytes, 1, as_bytes, bytes_poison, stream, size), "") << what << ": the packed stream";
        // Packed bytes, received by the type.
        const std::vector<std::byte> poison = dst.bytes;
        ucxdt_request_param_t sp = flags_param(UCXDT_SEND_FLAG_PACKED);
        rreq = ucxdt_tag_recv_nbx(p.w[1], dst.ptr(), 1, h.h, 0x52, ~0ull, nullptr);
        sreq = ucxdt_tag_send_nbx(p.ep[0], as_bytes.ptr(), 1, hb.h, 0x52, &sp);
        ASSERT_TRUE(UCXDT_PTR_IS_PTR(rreq)) << what;
        EXPECT_EQ(status_name(p.wait(rreq)), status_name(UCXDT_OK)) << what;
        if (sreq) {
            EXPECT_EQ(status_name(p.wait(sreq)), status_name(UCXDT_OK)) << what;
        }
        EXPECT_EQ(T::check_received(*t, 1, dst, poison, stream, size), "") << what << ": unpacked into the layout";
        // Without the flags, bytes and the type do not match.
        Buffer other(*bytes, 1, 4);
        rreq = ucxdt_tag_recv_nbx(p.w[1], other.ptr(), 1, hb.h, 0x53, ~0ull, nullptr);
        sreq = ucxdt_tag_send_nbx(p.ep[0], src.ptr(), 1, h.h, 0x53, nullptr);
        EXPECT_EQ(status_name(p.wait(rreq)), status_name(UCXDT_ERR_TYPE_MISMATCH)) << what;
        if (sreq) (void)p.wait(sreq);
        // A packed receive one byte short.
        const auto shorter = L::contiguous(size - 1, L::named(UCXDT_BYTE));
        Type hs(*shorter);
        Buffer small(*shorter, 1, 5);
        rreq = ucxdt_tag_recv_nbx(p.w[1], small.ptr(), 1, hs.h, 0x54, ~0ull, &rp);
        sreq = ucxdt_tag_send_nbx(p.ep[0], src.ptr(), 1, h.h, 0x54, nullptr);
        EXPECT_EQ(status_name(p.wait(rreq)), status_name(UCXDT_ERR_TRUNCATED)) << what;
        if (sreq) (void)p.wait(sreq);
    }
}

// Messages from one endpoint with one tag match receives in send order (MPI's non-overtaking
// rule, MPI-4.1 §3.5), whatever each goes as: eager (128 B) or rendezvous (8-80 KB, one
// fragment or several), on memory `m`, with the receives posted before the sends or after
// them. Each receive takes up to 10,240 doubles, so any of the messages would fit any receive.
// (test_rndv's SameTagMessagesMatchInSendOrder: host memory, receives first, sends queued for
// staging slots.)
void send_order(Mem m) {
    T::RndvPair p{kConfig};
    ASSERT_EQ(p.error, "");
    for (int i = 0; i < 200; ++i) p.progress();
    const int64_t sizes[] = {16, 10240, 4, 1024, 10240, 16, 2048, 8};  // doubles, each a multiple of 4
    constexpr int kN = sizeof sizes / sizeof sizes[0];
    constexpr int64_t kRecvCount = 10240;  // doubles: every message is a whole number of them
    Type rh(*dbl);
    for (bool receives_first : {true, false}) {
        const std::string what = std::string(mem_name(m)) + (receives_first ? ", receives first" : ", sends first");
        std::vector<L::TypeDescPtr> types;
        std::vector<std::unique_ptr<Type>> handles;
        std::vector<std::unique_ptr<Buffer>> src, dst;
        std::vector<std::unique_ptr<Placed>> src_at, dst_at;
        std::vector<ucxdt_status_ptr_t> sreqs(kN, nullptr), rreqs(kN, nullptr);
        for (int k = 0; k < kN; ++k) {
            types.push_back(L::vector(sizes[k] / 4, 4, 6, dbl));
            handles.push_back(std::make_unique<Type>(*types[k]));
            src.push_back(std::make_unique<Buffer>(*types[k], 1, 100 + k));
            dst.push_back(std::make_unique<Buffer>(*dbl, kRecvCount, 200 + k));
            src_at.push_back(std::make_unique<Placed>(*src[k], m));
            dst_at.push_back(std::make_unique<Placed>(*dst[k], m));
        }
        std::vector<std::vector<std::byte>> poison;
        for (auto &d : dst) poison.push_back(d->bytes);
        auto post_receives = [&] {
            for (int k = 0; k < kN; ++k) {
                rreqs[k] = ucxdt_tag_recv_nbx(p.w[1], dst_at[k]->ptr(), kRecvCount, rh.h, 0x77, ~0ull, nullptr);
                ASSERT_TRUE(UCXDT_PTR_IS_PTR(rreqs[k])) << what;
            }
        };
        if (receives_first) post_receives();
        for (int k = 0; k < kN; ++k) {
            sreqs[k] = ucxdt_tag_send_nbx(p.ep[0], src_at[k]->ptr(), 1, handles[k]->h, 0x77, nullptr);
            ASSERT_FALSE(UCXDT_PTR_IS_ERR(sreqs[k])) << what << ", send " << k << ": " << ucxdt_last_error();
        }
        if (!receives_first) post_receives();
        for (int k = 0; k < kN; ++k) {
            const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
            while (ucxdt_request_check_status(rreqs[k]) == UCXDT_INPROGRESS && std::chrono::steady_clock::now() < deadline)
                p.progress();
            ucxdt_tag_recv_info_t info{};
            EXPECT_EQ(status_name(ucxdt_tag_recv_request_test(rreqs[k], &info)), status_name(UCXDT_OK)) << what << ", receive " << k;
            ucxdt_request_free(rreqs[k]);
            const int64_t bytes = sizes[k] * 8;
            EXPECT_EQ(info.length, bytes) << what << ": receive " << k << " took another message";
            dst_at[k]->fetch();
            EXPECT_EQ(T::check_received(*dbl, kRecvCount, *dst[k], poison[k], packed(*types[k], src[k]->ptr(), 1, bytes), bytes), "")
                << what << ", receive " << k;
        }
        for (int k = 0; k < kN; ++k) {
            if (sreqs[k]) {
                EXPECT_EQ(status_name(p.wait(sreqs[k])), status_name(UCXDT_OK)) << what << ", send " << k;
            }
        }
    }
}

TEST(RndvOrder, SendOrderOnEitherMemoryAndPostingOrder) { send_order(Mem::host); }

TEST(RndvOrder, GpuSendOrderOnEitherMemoryAndPostingOrder) {
    if (!T::have_gpu()) GTEST_SKIP() << "no CUDA device: send order on GPU memory is untested here";
    send_order(Mem::cuda);
}

// A message that ends inside an element of the receive type is received (MPI-4.1 §3.2.5: the
// receive takes the whole primitives that arrived): its bytes land in type-map order, the rest
// keeps the poison, and ucxdt_type_get_elements counts its primitives (MPI_Get_elements; the
// count is MPI_UNDEFINED). A message whose primitives are not the receive's first ones is a
// mismatch and writes nothing. The receive type is struct {double; int; int; char}; eager
// (up to 136 B) and rendezvous (6.8 KB), on memory `m`.
void partial(Mem m) {
    T::RndvPair p{kConfig};
    ASSERT_EQ(p.error, "");
    for (int i = 0; i < 200; ++i) p.progress();
    const auto rd = L::structure({1, 2, 1}, {0, 8, 16}, {dbl, L::named(UCXDT_INT32), L::named(UCXDT_CHAR)});
    Type rh(*rd);
    struct Case {
        int64_t posted, k;  // receive count; primitives sent (4 an element)
    };
    const Case cases[] = {{8, 1}, {8, 2}, {8, 3}, {8, 6}, {8, 13}, {8, 30}, {400, 1598}, {400, 1201}};
    for (const Case &c : cases) {
        const std::string what = std::string(mem_name(m)) + ", " + std::to_string(c.k) + " primitives";
        const auto sd = T::prefix_type(*rd, c.posted, c.k);
        Type sh(*sd);
        int64_t bytes = 0;
        ASSERT_EQ(ucxdt_type_size(sh.h, &bytes), UCXDT_OK);
        Buffer src(*sd, 1, 11 + c.k), dst(*rd, c.posted, 12 + c.k);
        const std::vector<std::byte> poison = dst.bytes;
        Placed src_at(src, m), dst_at(dst, m);
        ucxdt_status_ptr_t rreq = ucxdt_tag_recv_nbx(p.w[1], dst_at.ptr(), c.posted, rh.h, 0x33, ~0ull, nullptr);
        ucxdt_status_ptr_t sreq = ucxdt_tag_send_nbx(p.ep[0], src_at.ptr(), 1, sh.h, 0x33, nullptr);
        ASSERT_TRUE(UCXDT_PTR_IS_PTR(rreq)) << what;
        ASSERT_FALSE(UCXDT_PTR_IS_ERR(sreq)) << what << ": " << ucxdt_last_error();
        const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
        while (ucxdt_request_check_status(rreq) == UCXDT_INPROGRESS && std::chrono::steady_clock::now() < deadline)
            p.progress();
        ucxdt_tag_recv_info_t info{};
        EXPECT_EQ(status_name(ucxdt_tag_recv_request_test(rreq, &info)), status_name(UCXDT_OK)) << what;
        ucxdt_request_free(rreq);
        EXPECT_EQ(info.length, bytes) << what;
        int64_t elements = -1;
        EXPECT_EQ(ucxdt_type_get_elements(rh.h, info.length, &elements), UCXDT_OK) << what;
        EXPECT_EQ(elements, c.k) << what;
        dst_at.fetch();
        EXPECT_EQ(T::check_received(*rd, c.posted, dst, poison, packed(*sd, src.ptr(), 1, bytes), bytes), "") << what;
        if (sreq) {
            EXPECT_EQ(status_name(p.wait(sreq)), status_name(UCXDT_OK)) << what;
        }
    }
    // Primitives other than the receive's first ones: 3 ints, then 9 chars.
    for (const auto &sd : {L::contiguous(3, L::named(UCXDT_INT32)), L::contiguous(9, L::named(UCXDT_CHAR))}) {
        Type sh(*sd);
        Buffer src(*sd, 1, 5), dst(*rd, 8, 6);
        const std::vector<std::byte> poison = dst.bytes;
        Placed src_at(src, m), dst_at(dst, m);
        ucxdt_status_ptr_t rreq = ucxdt_tag_recv_nbx(p.w[1], dst_at.ptr(), 8, rh.h, 0x34, ~0ull, nullptr);
        ucxdt_status_ptr_t sreq = ucxdt_tag_send_nbx(p.ep[0], src_at.ptr(), 1, sh.h, 0x34, nullptr);
        ASSERT_TRUE(UCXDT_PTR_IS_PTR(rreq));
        EXPECT_EQ(status_name(p.wait(rreq)), status_name(UCXDT_ERR_TYPE_MISMATCH)) << mem_name(m) << ", " << L::to_string(*sd);
        if (sreq && !UCXDT_PTR_IS_ERR(sreq)) p.wait(sreq);
        dst_at.fetch();
        EXPECT_EQ(dst.bytes, poison) << mem_name(m) << ": a mismatched message wrote the receive buffer";
    }
}

TEST(RndvPartial, MessageEndingInsideAnElement) { partial(Mem::host); }

TEST(RndvPartial, GpuMessageEndingInsideAnElement) {
    if (!T::have_gpu()) GTEST_SKIP() << "no CUDA device: partial elements on GPU memory are untested here";
    partial(Mem::cuda);
}

}  // namespace
