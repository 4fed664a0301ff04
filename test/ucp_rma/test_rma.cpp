// One-sided put and get of layouts (include/ucxdt/ucxdt_rma.h) between two ucxdt workers of one
// process: random origin and target types of one signature, application layouts, every byte of
// the target (or origin) layout checked against the reference walker and every other byte of
// the buffer left as it was; flushes; and bad input, which fails before anything moves. The
// GPU cases (CUDA IPC between the workers, and the UCP path of GPU origins) skip without a GPU.
#include "harness/layout_buffer.hpp"
#include "harness/rma_support.hpp"
#include "harness/scoped_env.hpp"
#include "ucp_rma/rma.hpp"

#include <ucxdt/ucxdt_rma.h>
#include <ucxdt/ucxdt_shmem.h>

#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

namespace {

namespace L = ucxdt::layouts;
namespace T = ucxdt::testing;
using T::Buffer, T::check_received, T::have_gpu, T::Mem, T::mem_name, T::packed, T::Placed, T::short_desc,
    T::status_name, T::Type;

T::RndvPair &pair() {
    static T::RndvPair p{T::RndvConfig{}};
    return p;
}

using T::addr, T::Region;

// A put of (origin, ocount) into (target, tcount) at w[1], or a get of the target into the
// origin; "" when it completes, a flush of the endpoint too, and the written layout holds the
// other's packed stream with every other byte untouched.
std::string one_sided(bool put, const L::TypeDescPtr &origin, int64_t ocount, const L::TypeDescPtr &target,
                      int64_t tcount, uint64_t seed, Mem omem = Mem::host, Mem tmem = Mem::host,
                      T::RndvPair *on = nullptr) {
    T::RndvPair &p = on ? *on : pair();
    Type ot(*origin), tt(*target);
    int64_t size = 0;
    ucxdt_type_size(ot.h, &size);
    const int64_t total = size * ocount;
    Buffer ob(*origin, ocount, seed), tb(*target, tcount, ~seed);
    // The source's packed stream, and the destination as it was.
    const std::vector<std::byte> sent = put ? packed(*origin, ob.ptr(), ocount, total) : packed(*target, tb.ptr(), tcount, total);
    const std::vector<std::byte> poison = put ? tb.bytes : ob.bytes;
    Placed o_at(ob, omem), t_at(tb, tmem);
    // The region: the target buffer with its slack.
    char *tbase = static_cast<char *>(t_at.ptr()) - tb.origin;
    Region reg(p, tbase, tb.bytes.size());
    if (!reg.error.empty()) return reg.error;
    const ucxdt_status_ptr_t r = put ? ucxdt_put_nbx(p.ep[0], o_at.ptr(), ocount, ot.h, addr(t_at.ptr()), reg.rkey, tcount, tt.h, nullptr)
                                     : ucxdt_get_nbx(p.ep[0], o_at.ptr(), ocount, ot.h, addr(t_at.ptr()), reg.rkey, tcount, tt.h, nullptr);
    const std::string where = std::string(put ? "put " : "get ") + mem_name(omem) + " origin, " + mem_name(tmem) +
                              " target (" + std::to_string(total) + " bytes): ";
    if (int st = p.wait(r); st != UCXDT_OK) return where + status_name(st) + ": " + ucxdt_last_error();
    if (int st = p.wait(ucxdt_ep_flush_nbx(p.ep[0], nullptr)); st != UCXDT_OK) return where + "flush: " + status_name(st);
    o_at.fetch();
    t_at.fetch();
    const std::string bad = put ? check_received(*target, tcount, tb, poison, sent, total)
                                : check_received(*origin, ocount, ob, poison, sent, total);
    return bad.empty() ? bad : where + bad;
}

const auto dbl = L::named(UCXDT_DOUBLE);

class Rma : public ::testing::Test {
protected:
    void SetUp() override { ASSERT_EQ(pair().error, ""); }
};

// ---- Host memory: the UCP path ------------------------------------------------------------

TEST_F(Rma, RandomTypesIntoRelayouts) {
    for (int i = 0; i < 80; ++i) {
        T::Rng rng(0x4a3a0000 + i);
        const L::TypeDescPtr o = T::random_desc(rng);
        const L::TypeDescPtr t = T::relayout(*o, rng);
        const int64_t count = 1 + static_cast<int64_t>(rng() % 3);
        // The written layout is the relayout: a random type may name a byte twice, which MPI
        // allows only for the side that is read.
        const bool put = i % 2 == 0;
        EXPECT_EQ(put ? one_sided(true, o, count, t, count, 0x5100 + i) : one_sided(false, t, count, o, count, 0x5100 + i), "")
            << "type #" << i << " x " << count << ": " << short_desc(*o) << " -> " << short_desc(*t);
    }
}

TEST_F(Rma, ApplicationLayoutsBothWays) {
    for (size_t k = 0; k < T::app_layouts().size(); ++k) {
        const L::Layout &l = T::app_layouts()[k];
        int64_t size = 0;
        Type h(*l.type);
        ucxdt_type_size(h.h, &size);
        if (size * l.count > (int64_t{8} << 20)) continue;  // keep the host run short
        T::Rng rng(0x3e1d0000 + k);
        const L::TypeDescPtr re = T::relayout(*l.type, rng);
        EXPECT_EQ(one_sided(true, re, l.count, l.type, l.count, 0x61 + k), "") << l.name << " as the target of a put";
        EXPECT_EQ(one_sided(false, re, l.count, l.type, l.count, 0x71 + k), "") << l.name << " as the target of a get";
    }
}

TEST_F(Rma, VectorIntoVectorAndEmpty) {
    const auto v = L::vector(64, 3, 7, dbl), w = L::vector(48, 4, 5, dbl);
    EXPECT_EQ(one_sided(true, v, 2, w, 2, 1), "");
    EXPECT_EQ(one_sided(false, v, 2, w, 2, 2), "");
    EXPECT_EQ(one_sided(true, v, 0, w, 0, 3), "");
}

// ---- Completion ---------------------------------------------------------------------------

TEST_F(Rma, ManyOutstandingThenOneFlushOfTheWorker) {
    T::RndvPair &p = pair();
    const auto t = L::vector(32, 2, 5, dbl);
    Type h(*t);
    constexpr int kOps = 40;
    std::vector<std::unique_ptr<Buffer>> src;
    Buffer dst(*t, kOps, 7);
    Region reg(p, dst.bytes.data(), dst.bytes.size());
    ASSERT_EQ(reg.error, "");
    int64_t extent = 0, lb = 0;
    ucxdt_type_extent(h.h, &lb, &extent);
    std::vector<ucxdt_status_ptr_t> reqs;
    int called = 0;
    ucxdt_request_param_t param{};
    param.field_mask = UCXDT_REQUEST_PARAM_FIELD_CALLBACK | UCXDT_REQUEST_PARAM_FIELD_USER_DATA;
    param.cb.send = [](void *, ucxdt_status_t st, void *ud) {
        if (st == UCXDT_OK) ++*static_cast<int *>(ud);
    };
    param.user_data = &called;
    for (int i = 0; i < kOps; ++i) {
        src.push_back(std::make_unique<Buffer>(*t, 1, 100 + i));
        reqs.push_back(ucxdt_put_nbx(p.ep[0], src.back()->ptr(), 1, h.h, addr(dst.ptr() + i * extent), reg.rkey, 1,
                                     h.h, &param));
    }
    ASSERT_EQ(p.wait(ucxdt_worker_flush_nbx(p.w[0], nullptr)), UCXDT_OK);
    for (ucxdt_status_ptr_t r : reqs) EXPECT_EQ(p.wait(r), UCXDT_OK);
    int immediate = 0;
    for (ucxdt_status_ptr_t r : reqs) immediate += r == nullptr;
    EXPECT_EQ(called + immediate, kOps) << "every put completes, through its callback unless at once";
    for (int i = 0; i < kOps; ++i) {
        const auto sent = packed(*t, src[i]->ptr(), 1, 32 * 2 * 8);
        const auto got = packed(*t, dst.ptr() + i * extent, 1, 32 * 2 * 8);
        EXPECT_EQ(sent, got) << "put " << i;
    }
}

// ---- OpenSHMEM's strided put and get --------------------------------------------------------

TEST_F(Rma, ShmemIputAndIgetAsTheirLoops) {
    T::RndvPair &p = pair();
    for (const size_t elem : {size_t{4}, size_t{8}, size_t{16}}) {
        constexpr size_t kN = 100;
        constexpr ptrdiff_t kDst = 3, kSst = 2;
        std::vector<unsigned char> src(kN * kSst * elem), dest(kN * kDst * elem + 64);
        for (size_t i = 0; i < src.size(); ++i) src[i] = static_cast<unsigned char>(i * 7 + elem);
        for (size_t i = 0; i < dest.size(); ++i) dest[i] = static_cast<unsigned char>(0xa5 ^ i);
        std::vector<unsigned char> want = dest;
        for (size_t k = 0; k < kN; ++k)
            std::memcpy(&want[k * kDst * elem], &src[k * kSst * elem], elem);
        Region reg(p, dest.data(), dest.size());
        ASSERT_EQ(reg.error, "");
        ASSERT_EQ(p.wait(ucxdt_shmem_iput_nbx(p.ep[0], addr(dest.data()), reg.rkey, src.data(), kDst, kSst, kN, elem,
                                              nullptr)),
                  UCXDT_OK);
        ASSERT_EQ(p.wait(ucxdt_ep_flush_nbx(p.ep[0], nullptr)), UCXDT_OK);
        EXPECT_EQ(dest, want) << "iput of " << elem << "-byte elements";
        // And back: the strided target read into a strided origin of another stride.
        std::vector<unsigned char> back(kN * 5 * elem, 0), back_want(back.size(), 0);
        for (size_t k = 0; k < kN; ++k) std::memcpy(&back_want[k * 5 * elem], &dest[k * kDst * elem], elem);
        ASSERT_EQ(p.wait(ucxdt_shmem_iget_nbx(p.ep[0], back.data(), addr(dest.data()), reg.rkey, 5, kDst, kN, elem,
                                              nullptr)),
                  UCXDT_OK);
        EXPECT_EQ(back, back_want) << "iget of " << elem << "-byte elements";
    }
    std::vector<char> d(64);
    Region reg(p, d.data(), d.size());
    EXPECT_EQ(p.wait(ucxdt_shmem_iput_nbx(p.ep[0], addr(d.data()), reg.rkey, d.data(), 0, 1, 4, 8, nullptr)),
              UCXDT_ERR_INVALID_PARAM)
        << "a zero stride";
    EXPECT_EQ(p.wait(ucxdt_shmem_iput_nbx(p.ep[0], addr(d.data()), reg.rkey, d.data(), 3, 1, 4, 8, nullptr)),
              UCXDT_ERR_OUT_OF_RANGE)
        << "4 elements every 24 bytes do not fit 64";
}

// ---- Bad input: a clear error, and nothing moved -------------------------------------------

TEST_F(Rma, SignatureMismatchOutOfRangeAndBadHandlesMoveNothing) {
    T::RndvPair &p = pair();
    const auto v = L::vector(16, 2, 4, dbl);
    Type h(*v), ints(*L::contiguous(32, L::named(UCXDT_INT32))), six(*L::contiguous(6, dbl));
    Buffer src(*v, 1, 1), dst(*v, 1, 2);
    const std::vector<std::byte> before = dst.bytes;
    // The region is the buffer less its last 8 bytes: the layout's last run reaches past it
    // when placed 8 bytes further on.
    Region reg(p, dst.bytes.data(), dst.bytes.size() - 8);
    ASSERT_EQ(reg.error, "");
    const auto put = [&](ucxdt_type_t ot, int64_t oc, uint64_t to, ucxdt_rkey_h k, ucxdt_type_t tt, int64_t tc) {
        return p.wait(ucxdt_put_nbx(p.ep[0], src.ptr(), oc, ot, to, k, tc, tt, nullptr));
    };
    EXPECT_EQ(put(h.h, 1, addr(dst.ptr()), reg.rkey, ints.h, 1), UCXDT_ERR_TYPE_MISMATCH) << "doubles into int32s";
    EXPECT_EQ(put(h.h, 1, addr(dst.ptr()), reg.rkey, six.h, 1), UCXDT_ERR_TYPE_MISMATCH) << "32 doubles into 6";
    int64_t tlb = 0, textent = 0;
    ucxdt_type_true_extent(h.h, &tlb, &textent);
    // Placed so that its last byte is the first byte past the region.
    const uint64_t past = addr(dst.bytes.data()) + (dst.bytes.size() - 8) - static_cast<uint64_t>(tlb + textent) + 1;
    EXPECT_EQ(put(h.h, 1, past, reg.rkey, h.h, 1), UCXDT_ERR_OUT_OF_RANGE) << "the layout ends past the region";
    EXPECT_EQ(put(h.h, 0, past, reg.rkey, h.h, 0), UCXDT_OK) << "nothing to move: no byte to check";
    EXPECT_EQ(put(h.h, 1, addr(dst.bytes.data()) - 4096, reg.rkey, h.h, 1), UCXDT_ERR_OUT_OF_RANGE)
        << "the layout starts before the region";
    EXPECT_EQ(put(h.h, 1, ~uint64_t{0} - 16, reg.rkey, h.h, 1), UCXDT_ERR_OUT_OF_RANGE) << "an address that wraps";
    EXPECT_EQ(put(h.h, -1, addr(dst.ptr()), reg.rkey, h.h, 1), UCXDT_ERR_INVALID_PARAM) << "negative origin count";
    EXPECT_EQ(put(h.h, 1, addr(dst.ptr()), reg.rkey, h.h, -1), UCXDT_ERR_INVALID_PARAM) << "negative target count";
    EXPECT_EQ(put(h.h, 1, addr(dst.ptr()), nullptr, h.h, 1), UCXDT_ERR_INVALID_PARAM) << "no rkey";
    ucxdt_type_t freed = UCXDT_TYPE_NULL;
    ASSERT_EQ(ucxdt_type_dup(h.h, &freed), UCXDT_OK);
    ucxdt_type_t stale = freed;
    ucxdt_type_free(&freed);
    EXPECT_EQ(put(stale, 1, addr(dst.ptr()), reg.rkey, h.h, 1), UCXDT_ERR_INVALID_PARAM) << "a freed origin type";
    ucxdt_type_t uncommitted = UCXDT_TYPE_NULL;
    ASSERT_EQ(ucxdt_type_contiguous(32, ucxdt_type_primitive(UCXDT_DOUBLE), &uncommitted), UCXDT_OK);
    EXPECT_EQ(put(h.h, 1, addr(dst.ptr()), reg.rkey, uncommitted, 1), UCXDT_ERR_NOT_COMMITTED);
    ucxdt_type_free(&uncommitted);
    // A remote key unpacked on the other endpoint does not serve this one.
    ucxdt_rkey_h other = nullptr;
    ASSERT_EQ(ucxdt_ep_rkey_unpack(p.ep[1], reg.packed_rkey(), reg.packed_size(), &other), UCXDT_OK);
    EXPECT_EQ(put(h.h, 1, addr(dst.ptr()), other, h.h, 1), UCXDT_ERR_INVALID_PARAM) << "an rkey of another ep";
    ucxdt_rkey_destroy(other);
    EXPECT_EQ(dst.bytes, before) << "a failed put wrote to the target";
}

TEST_F(Rma, RkeyBytesThatAreNotAnRkeyAreRefused) {
    T::RndvPair &p = pair();
    std::vector<char> buf(4096, 1);
    Region reg(p, buf.data(), buf.size());
    ASSERT_EQ(reg.error, "");
    std::vector<char> bytes(static_cast<const char *>(reg.packed_rkey()),
                            static_cast<const char *>(reg.packed_rkey()) + reg.packed_size());
    ucxdt_rkey_h k = nullptr;
    EXPECT_EQ(ucxdt_ep_rkey_unpack(p.ep[0], bytes.data(), 8, &k), UCXDT_ERR_INVALID_PARAM) << "too short";
    EXPECT_EQ(ucxdt_ep_rkey_unpack(p.ep[0], bytes.data(), bytes.size() - 1, &k), UCXDT_ERR_INVALID_PARAM)
        << "UCP's part cut short";
    std::vector<char> bad = bytes;
    bad[0] ^= 0x5a;
    EXPECT_EQ(ucxdt_ep_rkey_unpack(p.ep[0], bad.data(), bad.size(), &k), UCXDT_ERR_INVALID_PARAM) << "wrong magic";
    EXPECT_EQ(k, nullptr);
    ucxdt_mem_map_params_t mp{};
    ucxdt_mem_h m = nullptr;
    EXPECT_EQ(ucxdt_mem_map(p.w[1], &mp, &m), UCXDT_ERR_INVALID_PARAM) << "no address or length";
    mp.field_mask = UCXDT_MEM_MAP_PARAM_FIELD_ADDRESS | UCXDT_MEM_MAP_PARAM_FIELD_LENGTH;
    mp.address = buf.data();
    EXPECT_EQ(ucxdt_mem_map(p.w[1], &mp, &m), UCXDT_ERR_INVALID_PARAM) << "zero length";
}

// ---- GPU memory ---------------------------------------------------------------------------

TEST_F(Rma, GpuIpcPathAndMixedMemory) {
    if (!have_gpu()) GTEST_SKIP() << "no CUDA device: one-sided transfers of GPU memory are untested here";
    const auto v = L::vector(4096, 4, 6, dbl), w = L::vector(2048, 8, 11, dbl);
    const auto flat = L::contiguous(4096 * 4, dbl);
    for (bool put : {true, false}) {
        // Strided into strided (one copy), same block list, contiguous either side, and neither.
        EXPECT_EQ(one_sided(put, v, 1, w, 1, 11, Mem::cuda, Mem::cuda), "");
        EXPECT_EQ(one_sided(put, v, 1, v, 1, 12, Mem::cuda, Mem::cuda), "");
        EXPECT_EQ(one_sided(put, flat, 1, w, 1, 13, Mem::cuda, Mem::cuda), "");
        EXPECT_EQ(one_sided(put, v, 1, flat, 1, 14, Mem::cuda, Mem::cuda), "");
        // Host origin into a GPU target (page-locked staging), GPU origin into a host target (UCP).
        EXPECT_EQ(one_sided(put, v, 1, w, 1, 15, Mem::host, Mem::cuda), "");
        EXPECT_EQ(one_sided(put, v, 1, w, 1, 16, Mem::cuda, Mem::host), "");
    }
    for (int i = 0; i < 40; ++i) {
        T::Rng rng(0x6c3c0000 + i);
        const L::TypeDescPtr o = T::random_desc(rng);
        const L::TypeDescPtr t = T::relayout(*o, rng);
        const bool put = i % 2 == 0;
        EXPECT_EQ(put ? one_sided(true, o, 2, t, 2, 0x7100 + i, Mem::cuda, Mem::cuda)
                      : one_sided(false, t, 2, o, 2, 0x7100 + i, Mem::cuda, Mem::cuda), "")
            << "type #" << i << ": " << short_desc(*o) << " -> " << short_desc(*t);
    }
}

// A window of GPU puts and gets over CUDA IPC before one flush of the worker: the copies issued
// between two progress calls share an event, and each kind (strided, block list) a launch
// (UCXDT_GPU_BATCH). Every fifth put has a contiguous origin, which launches at once, after
// those queued before it; every seventh operation is a get. Each target element holds its
// origin's bytes (each origin its target's, for a get), and no other byte of the target region
// changes. With a batch of 1, each copy records its own event.
TEST(RmaIpcBatch, GpuWindowsShareALaunch) {
    if (!have_gpu()) GTEST_SKIP() << "no CUDA device: one-sided transfers of GPU memory are untested here";
    const auto v = L::vector(64, 4, 6, dbl), flat = L::contiguous(256, dbl);      // 2,048 B
    const auto blk = L::indexed({40, 7, 300}, {-60, 0, 19}, dbl);                  // 2,776 B
    constexpr int kOps = 30;
    for (const char *batch : {"8", "1"}) {
        T::ScopedEnv env{{"UCXDT_GPU_BATCH", batch}, {"UCXDT_CUDA_IPC", "y"}};
        T::RndvPair p{T::RndvConfig{}};
        ASSERT_EQ(p.error, "");
        for (const auto &t : {v, blk}) {
            Type th(*t), fh(*flat);
            int64_t lb = 0, extent = 0, size = 0;
            ucxdt_type_extent(th.h, &lb, &extent);
            ucxdt_type_size(th.h, &size);
            Buffer dst(*t, kOps, 0x900);
            const std::vector<std::byte> before = dst.bytes;
            Placed dst_at(dst, Mem::cuda);
            Region reg(p, static_cast<char *>(dst_at.ptr()) - dst.origin, dst.bytes.size());
            ASSERT_EQ(reg.error, "");
            std::vector<std::unique_ptr<Buffer>> src;
            std::vector<std::unique_ptr<Placed>> src_at;
            std::vector<std::vector<std::byte>> sent;
            std::vector<ucxdt_status_ptr_t> reqs;
            for (int i = 0; i < kOps; ++i) {
                const bool get = i % 7 == 3, contiguous = !get && t == v && i % 5 == 4;
                src.push_back(std::make_unique<Buffer>(contiguous ? *flat : *t, 1, 0xa00 + i));
                src_at.push_back(std::make_unique<Placed>(*src.back(), Mem::cuda));
                const uint64_t to = addr(static_cast<char *>(dst_at.ptr()) + i * extent);
                if (get) {
                    sent.push_back(packed(*t, dst.ptr() + i * extent, 1, size));
                    reqs.push_back(ucxdt_get_nbx(p.ep[0], src_at.back()->ptr(), 1, th.h, to, reg.rkey, 1, th.h, nullptr));
                } else {
                    sent.push_back(packed(contiguous ? *flat : *t, src.back()->ptr(), 1, size));
                    reqs.push_back(ucxdt_put_nbx(p.ep[0], src_at.back()->ptr(), 1, contiguous ? fh.h : th.h, to,
                                                 reg.rkey, 1, th.h, nullptr));
                }
            }
            ASSERT_EQ(p.wait(ucxdt_worker_flush_nbx(p.w[0], nullptr)), UCXDT_OK);
            for (ucxdt_status_ptr_t r : reqs) ASSERT_EQ(p.wait(r), UCXDT_OK);
            dst_at.fetch();
            // What the target region must hold: each put's bytes in its element, the rest as it was.
            std::vector<std::byte> whole;
            for (int i = 0; i < kOps; ++i) {
                if (i % 7 == 3) {  // a get: its origin holds the target element, which is unchanged
                    src_at[i]->fetch();
                    EXPECT_EQ(packed(*t, src[i]->ptr(), 1, size), sent[i]) << "get " << i << ", " << short_desc(*t);
                }
                whole.insert(whole.end(), sent[i].begin(), sent[i].end());
            }
            EXPECT_EQ(check_received(*t, kOps, dst, before, whole, size * kOps), "")
                << short_desc(*t) << ", UCXDT_GPU_BATCH=" << batch;
        }
        const auto &c = T::rma_of(p.w[0]).counters;
        EXPECT_EQ(c.ipc, 2u * kOps);
        if (batch[0] == '1') EXPECT_EQ(c.ipc_events, c.ipc) << "copies that shared an event with a batch of 1";
        else EXPECT_LT(c.ipc_events, c.ipc) << "no two copies of the windows shared an event";
    }
}

// ---- The target-unpack path, and the choice between it and one UCP operation per run --------

using ucxdt::rma::AmOp, ucxdt::rma::Path, ucxdt::rma::PathCosts;

using T::rma_of;

// UCXDT_RMA_PATH as given (nullptr: unset) for a pair made in its scope, as it was after.
class ScopedPath {
public:
    explicit ScopedPath(const char *v) {
        if (const char *o = std::getenv("UCXDT_RMA_PATH")) old_ = o, had_ = true;
        v ? setenv("UCXDT_RMA_PATH", v, 1) : unsetenv("UCXDT_RMA_PATH");
    }
    ~ScopedPath() { had_ ? setenv("UCXDT_RMA_PATH", old_.c_str(), 1) : unsetenv("UCXDT_RMA_PATH"); }

private:
    std::string old_;
    bool had_ = false;
};

TEST(RmaPathModel, EachPathIsMeasuredTwiceThenTheCheaperIsTaken) {
    using ucxdt::rma::next_path;
    PathCosts c;
    EXPECT_EQ(next_path(c, Path::AUTO, 100), Path::RUNS) << "runs are measured first";
    c.run.add(50e-6);  // cold
    EXPECT_EQ(next_path(c, Path::AUTO, 100), Path::RUNS) << "and again: the first sample ran cold";
    c.run.add(1e-6);
    EXPECT_EQ(c.run.v, 1e-6) << "the second sample replaces the cold first";
    for (int i = 0; i < 40; ++i)
        EXPECT_EQ(next_path(c, Path::AUTO, 100), Path::AM) << "a stint of active messages, until its sample is back";
    c.am.add(0.3), c.target_run.add(1e-3), c.probing = false;  // cold: CUDA started at the target
    for (int i = 0; i < 10; ++i) EXPECT_EQ(next_path(c, Path::AUTO, 100), Path::AM) << "a second stint at once";
    c.am.add(10e-6), c.target_run.add(0.05e-6), c.probing = false;
    c.run.add(1e-6);
    EXPECT_EQ(next_path(c, Path::AUTO, 4), Path::RUNS) << "4 us of puts against 10.2 us";
    EXPECT_EQ(next_path(c, Path::AUTO, 1000), Path::AM) << "1 ms of puts against 60 us";
    EXPECT_EQ(next_path(c, Path::RUNS, 1000), Path::RUNS);
    EXPECT_EQ(next_path(c, Path::AM, 4), Path::AM);
    // The other path gets a stint once per kReprobe x (the last stint's length) x (its cost /
    // the best's) operations: runs cost 1000 us / 60 us = 16.7 times the active message here.
    // Each stint here lasts 10 operations until its sample comes back.
    c.since_probe = 0;
    int other = 0, stints = 0;
    const int ops = 200000;
    for (int i = 0; i < ops; ++i) {
        const bool probe = next_path(c, Path::AUTO, 1000) == Path::RUNS;
        other += probe;
        if (probe && c.stint_ops == 10) c.probing = false, ++stints;
    }
    const double every = std::ceil(PathCosts::kReprobe * 10 * (1000 * 1e-6) / (10e-6 + 1000 * 0.05e-6));
    EXPECT_NEAR(stints, ops / (every - 1 + 10), 1.0);
    EXPECT_LE(other, ops * 10 / (every - 1 + 10) + 10);
}

TEST(RmaPathModel, AStintWhoseSampleNeverComesEndsAndIsTriedLater) {
    using ucxdt::rma::next_path;
    PathCosts c;
    c.run.add(1e-6), c.run.add(1e-6);
    for (int i = 0; i < PathCosts::kMaxStint; ++i) ASSERT_EQ(next_path(c, Path::AUTO, 100), Path::AM) << i;
    // No window of active messages closed (every one failed, say): runs until the retry.
    int runs = 0;
    while (next_path(c, Path::AUTO, 100) == Path::RUNS) ++runs;
    EXPECT_EQ(runs + 1, PathCosts::kReprobe * PathCosts::kMaxStint);
}

TEST(RmaPaths, AutomaticMeasuresTwoWindowsOfEachPathFirst) {
    ScopedPath env(nullptr);
    T::RndvPair p{T::RndvConfig{}};
    ASSERT_EQ(p.error, "");
    const auto many = L::vector(512, 1, 3, dbl), flat = L::contiguous(512, dbl);
    // Each put completes before the next starts. A window is kStint completions, the first of
    // which only opens it, and a closing completion opens the next: two windows of runs take
    // 2 x kStint - 1 puts; then two stints of active messages, each of which ends with its
    // sample: one window, then (the last completion opening the next) kStint - 1 more.
    constexpr int stint = PathCosts::kStint, runs = 2 * stint - 1;
    for (int i = 0; i < runs + 2 * stint + 4; ++i) {
        ASSERT_EQ(one_sided(true, flat, 1, many, 1, 0x900 + i, Mem::host, Mem::host, &p), "") << "put " << i;
        const auto &c = rma_of(p.w[0]).counters;  // the layer is made by the first put
        if (i == runs - 1) {
            EXPECT_EQ(c.am, 0u) << "runs first";
        }
        if (i == runs + 2 * stint - 2) {
            EXPECT_EQ(c.runs, uint64_t(runs));
            EXPECT_EQ(c.am, uint64_t(2 * stint - 1)) << "then two stints of active messages";
        }
    }
    const auto &c = rma_of(p.w[0]).counters;
    EXPECT_EQ(c.runs + c.am, uint64_t(runs + 2 * stint + 4));
    EXPECT_EQ(rma_of(p.w[1]).counters.served, c.am) << "the target served each active message";
}

TEST(RmaPaths, ActiveMessagesMoveRandomTypesBothWays) {
    ScopedPath env("am");
    T::RndvPair p{T::RndvConfig{}};
    ASSERT_EQ(p.error, "");
    for (int i = 0; i < 24; ++i) {
        T::Rng rng(0x5d5d0000 + i);
        const L::TypeDescPtr o = T::random_desc(rng), t = T::relayout(*o, rng);
        const bool put = i % 2 == 0;
        EXPECT_EQ(put ? one_sided(true, o, 2, t, 2, 0x8800 + i, Mem::host, Mem::host, &p)
                      : one_sided(false, t, 2, o, 2, 0x8800 + i, Mem::host, Mem::host, &p), "")
            << "type #" << i << ": " << short_desc(*o) << " -> " << short_desc(*t);
    }
    // A large one goes by UCP's rendezvous, both ways.
    const auto big = L::vector(1 << 16, 3, 4, dbl);
    EXPECT_EQ(one_sided(true, big, 1, big, 1, 0x8900, Mem::host, Mem::host, &p), "");
    EXPECT_EQ(one_sided(false, big, 1, big, 1, 0x8901, Mem::host, Mem::host, &p), "");
    // A contiguous target is one ucp_put_nbx or ucp_get_nbx whatever the setting; empty types
    // move nothing.
    EXPECT_GE(rma_of(p.w[0]).counters.am, 20u);
    EXPECT_EQ(rma_of(p.w[1]).counters.served, rma_of(p.w[0]).counters.am) << "the target served each";
}

TEST(RmaPaths, TheTargetRefusesALayoutOutsideItsRegions) {
    ScopedPath env("am");
    T::RndvPair p{T::RndvConfig{}};
    ASSERT_EQ(p.error, "");
    const auto v = L::vector(64, 1, 3, dbl);
    Type h(*v);
    Buffer src(*v, 1, 1), dst(*v, 1, 2);
    const std::vector<std::byte> before = dst.bytes;
    {
        // The rkey outlives the region: the origin's check passes, the target's must not.
        ucxdt_mem_map_params_t mp{};
        mp.field_mask = UCXDT_MEM_MAP_PARAM_FIELD_ADDRESS | UCXDT_MEM_MAP_PARAM_FIELD_LENGTH;
        mp.address = dst.bytes.data();
        mp.length = dst.bytes.size();
        ucxdt_mem_h mem = nullptr;
        ASSERT_EQ(ucxdt_mem_map(p.w[1], &mp, &mem), UCXDT_OK);
        void *packed_key = nullptr;
        size_t size = 0;
        ASSERT_EQ(ucxdt_rkey_pack(mem, &packed_key, &size), UCXDT_OK);
        ucxdt_rkey_h rkey = nullptr;
        ASSERT_EQ(ucxdt_ep_rkey_unpack(p.ep[0], packed_key, size, &rkey), UCXDT_OK);
        ucxdt_rkey_buffer_release(packed_key);
        ucxdt_mem_h other = nullptr;  // keeps the target's layer, with a region elsewhere
        mp.address = src.bytes.data();
        mp.length = src.bytes.size();
        ASSERT_EQ(ucxdt_mem_map(p.w[1], &mp, &other), UCXDT_OK);
        ucxdt_mem_unmap(mem);
        EXPECT_EQ(status_name(p.wait(ucxdt_put_nbx(p.ep[0], src.ptr(), 1, h.h, addr(dst.ptr()), rkey, 1, h.h, nullptr))),
                  status_name(UCXDT_ERR_OUT_OF_RANGE));
        EXPECT_EQ(status_name(p.wait(ucxdt_get_nbx(p.ep[0], src.ptr(), 1, h.h, addr(dst.ptr()), rkey, 1, h.h, nullptr))),
                  status_name(UCXDT_ERR_OUT_OF_RANGE));
        ucxdt_rkey_destroy(rkey);
        ucxdt_mem_unmap(other);
    }
    EXPECT_EQ(dst.bytes, before) << "the refused put wrote to the target";
    EXPECT_EQ(rma_of(p.w[1]).counters.served, 2u);
}

// Raw active messages of the path with malformed plan descriptions, as a faulty origin would
// send them: the target serves each, and only the well-formed one writes.
TEST(RmaPaths, MalformedPlanDescriptionsWriteNothing) {
    T::RndvPair p{T::RndvConfig{}};
    ASSERT_EQ(p.error, "");
    std::vector<char> region(4096, 0x11);
    const std::vector<char> before = region;
    T::Region reg(p, region.data(), region.size());  // makes the target's layer
    ASSERT_EQ(reg.error, "");
    // The origin's layer too, which receives (and drops) the replies to request id 0.
    const auto c8 = L::contiguous(8, dbl);
    ASSERT_EQ(one_sided(true, c8, 1, c8, 1, 5, Mem::host, Mem::host, &p), "");
    const int64_t n = 64;
    using W = std::vector<int64_t>;
    const int64_t magic = 0x6e6c7078, block = 0, strided = 1, list = 2;
    auto plan = [&](const W &w) {
        std::vector<char> b(w.size() * 8);
        std::memcpy(b.data(), w.data(), b.size());
        return b;
    };
    const std::vector<std::pair<const char *, std::vector<char>>> bad = {
        {"bad magic", plan({magic + 1, n, 0, 0, block, n})},
        {"size differs from the data's", plan({magic, n, 0, 0, block, n - 8})},
        {"truncated", plan({magic, n, 0, 0, block})},
        {"bytes after the layout", plan({magic, n, 0, 0, block, n, 7})},
        {"a strided level of no copies", plan({magic, n, 0, 0, strided, 0, 8, block, n})},
        {"a span past int64", plan({magic, n, 0, 0, strided, 8, INT64_MAX / 4, block, 8})},
        {"a list longer than its bytes", plan({magic, n, 0, 0, list, 1 << 30, 0, block, n})},
        {"an unknown node kind", plan({magic, n, 0, 0, 9, n})},
        {"a dim of no copies", plan({magic, n, 0, 1, 0, 8, block, n})},
        {"outside the region", plan({magic, n, 1 << 20, 0, block, n})},
    };
    const std::vector<char> good = plan({magic, n, 64, 0, strided, 8, 16, block, 8});
    int served = 0;
    auto send = [&](const std::vector<char> &desc) {
        AmOp h;
        h.kind = AmOp::PUT;
        h.origin_req = 0;
        h.address = addr(region.data());
        h.packed = n;
        h.plan_bytes = desc.size();
        std::vector<char> data = desc;
        data.resize(desc.size() + n, 0x77);
        ucp_request_param_t rp{};
        rp.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
        rp.flags = UCP_AM_SEND_FLAG_REPLY;
        ucs_status_ptr_t s = ucp_am_send_nbx(p.ucp.ep[0], UCXDT_UCP_AM_ID_RMA, &h, sizeof h, data.data(), data.size(), &rp);
        ASSERT_FALSE(UCS_PTR_IS_ERR(s));
        const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
        while ((UCS_PTR_IS_PTR(s) && s && ucp_request_check_status(s) == UCS_INPROGRESS) ||
               rma_of(p.w[1]).counters.served < static_cast<uint64_t>(served + 1)) {
            p.progress();
            ASSERT_LT(std::chrono::steady_clock::now(), deadline) << "the target did not serve it";
        }
        if (UCS_PTR_IS_PTR(s) && s) ucp_request_free(s);
        ++served;
    };
    for (const auto &[what, desc] : bad) {
        send(desc);
        EXPECT_EQ(region, before) << what;
    }
    send(good);  // 8 runs of 8 bytes, 16 apart, from byte 64
    for (size_t i = 0; i < region.size(); ++i) {
        const bool in_map = i >= 64 && i < 64 + 8 * 16 && (i - 64) % 16 < 8;
        EXPECT_EQ(region[i], in_map ? 0x77 : 0x11) << "byte " << i;
        if (region[i] != (in_map ? 0x77 : 0x11)) break;
    }
}

}  // namespace
