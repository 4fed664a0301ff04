// Completion callbacks (ucxdt_request_param_t), the fragment model, and the worker's checks of
// its parameters.
#include "rndv_cases.hpp"

namespace {

using namespace rndv_cases;


// Eager (64 doubles, 512 B packed) and rendezvous (40,000 doubles in 20 fragments), each
// completing only through its callback, which frees the request.
TEST_F(Rndv, SendAndReceiveCompleteThroughTheirCallbacks) {
    Pair &p = shared_pair();
    for (int64_t n : {64, 40000}) {
        const auto t = doubles(n, false);
        Type h(*t);
        Buffer src(*t, 1, n), dst(*t, 1, ~n);
        const int64_t total = n * 8;
        const std::vector<std::byte> sent = packed(*t, src.ptr(), 1, total), poison = dst.bytes;
        Seen rs, ss;
        const ucxdt_request_param_t rp = callback_param(&rs, true), sp = callback_param(&ss, false);
        ucxdt_status_ptr_t rreq = ucxdt_tag_recv_nbx(p.w[1], dst.ptr(), 1, h.h, 0x51, ~0ull, &rp);
        ASSERT_TRUE(UCXDT_PTR_IS_PTR(rreq)) << "a receive posted before its message cannot be complete";
        ucxdt_status_ptr_t sreq = ucxdt_tag_send_nbx(p.ep[0], src.ptr(), 1, h.h, 0x51, &sp);
        ASSERT_FALSE(UCXDT_PTR_IS_ERR(sreq)) << status_name(UCXDT_PTR_STATUS(sreq));
        const bool send_async = sreq != nullptr;  // NULL: complete at once, and no callback comes
        ASSERT_TRUE(progress_until(p, [&] { return rs.calls > 0 && (ss.calls > 0 || !send_async); }))
            << n << " doubles: a callback never came";
        for (int i = 0; i < 100; ++i) p.progress();  // a second call would show here
        EXPECT_EQ(rs.calls, 1);
        EXPECT_EQ(rs.request, rreq);
        EXPECT_EQ(rs.user_data, &rs);
        EXPECT_EQ(rs.status, UCXDT_OK);
        EXPECT_EQ(rs.length, total);
        EXPECT_EQ(rs.tag, 0x51u);
        EXPECT_EQ(ss.calls, send_async ? 1 : 0);
        if (send_async) {
            EXPECT_EQ(ss.request, sreq);
            EXPECT_EQ(ss.status, UCXDT_OK);
        }
        EXPECT_EQ(check_received(*t, 1, dst, poison, sent, total), "") << n << " doubles";
    }
    if (HasFailure()) return;
    // The rendezvous send cannot complete before the receiver's RTR: it must have been a request.
    Seen ss;
    const auto t = doubles(40000, true);
    Type h(*t);
    Buffer src(*t, 1, 1), dst(*t, 1, 2);
    const std::vector<std::byte> sent = packed(*t, src.ptr(), 1, 320000), poison = dst.bytes;
    const ucxdt_request_param_t sp = callback_param(&ss, false);
    ucxdt_status_ptr_t sreq = ucxdt_tag_send_nbx(p.ep[0], src.ptr(), 1, h.h, 0x52, &sp);
    ASSERT_TRUE(UCXDT_PTR_IS_PTR(sreq));
    EXPECT_EQ(p.wait(ucxdt_tag_recv_nbx(p.w[1], dst.ptr(), 1, h.h, 0x52, ~0ull, nullptr)), UCXDT_OK);
    ASSERT_TRUE(progress_until(p, [&] { return ss.calls > 0; }));
    EXPECT_EQ(ss.status, UCXDT_OK);
    EXPECT_EQ(check_received(*t, 1, dst, poison, sent, 320000), "");
}


// A chain in which every completion callback posts the next operation: each receive's callback
// posts the next receive, each send's callback the next send. Sizes alternate between eager
// and rendezvous; every message lands in its own buffer, in order.
TEST_F(Rndv, CallbacksPostTheNextOperation) {
    Pair &p = shared_pair();
    constexpr int kMessages = 12;
    struct Chain {
        Pair *p;
        std::vector<std::unique_ptr<Type>> types;
        std::vector<L::TypeDescPtr> descs;
        std::vector<Buffer> src, dst;
        std::vector<std::vector<std::byte>> sent_bytes, poison;
        int posted_recvs = 0, posted_sends = 0, recvs_done = 0, sends_done = 0;
        std::vector<int64_t> lengths;
        std::vector<ucxdt_status_t> errors;
        ucxdt_request_param_t rp{}, sp{};

        void post_recv() {
            const int i = posted_recvs++;
            ucxdt_status_ptr_t r = ucxdt_tag_recv_nbx(p->w[1], dst[i].ptr(), 1, types[i]->h, 0x600 + i, ~0ull, &rp);
            if (UCXDT_PTR_IS_ERR(r)) errors.push_back(UCXDT_PTR_STATUS(r));
            else if (!r) errors.push_back(UCXDT_ERR_UCX);  // complete before its send: impossible
        }
        void post_send() {
            const int i = posted_sends++;
            ucxdt_status_ptr_t r = ucxdt_tag_send_nbx(p->ep[0], src[i].ptr(), 1, types[i]->h, 0x600 + i, &sp);
            if (UCXDT_PTR_IS_ERR(r)) errors.push_back(UCXDT_PTR_STATUS(r));
            else if (!r) sent(UCXDT_OK);  // complete at once: no callback comes
        }
        void sent(ucxdt_status_t st) {
            ++sends_done;
            if (st != UCXDT_OK) errors.push_back(st);
            else if (posted_sends < kMessages) post_send();
        }
    } c;
    c.p = &p;
    for (int i = 0; i < kMessages; ++i) {
        const int64_t n = i % 2 ? 40000 : 64;
        c.descs.push_back(doubles(n, i % 3 == 0));
        c.types.push_back(std::make_unique<Type>(*c.descs.back()));
        c.src.emplace_back(*c.descs.back(), 1, 0x700 + i);
        c.dst.emplace_back(*c.descs.back(), 1, ~0x700ull - i);
        c.sent_bytes.push_back(packed(*c.descs.back(), c.src.back().ptr(), 1, n * 8));
        c.poison.push_back(c.dst.back().bytes);
    }
    c.rp.field_mask = c.sp.field_mask = UCXDT_REQUEST_PARAM_FIELD_CALLBACK | UCXDT_REQUEST_PARAM_FIELD_USER_DATA;
    c.rp.user_data = c.sp.user_data = &c;
    c.rp.cb.recv = [](void *req, ucxdt_status_t st, int64_t len, ucp_tag_t, void *ud) {
        auto *ch = static_cast<Chain *>(ud);
        ucxdt_request_free(req);
        ++ch->recvs_done;
        ch->lengths.push_back(len);
        if (st != UCXDT_OK) ch->errors.push_back(st);
        else if (ch->posted_recvs < kMessages) ch->post_recv();
    };
    c.sp.cb.send = [](void *req, ucxdt_status_t st, void *ud) {
        ucxdt_request_free(req);
        static_cast<Chain *>(ud)->sent(st);
    };
    c.post_recv();
    c.post_send();
    ASSERT_TRUE(progress_until(p, [&] {
        return !c.errors.empty() || (c.recvs_done == kMessages && c.sends_done == kMessages);
    })) << c.recvs_done << " receives and " << c.sends_done << " sends completed";
    ASSERT_TRUE(c.errors.empty()) << status_name(c.errors.front());
    for (int i = 0; i < kMessages; ++i) {
        const int64_t total = (i % 2 ? 40000 : 64) * 8;
        EXPECT_EQ(c.lengths[i], total) << "message " << i;
        EXPECT_EQ(check_received(*c.descs[i], 1, c.dst[i], c.poison[i], c.sent_bytes[i], total), "")
            << "message " << i;
    }
}


// The fragment size model of the CUDA IPC pipeline: n = sqrt(P / (R c)) fragments, rounded to
// the alignment and capped by the largest slot.
TEST(RndvFragModel, FragmentsGrowAsTheSquareRootOfTheMessage) {
    using ucxdt::rndv::pipeline_frag_bytes;
    constexpr int64_t kAlign = 64 << 10, kMax = 32 << 20;
    // 1 TB/s and 10 us a fragment: 8 MB in one piece, 128 MB in four (sqrt(12.8) = 3.6).
    EXPECT_EQ(pipeline_frag_bytes(8000000, 1e12, 10e-6, kAlign, kMax), 123 * kAlign);
    EXPECT_EQ(pipeline_frag_bytes(128000000, 1e12, 10e-6, kAlign, kMax), 489 * kAlign);
    // Dearer fragments: fewer of them (128 MB at 40 us: sqrt(3.2) -> 2, capped by the slot).
    EXPECT_EQ(pipeline_frag_bytes(128000000, 1e12, 40e-6, kAlign, kMax), kMax);
    EXPECT_EQ(pipeline_frag_bytes(128000000, 1e12, 40e-6, kAlign, 1 << 30), 977 * kAlign);
    // Cheaper ones: more (1 us: sqrt(128) -> 11 fragments of 11.6 MB).
    EXPECT_EQ(pipeline_frag_bytes(128000000, 1e12, 1e-6, kAlign, kMax), 178 * kAlign);
    // Nothing measured: one fragment, as large as a slot allows.
    EXPECT_EQ(pipeline_frag_bytes(5000000, 0, 0, kAlign, kMax), 77 * kAlign);
    EXPECT_EQ(pipeline_frag_bytes(128000000, 0, 10e-6, kAlign, kMax), kMax);
    // Empty and tiny messages still get a positive size.
    EXPECT_EQ(pipeline_frag_bytes(0, 1e12, 10e-6, kAlign, kMax), kAlign);
    EXPECT_EQ(pipeline_frag_bytes(100, 1e12, 10e-6, 1, kMax), 100);
}


// Runs one by one across a peer link, or the fragment pipeline: the crossover lies between
// the table-i layouts that measured each way (cuda/method.cpp).
TEST(RndvFragModel, ManyShortRunsLeaveThePeerLink) {
    auto strided = [](int64_t runs, int64_t len) {
        ucxdt::Plan p;
        p.cls = UCXDT_PLAN_STRIDED;
        p.block_len = p.unit_size = len;
        p.packed_size = runs * len;
        p.num_blocks = runs;
        p.dims = {{runs, 2 * len}};
        return p;
    };
    using ucxdt::cuda::runs_cross_peer_link;
    EXPECT_TRUE(runs_cross_peer_link(strided(512, 8)));       // nas_mg_y 34^3, 4 KiB
    EXPECT_TRUE(runs_cross_peer_link(strided(7600, 12)));     // specfem3d_mt_send
    EXPECT_TRUE(runs_cross_peer_link(strided(32768, 16)));    // fft2_scatter N = 256
    EXPECT_TRUE(runs_cross_peer_link(strided(100, 32768)));   // 32 KiB rows
    EXPECT_FALSE(runs_cross_peer_link(strided(65536, 8)));    // nas_mg_x 514 x 258^2, transpose N = 256
    EXPECT_FALSE(runs_cross_peer_link(strided(262144, 8)));   // 8 B every 64 B, 2 MiB
    // The same runs, wider: the link's time on the bytes grows, the pipeline's with it.
    EXPECT_TRUE(runs_cross_peer_link(strided(65536, 4096)));
    ucxdt::Plan list;
    list.cls = UCXDT_PLAN_BLOCK_LIST;
    list.block_len = 8;
    list.packed_size = 8 << 20;
    EXPECT_TRUE(runs_cross_peer_link(list)) << "only strided plans are judged";
}


TEST(RndvWorker, CreateRejectsMissingFields) {
    ucxdt_worker_params_t wp{};
    ucxdt_worker_h w = nullptr;
    EXPECT_EQ(ucxdt_worker_create(&wp, &w), UCXDT_ERR_INVALID_PARAM);
    EXPECT_NE(std::string(ucxdt_last_error()), "");
    EXPECT_EQ(ucxdt_worker_create(nullptr, &w), UCXDT_ERR_INVALID_PARAM);
    EXPECT_EQ(w, nullptr);
}


TEST(RndvWorker, SendRejectsBadArguments) {
    Pair &p = shared_pair();
    ASSERT_EQ(p.error, "");
    ucxdt_type_t t = UCXDT_TYPE_NULL;
    ASSERT_EQ(ucxdt_type_contiguous(4, ucxdt_type_primitive(UCXDT_INT32), &t), UCXDT_OK);
    char buf[16];
    ucxdt_status_ptr_t r = ucxdt_tag_send_nbx(p.ep[0], buf, 1, t, 1, nullptr);  // not committed
    EXPECT_TRUE(UCXDT_PTR_IS_ERR(r));
    EXPECT_EQ(UCXDT_PTR_STATUS(r), UCXDT_ERR_NOT_COMMITTED);
    ASSERT_EQ(ucxdt_type_commit(t), UCXDT_OK);
    r = ucxdt_tag_send_nbx(p.ep[0], buf, -1, t, 1, nullptr);
    EXPECT_EQ(UCXDT_PTR_STATUS(r), UCXDT_ERR_INVALID_PARAM);
    ucxdt_type_free(&t);
}

}  // namespace
