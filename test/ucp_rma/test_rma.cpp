// One-sided put and get of layouts (include/ucxdt/ucxdt_rma.h) between two ucxdt workers of one
// process: random origin and target types of one signature, application layouts, every byte of
// the target (or origin) layout checked against the reference walker and every other byte of
// the buffer left as it was; flushes; and bad input, which fails before anything moves. The
// GPU cases (CUDA IPC between the workers, and the UCP path of GPU origins) skip without a GPU.
#include "support/layout_buffer.hpp"
#include "support/rma_support.hpp"

#include <ucxdt/ucxdt_rma.h>
#include <ucxdt/ucxdt_shmem.h>

#include <gtest/gtest.h>

#include <chrono>
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
                      int64_t tcount, uint64_t seed, Mem omem = Mem::host, Mem tmem = Mem::host) {
    T::RndvPair &p = pair();
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

}  // namespace
