// Eager thresholds by memory kind, the worker's settings, and the eager message itself.
#include "rndv_cases.hpp"

namespace {

using namespace rndv_cases;


// GPU layouts 8 KiB, host layouts 128 KiB by default; one threshold set, by the environment or a
// parameter, is both; UCXDT_HOST_EAGER_THRESHOLD sets the host's alone; out of range fails.
TEST(RndvWorker, EagerThresholdsOfBothMemoryKinds) {
    const Config defaults{-1, 16384, 2, 8};
    unsetenv("UCXDT_EAGER_THRESHOLD");
    unsetenv("UCXDT_HOST_EAGER_THRESHOLD");
    std::string c = worker_config(defaults);
    EXPECT_TRUE(has_line(c, "UCXDT_EAGER_THRESHOLD=8192") && has_line(c, "UCXDT_HOST_EAGER_THRESHOLD=131072")) << c;
    c = worker_config(Config{2048, 16384, 2, 8});
    EXPECT_TRUE(has_line(c, "UCXDT_EAGER_THRESHOLD=2048") && has_line(c, "UCXDT_HOST_EAGER_THRESHOLD=2048")) << c;
    setenv("UCXDT_EAGER_THRESHOLD", "300", 1);
    c = worker_config(defaults);
    EXPECT_TRUE(has_line(c, "UCXDT_EAGER_THRESHOLD=300") && has_line(c, "UCXDT_HOST_EAGER_THRESHOLD=300")) << c;
    setenv("UCXDT_HOST_EAGER_THRESHOLD", "4096", 1);
    c = worker_config(defaults);
    EXPECT_TRUE(has_line(c, "UCXDT_EAGER_THRESHOLD=300") && has_line(c, "UCXDT_HOST_EAGER_THRESHOLD=4096")) << c;
    setenv("UCXDT_HOST_EAGER_THRESHOLD", "-5", 1);
    c = worker_config(defaults);
    EXPECT_NE(c.find("eager thresholds must be in [0, 64 MiB]"), std::string::npos) << c;
    unsetenv("UCXDT_EAGER_THRESHOLD");
    unsetenv("UCXDT_HOST_EAGER_THRESHOLD");
}


// The GPU layouts' wire pools may take 16 MiB each by default; UCXDT_WIRE_POOL_SIZE sets it.
TEST(RndvWorker, WirePoolSize) {
    unsetenv("UCXDT_WIRE_POOL_SIZE");
    std::string c = worker_config(Config{});
    EXPECT_TRUE(has_line(c, "UCXDT_WIRE_POOL_SIZE=16777216")) << c;
    ScopedEnv env{{"UCXDT_WIRE_POOL_SIZE", "65536"}};
    c = worker_config(Config{});
    EXPECT_TRUE(has_line(c, "UCXDT_WIRE_POOL_SIZE=65536")) << c;
}


// Eight streams per GPU, and messages of 3 MiB or more taking them in turn, by default; the
// environment sets either, and a count outside 1-64 keeps the default.
TEST(RndvWorker, GpuStreamSettings) {
    unsetenv("UCXDT_GPU_STREAMS");
    unsetenv("UCXDT_GPU_STREAM_SPLIT");
    std::string c = worker_config(Config{});
    EXPECT_TRUE(has_line(c, "UCXDT_GPU_STREAMS=8") && has_line(c, "UCXDT_GPU_STREAM_SPLIT=3145728")) << c;
    {
        ScopedEnv env{{"UCXDT_GPU_STREAMS", "2"}, {"UCXDT_GPU_STREAM_SPLIT", "0"}};
        c = worker_config(Config{});
        EXPECT_TRUE(has_line(c, "UCXDT_GPU_STREAMS=2") && has_line(c, "UCXDT_GPU_STREAM_SPLIT=0")) << c;
    }
    ScopedEnv env{{"UCXDT_GPU_STREAMS", "0"}};
    c = worker_config(Config{});
    EXPECT_TRUE(has_line(c, "UCXDT_GPU_STREAMS=8")) << c;
}


// An eager message is the header's first 48 bytes and the packed data, so that an 8,192-byte host
// message (8,240 bytes) fits UCX 1.13's shared-memory eager limit of 8,256 bytes with UCP's
// header, as UCP's own generic-datatype message does; the whole 112-byte header pushed it into
// UCP's rendezvous. A plain UCP receive takes the message: its length, header and data.
TEST(RndvEager, EagerMessagesCarryTheEagerHeader) {
    using ucxdt::rndv::TagHeader;
    T::UcpPair u;
    ASSERT_EQ(u.open(UCP_FEATURE_TAG | UCP_FEATURE_AM), "");
    ucxdt_worker_h w[2] = {};
    ucxdt_ep_h ep[2] = {};
    for (int i = 0; i < 2; ++i) ASSERT_EQ(T::create_rndv_worker(u.ctx, u.w[i], Config{-1, 16384, 2, 8}, &w[i]), "");
    for (int i = 0; i < 2; ++i) ASSERT_EQ(T::create_rndv_ep(w[i], u.ep[i], &ep[i]), "");
    for (int i = 0; i < 200; ++i) ucxdt_worker_progress(w[0]), ucxdt_worker_progress(w[1]);
    Type t(*L::vector(1024, 1, 2, dbl));  // 8,192 packed bytes, every other double
    std::vector<double> src(2048);
    for (size_t i = 0; i < src.size(); ++i) src[i] = static_cast<double>(i);
    std::vector<char> landing(1 << 16);
    ucp_request_param_t rp{};
    void *recv = ucp_tag_recv_nbx(u.w[1], landing.data(), landing.size(), 0x78, ~0ull, &rp);
    ASSERT_FALSE(UCS_PTR_IS_ERR(recv));
    ucxdt_status_ptr_t send = ucxdt_tag_send_nbx(ep[0], src.data(), 1, t.h, 0x78, nullptr);
    ASSERT_FALSE(UCXDT_PTR_IS_ERR(send)) << ucxdt_last_error();
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (recv && ucp_request_check_status(recv) == UCS_INPROGRESS && std::chrono::steady_clock::now() < deadline)
        ucxdt_worker_progress(w[0]), ucxdt_worker_progress(w[1]);
    ASSERT_TRUE(recv != nullptr && ucp_request_check_status(recv) == UCS_OK) << "the message did not arrive";
    ucp_tag_recv_info_t info{};
    ASSERT_EQ(ucp_tag_recv_request_test(recv, &info), UCS_OK);
    ucp_request_free(recv);
    EXPECT_EQ(info.length, ucxdt::rndv::kEagerHeaderBytes + 8192);
    TagHeader h{};
    std::memcpy(&h, landing.data(), ucxdt::rndv::kEagerHeaderBytes);
    EXPECT_EQ(h.magic, ucxdt::rndv::kMagic);
    EXPECT_EQ(h.kind, ucxdt::rndv::TagKind::eager);
    EXPECT_EQ(h.packed, 8192);
    for (int i = 0; i < 1024; ++i) {
        double v = -1;
        std::memcpy(&v, landing.data() + ucxdt::rndv::kEagerHeaderBytes + 8 * i, sizeof v);
        ASSERT_EQ(v, static_cast<double>(2 * i)) << "packed double " << i;
    }
    if (send) {  // NULL: UCP sent it at once
        const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
        while (ucxdt_request_check_status(send) == UCXDT_INPROGRESS && std::chrono::steady_clock::now() < until)
            ucxdt_worker_progress(w[0]), ucxdt_worker_progress(w[1]);
        EXPECT_EQ(ucxdt_request_check_status(send), UCXDT_OK);
        ucxdt_request_free(send);
    }
    for (int i = 0; i < 2; ++i) ucxdt_ep_destroy(ep[i]);
    for (int i = 0; i < 2; ++i) ucxdt_worker_destroy(w[i]);
}


// With the default thresholds a 40 KiB host message goes eagerly, packed and unpacked by UCP's
// calls into ucxdt (src/ucp_rndv/wire_dt.cpp), posted or unexpected, and so do 102,400 bytes;
// 140,000 bytes take the rendezvous. A mismatched eager message completes its send (the message left) and fails its
// receive, while a rendezvous fails both: the send's status tells which ran.
TEST(RndvEager, HostLayoutsGoEagerUpTo128KiBByDefault) {
    Pair p{Config{-1, 16384, 2, 8}};
    ASSERT_EQ(p.error, "");
    const auto i64 = L::named(UCXDT_INT64);
    for (bool unexpected : {false, true})
        for (bool sc : {true, false})
            EXPECT_EQ(run_case(p, doubles(5120, sc), doubles(5120, !sc), 1, 90 + sc, unexpected), "")
                << (unexpected ? "unexpected, " : "posted, ") << (sc ? "contiguous" : "vector") << " sender";
    EXPECT_EQ(expect_error(p, doubles(5120, false), 1, L::contiguous(5120, i64), 1, UCXDT_ERR_TYPE_MISMATCH,
                           UCXDT_OK, Mem::host, Mem::host), "") << "40,960 bytes: eager";
    EXPECT_EQ(expect_error(p, doubles(12800, false), 1, L::contiguous(12800, i64), 1, UCXDT_ERR_TYPE_MISMATCH,
                           UCXDT_OK, Mem::host, Mem::host), "") << "102,400 bytes: eager";
    EXPECT_EQ(expect_error(p, doubles(17500, false), 1, L::contiguous(17500, i64), 1, UCXDT_ERR_TYPE_MISMATCH,
                           UCXDT_ERR_TYPE_MISMATCH, Mem::host, Mem::host), "") << "140,000 bytes: rendezvous";
    EXPECT_EQ(expect_error(p, doubles(2048, false), 2, doubles(2048, false), 1, UCXDT_ERR_TRUNCATED, UCXDT_OK,
                           Mem::host, Mem::host), "") << "32,768 bytes into 16,384: eager";
}


// Beside them, with the same defaults: a GPU receive takes a host sender's 40 KiB eager message
// in its wire slot, and a GPU sender keeps its 8 KiB threshold.
TEST(RndvEager, GpuLayoutsBesideHostEagerMessages) {
    if (!have_gpu()) GTEST_SKIP() << "no CUDA device: the eager messages of GPU layouts are untested here";
    Pair p{Config{-1, 16384, 2, 8}};
    ASSERT_EQ(p.error, "");
    const auto i64 = L::named(UCXDT_INT64);
    const std::pair<Mem, Mem> sides[] = {{Mem::host, Mem::cuda}, {Mem::cuda, Mem::host}, {Mem::cuda, Mem::cuda}};
    for (const auto &[sm, rm] : sides)
        EXPECT_EQ(run_case(p, doubles(5120, false), doubles(5120, true), 1, 95, false, sm, rm), "");
    EXPECT_EQ(expect_error(p, doubles(5120, false), 1, L::contiguous(5120, i64), 1, UCXDT_ERR_TYPE_MISMATCH,
                           UCXDT_ERR_TYPE_MISMATCH, Mem::cuda, Mem::host), "") << "a GPU sender's 40,960 bytes: rendezvous";
}


// ucxdt_ep_destroy cancels the sends that UCP still holds, and their callers then have their
// buffers back and overwrite them. A host eager message that UCP packs after that must come
// from the copy made at the cancel (Worker::complete), not from the overwritten layout: every
// message that arrives holds the data as sent. Over TCP with 64 messages of 40 KiB posted
// without progress, so that UCP holds the later ones unsent when the endpoint goes.
TEST(RndvEager, CanceledHostSendsNeverReadTheirBuffersAgain) {
    ScopedEnv env{{"UCX_TLS", "tcp"}};
    Pair p{Config{-1, 16384, 2, 8}};
    ASSERT_EQ(p.error, "");
    constexpr int kMessages = 64;
    const auto t = doubles(5120, false);  // 40,960 packed bytes: eager for a host layout
    Type h(*t);
    std::vector<std::unique_ptr<Buffer>> src, dst;
    std::vector<std::vector<std::byte>> sent, poison;
    std::vector<ucxdt_status_ptr_t> rreqs, sreqs;
    for (int i = 0; i < kMessages; ++i) {
        src.push_back(std::make_unique<Buffer>(*t, 1, 500 + i));
        dst.push_back(std::make_unique<Buffer>(*t, 1, ~(500 + i)));
        sent.push_back(packed(*t, src[i]->ptr(), 1, 40960));
        poison.push_back(dst[i]->bytes);
        rreqs.push_back(ucxdt_tag_recv_nbx(p.w[1], dst[i]->ptr(), 1, h.h, 0x700 + i, ~0ull, nullptr));
        ASSERT_TRUE(UCXDT_PTR_IS_PTR(rreqs.back()));
    }
    for (int i = 0; i < kMessages; ++i) {
        sreqs.push_back(ucxdt_tag_send_nbx(p.ep[0], src[i]->ptr(), 1, h.h, 0x700 + i, nullptr));
        ASSERT_FALSE(UCXDT_PTR_IS_ERR(sreqs.back())) << status_name(UCXDT_PTR_STATUS(sreqs.back()));
    }
    ucxdt_ep_destroy(p.ep[0]);
    p.ep[0] = nullptr;
    std::vector<bool> canceled(kMessages, false);
    for (int i = 0; i < kMessages; ++i) {
        const int st = p.wait(sreqs[i]);
        ASSERT_TRUE(st == UCXDT_OK || st == UCXDT_ERR_CANCELED) << i << ": " << status_name(st);
        canceled[i] = st == UCXDT_ERR_CANCELED;
        std::fill(src[i]->bytes.begin(), src[i]->bytes.end(), std::byte{0xee});  // the caller's again
    }
    ASSERT_GT(std::count(canceled.begin(), canceled.end(), true), 0) << "UCP held no send: nothing was tested";
    int arrived_after_cancel = 0;
    for (int i = 0; i < kMessages; ++i) {
        const int st = T::wait_request(rreqs[i], [&] { p.progress(); }, std::chrono::seconds(5));
        if (st == T::kStillRunning) {  // its message never left: the receive is canceled
            ucxdt_request_cancel(p.w[1], rreqs[i]);
            EXPECT_EQ(p.wait(rreqs[i]), UCXDT_ERR_CANCELED);
            continue;
        }
        ASSERT_EQ(st, UCXDT_OK) << i;
        EXPECT_EQ(check_received(*t, 1, *dst[i], poison[i], sent[i], 40960), "") << "message " << i;
        arrived_after_cancel += canceled[i];
    }
    EXPECT_GT(arrived_after_cancel, 0) << "no canceled message arrived: the copy went untested";
}

}  // namespace
