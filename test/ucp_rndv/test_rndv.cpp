// The datatype-aware rendezvous (include/ucxdt/ucxdt_ucp.h) between two UCP workers of one
// process: eager and the four layouts of a rendezvous (contiguous or not on either side), with
// small fragments so that every transfer cycles its staging slots many times, application
// layouts and random types received into relayouts, signature mismatch, truncation, cancel,
// and a thousand outstanding sends each way through a small staging pool.
#include "support/registry.hpp"
#include "support/layout_buffer.hpp"
#include "support/rndv_support.hpp"
#include "support/scoped_env.hpp"
#include "support/ucp_pair.hpp"
#include "ucp_rndv/frag_model.hpp"
#include "ucp_rndv/rndv_worker.hpp"  // to tell which path a GPU transfer took
#include "cuda/method.hpp"

#include <ucxdt/ucxdt_ucp.h>

#include <gtest/gtest.h>
#include <hwloc.h>
#include <hwloc/cudart.h>

#include <cuda.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

namespace {

namespace L = ucxdt::layouts;
namespace T = ucxdt::testing;
using T::app_layouts, T::Buffer, T::check_received, T::have_gpu, T::Mem, T::mem_name, T::packed, T::Placed,
    T::short_desc, T::Type;

constexpr auto kTimeout = std::chrono::seconds(60);

using Config = T::RndvConfig;
using T::ScopedEnv;
using T::status_name;
using T::worker_config;

using Pair = T::RndvPair;

// Sends `count` elements of `send` from w[0] and receives them as `recv` on w[1] (posted
// before the send, or after it when `unexpected`); "" when both complete and the data is exact.
// `rdev`: the CUDA device of a GPU receive buffer (default: the current one).
std::string run_case(Pair &p, const L::TypeDescPtr &send, const L::TypeDescPtr &recv, int64_t count,
                     uint64_t seed, bool unexpected = false, Mem smem = Mem::host, Mem rmem = Mem::host,
                     int rdev = -1, int64_t rcount = -1) {
    if (rcount < 0) rcount = count;  // else elements of `recv` received, of the same signature
    Type st(*send), rt(*recv);
    int64_t size = 0;
    ucxdt_type_size(st.h, &size);
    const int64_t total = size * count;
    Buffer src(*send, count, seed), dst(*recv, rcount, ~seed);
    const std::vector<std::byte> sent = packed(*send, src.ptr(), count, total), poison = dst.bytes;
    int current = 0;
    cudaGetDevice(&current);
    Placed src_at(src, smem);
    if (rdev >= 0) cudaSetDevice(rdev);
    Placed dst_at(dst, rmem);
    cudaSetDevice(current);
    ucxdt_status_ptr_t rreq = nullptr, sreq;
    if (!unexpected) rreq = ucxdt_tag_recv_nbx(p.w[1], dst_at.ptr(), rcount, rt.h, 42, ~0ull, nullptr);
    sreq = ucxdt_tag_send_nbx(p.ep[0], src_at.ptr(), count, st.h, 42, nullptr);
    if (unexpected) {
        for (int i = 0; i < 100; ++i) p.progress();
        rreq = ucxdt_tag_recv_nbx(p.w[1], dst_at.ptr(), rcount, rt.h, 42, ~0ull, nullptr);
    }
    const int rs = p.wait(rreq), ss = p.wait(sreq);
    const std::string where = std::string(mem_name(smem)) + " to " + mem_name(rmem) + " (" +
                              std::to_string(total) + " bytes) ";
    if (ss != UCXDT_OK) return where + "send: " + status_name(ss);
    if (rs != UCXDT_OK) return where + "receive: " + status_name(rs);
    dst_at.fetch();
    const std::string bad = check_received(*recv, rcount, dst, poison, sent, total);
    return bad.empty() ? bad : where + bad;
}

Pair &shared_pair() {
    static Pair p{Config{}};
    return p;
}

class Rndv : public ::testing::Test {
protected:
    void SetUp() override { ASSERT_EQ(shared_pair().error, ""); }
};

const auto dbl = L::named(UCXDT_DOUBLE);

// A layout of n doubles: contiguous, or in blocks of 4 every 6.
L::TypeDescPtr doubles(int64_t n, bool contig) {
    return contig ? L::contiguous(n, dbl) : L::vector(n / 4, 4, 6, dbl);
}

// Control messages of kind k that worker w has sent.
uint64_t sent(const ucxdt::rndv::Worker &w, ucxdt::rndv::AmKind k) { return w.control_sent[static_cast<size_t>(k)]; }

// ---- The four layouts of a rendezvous, and eager ------------------------------------------

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

// ---- Application layouts and random types -------------------------------------------------

class RndvLayouts : public ::testing::TestWithParam<size_t> {
protected:
    void SetUp() override { ASSERT_EQ(shared_pair().error, ""); }
};

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

// ---- CUDA memory ----------------------------------------------------------------------------

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

// The worker behind a handle (ucxdt_worker derives from it alone), to see which staging it made.
const ucxdt::rndv::Worker &internals(ucxdt_worker_h w) { return *reinterpret_cast<const ucxdt::rndv::Worker *>(w); }

// Whether worker w allocated the device staging of the CUDA IPC path on any GPU.
bool ipc_staged(ucxdt_worker_h w) {
    const auto &gpus = internals(w).gpus;
    return std::any_of(gpus.begin(), gpus.end(), [](const auto &g) { return g.second->allocated(); });
}

std::string expect_error(Pair &p, const L::TypeDescPtr &send, int64_t scount, const L::TypeDescPtr &recv,
                         int64_t rcount, int want_recv, int want_send, Mem smem = Mem::host, Mem rmem = Mem::host);

// "" when `pool`, staging for GPU `device`, sits where hwloc says it should: bound to the NUMA
// nodes local to the GPU when those are not the whole machine, else left to first touch.
std::string check_numa_placement(const ucxdt::rndv::StagingPool &pool, int64_t bytes, int device) {
    hwloc_topology_t t = nullptr;
    if (hwloc_topology_init(&t) != 0 || hwloc_topology_load(t) != 0) return "";  // hwloc cannot tell
    hwloc_cpuset_t cpus = hwloc_bitmap_alloc();
    hwloc_nodeset_t want = hwloc_bitmap_alloc(), got = hwloc_bitmap_alloc();
    std::string bad;
    const bool local = hwloc_cudart_get_device_cpuset(t, device, cpus) == 0 && !hwloc_bitmap_iszero(cpus) &&
                       !hwloc_bitmap_isincluded(hwloc_topology_get_topology_cpuset(t), cpus);
    hwloc_membind_policy_t policy{};
    if (pool.numa_bound() != local) {
        bad = local ? "the GPU is local to part of the machine, but its staging was not bound there"
                    : "staging was bound although the GPU is local to the whole machine";
    } else if (local) {
        hwloc_cpuset_to_nodeset(t, cpus, want);
        if (hwloc_get_area_membind(t, pool.base(), static_cast<size_t>(bytes), got, &policy, HWLOC_MEMBIND_BYNODESET) != 0 ||
            !hwloc_bitmap_isequal(want, got))
            bad = "the staging pages are not bound to the GPU's NUMA nodes";
    }
    hwloc_bitmap_free(cpus), hwloc_bitmap_free(want), hwloc_bitmap_free(got);
    hwloc_topology_destroy(t);
    return bad;
}

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
        for (const auto &pool : internals(p.w[w]).pools)
            if (pool) EXPECT_EQ(pool->free_slots(), 8) << "worker " << w << ": slots not given back";
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

// GPU layouts between the workers of one process, with the peers' HELLOs exchanged first.
// CUDA IPC on (64 KiB fragments, so that transfers cycle the device slots) or off (host staging).
// `setting`: UCXDT_CUDA_IPC's value, when the path is not its doing (UCX_TLS's).
void gpu_path_cases(bool ipc, const char *setting = nullptr) {
    ScopedEnv env{{"UCXDT_IPC_FRAG_SIZE", "65536"}, {"UCXDT_CUDA_IPC", setting ? setting : ipc ? "y" : "n"}};
    Pair p{Config{1024, 16384, 2, 8}};
    ASSERT_EQ(p.error, "");
    for (int i = 0; i < 200; ++i) p.progress();
    const std::pair<Mem, Mem> sides[] = {{Mem::cuda, Mem::cuda}, {Mem::cuda, Mem::host}};
    for (const auto &[sm, rm] : sides)
        for (int64_t n : {64, 40000, 400000})
            for (bool sc : {true, false})
                for (bool rc : {true, false})
                    EXPECT_EQ(run_case(p, doubles(n, sc), doubles(n, rc), 1, n + sc + rc, n == 40000, sm, rm), "")
                        << n << " doubles, send " << (sc ? "contiguous" : "vector") << ", receive "
                        << (rc ? "contiguous" : "vector") << ", IPC " << ipc;
    for (size_t i = 0; i < app_layouts().size(); ++i) {
        const L::Layout &l = app_layouts()[i];
        T::Rng rng(0x1bc0000 + i);
        EXPECT_EQ(run_case(p, l.type, T::relayout(*l.type, rng), l.count, 0x99 + i, false, Mem::cuda, Mem::cuda), "")
            << l.name << ", IPC " << ipc;
    }
    // Errors the receiver finds in the RTS: nothing of the GPU receive buffer is written.
    const auto vec = L::vector(1000, 4, 6, dbl);
    EXPECT_EQ(expect_error(p, vec, 2, vec, 1, UCXDT_ERR_TRUNCATED, UCXDT_ERR_TRUNCATED, Mem::cuda, Mem::cuda), "");
    EXPECT_EQ(expect_error(p, vec, 1, L::contiguous(4000, L::named(UCXDT_INT64)), 1, UCXDT_ERR_TYPE_MISMATCH,
                           UCXDT_ERR_TYPE_MISMATCH, Mem::cuda, Mem::cuda), "");
    const ucxdt::rndv::Worker &sender = internals(p.w[0]);
    EXPECT_GT(sender.wire_pools[1].chunks(), 0) << "GPU eager messages did not use page-locked buffers";
    if (ipc) {
        EXPECT_EQ(sender.pools[0], nullptr) << "a GPU send went through host staging";
        EXPECT_FALSE(sender.gpus.empty());
    } else {
        ASSERT_NE(sender.pools[0], nullptr);
        EXPECT_TRUE(sender.pools[0]->page_locked());
        // Host staging packs on the GPU's stream; device slots are for CUDA IPC only.
        EXPECT_FALSE(sender.gpus.empty()) << "GPU layouts were staged through the host synchronously";
        for (int k = 0; k < 2; ++k)
            EXPECT_FALSE(ipc_staged(p.w[k])) << "worker " << k << ": CUDA IPC staging was made with UCXDT_CUDA_IPC=n";
        int device = 0;
        cudaGetDevice(&device);
        EXPECT_EQ(check_numa_placement(*sender.pools[0], 8 * 16384, device), "");
    }
}

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

// n messages of t at once from GPU memory into u (GPU memory, or host memory for those that
// recv_mem places there), tags tag0 and up, sends posted before receives or after; each
// receive must hold its message's data and nothing outside its layout may change.
void many_at_once(Pair &p, const L::TypeDescPtr &t, const L::TypeDescPtr &u, int n, int64_t bytes, ucp_tag_t tag0,
                  bool sends_first, const std::function<Mem(int)> &recv_mem) {
    Type h(*t), hu(*u);
    std::vector<std::unique_ptr<Buffer>> src, dst;
    std::vector<std::unique_ptr<Placed>> src_at, dst_at;
    std::vector<std::vector<std::byte>> sent, poison;
    for (int i = 0; i < n; ++i) {
        src.push_back(std::make_unique<Buffer>(*t, 1, static_cast<int>(tag0) + i));
        dst.push_back(std::make_unique<Buffer>(*u, 1, static_cast<int>(tag0) + 400 + i));
        sent.push_back(packed(*t, src.back()->ptr(), 1, bytes));
        poison.push_back(dst.back()->bytes);
        src_at.push_back(std::make_unique<Placed>(*src.back(), Mem::cuda));
        dst_at.push_back(std::make_unique<Placed>(*dst.back(), recv_mem(i)));
    }
    std::vector<ucxdt_status_ptr_t> rreqs, sreqs;
    const auto post_sends = [&] {
        for (int i = 0; i < n; ++i) sreqs.push_back(ucxdt_tag_send_nbx(p.ep[0], src_at[i]->ptr(), 1, h.h, tag0 + i, nullptr));
    };
    if (sends_first) post_sends();
    for (int i = 0; i < n; ++i) rreqs.push_back(ucxdt_tag_recv_nbx(p.w[1], dst_at[i]->ptr(), 1, hu.h, tag0 + i, ~0ull, nullptr));
    if (!sends_first) post_sends();
    for (int i = 0; i < n; ++i) {
        ASSERT_EQ(p.wait(rreqs[i]), UCXDT_OK) << "receive " << i;
        ASSERT_EQ(p.wait(sreqs[i]), UCXDT_OK) << "send " << i;
    }
    for (int i = 0; i < n; ++i) {
        dst_at[i]->fetch();
        EXPECT_EQ(check_received(*u, 1, *dst[i], poison[i], sent[i], bytes), "") << "message " << i;
    }
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

// Whether the driver's CU_POINTER_ATTRIBUTE_SYNC_MEMOPS is set on the allocation at `ptr`
// (-1 when it cannot be told).
int sync_memops(const void *ptr) {
    using Get = CUresult (*)(void *, CUpointer_attribute, CUdeviceptr);
    static Get get = [] {
        void *fn = nullptr;
        cudaDriverEntryPointQueryResult q{};
        if (cudaGetDriverEntryPointByVersion("cuPointerGetAttribute", &fn, 12000, cudaEnableDefault, &q) !=
                cudaSuccess || q != cudaDriverEntryPointSuccess)
            fn = nullptr;
        return reinterpret_cast<Get>(fn);
    }();
    unsigned int on = 0;
    if (!get || get(&on, CU_POINTER_ATTRIBUTE_SYNC_MEMOPS, reinterpret_cast<CUdeviceptr>(ptr)) != CUDA_SUCCESS) return -1;
    return on ? 1 : 0;
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

// 300 single int32s at irregular gaps of 2 and 4 ints: a block list whose unit list outweighs
// its 1,200 bytes of data, so the point kernel moves it (cuda/method.cpp).
L::TypeDescPtr scattered_ints() {
    std::vector<int64_t> displacements;
    for (int64_t i = 0; i < 300; ++i) displacements.push_back(3 * i + i % 2);
    return L::indexed_block(1, displacements, L::named(UCXDT_INT32));
}

// Sends n messages, kinds[i % size] (send type, receive type), from GPU memory before their
// receives are posted, so that one progress call matches several, and checks that each
// arrives whole and that only the receive layouts' bytes change.
void window_of_kinds(Pair &p, const std::vector<std::pair<L::TypeDescPtr, L::TypeDescPtr>> &kinds, int n,
                     const std::string &what) {
    std::vector<std::unique_ptr<Type>> st, rt;
    std::vector<std::unique_ptr<Buffer>> src, dst;
    std::vector<std::unique_ptr<Placed>> src_at, dst_at;
    std::vector<std::vector<std::byte>> sent, poison;
    std::vector<int64_t> bytes;
    for (int i = 0; i < n; ++i) {
        const auto &[t, u] = kinds[i % kinds.size()];
        st.push_back(std::make_unique<Type>(*t));
        rt.push_back(std::make_unique<Type>(*u));
        int64_t size = 0;
        ASSERT_EQ(ucxdt_type_size(st.back()->h, &size), UCXDT_OK);
        bytes.push_back(size);
        src.push_back(std::make_unique<Buffer>(*t, 1, 0x700 + i));
        dst.push_back(std::make_unique<Buffer>(*u, 1, 0x800 + i));
        sent.push_back(packed(*t, src.back()->ptr(), 1, bytes.back()));
        poison.push_back(dst.back()->bytes);
        src_at.push_back(std::make_unique<Placed>(*src.back(), Mem::cuda));
        dst_at.push_back(std::make_unique<Placed>(*dst.back(), Mem::cuda));
    }
    std::vector<ucxdt_status_ptr_t> sreqs, rreqs;
    for (int i = 0; i < n; ++i)
        sreqs.push_back(ucxdt_tag_send_nbx(p.ep[0], src_at[i]->ptr(), 1, st[i]->h, 0x700 + i, nullptr));
    for (int i = 0; i < n; ++i)
        rreqs.push_back(ucxdt_tag_recv_nbx(p.w[1], dst_at[i]->ptr(), 1, rt[i]->h, 0x700 + i, ~0ull, nullptr));
    for (int i = 0; i < n; ++i) {
        ASSERT_EQ(p.wait(rreqs[i]), UCXDT_OK) << "receive " << i << ", " << what;
        ASSERT_EQ(p.wait(sreqs[i]), UCXDT_OK) << "send " << i << ", " << what;
    }
    for (int i = 0; i < n; ++i) {
        dst_at[i]->fetch();
        EXPECT_EQ(check_received(*kinds[i % kinds.size()].second, 1, *dst[i], poison[i], sent[i], bytes[i]), "")
            << "message " << i << ", " << what;
    }
}

// The events of worker w against its GPU operations, under UCXDT_GPU_BATCH=`batch`: one each
// with a batch of 1; with 8, fewer, and none serving more than 8.
void expect_shared_events(const ucxdt::rndv::Worker &w, const char *batch, const std::string &what) {
    ASSERT_GT(w.gpu_launches, 0u) << what << ": no GPU operation";
    if (batch[0] == '1') {
        EXPECT_EQ(w.gpu_events, w.gpu_launches) << what << ": operations that shared an event with a batch of 1";
    } else {
        EXPECT_LT(w.gpu_events, w.gpu_launches) << what << ": no two operations of the window shared an event";
        EXPECT_GE(w.gpu_events, (w.gpu_launches + 7) / 8) << what << ": an event served more than 8 operations";
    }
}

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

// ---- Errors ---------------------------------------------------------------------------------

// A failed receive must leave its buffer as it was.
std::string expect_error(Pair &p, const L::TypeDescPtr &send, int64_t scount, const L::TypeDescPtr &recv,
                         int64_t rcount, int want_recv, int want_send, Mem smem, Mem rmem) {
    Type st(*send), rt(*recv);
    Buffer src(*send, scount, 1), dst(*recv, rcount, 2);
    const std::vector<std::byte> poison = dst.bytes;
    Placed src_at(src, smem), dst_at(dst, rmem);
    ucxdt_status_ptr_t rreq = ucxdt_tag_recv_nbx(p.w[1], dst_at.ptr(), rcount, rt.h, 7, ~0ull, nullptr);
    ucxdt_status_ptr_t sreq = ucxdt_tag_send_nbx(p.ep[0], src_at.ptr(), scount, st.h, 7, nullptr);
    const int rs = p.wait(rreq), ss = p.wait(sreq);
    if (rs != want_recv) return std::string("receive completed with ") + status_name(rs);
    if (ss != want_send) return std::string("send completed with ") + status_name(ss);
    dst_at.fetch();
    if (dst.bytes != poison) return "the receive buffer was written";
    return "";
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

// ---- Completion callbacks (ucxdt_request_param_t) ------------------------------------------
// What a callback saw; the test reads only this, never the request's status.
struct Seen {
    int calls = 0;
    void *request = nullptr, *user_data = nullptr;
    ucxdt_status_t status = UCXDT_ERR_UCX;
    int64_t length = -1;
    ucp_tag_t tag = 0;
};

// Progresses both workers until `done()` or kTimeout; false on the timeout.
template <class Done>
bool progress_until(Pair &p, Done done) {
    const auto deadline = std::chrono::steady_clock::now() + kTimeout;
    while (!done()) {
        if (std::chrono::steady_clock::now() > deadline) return false;
        p.progress();
    }
    return true;
}

ucxdt_request_param_t callback_param(Seen *seen, bool recv) {
    ucxdt_request_param_t prm{};
    prm.field_mask = UCXDT_REQUEST_PARAM_FIELD_CALLBACK | UCXDT_REQUEST_PARAM_FIELD_USER_DATA;
    if (recv) {
        prm.cb.recv = [](void *req, ucxdt_status_t st, int64_t len, ucp_tag_t tag, void *ud) {
            auto *s = static_cast<Seen *>(ud);
            *s = Seen{s->calls + 1, req, ud, st, len, tag};
            ucxdt_request_free(req);  // UCP's convention: the callback may release its request
        };
    } else {
        prm.cb.send = [](void *req, ucxdt_status_t st, void *ud) {
            auto *s = static_cast<Seen *>(ud);
            *s = Seen{s->calls + 1, req, ud, st, -1, 0};
            ucxdt_request_free(req);
        };
    }
    prm.user_data = seen;
    return prm;
}

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

// ---- Eager thresholds by memory kind ---------------------------------------------------------

bool has_line(const std::string &config, const std::string &line) {
    return config.find(line + "\n") != std::string::npos;
}

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

// ---- Many outstanding requests --------------------------------------------------------------

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
