// What the rendezvous tests of test_rndv (test_rndv.cpp and rndv/*.cpp, one binary) share:
// a pair of workers in one process, a transfer checked byte for byte (run_case), the fixture,
// and the helpers of several files.
#pragma once

#include "support/registry.hpp"
#include "harness/layout_buffer.hpp"
#include "harness/rndv_support.hpp"
#include "harness/scoped_env.hpp"
#include "harness/ucp_pair.hpp"
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

namespace rndv_cases {


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
inline std::string run_case(Pair &p, const L::TypeDescPtr &send, const L::TypeDescPtr &recv, int64_t count,
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


inline Pair &shared_pair() {
    static Pair p{Config{}};
    return p;
}


class Rndv : public ::testing::Test {
protected:
    void SetUp() override { ASSERT_EQ(shared_pair().error, ""); }
};


inline const auto dbl = L::named(UCXDT_DOUBLE);


// A layout of n doubles: contiguous, or in blocks of 4 every 6.
inline L::TypeDescPtr doubles(int64_t n, bool contig) {
    return contig ? L::contiguous(n, dbl) : L::vector(n / 4, 4, 6, dbl);
}


// Control messages of kind k that worker w has sent.
inline uint64_t sent(const ucxdt::rndv::Worker &w, ucxdt::rndv::AmKind k) { return w.control_sent[static_cast<size_t>(k)]; }


class RndvLayouts : public ::testing::TestWithParam<size_t> {
protected:
    void SetUp() override { ASSERT_EQ(shared_pair().error, ""); }
};


// The worker behind a handle (ucxdt_worker derives from it alone), to see which staging it made.
inline const ucxdt::rndv::Worker &internals(ucxdt_worker_h w) { return *reinterpret_cast<const ucxdt::rndv::Worker *>(w); }


// Whether worker w allocated the device staging of the CUDA IPC path on any GPU.
inline bool ipc_staged(ucxdt_worker_h w) {
    const auto &gpus = internals(w).gpus;
    return std::any_of(gpus.begin(), gpus.end(), [](const auto &g) { return g.second->allocated(); });
}


inline std::string expect_error(Pair &p, const L::TypeDescPtr &send, int64_t scount, const L::TypeDescPtr &recv,
                         int64_t rcount, int want_recv, int want_send, Mem smem = Mem::host, Mem rmem = Mem::host);


// "" when `pool`, staging for GPU `device`, sits where hwloc says it should: bound to the NUMA
// nodes local to the GPU when those are not the whole machine, else left to first touch.
inline std::string check_numa_placement(const ucxdt::rndv::StagingPool &pool, int64_t bytes, int device) {
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


// GPU layouts between the workers of one process, with the peers' HELLOs exchanged first.
// CUDA IPC on (64 KiB fragments, so that transfers cycle the device slots) or off (host staging).
// `setting`: UCXDT_CUDA_IPC's value, when the path is not its doing (UCX_TLS's).
inline void gpu_path_cases(bool ipc, const char *setting = nullptr) {
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


// n messages of t at once from GPU memory into u (GPU memory, or host memory for those that
// recv_mem places there), tags tag0 and up, sends posted before receives or after; each
// receive must hold its message's data and nothing outside its layout may change.
inline void many_at_once(Pair &p, const L::TypeDescPtr &t, const L::TypeDescPtr &u, int n, int64_t bytes, ucp_tag_t tag0,
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


// Whether the driver's CU_POINTER_ATTRIBUTE_SYNC_MEMOPS is set on the allocation at `ptr`
// (-1 when it cannot be told).
inline int sync_memops(const void *ptr) {
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


// 300 single int32s at irregular gaps of 2 and 4 ints: a block list whose unit list outweighs
// its 1,200 bytes of data, so the point kernel moves it (cuda/method.cpp).
inline L::TypeDescPtr scattered_ints() {
    std::vector<int64_t> displacements;
    for (int64_t i = 0; i < 300; ++i) displacements.push_back(3 * i + i % 2);
    return L::indexed_block(1, displacements, L::named(UCXDT_INT32));
}


// Sends n messages, kinds[i % size] (send type, receive type), from GPU memory before their
// receives are posted, so that one progress call matches several, and checks that each
// arrives whole and that only the receive layouts' bytes change.
inline void window_of_kinds(Pair &p, const std::vector<std::pair<L::TypeDescPtr, L::TypeDescPtr>> &kinds, int n,
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
inline void expect_shared_events(const ucxdt::rndv::Worker &w, const char *batch, const std::string &what) {
    ASSERT_GT(w.gpu_launches, 0u) << what << ": no GPU operation";
    if (batch[0] == '1') {
        EXPECT_EQ(w.gpu_events, w.gpu_launches) << what << ": operations that shared an event with a batch of 1";
    } else {
        EXPECT_LT(w.gpu_events, w.gpu_launches) << what << ": no two operations of the window shared an event";
        EXPECT_GE(w.gpu_events, (w.gpu_launches + 7) / 8) << what << ": an event served more than 8 operations";
    }
}


// A failed receive must leave its buffer as it was.
inline std::string expect_error(Pair &p, const L::TypeDescPtr &send, int64_t scount, const L::TypeDescPtr &recv,
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


inline ucxdt_request_param_t callback_param(Seen *seen, bool recv) {
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


inline bool has_line(const std::string &config, const std::string &line) {
    return config.find(line + "\n") != std::string::npos;
}

}  // namespace rndv_cases
