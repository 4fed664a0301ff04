// GPU layouts in windows (shared launches), the host-staged RTS, lifetimes, IPC references,
// a layout received as itself, and two GPUs.
#include "rndv_cases.hpp"

namespace {

using namespace rndv_cases;


// A window of messages that the receiver pulls: their copies share an event, and the strided
// ones a kernel launch (UCXDT_GPU_BATCH), whatever their run lengths, alignments and receive
// layouts (strided, two-level, contiguous, a block list into the same, of long or tiny runs).
TEST(RndvGpu, PulledWindowsShareALaunch) {
    if (!have_gpu()) GTEST_SKIP() << "no CUDA device: the CUDA IPC path is untested here";
    const auto i32 = L::named(UCXDT_INT32), byte = L::named(UCXDT_BYTE);
    // Cycled over the window; packed bytes 4,000, 36,000, 7,000, 18,560, 36,000, 2,776, 1,200.
    const std::vector<std::pair<L::TypeDescPtr, L::TypeDescPtr>> kinds = {
        {L::vector(500, 1, 3, dbl), L::vector(500, 1, 2, dbl)},
        {L::vector(3000, 3, 5, i32), L::vector(3000, 3, 4, i32)},
        {L::vector(1000, 7, 9, byte), L::vector(1000, 7, 13, byte)},
        {L::vector(580, 4, 6, dbl), L::subarray({20, 30, 8}, {20, 29, 4}, {0, 1, 2}, UCXDT_ORDER_C, dbl)},
        {L::vector(3000, 3, 5, i32), L::contiguous(9000, i32)},
        {L::indexed({40, 7, 300}, {-60, 0, 19}, dbl), L::indexed({40, 7, 300}, {-60, 0, 19}, dbl)},  // a block list
        {scattered_ints(), scattered_ints()},  // a block list of tiny runs into the same
    };
    constexpr int n = 42;
    for (const char *batch : {"8", "1"}) {
        ScopedEnv env{{"UCXDT_GPU_BATCH", batch}, {"UCXDT_CUDA_IPC", "y"}};
        Pair p{Config{1024, 16384, 2, 8}};
        ASSERT_EQ(p.error, "");
        for (int i = 0; i < 200; ++i) p.progress();
        const std::string what = std::string("UCXDT_GPU_BATCH=") + batch;
        ASSERT_NO_FATAL_FAILURE(window_of_kinds(p, kinds, n, what));
        const ucxdt::rndv::Worker &w = internals(p.w[1]);
        EXPECT_EQ(w.ipc_pulls, uint64_t{n}) << "receives that pulled";
        EXPECT_EQ(w.gpu_launches, uint64_t{n}) << "the receiver's GPU operations: one copy a pull";
        EXPECT_LE(w.lone_pulls, 1u) << "pulls not batched: only the window's last receive may be alone";
        expect_shared_events(w, batch, what);
    }
}


// Host staging of a window of small GPU messages: the senders' packs and the receivers'
// unpacks (eager, and fragments of the rendezvous, read in place or landed in the receiver's
// slots) share launches and events, in every direction and kernel kind at once (strided packs,
// strided unpacks, work-unit and point-kernel packs and unpacks of block lists), and all arrive
// whole.
TEST(RndvGpu, HostStagedWindowsShareALaunch) {
    if (!have_gpu()) GTEST_SKIP() << "no CUDA device: the host-staged GPU path is untested here";
    const auto i32 = L::named(UCXDT_INT32), byte = L::named(UCXDT_BYTE);
    // Packed bytes 800 (eager), 36,000 (three fragments), 7,000, 4,000 into a contiguous receive,
    // 2,776 (a block list), 32,800 (a block list into a vector, three fragments), 1,200 (tiny runs).
    const std::vector<std::pair<L::TypeDescPtr, L::TypeDescPtr>> kinds = {
        {L::vector(100, 1, 3, dbl), L::vector(100, 1, 2, dbl)},
        {L::vector(3000, 3, 5, i32), L::vector(3000, 3, 4, i32)},
        {L::vector(1000, 7, 9, byte), L::vector(1000, 7, 13, byte)},
        {L::vector(500, 1, 3, dbl), L::contiguous(500, dbl)},
        {L::indexed({40, 7, 300}, {-60, 0, 19}, dbl), L::indexed({40, 7, 300}, {-60, 0, 19}, dbl)},
        {L::indexed({1000, 2800, 4400}, {0, 2000, 6000}, i32), L::vector(8200, 1, 2, i32)},
        {scattered_ints(), scattered_ints()},  // point kernels both ways
    };
    constexpr int n = 35;
    for (const char *shm : {"y", "n"}) {
        for (const char *batch : {"8", "1"}) {
            ScopedEnv env{{"UCXDT_GPU_BATCH", batch}, {"UCXDT_CUDA_IPC", "n"}, {"UCXDT_HOST_SHM", shm}};
            Pair p{Config{1024, 16384, 2, 8}};
            ASSERT_EQ(p.error, "");
            for (int i = 0; i < 200; ++i) p.progress();
            const std::string what = std::string("UCXDT_GPU_BATCH=") + batch + ", UCXDT_HOST_SHM=" + shm;
            ASSERT_NO_FATAL_FAILURE(window_of_kinds(p, kinds, n, what));
            EXPECT_EQ(internals(p.w[1]).ipc_pulls, 0u) << what;
            expect_shared_events(internals(p.w[0]), batch, "sender, " + what);
            expect_shared_events(internals(p.w[1]), batch, "receiver, " + what);
        }
    }
}


// A window of large messages of many short runs over CUDA IPC, through the device slots (too
// many runs to pull in a window): the senders' packs and the receivers' unpacks of transposed
// pairs (8- and 16-byte elements) and of dense short runs share launches and events with one
// another, and all arrive whole. The first send, alone when it was posted, is pulled.
TEST(RndvGpu, SlotWindowsShareALaunch) {
    if (!have_gpu()) GTEST_SKIP() << "no CUDA device: the CUDA IPC path is untested here";
    const auto i32 = L::named(UCXDT_INT32), z = L::named(UCXDT_DOUBLE_COMPLEX);
    // hvector(N, 1, e, vector(N, 1, N, e)): the transpose of an N x N matrix of e-byte elements.
    auto transpose = [](int64_t n, const L::TypeDescPtr &e, int64_t bytes) {
        return L::hvector(n, 1, bytes, L::vector(n, 1, n, e));
    };
    // Packed bytes 524,288, 1,048,576, 480,000 (12-byte runs every 20).
    const std::vector<std::pair<L::TypeDescPtr, L::TypeDescPtr>> kinds = {
        {transpose(256, dbl, 8), transpose(256, dbl, 8)},
        {transpose(256, z, 16), transpose(256, z, 16)},
        {L::vector(40000, 3, 5, i32), L::vector(40000, 3, 5, i32)},
    };
    constexpr int n = 12;
    ScopedEnv env{{"UCXDT_CUDA_IPC", "y"}};
    Pair p{Config{1024, 16384, 2, 8}};
    ASSERT_EQ(p.error, "");
    for (int i = 0; i < 200; ++i) p.progress();
    ASSERT_NO_FATAL_FAILURE(window_of_kinds(p, kinds, n, "slots"));
    EXPECT_EQ(internals(p.w[1]).ipc_pulls, 1u) << "receives that pulled: the first message alone";
    EXPECT_TRUE(ipc_staged(p.w[1])) << "the receiver's device slots";
    expect_shared_events(internals(p.w[0]), "8", "sender");
    expect_shared_events(internals(p.w[1]), "8", "receiver");
}


// While the receiver's stream still runs UCXDT_GPU_IN_FLIGHT launches (1 by default), the
// host-staged unpacks of messages that arrive one progress call apart wait and then share one
// launch; with 0 each takes its own, as the messages come. Pulls over CUDA IPC never wait. A host
// function holds the stream busy until the test opens it (or 20 s pass), so the count does not
// depend on the GPU's speed. Every byte arrives.
TEST(RndvGpu, HostStagedUnpacksWaitForABusyStream) {
    if (!have_gpu()) GTEST_SKIP() << "no CUDA device: the host-staged GPU path is untested here";
    const auto blocks = L::indexed({40, 7, 300}, {-60, 0, 19}, dbl);  // 2,776 bytes: one fragment
    constexpr int n = 8;
    struct Gate {
        std::atomic<bool> open{false};
        static void hold(void *g) {
            const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(20);
            while (!static_cast<Gate *>(g)->open.load() && std::chrono::steady_clock::now() < until)
                std::this_thread::yield();
        }
    };
    const std::pair<const char *, const char *> settings[] = {{"n", "1"}, {"n", "2"}, {"n", "0"}, {"y", "1"}};
    for (const auto &[ipc, in_flight] : settings) {
        ScopedEnv env{{"UCXDT_CUDA_IPC", ipc}, {"UCXDT_GPU_IN_FLIGHT", in_flight}};
        const uint64_t limit = ipc[0] == 'y' ? 0 : static_cast<uint64_t>(in_flight[0] - '0');
        const std::string what = std::string("UCXDT_CUDA_IPC=") + ipc + " UCXDT_GPU_IN_FLIGHT=" + in_flight;
        Pair p{Config{1024, 16384, 2, 8}};
        ASSERT_EQ(p.error, "");
        for (int i = 0; i < 200; ++i) p.progress();
        // Every buffer is placed first: a copy on the legacy stream would wait for the held one.
        Type t(*blocks);
        std::vector<std::unique_ptr<Buffer>> src, dst;
        std::vector<std::unique_ptr<Placed>> src_at, dst_at;
        std::vector<std::vector<std::byte>> poison;
        for (int i = 0; i < n; ++i) {
            src.push_back(std::make_unique<Buffer>(*blocks, 1, 0x910 + i));
            dst.push_back(std::make_unique<Buffer>(*blocks, 1, 0x920 + i));
            poison.push_back(dst.back()->bytes);
            src_at.push_back(std::make_unique<Placed>(*src.back(), Mem::cuda));
            dst_at.push_back(std::make_unique<Placed>(*dst.back(), Mem::cuda));
        }
        // One message first: the receiver makes its stream, and every first use is paid.
        ASSERT_EQ(run_case(p, blocks, blocks, 1, 0x900, false, Mem::cuda, Mem::cuda), "") << what;
        const ucxdt::rndv::Worker &w = internals(p.w[1]);
        ASSERT_EQ(w.gpus.size(), 1u) << what;
        Gate gate;
        ASSERT_EQ(cudaLaunchHostFunc(w.gpus.begin()->second->stream(0)->cuda_stream(), Gate::hold, &gate), cudaSuccess);
        const uint64_t launches = w.gpu_launches, events = w.gpu_events;
        std::vector<ucxdt_status_ptr_t> sreqs, rreqs;
        for (int i = 0; i < n; ++i) {
            rreqs.push_back(ucxdt_tag_recv_nbx(p.w[1], dst_at[i]->ptr(), 1, t.h, 0x910 + i, ~0ull, nullptr));
            sreqs.push_back(ucxdt_tag_send_nbx(p.ep[0], src_at[i]->ptr(), 1, t.h, 0x910 + i, nullptr));
            // Until the receiver has issued this message's unpack: the next one comes later.
            const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
            while (w.gpu_launches < launches + i + 1 && std::chrono::steady_clock::now() < deadline) p.progress();
            if (w.gpu_launches < launches + i + 1) gate.open = true;
            ASSERT_EQ(w.gpu_launches, launches + i + 1) << what << ": message " << i << " was not unpacked";
        }
        for (int i = 0; i < 20; ++i) p.progress();
        // The first `limit` went while the stream had room; the others wait together.
        EXPECT_EQ(w.gpu_events - events, limit ? limit : uint64_t{n}) << what << ": launches while held";
        gate.open = true;
        for (int i = 0; i < n; ++i) {
            ASSERT_EQ(p.wait(rreqs[i]), UCXDT_OK) << what << ", receive " << i;
            ASSERT_EQ(p.wait(sreqs[i]), UCXDT_OK) << what << ", send " << i;
        }
        EXPECT_EQ(w.gpu_events - events, limit ? limit + 1 : uint64_t{n}) << what;
        for (int i = 0; i < n; ++i) {
            dst_at[i]->fetch();
            EXPECT_EQ(check_received(*blocks, 1, *dst[i], poison[i], packed(*blocks, src[i]->ptr(), 1, 2776), 2776), "")
                << what << ", message " << i;
        }
    }
}


// A host-staged message of one fragment goes with an RTS that names its slot once it is packed: a receiver that maps the sender's staging unpacks at once and answers
// with the ATS alone (no RTR, READY or ACK); one that cannot map it asks with an RTR and gets the
// fragments as active messages. Every byte arrives either way.
TEST(RndvGpu, HostStagedRtsNamesItsSlots) {
    if (!have_gpu()) GTEST_SKIP() << "no CUDA device: the host-staged GPU path is untested here";
    using ucxdt::rndv::AmKind;
    const auto i32 = L::named(UCXDT_INT32), byte = L::named(UCXDT_BYTE);
    // 7,000 and 16,000 packed bytes (one fragment of 16 KiB each); 20,000 (two fragments: RTS
    // first, then each fragment announced); strided and block-list receives.
    const std::vector<std::pair<L::TypeDescPtr, L::TypeDescPtr>> kinds = {
        {L::vector(1000, 7, 9, byte), L::vector(1000, 7, 13, byte)},
        {L::vector(1000, 2, 3, dbl), L::indexed({600, 1400}, {0, 1200}, dbl)},
        {L::vector(2500, 1, 3, dbl), L::vector(2500, 1, 2, dbl)},
    };
    constexpr int n = 12;  // four of each
    constexpr uint64_t frags = 4 * 1 + 4 * 1 + 4 * 2;
    // Slots for the whole window and the one that unanswered sends leave free: a send that finds
    // none sends its RTS without slots, and its receiver answers with an RTR (test_rndv_progress).
    constexpr int kSlots = static_cast<int>(frags) + 1;
    for (const bool maps : {true, false}) {
        ScopedEnv env{{"UCXDT_CUDA_IPC", "n"}, {"UCXDT_HOST_SHM", "y"}, {"UCXDT_HOST_FRAGS", "am"}};
        Pair p{Config{1024, 16384, 2, kSlots}};
        ASSERT_EQ(p.error, "");
        if (!maps) static_cast<ucxdt::rndv::Worker &>(*p.w[1]).cfg.host_shm = false;
        for (int i = 0; i < 200; ++i) p.progress();
        const std::string what = maps ? "the receiver maps the sender's staging" : "the receiver does not map it";
        ASSERT_NO_FATAL_FAILURE(window_of_kinds(p, kinds, n, what));
        const ucxdt::rndv::Worker &s = internals(p.w[0]), &r = internals(p.w[1]);
            EXPECT_EQ(sent(r, AmKind::ats), uint64_t{n}) << what;
        EXPECT_EQ(sent(s, AmKind::fin), 0u) << what;
        if (maps) {  // only the two-fragment messages take RTR, READY and ACK
            EXPECT_EQ(r.host_frags.in_place, frags) << what;
            EXPECT_EQ(sent(r, AmKind::rtr), 4u) << what;
            EXPECT_EQ(sent(r, AmKind::ack), 8u) << what;
            EXPECT_EQ(sent(s, AmKind::ready), 8u) << what;
        } else {
            EXPECT_EQ(r.host_frags.in_place, 0u) << what;
            EXPECT_EQ(r.host_frags.am, frags) << what;
            EXPECT_EQ(sent(r, AmKind::rtr), uint64_t{n}) << what;
        }
        EXPECT_EQ(s.pools[0]->free_slots(), kSlots) << what << ": the sender holds host slots after its requests ended";
    }
}


// A worker destroyed while UCP still holds a send of it (UCP's rendezvous from 1 KiB, and the
// receiver has not posted the receive): the send completes with UCXDT_ERR_CANCELED, and the
// request and the worker's staging stay allocated, so that when UCP finishes the send later
// (here a receive posted on the peer's UCP worker) its callback reaches them, not freed memory,
// and frees them; the message still arrives whole.
TEST(RndvLifetime, DestroyWhileUcpHoldsASend) {
    T::UcpPair u;
    ASSERT_EQ(u.open(UCP_FEATURE_TAG | UCP_FEATURE_AM | UCP_FEATURE_RMA, {{"RNDV_THRESH", "1024"}}), "");
    ucxdt_worker_h w[2] = {};
    ucxdt_ep_h ep[2] = {};
    for (int i = 0; i < 2; ++i) ASSERT_EQ(T::create_rndv_worker(u.ctx, u.w[i], Config{65536, 16384, 2, 8}, &w[i]), "");
    for (int i = 0; i < 2; ++i) ASSERT_EQ(T::create_rndv_ep(w[i], u.ep[i], &ep[i]), "");
    for (int i = 0; i < 200; ++i) ucxdt_worker_progress(w[0]), ucxdt_worker_progress(w[1]);
    // 60,000 bytes of a host vector: an eager message of ucxdt, a rendezvous of UCP.
    Type t(*L::vector(7500, 1, 2, dbl));
    std::vector<double> src(15000, 1.5);
    ucxdt_status_ptr_t req = ucxdt_tag_send_nbx(ep[0], src.data(), 1, t.h, 0x77, nullptr);
    ASSERT_FALSE(UCXDT_PTR_IS_ERR(req)) << ucxdt_last_error();
    ASSERT_NE(req, nullptr) << "the send completed at once: UCP did not take its rendezvous";
    for (int i = 0; i < 2000; ++i) ucxdt_worker_progress(w[0]), ucxdt_worker_progress(w[1]);
    ASSERT_EQ(ucxdt_request_check_status(req), UCXDT_INPROGRESS) << "the send ended without a receive";
    ucxdt_request_free(req);
    ucxdt_ep_destroy(ep[0]);
    ucxdt_worker_destroy(w[0]);
    const ucxdt::rndv::Worker &gone = internals(w[0]);  // kept for the operation UCP holds
    EXPECT_TRUE(gone.destroyed);
    EXPECT_EQ(gone.orphans, 1u) << "requests kept for UCP's callbacks";
    // A plain UCP receive of the tagged message lets UCP's rendezvous finish: its completion of
    // the send calls back into the orphan, which frees it, and then the worker.
    std::vector<char> landing(1 << 17);
    ucp_request_param_t rp{};
    void *recv = ucp_tag_recv_nbx(u.w[1], landing.data(), landing.size(), 0x77, ~0ull, &rp);
    ASSERT_FALSE(UCS_PTR_IS_ERR(recv));
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (recv && ucp_request_check_status(recv) == UCS_INPROGRESS && std::chrono::steady_clock::now() < deadline)
        ucp_worker_progress(u.w[0]), ucp_worker_progress(u.w[1]);
    ASSERT_TRUE(recv == nullptr || ucp_request_check_status(recv) == UCS_OK) << "UCP's rendezvous did not finish";
    if (recv) ucp_request_free(recv);
    for (int i = 0; i < 200; ++i) ucp_worker_progress(u.w[0]), ucp_worker_progress(u.w[1]);
    double first = 0;
    std::memcpy(&first, landing.data() + ucxdt::rndv::kEagerHeaderBytes, sizeof first);
    EXPECT_EQ(first, 1.5) << "the message UCP delivered after the worker's destruction";
    ucxdt_ep_destroy(ep[1]);
    ucxdt_worker_destroy(w[1]);
}


// What a peer's CUDA IPC reference lets our GPU work reach: the bytes of its allocation around
// the named byte, no further, whatever the offsets a message carries (each pull, push and
// fragment copy is checked this way before it is launched).
TEST(RndvIpc, ReferencesBoundWhatAPeerReaches) {
    ucxdt::cuda::IpcRef ref{};
    ref.offset = 100;
    ref.alloc_bytes = 1000;
    EXPECT_TRUE(ucxdt::cuda::ipc_covers(ref, 0, 900)) << "the bytes from the named one to the allocation's end";
    EXPECT_TRUE(ucxdt::cuda::ipc_covers(ref, -100, 0)) << "the bytes below it, down to the allocation's start";
    EXPECT_TRUE(ucxdt::cuda::ipc_covers(ref, 5, 5)) << "nothing";
    EXPECT_FALSE(ucxdt::cuda::ipc_covers(ref, 0, 901)) << "one byte past the end";
    EXPECT_FALSE(ucxdt::cuda::ipc_covers(ref, -101, 0)) << "one byte below the start";
    EXPECT_FALSE(ucxdt::cuda::ipc_covers(ref, 10, 5)) << "an inverted range";
    EXPECT_FALSE(ucxdt::cuda::ipc_covers(ref, INT64_MAX - 10, INT64_MAX)) << "offsets that overflow when added";
    EXPECT_FALSE(ucxdt::cuda::ipc_covers(ref, INT64_MIN, 0));
    ref.offset = UINT64_MAX;  // a reference that names a byte past its allocation
    EXPECT_FALSE(ucxdt::cuda::ipc_covers(ref, 0, 1));
}


// A block-list sender whose receive layout is the same block list copies each byte to its own
// displacement in the receive buffer: one kernel, no staging on either side. Layouts of the
// work-unit kernel (rows of T, a struct of subarrays) and of the point kernel (single doubles),
// data below the buffer pointer, count > 1; a receive of the same signature in another layout
// still goes by push.
TEST(RndvGpu, SameBlockListByteForByte) {
    if (!have_gpu()) GTEST_SKIP() << "no CUDA device: the CUDA IPC path is untested here";
    std::vector<int64_t> singles;
    for (int64_t i = 0; i < 3000; ++i) singles.push_back(3 * i + i % 5);
    L::Layout tri, wrf;
    std::string err;
    ASSERT_TRUE(L::resolve_layout("triangular:n=300", &tri, &err)) << err;
    ASSERT_TRUE(L::resolve_layout("wrf_y_sa", &wrf, &err)) << err;
    const std::pair<L::TypeDescPtr, int64_t> same[] = {
        {tri.type, tri.count},
        {wrf.type, wrf.count},
        {L::indexed_block(1, singles, dbl), 2},
        {L::resized(L::indexed({40, 7, 300}, {-60, 0, 19}, dbl), -480, 3200), 4},
    };
    // Two elements of a type into one of its two-element contiguous type: the same block list.
    const auto pair_of = L::contiguous(2, same[3].first);
    // Up to UCXDT_IPC_PULL_SIZE the receiver copies from the sender's block list (pull): the
    // five transfers of the same block list, all under 512 KiB, and none of the others.
    const std::tuple<const char *, const char *, uint64_t> settings[] = {
        {"y", "0", 0}, {"y", "524288", 5}, {"n", "524288", 0}};
    for (const auto &[on, pull, pulls] : settings) {
        ScopedEnv env{{"UCXDT_IPC_SAME_LAYOUT_COPY", on}, {"UCXDT_IPC_PULL_SIZE", pull}, {"UCXDT_CUDA_IPC", "y"}};
        Pair p{Config{1024, 16384, 2, 8}};
        ASSERT_EQ(p.error, "");
        for (int i = 0; i < 200; ++i) p.progress();
        for (size_t i = 0; i < std::size(same); ++i)
            EXPECT_EQ(run_case(p, same[i].first, same[i].first, same[i].second, 0x5a0 + i, i % 2 == 1, Mem::cuda,
                               Mem::cuda),
                      "")
                << short_desc(*same[i].first) << " x " << same[i].second << ", UCXDT_IPC_SAME_LAYOUT_COPY=" << on;
        EXPECT_EQ(run_case(p, same[3].first, pair_of, 2, 0x5ae, false, Mem::cuda, Mem::cuda, -1, 1), "")
            << "two elements into one of contiguous(2), UCXDT_IPC_SAME_LAYOUT_COPY=" << on;
        EXPECT_EQ(ipc_staged(p.w[1]), std::string(on) == "n")
            << "the receiver's device staging, UCXDT_IPC_SAME_LAYOUT_COPY=" << on;
        EXPECT_EQ(internals(p.w[1]).ipc_pulls, pulls)
            << "receives that pulled, UCXDT_IPC_SAME_LAYOUT_COPY=" << on << ", UCXDT_IPC_PULL_SIZE=" << pull;
        // The same signature in other block lists: one displacement or two lengths differ.
        const auto rows = L::indexed({100, 200, 300}, {0, 150, 400}, dbl);
        for (const auto &other : {L::indexed({100, 200, 300}, {0, 160, 400}, dbl),
                                  L::indexed({100, 201, 299}, {0, 150, 400}, dbl)})
            EXPECT_EQ(run_case(p, rows, other, 3, 0x5af, false, Mem::cuda, Mem::cuda), "")
                << "into " << short_desc(*other) << ", UCXDT_IPC_SAME_LAYOUT_COPY=" << on;
    }
}


// A strided layout received in the same layout, with runs too short to cross the link one by
// one (8 and 16 bytes), above the pull size: the sender copies each byte to its own
// displacement in address order, where the transpose's and FFT's scatter are one copy of the
// whole span and columns of gapped rows a run per row; no staging on the receiver. The same
// send into a contiguous receive goes as before.
TEST(RndvGpu, SameStridedLayoutInAddressOrder) {
    if (!have_gpu()) GTEST_SKIP() << "no CUDA device: the CUDA IPC path is untested here";
    L::Layout fft;
    std::string err;
    ASSERT_TRUE(L::resolve_layout("fft2_scatter:N=512", &fft, &err)) << err;
    const auto transpose = L::hvector(512, 1, 8, L::vector(512, 1, 512, dbl));  // 2 MiB
    const std::pair<L::TypeDescPtr, int64_t> same[] = {
        {transpose, 1},
        {fft.type, fft.count},
        {L::hvector(256, 1, 8, L::vector(1024, 1, 300, dbl)), 1},  // 2 KiB of each 2,400 B row
    };
    for (const char *on : {"y", "n"}) {
        ScopedEnv env{{"UCXDT_IPC_SAME_LAYOUT_COPY", on}, {"UCXDT_CUDA_IPC", "y"}};
        Pair p{Config{}};
        ASSERT_EQ(p.error, "");
        for (int i = 0; i < 200; ++i) p.progress();
        for (size_t i = 0; i < std::size(same); ++i)
            EXPECT_EQ(run_case(p, same[i].first, same[i].first, same[i].second, 0x5c0 + i, i % 2 == 1, Mem::cuda,
                               Mem::cuda),
                      "")
                << short_desc(*same[i].first) << ", UCXDT_IPC_SAME_LAYOUT_COPY=" << on;
        EXPECT_EQ(run_case(p, transpose, L::contiguous(512 * 512, dbl), 1, 0x5c8, false, Mem::cuda, Mem::cuda), "")
            << "the transpose into contiguous, UCXDT_IPC_SAME_LAYOUT_COPY=" << on;
        EXPECT_EQ(ipc_staged(p.w[1]), std::string(on) == "n")
            << "the receiver's device staging, UCXDT_IPC_SAME_LAYOUT_COPY=" << on;
    }
}


// A sender on GPU 0 and a receiver on GPU 1 of one process: transfers cross the link, so
// strided layouts take the 2-D copy engine into or out of the other GPU's memory and the others
// kernels that reach across. Messages of about 9 MB, one fragment each.
TEST(RndvGpu, AcrossTwoGpus) {
    int n = 0;
    if (!have_gpu() || cudaGetDeviceCount(&n) != cudaSuccess || n < 2)
        GTEST_SKIP() << "fewer than two CUDA devices: transfers across a link are untested here";
    Pair p{Config{8192, 1 << 20, 4, 16}};
    ASSERT_EQ(p.error, "");
    for (int i = 0; i < 200; ++i) p.progress();
    const char *specs[][2] = {{"triangular:n=1500", "triangular:n=1500"},
                              {"triangular:n=1500", "contig:count=1125750,type=double"},
                              {"contig:count=1125750,type=double", "triangular:n=1500"},
                              {"submatrix:n=1100", "submatrix:n=1100"},
                              {"submatrix:n=1100", "contig:count=1210000,type=double"},
                              {"contig:count=1210000,type=double", "submatrix:n=1100"},
                              {"fft2_gather:N=1536,P=2", "fft2_gather:N=1536,P=2"}};
    for (const auto &[send, recv] : specs) {
        L::Layout ls, lr;
        std::string err;
        ASSERT_TRUE(L::resolve_layout(send, &ls, &err)) << err;
        ASSERT_TRUE(L::resolve_layout(recv, &lr, &err)) << err;
        ASSERT_EQ(ls.count, lr.count);
        EXPECT_EQ(run_case(p, ls.type, lr.type, ls.count, 0xa11 + ls.count, false, Mem::cuda, Mem::cuda, 1), "")
            << send << " into " << recv;
    }
}

}  // namespace
