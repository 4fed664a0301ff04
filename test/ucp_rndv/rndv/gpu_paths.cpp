// GPU layouts: the CUDA IPC and host-staged paths, device slots, streams, wire pools, the
// sender-written contiguous message, and which path a message takes.
#include "rndv_cases.hpp"

namespace {

using namespace rndv_cases;


TEST(RndvGpu, IpcPathAllLayoutsAndMixedMemory) {
    if (!have_gpu()) GTEST_SKIP() << "no CUDA device: the CUDA IPC path is untested here";
    gpu_path_cases(true);
}


TEST(RndvGpu, HostStagedPathWhenIpcIsOff) {
    if (!have_gpu()) GTEST_SKIP() << "no CUDA device: the host-staged GPU path is untested here";
    gpu_path_cases(false);
}


// UCX_TLS without cuda_ipc: UCX would not join the workers by CUDA IPC, and neither does ucxdt,
// whatever UCXDT_CUDA_IPC says (src/ucp_rndv/ucx_reach.hpp). With cuda_ipc named, it does.
TEST(RndvGpu, HostStagedPathWhereUcxTlsHasNoCudaIpc) {
    if (!have_gpu()) GTEST_SKIP() << "no CUDA device: the host-staged GPU path is untested here";
    {
        ScopedEnv tls{{"UCX_TLS", "tcp,cuda_copy"}};
        gpu_path_cases(false, "y");
    }
    ScopedEnv tls{{"UCX_TLS", "tcp,cuda_copy,cuda_ipc"}};
    gpu_path_cases(true);
}


// Host staging of GPU layouts with more messages at once than either pool has slots, each of
// many fragments: sends wait for send slots, receives for receive slots (or, unpacking from the
// sender's slots in place, for the sender's READY), and the packs and unpacks of different
// messages run on the GPU's stream while UCP moves other fragments. All complete with their
// data, and every pool has every slot back.
TEST(RndvGpu, HostStagedManyOutstanding) {
    if (!have_gpu()) GTEST_SKIP() << "no CUDA device: the host-staged GPU path is untested here";
    for (const char *shm : {"n", "y"}) {
        ScopedEnv env{{"UCXDT_CUDA_IPC", "n"}, {"UCXDT_HOST_SHM", shm}};
        Pair p{Config{1024, 16384, 2, 8}};
        ASSERT_EQ(p.error, "");
        for (int i = 0; i < 200; ++i) p.progress();
        // 320,000 bytes packed each: 20 fragments of 16 KiB. Every third receive is in host
        // memory, which the receiver unpacks on the CPU.
        ASSERT_NO_FATAL_FAILURE(many_at_once(p, doubles(40000, false), L::vector(20000, 2, 3, dbl), 12, 320000, 300,
                                             true, [](int i) { return i % 3 == 2 ? Mem::host : Mem::cuda; }));
        for (int i = 0; i < 200; ++i) p.progress();  // UCP's last send completions
        const ucxdt::rndv::Worker &sender = internals(p.w[0]), &receiver = internals(p.w[1]);
        ASSERT_NE(sender.pools[0], nullptr);
        EXPECT_TRUE(sender.pools[0]->page_locked());
        EXPECT_EQ(sender.pools[0]->free_slots(), 8) << "the sender holds host slots after its requests ended";
        EXPECT_FALSE(receiver.gpus.empty()) << "the receiver unpacked synchronously";
        if (shm[0] == 'y' && sender.cfg.host_am) {  // UCXDT_HOST_FRAGS=get offers no staging to map
            EXPECT_EQ(receiver.host_frags.in_place, 12u * 20) << "the sender's staging was not read in place";
            EXPECT_EQ(receiver.pools[1], nullptr) << "a receive took slots although it read the sender's in place";
        } else {
            ASSERT_NE(receiver.pools[1], nullptr);
            EXPECT_EQ(receiver.host_frags.in_place, 0u);
            EXPECT_EQ(receiver.pools[1]->free_slots(), 8) << "the receiver holds host slots after its requests ended";
        }
    }
}


// A window of small pushed messages takes device slots their size: 24 messages of 40 KB (one
// fragment each) share the receiver's four 1 MiB slots, where each took a whole slot and at most
// four were granted at once (`nas_mg_x`'s 512 KiB messages, eight at a time in 32 MiB slots, ran
// at 0.44 of UCP's rate; performance-log.md, run 29). Every byte arrives, nothing outside the
// receive layouts changes, and the slots merge back on both sides.
TEST(RndvGpu, SmallPushesTakeDeviceSlotsTheirSize) {
    if (!have_gpu()) GTEST_SKIP() << "no CUDA device: the CUDA IPC path is untested here";
    // Neither runs nor a pull: the sender packs into the receiver's slots.
    ScopedEnv env{{"UCXDT_IPC_FRAG_SIZE", "1048576"}, {"UCXDT_CUDA_IPC", "y"}, {"UCXDT_IPC_STRIDED_COPY", "n"},
                  {"UCXDT_IPC_PULL_SIZE", "0"}};
    Pair p{Config{1024, 16384, 2, 8}};
    ASSERT_EQ(p.error, "");
    for (int i = 0; i < 200; ++i) p.progress();
    constexpr int kN = 24;
    constexpr int64_t kBytes = 40960;  // 2,560 runs of two doubles
    const auto t = L::vector(2560, 2, 3, dbl), u = L::vector(2560, 2, 5, dbl);
    Type ht(*t), hu(*u);
    std::vector<std::unique_ptr<Buffer>> src, dst;
    std::vector<std::unique_ptr<Placed>> src_at, dst_at;
    std::vector<std::vector<std::byte>> sent, poison;
    for (int i = 0; i < kN; ++i) {
        src.push_back(std::make_unique<Buffer>(*t, 1, 100 + i));
        dst.push_back(std::make_unique<Buffer>(*u, 1, 300 + i));
        sent.push_back(packed(*t, src.back()->ptr(), 1, kBytes));
        poison.push_back(dst.back()->bytes);
        src_at.push_back(std::make_unique<Placed>(*src.back(), Mem::cuda));
        dst_at.push_back(std::make_unique<Placed>(*dst.back(), Mem::cuda));
    }
    std::vector<ucxdt_status_ptr_t> rreqs, sreqs;
    for (int i = 0; i < kN; ++i) rreqs.push_back(ucxdt_tag_recv_nbx(p.w[1], dst_at[i]->ptr(), 1, hu.h, i, ~0ull, nullptr));
    for (int i = 0; i < kN; ++i) sreqs.push_back(ucxdt_tag_send_nbx(p.ep[0], src_at[i]->ptr(), 1, ht.h, i, nullptr));
    // The most receives holding device slots at once, until the last receive ends.
    const ucxdt::rndv::Worker &receiver = internals(p.w[1]);
    size_t peak = 0;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (ucxdt_request_check_status(rreqs.back()) == UCXDT_INPROGRESS && std::chrono::steady_clock::now() < deadline) {
        p.progress();
        size_t holding = 0;
        for (const auto &[id, r] : receiver.requests) holding += !r->is_send && r->push && !r->slots.empty();
        peak = std::max(peak, holding);
    }
    for (int i = 0; i < kN; ++i) {
        ASSERT_EQ(status_name(p.wait(rreqs[i])), status_name(UCXDT_OK)) << "receive " << i;
        ASSERT_EQ(status_name(p.wait(sreqs[i])), status_name(UCXDT_OK)) << "send " << i;
        dst_at[i]->fetch();
        EXPECT_EQ(check_received(*u, 1, *dst[i], poison[i], sent[i], kBytes), "") << "message " << i;
    }
    EXPECT_EQ(receiver.ipc_pulls, 0u) << "a receive pulled: the test means the sender's pushes";
    EXPECT_GT(peak, 4u) << "no more receives held device slots at once than the staging has whole slots";
    for (int k = 0; k < 2; ++k)
        for (const auto &[device, g] : internals(p.w[k]).gpus)
            EXPECT_EQ(g->taken_bytes(), 0) << "worker " << k << " holds device slots after its requests ended";
}


// A window of GPU eager messages five times the staging slots (8): each send and each receive
// holds a page-locked wire buffer until UCP is done with it, so both pools grow by a chunk of 8
// at a time instead of packing and unpacking the rest synchronously through pageable memory. With
// UCXDT_WIRE_POOL_SIZE below one chunk the pools stay at one chunk, and the rest go that way,
// with the same data. Every buffer is free afterwards.
TEST(RndvGpu, EagerWindowsGrowTheWirePools) {
    if (!have_gpu()) GTEST_SKIP() << "no CUDA device: GPU eager messages are untested here";
    for (const char *cap : {"8388608", "1"}) {
        // Eager although the receiver could pull these (UCXDT_IPC_EAGER_THRESHOLD).
        ScopedEnv env{{"UCXDT_WIRE_POOL_SIZE", cap}, {"UCXDT_IPC_EAGER_THRESHOLD", "1024"}, {"UCXDT_CUDA_IPC", "y"}};
        Pair p{Config{}};
        ASSERT_EQ(p.error, "");
        for (int i = 0; i < 200; ++i) p.progress();
        // 64 doubles, 512 bytes packed: eager (threshold 1024).
        ASSERT_NO_FATAL_FAILURE(many_at_once(p, doubles(64, false), L::vector(32, 2, 3, dbl), 40, 512, 700, true,
                                             [](int) { return Mem::cuda; }));
        for (int i = 0; i < 200; ++i) p.progress();  // UCP's last send completions
        const bool grows = cap[0] == '8';
        for (int k = 0; k < 2; ++k) {
            const ucxdt::rndv::WirePool &pool = internals(p.w[k]).wire_pools[k == 0];
            if (grows) EXPECT_EQ(pool.chunks(), 5) << "worker " << k << ": 40 messages in chunks of 8";
            else EXPECT_EQ(pool.chunks(), 1) << "worker " << k << ": the pool grew past UCXDT_WIRE_POOL_SIZE";
            EXPECT_EQ(pool.free_slots(), pool.chunks() * 8) << "worker " << k << " holds wire buffers";
        }
    }
}


// More GPU messages at once than the receiver has device slots (2 x depth): the first receives
// take them (the sender packs into them, push), the others wait for slots that the first free.
// All complete with their data, and every device slot of both workers is free afterwards. The
// receive's runs are shorter than the send's, so no layout-to-layout copy serves them.
TEST(RndvGpu, IpcManyOutstandingQueueForDeviceSlots) {
    if (!have_gpu()) GTEST_SKIP() << "no CUDA device: the CUDA IPC path is untested here";
    ScopedEnv env{{"UCXDT_IPC_FRAG_SIZE", "65536"}, {"UCXDT_CUDA_IPC", "y"}};
    Pair p{Config{1024, 16384, 2, 8}};
    ASSERT_EQ(p.error, "");
    for (int i = 0; i < 200; ++i) p.progress();
    // 320,000 bytes packed each: 5 fragments of 64 KiB.
    ASSERT_NO_FATAL_FAILURE(many_at_once(p, doubles(40000, false), L::vector(20000, 2, 3, dbl), 10, 320000, 100, false,
                                         [](int) { return Mem::cuda; }));
    for (int k = 0; k < 2; ++k)
        for (const auto &[device, g] : internals(p.w[k]).gpus)
            EXPECT_EQ(g->taken_bytes(), 0) << "worker " << k << " holds device slots after its requests ended";
    EXPECT_FALSE(internals(p.w[1]).gpus.empty()) << "the receiver never used device staging (push)";
    // The fragment model's round trip was measured on the sending endpoint.
    ASSERT_FALSE(internals(p.w[0]).eps.empty());
    for (const auto &[id, ep] : internals(p.w[0]).eps) {
        EXPECT_GT(ep->rtt_s, 0) << "no RTS-to-RTR time measured on endpoint " << id;
        EXPECT_LT(ep->rtt_s, 1.0) << "endpoint " << id;
    }
}


// With UCXDT_GPU_STREAM_SPLIT=0 every message's GPU work takes the next of its GPU's streams, so
// that the packs, pushes and unpacks of different messages run on four streams at once, over CUDA
// IPC and through host staging. Every byte arrives, nothing outside the receive layouts changes,
// and every stream's work is seen complete and every slot given back.
TEST(RndvGpu, MessagesTakeTheStreamsInTurn) {
    if (!have_gpu()) GTEST_SKIP() << "no CUDA device: the GPU streams are untested here";
    for (const char *ipc : {"y", "n"}) {
        ScopedEnv env{{"UCXDT_GPU_STREAM_SPLIT", "0"}, {"UCXDT_GPU_STREAMS", "4"},
                      {"UCXDT_IPC_FRAG_SIZE", "65536"}, {"UCXDT_CUDA_IPC", ipc}};
        Pair p{Config{1024, 16384, 2, 8}};
        ASSERT_EQ(p.error, "");
        for (int i = 0; i < 200; ++i) p.progress();
        // 320,000 bytes packed each: 5 fragments of 64 KiB over CUDA IPC, 20 of 16 KiB staged.
        ASSERT_NO_FATAL_FAILURE(many_at_once(p, doubles(40000, false), L::vector(20000, 2, 3, dbl), 10, 320000, 500,
                                             false, [](int) { return Mem::cuda; }));
        for (int i = 0; i < 200; ++i) p.progress();
        for (int k = 0; k < 2; ++k) {
            const ucxdt::rndv::Worker &w = internals(p.w[k]);
            EXPECT_GE(w.streams_taken, 10u) << "worker " << k << ", IPC " << ipc;
            ASSERT_EQ(w.gpus.size(), 1u) << "worker " << k << ", IPC " << ipc;
            const auto &g = *w.gpus.begin()->second;
            ASSERT_EQ(g.streams(), 4) << "worker " << k;
            EXPECT_EQ(g.taken_bytes(), 0) << "worker " << k << " holds device slots after its requests ended";
            for (int s = 0; s < g.streams(); ++s)
                EXPECT_EQ(g.stream(s)->events_out(), 0) << "worker " << k << ", stream " << s << ", IPC " << ipc;
        }
    }
    ScopedEnv env{{"UCXDT_GPU_STREAM_SPLIT", "0"}};
    gpu_path_cases(true);
}


// A contiguous GPU message into a contiguous GPU receive over CUDA IPC: up to
// UCXDT_IPC_PULL_SIZE bytes the receiver copies it from the sender's buffer (RTS, ATS); above,
// the sender writes it into the receive buffer (RTS, RTR, FIN, ATS), since the copy engines
// write a peer faster than they read one. A receive in host memory still copies. Every byte
// arrives, and nothing past the message changes.
TEST(RndvGpu, LargeContiguousMessagesAreWrittenBySender) {
    if (!have_gpu()) GTEST_SKIP() << "no CUDA device: the CUDA IPC path is untested here";
    using ucxdt::rndv::AmKind;
    ScopedEnv env{{"UCXDT_CUDA_IPC", "y"}, {"UCXDT_IPC_PULL_SIZE", "65536"}};
    Pair p{Config{1024, 16384, 2, 8}};
    ASSERT_EQ(p.error, "");
    for (int i = 0; i < 200; ++i) p.progress();
    const ucxdt::rndv::Worker &s = internals(p.w[0]), &r = internals(p.w[1]);
    struct Case {
        int64_t doubles;
        Mem rmem;
        uint64_t rtrs;  // RTRs the receive sends
    };
    // 32,000 B: pulled; 320,000 B: written; 320,000 B into host memory: copied; then 320,000 B
    // into a larger receive: written, and the bytes past it keep their poison.
    const Case cases[] = {{4000, Mem::cuda, 0}, {40000, Mem::cuda, 1}, {40000, Mem::host, 0}};
    for (const Case &c : cases) {
        const std::string what = std::to_string(c.doubles * 8) + " B into " + (c.rmem == Mem::cuda ? "GPU" : "host") + " memory";
        const uint64_t rtr0 = sent(r, AmKind::rtr), fin0 = sent(s, AmKind::fin);
        EXPECT_EQ(run_case(p, doubles(c.doubles, true), doubles(c.doubles, true), 1, 0x700 + c.doubles, false,
                           Mem::cuda, c.rmem), "") << what;
        EXPECT_EQ(sent(r, AmKind::rtr) - rtr0, c.rtrs) << what;
        EXPECT_EQ(sent(s, AmKind::fin) - fin0, c.rtrs) << what;
    }
    const uint64_t rtr0 = sent(r, AmKind::rtr);
    const auto rows = L::contiguous(8000, dbl);  // 64,000 B: five sent, six posted
    EXPECT_EQ(run_case(p, rows, rows, 5, 0x7a0, false, Mem::cuda, Mem::cuda, -1, 6), "")
        << "320,000 B into a receive of 384,000 B";
    EXPECT_EQ(sent(r, AmKind::rtr) - rtr0, 1u) << "320,000 B into a receive of 384,000 B";
}


// A synchronous copy into device memory may return before its bytes land, and a peer's GPU
// that reads or writes the buffer over CUDA IPC is not ordered after it (the bug that lost
// small pulled messages under pml ucxdt). So every buffer handed to the peer, the sender's that
// the receiver pulls from and the receive that the sender writes into, is marked SYNC_MEMOPS
// (ipc_export), which waits for such copies; one that is not handed over keeps the driver's
// default. A buffer freed and allocated again at the same address is marked anew.
TEST(RndvGpu, BuffersHandedToThePeerWaitForSynchronousCopies) {
    if (!have_gpu()) GTEST_SKIP() << "no CUDA device: the CUDA IPC path is untested here";
    ScopedEnv env{{"UCXDT_CUDA_IPC", "y"}, {"UCXDT_IPC_PULL_SIZE", "65536"}};
    Pair p{Config{1024, 16384, 2, 8}};
    ASSERT_EQ(p.error, "");
    for (int i = 0; i < 200; ++i) p.progress();
    struct Case {
        int64_t doubles;
        int send_marked, recv_marked;
    };
    // 32,000 B: the receiver pulls from the send buffer; 320,000 B: the sender writes the receive.
    const Case cases[] = {{4000, 1, 0}, {40000, 1, 1}, {4000, 1, 0}};
    for (size_t i = 0; i < std::size(cases); ++i) {
        const Case &c = cases[i];
        const std::string what = "case " + std::to_string(i) + ", " + std::to_string(c.doubles * 8) + " B";
        const size_t bytes = static_cast<size_t>(c.doubles) * 8;
        std::vector<double> in(static_cast<size_t>(c.doubles)), out(in.size());
        for (size_t k = 0; k < in.size(); ++k) in[k] = static_cast<double>(k * 7 + i);
        void *sbuf = nullptr, *rbuf = nullptr;
        ASSERT_EQ(cudaMalloc(&sbuf, bytes), cudaSuccess);
        ASSERT_EQ(cudaMalloc(&rbuf, bytes), cudaSuccess);
        EXPECT_EQ(sync_memops(sbuf), 0) << what << ": a new allocation";
        ASSERT_EQ(cudaMemcpy(sbuf, in.data(), bytes, cudaMemcpyHostToDevice), cudaSuccess);
        ASSERT_EQ(cudaMemset(rbuf, 0, bytes), cudaSuccess);
        Type t(*L::contiguous(c.doubles, dbl));
        ucxdt_status_ptr_t rreq = ucxdt_tag_recv_nbx(p.w[1], rbuf, 1, t.h, 43, ~0ull, nullptr);
        ucxdt_status_ptr_t sreq = ucxdt_tag_send_nbx(p.ep[0], sbuf, 1, t.h, 43, nullptr);
        EXPECT_EQ(p.wait(rreq), UCXDT_OK) << what;
        EXPECT_EQ(p.wait(sreq), UCXDT_OK) << what;
        EXPECT_EQ(sync_memops(sbuf), c.send_marked) << what << ": the send buffer";
        EXPECT_EQ(sync_memops(rbuf), c.recv_marked) << what << ": the receive buffer";
        ASSERT_EQ(cudaMemcpy(out.data(), rbuf, bytes, cudaMemcpyDeviceToHost), cudaSuccess);
        EXPECT_EQ(in, out) << what;
        cudaFree(sbuf);  // the next case's allocations may take the same addresses
        cudaFree(rbuf);
    }
}


// A strided send into a strided receive whose runs have the same length: each run is copied
// into the receive layout (the strided kernel, or one 2-D copy), by the receiver from the
// sender's layout up to UCXDT_IPC_PULL_SIZE packed bytes (pull), else by the sender, and the
// receiver stages nothing. A contiguous receive pulls the same way, its runs end to end. With UCXDT_IPC_STRIDED_COPY=n the same transfers go through the
// receiver's device slots. Either way, only the receive layout's bytes change.
TEST(RndvGpu, StridedIntoStridedRunByRun) {
    if (!have_gpu()) GTEST_SKIP() << "no CUDA device: the CUDA IPC path is untested here";
    const auto i32 = L::named(UCXDT_INT32), byte = L::named(UCXDT_BYTE);
    const std::pair<L::TypeDescPtr, L::TypeDescPtr> cases[] = {
        {L::vector(10000, 4, 6, dbl), L::vector(10000, 4, 9, dbl)},   // 32-byte runs, one level
        {L::vector(10000, 4, 6, dbl), L::vector(10000, 4, -5, dbl)},  // downwards in memory
        {L::vector(3000, 3, 5, i32), L::vector(3000, 3, 4, i32)},     // 12-byte runs
        {L::vector(1000, 7, 9, byte), L::vector(1000, 7, 13, byte)},  // bytes, odd lengths
        // 580 runs of 4 doubles into a two-level subarray of them
        {L::vector(580, 4, 6, dbl), L::subarray({20, 30, 8}, {20, 29, 4}, {0, 1, 2}, UCXDT_ORDER_C, dbl)},
        {L::vector(100, 4096, 5000, dbl), L::vector(100, 4096, 4200, dbl)},  // 32 KiB rows
        {L::vector(500, 8, 10, dbl), L::hvector(500, 8, 67, dbl)},            // receive runs at odd addresses
    };
    // Into contiguous receives, which the receiver packs itself when it pulls.
    const std::pair<L::TypeDescPtr, L::TypeDescPtr> into_dense[] = {
        {L::vector(3000, 3, 5, i32), L::contiguous(9000, i32)},
        {L::subarray({20, 30, 8}, {20, 29, 4}, {0, 1, 2}, UCXDT_ORDER_C, dbl), L::contiguous(2320, dbl)},
        {L::vector(100, 4096, 5000, dbl), L::contiguous(409600, dbl)},
    };
    // Packed bytes: 320,000, 320,000, 36,000, 7,000, 18,560, 3,276,800, 32,000; then 36,000,
    // 18,560, 3,276,800.
    const std::tuple<const char *, const char *, uint64_t> settings[] = {
        {"y", "0", 0}, {"y", "65536", 4 + 2}, {"y", "1073741824", 7 + 3}, {"n", "1073741824", 0}};
    for (const auto &[on, pull, pulls] : settings) {
        ScopedEnv env{{"UCXDT_IPC_STRIDED_COPY", on}, {"UCXDT_IPC_PULL_SIZE", pull}, {"UCXDT_CUDA_IPC", "y"}};
        Pair p{Config{1024, 16384, 2, 8}};
        ASSERT_EQ(p.error, "");
        for (int i = 0; i < 200; ++i) p.progress();
        for (size_t i = 0; i < std::size(cases); ++i)
            EXPECT_EQ(run_case(p, cases[i].first, cases[i].second, 1, 0x5e0 + i, i % 2 == 1, Mem::cuda, Mem::cuda), "")
                << short_desc(*cases[i].first) << " into " << short_desc(*cases[i].second) << ", "
                << "UCXDT_IPC_STRIDED_COPY=" << on << ", UCXDT_IPC_PULL_SIZE=" << pull;
        for (size_t i = 0; i < std::size(into_dense); ++i)
            EXPECT_EQ(run_case(p, into_dense[i].first, into_dense[i].second, 1, 0x5f0 + i, i == 1, Mem::cuda,
                               Mem::cuda),
                      "")
                << short_desc(*into_dense[i].first) << " into contiguous, UCXDT_IPC_PULL_SIZE=" << pull;
        EXPECT_EQ(ipc_staged(p.w[1]), std::string(on) == "n") << "the receiver's device staging, UCXDT_IPC_STRIDED_COPY=" << on;
        EXPECT_EQ(internals(p.w[1]).ipc_pulls, pulls) << "receives that pulled, UCXDT_IPC_PULL_SIZE=" << pull;
    }
}


// Strided messages of very many short runs go through the receiver's device slots (pack, one
// copy, unpack) instead of run by run across the link, even below UCXDT_IPC_PULL_SIZE; fewer
// runs, or runs that share the link's 32-byte sectors, of a message sent alone (the pipeline's
// two kernels would run one after the other) are pulled. Only the receive layouts' bytes change.
TEST(RndvGpu, ManyShortRunsTakeThePipeline) {
    if (!have_gpu()) GTEST_SKIP() << "no CUDA device: the CUDA IPC path is untested here";
    const auto many = L::vector(524288, 1, 8, dbl), into = L::vector(524288, 1, 9, dbl);  // 4 MiB of 8 B runs
    const auto paired = L::vector(65536, 1, 2, dbl), paired_into = L::vector(65536, 1, 3, dbl);  // 2 a sector
    const auto few = L::vector(2048, 1, 2, dbl), few_into = L::vector(2048, 1, 3, dbl);
    ScopedEnv env{{"UCXDT_IPC_STRIDED_COPY", "y"}, {"UCXDT_IPC_PULL_SIZE", "1073741824"}, {"UCXDT_CUDA_IPC", "y"}};
    Pair p{Config{1024, 16384, 2, 8}};
    ASSERT_EQ(p.error, "");
    for (int i = 0; i < 200; ++i) p.progress();
    EXPECT_EQ(run_case(p, many, into, 1, 0x5c0, false, Mem::cuda, Mem::cuda), "");
    EXPECT_EQ(run_case(p, many, L::contiguous(524288, dbl), 1, 0x5c1, false, Mem::cuda, Mem::cuda), "");
    EXPECT_EQ(internals(p.w[1]).ipc_pulls, 0u) << "receives that pulled 524,288 runs";
    EXPECT_TRUE(ipc_staged(p.w[1])) << "the receiver's device slots";
    EXPECT_EQ(run_case(p, paired, paired_into, 1, 0x5c2, false, Mem::cuda, Mem::cuda), "");
    EXPECT_EQ(internals(p.w[1]).ipc_pulls, 1u) << "receives that pulled 65,536 runs of 8 B, 16 B apart";
    EXPECT_EQ(run_case(p, few, few_into, 1, 0x5c3, false, Mem::cuda, Mem::cuda), "");
    EXPECT_EQ(internals(p.w[1]).ipc_pulls, 2u) << "receives that pulled 2,048 runs";
}


// Below the eager threshold, a GPU message that an IPC peer could pull takes the rendezvous and
// is pulled (one copy, where eager packs and unpacks), unless UCXDT_IPC_EAGER_THRESHOLD lets it go
// eager: a strided layout, a block list, and a contiguous buffer, whose receiver copies out of it.
// Into a host receive, which cannot pull, the rendezvous still delivers it. Every message arrives
// whole either way.
TEST(RndvGpu, PullableMessagesSkipEager) {
    if (!have_gpu()) GTEST_SKIP() << "no CUDA device: the CUDA IPC path is untested here";
    const auto small = L::vector(16, 2, 4, dbl);                           // 256 bytes
    const auto blk = L::indexed({3, 1, 20}, {-6, 0, 2}, dbl);               // 192 bytes, a block list
    for (const char *limit : {"0", "8192"}) {
        ScopedEnv env{{"UCXDT_IPC_EAGER_THRESHOLD", limit}, {"UCXDT_CUDA_IPC", "y"}};
        Pair p{Config{8192, 16384, 2, 8}};
        ASSERT_EQ(p.error, "");
        for (int i = 0; i < 200; ++i) p.progress();
        EXPECT_EQ(run_case(p, small, small, 1, 0x610, false, Mem::cuda, Mem::cuda), "") << limit;
        EXPECT_EQ(run_case(p, blk, blk, 2, 0x611, false, Mem::cuda, Mem::cuda), "") << limit;
        EXPECT_EQ(run_case(p, doubles(32, true), small, 1, 0x612, false, Mem::cuda, Mem::cuda), "") << limit;
        EXPECT_EQ(run_case(p, small, small, 1, 0x613, false, Mem::cuda, Mem::host), "") << limit;
        const uint64_t pulls = limit[0] == '0' ? 2 : 0;
        EXPECT_EQ(internals(p.w[1]).ipc_pulls, pulls) << "receives that pulled, UCXDT_IPC_EAGER_THRESHOLD=" << limit;
        EXPECT_EQ(internals(p.w[1]).dense_pulls, limit[0] == '0' ? 1u : 0u)
            << "receives that copied the contiguous send, UCXDT_IPC_EAGER_THRESHOLD=" << limit;
    }
}


// A pull is batched for a kernel launch unless its receive is the only one posted and no GPU
// work of the worker is outstanding (a ping-pong's: latency-bound, Worker::strided_pull).
TEST(RndvGpu, OnlyTheSoleReceivePostedPullsAlone) {
    if (!have_gpu()) GTEST_SKIP() << "no CUDA device: the CUDA IPC path is untested here";
    const auto v = L::vector(256, 2, 4, dbl);  // 4 KiB in 16-byte runs
    ScopedEnv env{{"UCXDT_CUDA_IPC", "y"}};
    Pair p{Config{8192, 16384, 2, 8}};
    ASSERT_EQ(p.error, "");
    for (int i = 0; i < 200; ++i) p.progress();
    const ucxdt::rndv::Worker &w = internals(p.w[1]);
    EXPECT_EQ(run_case(p, v, v, 1, 0x620, false, Mem::cuda, Mem::cuda), "");
    EXPECT_EQ(w.ipc_pulls, 1u);
    EXPECT_EQ(w.lone_pulls, 1u) << "the sole receive posted";
    // Another receive posted (of another tag): the next message's pull is not alone.
    const auto t = doubles(8, true);
    Type h(*t);
    Buffer other(*t, 1, 0x621);
    ucxdt_status_ptr_t extra = ucxdt_tag_recv_nbx(p.w[1], other.ptr(), 1, h.h, 0x6ff, ~0ull, nullptr);
    ASSERT_TRUE(UCXDT_PTR_IS_PTR(extra));
    EXPECT_EQ(run_case(p, v, v, 1, 0x622, false, Mem::cuda, Mem::cuda), "");
    EXPECT_EQ(w.ipc_pulls, 2u);
    EXPECT_EQ(w.lone_pulls, 1u) << "a pull beside another receive posted";
    ucxdt_request_cancel(p.w[1], extra);
    EXPECT_EQ(p.wait(extra), UCXDT_ERR_CANCELED);
    EXPECT_EQ(w.recvs_in_progress, 0u) << "receives counted as in progress after all completed";
    EXPECT_EQ(run_case(p, v, v, 1, 0x623, false, Mem::cuda, Mem::cuda), "");
    EXPECT_EQ(w.lone_pulls, 2u) << "alone again once the other receive ended";
}

}  // namespace
