// The datatype-aware rendezvous (include/ucxdt/ucxdt_ucp.h) between two UCP workers of one
// process: eager and the four layouts of a rendezvous (contiguous or not on either side), with
// small fragments so that every transfer cycles its staging slots many times, application
// layouts and random types received into relayouts, signature mismatch, truncation, cancel,
// and a thousand outstanding sends each way through a small staging pool.
// The rest of the binary: rndv/*.cpp.
#include "rndv/rndv_cases.hpp"

namespace {

using namespace rndv_cases;


TEST_F(Rndv, EagerAndEveryRendezvousLayout) {
    // 64 doubles: eager (512 B); 2,048: 1 fragment of 16 KiB; 40,000: 20 fragments over 2 slots.
    for (int64_t n : {64, 2048, 40000})
        for (bool sc : {true, false})
            for (bool rc : {true, false})
                for (bool unexpected : {false, true})
                    EXPECT_EQ(run_case(shared_pair(), doubles(n, sc), doubles(n, rc), 1, n + sc * 2 + rc, unexpected), "")
                        << n << " doubles, send " << (sc ? "contiguous" : "vector") << ", receive "
                        << (rc ? "contiguous" : "vector") << (unexpected ? ", receive posted late" : "");
}


TEST_F(Rndv, EmptyMessage) {
    EXPECT_EQ(run_case(shared_pair(), doubles(8, true), doubles(8, false), 0, 5), "");
}


TEST_P(RndvLayouts, IntoRelayout) {
    const L::Layout &l = app_layouts()[GetParam()];
    T::Rng rng(0x5e7d0000 + GetParam());
    const L::TypeDescPtr recv = T::relayout(*l.type, rng);
    EXPECT_EQ(run_case(shared_pair(), l.type, recv, l.count, 0x77 + GetParam()), "")
        << l.name << " received as " << short_desc(*recv);
}


INSTANTIATE_TEST_SUITE_P(App, RndvLayouts, ::testing::Range<size_t>(0, app_layouts().size()),
                         T::app_layout_test_name<::testing::TestParamInfo<size_t>>);


TEST_F(Rndv, RandomTypesIntoRelayout) {
    for (int i = 0; i < 60; ++i) {
        T::Rng rng(0x2d7a0000 + i);
        const L::TypeDescPtr send = T::random_desc(rng);
        const L::TypeDescPtr recv = T::relayout(*send, rng);
        const int64_t count = 1 + static_cast<int64_t>(rng() % 3);
        EXPECT_EQ(run_case(shared_pair(), send, recv, count, 0x9000 + i, i % 4 == 0), "")
            << "type #" << i << " x " << count << ": " << short_desc(*send);
    }
}


TEST_F(Rndv, GpuEveryRendezvousLayoutAndMixedMemory) {
    if (!have_gpu()) GTEST_SKIP() << "no CUDA device: the rendezvous on GPU memory is untested here";
    const std::pair<Mem, Mem> sides[] = {{Mem::cuda, Mem::cuda}, {Mem::cuda, Mem::host}, {Mem::host, Mem::cuda}};
    for (const auto &[sm, rm] : sides)
        for (int64_t n : {64, 40000})
            for (bool sc : {true, false})
                for (bool rc : {true, false})
                    EXPECT_EQ(run_case(shared_pair(), doubles(n, sc), doubles(n, rc), 1, n + sc + rc, false, sm, rm), "")
                        << n << " doubles, send " << (sc ? "contiguous" : "vector") << ", receive "
                        << (rc ? "contiguous" : "vector");
}


TEST_F(Rndv, GpuApplicationLayouts) {
    if (!have_gpu()) GTEST_SKIP() << "no CUDA device: the rendezvous on GPU memory is untested here";
    for (size_t i = 0; i < app_layouts().size(); ++i) {
        const L::Layout &l = app_layouts()[i];
        T::Rng rng(0x5e7d0000 + i);
        EXPECT_EQ(run_case(shared_pair(), l.type, T::relayout(*l.type, rng), l.count, 0x77 + i, false,
                           Mem::cuda, Mem::cuda), "")
            << l.name;
    }
}


TEST_F(Rndv, SignatureMismatchFailsBothSidesAndWritesNothing) {
    const auto i64 = L::named(UCXDT_INT64);
    // Rendezvous: both sides learn it. Eager: the sender completed when its message left.
    EXPECT_EQ(expect_error(shared_pair(), L::vector(1000, 4, 6, dbl), 1, L::contiguous(4000, i64), 1,
                           UCXDT_ERR_TYPE_MISMATCH, UCXDT_ERR_TYPE_MISMATCH), "");
    EXPECT_EQ(expect_error(shared_pair(), L::contiguous(8, dbl), 1, L::contiguous(8, i64), 1,
                           UCXDT_ERR_TYPE_MISMATCH, UCXDT_OK), "");
}


TEST_F(Rndv, TruncationFailsAndWritesNothing) {
    const auto send = L::vector(1000, 4, 6, dbl);  // 32,000 bytes per element
    EXPECT_EQ(expect_error(shared_pair(), send, 2, send, 1, UCXDT_ERR_TRUNCATED, UCXDT_ERR_TRUNCATED), "");
    const auto small = L::contiguous(8, dbl);
    EXPECT_EQ(expect_error(shared_pair(), small, 2, small, 1, UCXDT_ERR_TRUNCATED, UCXDT_OK), "");
}


TEST_F(Rndv, ShorterMessageThanTheReceiveIsFine) {
    Pair &p = shared_pair();
    const auto t = L::vector(1000, 4, 6, dbl);
    Type h(*t);
    Buffer src(*t, 2, 3), dst(*t, 5, 4);
    const std::vector<std::byte> sent = packed(*t, src.ptr(), 2, 64000), poison = dst.bytes;
    ucxdt_status_ptr_t rreq = ucxdt_tag_recv_nbx(p.w[1], dst.ptr(), 5, h.h, 8, ~0ull, nullptr);
    ASSERT_TRUE(UCXDT_PTR_IS_PTR(rreq));
    ucxdt_status_ptr_t sreq = ucxdt_tag_send_nbx(p.ep[0], src.ptr(), 2, h.h, 8, nullptr);
    while (ucxdt_request_check_status(rreq) == UCXDT_INPROGRESS) p.progress();
    EXPECT_EQ(ucxdt_request_check_status(rreq), UCXDT_OK);
    EXPECT_EQ(ucxdt_request_length(rreq), 64000);
    ucxdt_request_free(rreq);
    EXPECT_EQ(p.wait(sreq), UCXDT_OK);
    EXPECT_EQ(check_received(*t, 5, dst, poison, sent, 64000), "");
}


TEST_F(Rndv, CancelOfAPostedReceive) {
    Pair &p = shared_pair();
    const auto t = doubles(4000, false);
    Type h(*t);
    Buffer dst(*t, 1, 9);
    const std::vector<std::byte> poison = dst.bytes;
    ucxdt_status_ptr_t rreq = ucxdt_tag_recv_nbx(p.w[1], dst.ptr(), 1, h.h, 99, ~0ull, nullptr);
    ASSERT_TRUE(UCXDT_PTR_IS_PTR(rreq));
    ucxdt_request_cancel(p.w[1], rreq);
    EXPECT_EQ(p.wait(rreq), UCXDT_ERR_CANCELED);
    EXPECT_EQ(dst.bytes, poison);
    // The tag is free again: a later message goes to a later receive.
    EXPECT_EQ(run_case(p, t, t, 1, 10), "");
}


// 1,000 sends each way, all posted before any completes, through 8 staging slots per side: the
// requests queue for slots and all complete, with their data.
// MPI-4.1 3.5: messages between a pair of processes with the same tag match their receives in
// the order they were sent, whichever path each takes. The second rendezvous send waits for
// staging slots (the first holds both), and the eager one after it must not overtake it; nor
// the second, a third whose data is ready sooner.
TEST(RndvOrder, SameTagMessagesMatchInSendOrder) {
    Pair p{Config{1024, 4096, 2, 2}};
    ASSERT_EQ(p.error, "");
    const auto big = L::vector(1024, 1, 2, dbl), small = L::contiguous(64, dbl), flat = L::contiguous(1024, dbl);
    const L::TypeDescPtr sends[] = {big, big, small, big, small};
    Type hb(*big), hs(*small), hd(*dbl);
    std::vector<Buffer> src, dst;
    std::vector<std::vector<std::byte>> sent;
    for (int i = 0; i < 5; ++i) {
        src.emplace_back(*sends[i], 1, 300 + i);
        dst.emplace_back(*flat, 1, 700 + i);
        const int64_t bytes = sends[i] == big ? 8192 : 512;
        sent.push_back(packed(*sends[i], src.back().ptr(), 1, bytes));
    }
    std::vector<ucxdt_status_ptr_t> reqs;
    for (int i = 0; i < 5; ++i) reqs.push_back(ucxdt_tag_recv_nbx(p.w[1], dst[i].ptr(), 1024, hd.h, 42, ~0ull, nullptr));
    for (int i = 0; i < 5; ++i)
        reqs.push_back(ucxdt_tag_send_nbx(p.ep[0], src[i].ptr(), 1, sends[i] == big ? hb.h : hs.h, 42, nullptr));
    for (size_t k = 0; k < reqs.size(); ++k) ASSERT_EQ(status_name(p.wait(reqs[k])), status_name(UCXDT_OK)) << "request " << k;
    for (int i = 0; i < 5; ++i) {
        const Buffer fresh(*flat, 1, 700 + i);
        EXPECT_EQ(check_received(*flat, 1, dst[i], fresh.bytes, sent[i], static_cast<int64_t>(sent[i].size())), "")
            << "receive " << i << " did not get message " << i;
    }
}


// MPI-4.1 5.1.9: freeing a datatype does not affect communication that uses it and is pending.
// The handles are freed right after the calls that post an eager and a rendezvous message each
// way; the transfers must still complete with the data exact.
TEST(RndvOrder, TypesFreedWhileTheirTransfersAreInFlight) {
    Pair p{Config{1024, 4096, 2, 8}};
    ASSERT_EQ(p.error, "");
    const auto small = L::vector(32, 1, 3, dbl), big = L::vector(2048, 1, 3, dbl);  // 256 B, 16 KiB
    const L::TypeDescPtr types[] = {small, big};
    const int64_t bytes[] = {256, 16384};
    for (int i = 0; i < 2; ++i) {
        Buffer src(*types[i], 1, 40 + i), dst(*types[i], 1, 50 + i);
        const std::vector<std::byte> sent = packed(*types[i], src.ptr(), 1, bytes[i]), before = dst.bytes;
        Type ts(*types[i]), tr(*types[i]);
        ucxdt_type_t s = UCXDT_TYPE_NULL, r = UCXDT_TYPE_NULL;
        ASSERT_EQ(ucxdt_type_dup(ts.h, &s), UCXDT_OK);
        ASSERT_EQ(ucxdt_type_dup(tr.h, &r), UCXDT_OK);
        ucxdt_status_ptr_t rq = ucxdt_tag_recv_nbx(p.w[1], dst.ptr(), 1, r, 7, ~0ull, nullptr);
        ucxdt_status_ptr_t sq = ucxdt_tag_send_nbx(p.ep[0], src.ptr(), 1, s, 7, nullptr);
        ASSERT_EQ(ucxdt_type_free(&s), UCXDT_OK);
        ASSERT_EQ(ucxdt_type_free(&r), UCXDT_OK);
        EXPECT_EQ(status_name(p.wait(sq)), status_name(UCXDT_OK)) << "message " << i;
        EXPECT_EQ(status_name(p.wait(rq)), status_name(UCXDT_OK)) << "message " << i;
        EXPECT_EQ(check_received(*types[i], 1, dst, before, sent, bytes[i]), "") << "message " << i;
    }
}


TEST(RndvMany, ThousandOutstandingEachWay) {
    Pair p{Config{1024, 4096, 2, 8}};
    ASSERT_EQ(p.error, "");
    constexpr int kN = 1000;
    const auto t = L::vector(256, 4, 6, dbl);  // 8 KiB packed: 2 fragments
    Type h(*t);
    std::vector<Buffer> src, dst;
    std::vector<std::vector<std::byte>> sent;
    std::vector<ucxdt_status_ptr_t> reqs;
    for (int i = 0; i < 2 * kN; ++i) {
        src.emplace_back(*t, 1, 1000 + i);
        dst.emplace_back(*t, 1, 5000 + i);
        sent.push_back(packed(*t, src.back().ptr(), 1, 8192));
    }
    for (int i = 0; i < 2 * kN; ++i) {
        const int from = i % 2;  // even: 0 -> 1, odd: 1 -> 0
        reqs.push_back(ucxdt_tag_recv_nbx(p.w[1 - from], dst[i].ptr(), 1, h.h, i, ~0ull, nullptr));
        reqs.push_back(ucxdt_tag_send_nbx(p.ep[from], src[i].ptr(), 1, h.h, i, nullptr));
    }
    for (size_t k = 0; k < reqs.size(); ++k) ASSERT_EQ(p.wait(reqs[k]), UCXDT_OK) << "request " << k;
    for (int i = 0; i < 2 * kN; ++i) {
        const Buffer fresh(*t, 1, 5000 + i);  // the receive buffer as it was: its gaps must be so
        ASSERT_EQ(check_received(*t, 1, dst[i], fresh.bytes, sent[i], 8192), "") << "message " << i;
    }
}

}  // namespace
