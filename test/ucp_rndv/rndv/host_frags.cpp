// Host layouts staged in fragments: active messages, GETs or slots read in place; fragment
// packing per progress call; slots by message size; stray ACKs.
#include "rndv_cases.hpp"

namespace {

using namespace rndv_cases;


// A staged sender's fragments travel as active messages by default (UCP picks eager or its
// rendezvous for each), from its slots or straight from a contiguous buffer, and as GETs of the
// sender's slots or buffer with UCXDT_HOST_FRAGS=get. Fragments of 4 KiB go eagerly, and may
// arrive before the receiver has a free slot: it holds UCP's data until one is free. On one
// node (here: one process) a receiver that can map a non-contiguous sender's staging
// (UCP's shared-memory transports) unpacks from its slots in place instead. Receives posted
// before and after the send, every pairing of vector and contiguous layouts; in the end both
// workers have every slot back.
TEST(RndvHostFrags, ActiveMessagesGetsOrInPlace) {
    struct Case {
        bool send_contig, recv_contig, unexpected;
    };
    const Case cases[] = {{false, false, false}, {false, true, false}, {false, false, true},
                          {true, false, false}, {true, true, true}};
    struct Mode {
        const char *name, *frags, *shm;
    };
    for (const Mode mode : {Mode{"am", "am", "n"}, Mode{"get", "get", "n"}, Mode{"in place", "am", "y"}})
        for (int64_t frag : {4096, 262144}) {
            ScopedEnv env{{"UCXDT_HOST_FRAGS", mode.frags}, {"UCXDT_HOST_SHM", mode.shm}};
            Pair p{Config{256, frag, 4, 6}};
            ASSERT_EQ(p.error, "");
            for (int i = 0; i < 200; ++i) p.progress();
            int k = 0;
            for (const Case &c : cases)
                EXPECT_EQ(run_case(p, doubles(40000, c.send_contig), doubles(40000, c.recv_contig), 1, 77 + k++,
                                   c.unexpected), "")
                    << mode.name << ", fragments of " << frag << " bytes, case " << k;
            const auto &got = internals(p.w[1]).host_frags;
            // A staged host layout's fragments are at most UCXDT_HOST_FRAG_SIZE (a slot of `frag`
            // split to it); a contiguous sender's are `frag`, straight from its buffer.
            const int64_t f = frag >> ucxdt::staging_level(frag, std::min<int64_t>(320000, internals(p.w[0]).cfg.host_frag));
            const uint64_t from_vectors = 3 * ((320000 + f - 1) / f);  // the first three cases
            const uint64_t all = from_vectors + 2 * ((320000 + frag - 1) / frag);
            const std::string what = std::string(mode.name) + ", fragments of " + std::to_string(frag);
            if (mode.name[0] == 'g') {
                EXPECT_EQ(got.get, all) << what;
            } else if (mode.name[0] == 'a') {
                EXPECT_EQ(got.am, all) << what;
            } else {
                EXPECT_EQ(got.in_place, from_vectors) << what << ": UCP's shared memory could not be mapped";
                EXPECT_EQ(got.am, all - from_vectors) << what;
            }
            EXPECT_EQ(got.am + got.get + got.in_place, all) << what;
            for (int i = 0; i < 200; ++i) p.progress();  // UCP's last send completions
            for (int w = 0; w < 2; ++w)
                for (const auto &pool : internals(p.w[w]).pools) {
                    if (!pool) continue;
                    EXPECT_EQ(pool->free_slots(), 6) << what << ", worker " << w << ": slots not given back";
                }
        }
}


// A message shorter than a staging slot takes a slot its size (staging_pool.hpp): 24 messages
// of 20 KB, a slot of 32 KiB each, share one of the sender's two 1 MiB slots, where each took a
// whole slot and 22 waited for one. Fragments as active messages, as GETs into the receiver's
// slots (of the sender's size, from its own pool) and read in place; every byte arrives, and
// the slots merge back into whole ones on both sides.
// The CPU packs a host layout's first fragment in the send call and each of the others in a
// progress call of its own, announced as soon as it is packed, so that the receiver unpacks one
// while the next packs: after the call one fragment is packed and the others of the first
// slots wait. The message arrives exact, and nothing stays listed or holds a slot.
TEST(RndvHostFrags, FirstFragmentsArePackedOneAProgress) {
    Pair p{Config{1024, 16384, 4, 8}};
    ASSERT_EQ(p.error, "");
    for (int i = 0; i < 200; ++i) p.progress();
    const ucxdt::rndv::Worker &s = internals(p.w[0]);
    if (!s.cfg.host_am) GTEST_SKIP() << "UCXDT_HOST_FRAGS=get: the RTS names the first fragments, packed before it";
    const L::TypeDescPtr layout = doubles(40000, false);  // 320,000 bytes: 20 fragments of 16 KiB
    Type t(*layout);
    Buffer src(*layout, 1, 0x1f), dst(*layout, 1, ~0x1full);
    const std::vector<std::byte> sent = packed(*layout, src.ptr(), 1, 320000), poison = dst.bytes;
    ucxdt_status_ptr_t rreq = ucxdt_tag_recv_nbx(p.w[1], dst.ptr(), 1, t.h, 7, ~0ull, nullptr);
    ucxdt_status_ptr_t sreq = ucxdt_tag_send_nbx(p.ep[0], src.ptr(), 1, t.h, 7, nullptr);
    ASSERT_EQ(s.host_packing.size(), 1u) << "the first fragments were packed in the send call";
    EXPECT_EQ(s.host_packing[0]->to_pack.size(), 3u) << "not one fragment packed of the first four";
    EXPECT_EQ(status_name(p.wait(rreq)), status_name(UCXDT_OK));
    EXPECT_EQ(status_name(p.wait(sreq)), status_name(UCXDT_OK));
    EXPECT_EQ(check_received(*layout, 1, dst, poison, sent, 320000), "");
    for (int i = 0; i < 200; ++i) p.progress();
    EXPECT_TRUE(s.host_packing.empty());
    for (int w = 0; w < 2; ++w)
        for (const auto &pool : internals(p.w[w]).pools) {
            if (!pool) continue;
            EXPECT_EQ(pool->free_slots(), 8) << "worker " << w << ": slots not given back";
        }
}


TEST(RndvHostFrags, SmallMessagesTakeSlotsTheirSize) {
    struct Mode {
        const char *frags, *shm;
    };
    for (const Mode mode : {Mode{"am", "n"}, Mode{"get", "n"}, Mode{"am", "y"}}) {
        ScopedEnv env{{"UCXDT_HOST_FRAGS", mode.frags}, {"UCXDT_HOST_SHM", mode.shm}};
        const std::string what = std::string(mode.frags) + ", in place " + mode.shm;
        Pair p{Config{1024, 1 << 20, 2, 2}};
        ASSERT_EQ(p.error, "");
        for (int i = 0; i < 200; ++i) p.progress();
        constexpr int kN = 24;
        constexpr int64_t kBytes = 20480;
        const auto t = doubles(kBytes / 8, false);
        Type h(*t);
        std::vector<Buffer> src, dst;
        std::vector<std::vector<std::byte>> sent;
        for (int i = 0; i < kN; ++i) {
            src.emplace_back(*t, 1, 700 + i);
            dst.emplace_back(*t, 1, 900 + i);
            sent.push_back(packed(*t, src.back().ptr(), 1, kBytes));
        }
        std::vector<ucxdt_status_ptr_t> rreqs, sreqs;
        for (int i = 0; i < kN; ++i) rreqs.push_back(ucxdt_tag_recv_nbx(p.w[1], dst[i].ptr(), 1, h.h, i, ~0ull, nullptr));
        for (int i = 0; i < kN; ++i) sreqs.push_back(ucxdt_tag_send_nbx(p.ep[0], src[i].ptr(), 1, h.h, i, nullptr));
        const ucxdt::rndv::Worker &sender = internals(p.w[0]);
        EXPECT_TRUE(sender.waiting.empty()) << what << ": sends wait for staging slots";
        ASSERT_NE(sender.pools[0], nullptr) << what;
        EXPECT_EQ(sender.pools[0]->free_slots(), 1) << what << ": the window split more than one slot";
        for (int i = 0; i < kN; ++i) {
            ASSERT_EQ(status_name(p.wait(sreqs[i])), status_name(UCXDT_OK)) << what << ", send " << i;
            ASSERT_EQ(status_name(p.wait(rreqs[i])), status_name(UCXDT_OK)) << what << ", receive " << i;
            const Buffer fresh(*t, 1, 900 + i);
            EXPECT_EQ(check_received(*t, 1, dst[i], fresh.bytes, sent[i], kBytes), "") << what << ", message " << i;
        }
        for (int i = 0; i < 200; ++i) p.progress();  // UCP's last send completions
        for (int w = 0; w < 2; ++w)
            for (const auto &pool : internals(p.w[w]).pools) {
                if (pool) {
                    EXPECT_EQ(pool->free_slots(), 2) << what << ", worker " << w << ": slots not merged back";
                }
            }
    }
}


// An ACK that names a slot the send does not hold (repeated, forged, or out of the pool) is
// dropped: given back, it would enter the free list twice and be handed to two fragments at
// once. The transfer completes with its data, and the sender's pool is whole afterwards.
TEST(RndvHostFrags, AckOfASlotNotHeldIsDropped) {
    ScopedEnv env{{"UCXDT_HOST_FRAGS", "get"}, {"UCXDT_HOST_SHM", "n"}};
    Pair p{Config{1024, 16384, 2, 8}};
    ASSERT_EQ(p.error, "");
    for (int i = 0; i < 200; ++i) p.progress();
    const auto t = doubles(40000, false);  // 320,000 bytes packed: 20 fragments of 16 KiB
    Type h(*t);
    Buffer src(*t, 1, 31), dst(*t, 1, 32);
    const std::vector<std::byte> sent = packed(*t, src.ptr(), 1, 320000), poison = dst.bytes;
    ucxdt_status_ptr_t rq = ucxdt_tag_recv_nbx(p.w[1], dst.ptr(), 1, h.h, 9, ~0ull, nullptr);
    ucxdt_status_ptr_t sq = ucxdt_tag_send_nbx(p.ep[0], src.ptr(), 1, h.h, 9, nullptr);
    ASSERT_TRUE(UCS_PTR_IS_PTR(sq));
    const auto *send = reinterpret_cast<const ucxdt::rndv::Request *>(sq);
    ASSERT_EQ(send->slots.size(), 2u) << "the send should hold depth (2) slots";
    int free_slot = 0;  // one of the pool's slots that the send does not hold
    while (std::find(send->slots.begin(), send->slots.end(), free_slot) != send->slots.end()) ++free_slot;
    static ucxdt::rndv::AmHeader forged[2];  // UCP reads them until the sends complete
    for (int k = 0; k < 2; ++k) {
        forged[k] = {};
        forged[k].kind = ucxdt::rndv::AmKind::ack;
        forged[k].sreq_id = send->id;
        forged[k].slot = k == 0 ? free_slot : 1 << 20;
        ucp_request_param_t prm{};
        ucs_status_ptr_t s = ucp_am_send_nbx(p.ucp.ep[1], UCXDT_UCP_AM_ID, &forged[k], sizeof forged[k], nullptr, 0, &prm);
        ASSERT_FALSE(UCS_PTR_IS_ERR(s));
        while (s != nullptr && ucp_request_check_status(s) == UCS_INPROGRESS) p.progress();
        if (s != nullptr) ucp_request_free(s);
    }
    ASSERT_EQ(status_name(p.wait(sq)), status_name(UCXDT_OK));
    ASSERT_EQ(status_name(p.wait(rq)), status_name(UCXDT_OK));
    EXPECT_EQ(check_received(*t, 1, dst, poison, sent, 320000), "");
    for (int i = 0; i < 200; ++i) p.progress();
    ASSERT_NE(internals(p.w[0]).pools[0], nullptr);
    EXPECT_EQ(internals(p.w[0]).pools[0]->free_slots(), 8) << "the forged ACK's slot entered the free list";
}

}  // namespace
