// address_ordered and same_shape (dt/address_order.hpp): a layout copied into itself may
// visit its runs in address order, and a type that covers its span whole becomes one run. Each
// ordered plan is checked against the byte map of the original: every displacement its runs
// place a byte at, and how often.
#include "dt/address_order.hpp"

#include <gtest/gtest.h>

#include <map>

namespace {

using Dims = std::vector<ucxdt::Plan::Dim>;

// A STRIDED plan of runs of `block_len` bytes at `base` over `dims` (outermost first).
ucxdt::Plan strided(int64_t base, Dims dims, int64_t block_len) {
    ucxdt::Plan p;
    p.cls = UCXDT_PLAN_STRIDED;
    p.base = base;
    p.dims = std::move(dims);
    p.block_len = block_len;
    p.num_blocks = 1;
    for (const auto &d : p.dims) p.num_blocks *= d.count;
    p.packed_size = p.num_blocks * block_len;
    p.unit_size = block_len;
    return p;
}

// Displacement -> how many bytes of the plan's runs land there.
std::map<int64_t, int> byte_map(const ucxdt::Plan &p) {
    std::map<int64_t, int> m;
    int64_t runs = 1;
    for (const auto &d : p.dims) runs *= d.count;
    for (int64_t i = 0; i < runs; ++i) {
        int64_t at = p.base, rest = i;
        for (size_t k = p.dims.size(); k-- > 0;) {
            at += (rest % p.dims[k].count) * p.dims[k].stride;
            rest /= p.dims[k].count;
        }
        for (int64_t b = 0; b < p.block_len; ++b) ++m[at + b];
    }
    return m;
}

ucxdt::Plan ordered(const ucxdt::Plan &p) {
    ucxdt::Plan q;
    EXPECT_TRUE(ucxdt::address_ordered(p, &q));
    EXPECT_EQ(q.packed_size, p.packed_size);
    EXPECT_LE(q.num_blocks, p.num_blocks);
    EXPECT_EQ(byte_map(q), byte_map(p));
    for (size_t k = 1; k < q.dims.size(); ++k) EXPECT_GT(q.dims[k - 1].stride, q.dims[k].stride);
    return q;
}

}  // namespace

TEST(AddressOrder, ATransposeIsOneRun) {
    // The columns of a 64 x 64 matrix of doubles (hvector(64, 1, 8, vector(64, 1, 64))): in
    // packed order each 8-byte run is a row (512 B) from the last.
    const ucxdt::Plan q = ordered(strided(0, {{64, 8}, {64, 512}}, 8));
    EXPECT_EQ(q.cls, UCXDT_PLAN_CONTIGUOUS);
    EXPECT_EQ(q.base, 0);
    EXPECT_EQ(q.block_len, 64 * 64 * 8);
}

TEST(AddressOrder, AnFftScatterIsOneRun) {
    // FFT2's scatter for P = 2 of an N = 8 matrix of complex (16 B): per peer, n = 4 columns'
    // worth of single elements, the two peers' elements interleaved; starts at byte 32.
    const ucxdt::Plan q = ordered(strided(32, {{2, 64}, {4, 16}, {4, 128}}, 16));
    EXPECT_EQ(q.cls, UCXDT_PLAN_CONTIGUOUS);
    EXPECT_EQ(q.base, 32);
    EXPECT_EQ(q.block_len, 2 * 4 * 4 * 16);
}

TEST(AddressOrder, GapsStayRunsThatTouchMerge) {
    // 16 columns of 64 rows, rows 40 doubles apart: each row's 16 elements become one run.
    const ucxdt::Plan q = ordered(strided(8, {{16, 8}, {64, 320}}, 8));
    ASSERT_EQ(q.cls, UCXDT_PLAN_STRIDED);
    ASSERT_EQ(q.dims.size(), 1u);
    EXPECT_EQ(q.dims[0].count, 64);
    EXPECT_EQ(q.dims[0].stride, 320);
    EXPECT_EQ(q.block_len, 128);
    // Already in address order, with gaps: unchanged.
    const ucxdt::Plan v = strided(0, {{100, 56}}, 16);
    const ucxdt::Plan w = ordered(v);
    EXPECT_TRUE(ucxdt::same_shape(v, w));
}

TEST(AddressOrder, OverlapsKeepEachBytesCount) {
    // Runs that overlap (legal in a send): every byte as often as before.
    const ucxdt::Plan q = ordered(strided(0, {{2, 8}, {2, 8}}, 8));
    EXPECT_EQ(byte_map(q).at(8), 2);
    const ucxdt::Plan r = ordered(strided(0, {{3, 24}, {2, 8}}, 16));
    EXPECT_EQ(byte_map(r).at(8), 2);
}

TEST(AddressOrder, DownwardStridesAndBlockListsAreLeft) {
    ucxdt::Plan q;
    EXPECT_FALSE(ucxdt::address_ordered(strided(800, {{10, -80}}, 8), &q));
    ucxdt::Plan list;
    list.cls = UCXDT_PLAN_BLOCK_LIST;
    EXPECT_FALSE(ucxdt::address_ordered(list, &q));
}

TEST(AddressOrder, SameShapeComparesPlacementOnly) {
    const ucxdt::Plan a = strided(0, {{100, 56}}, 16);
    EXPECT_TRUE(ucxdt::same_shape(a, strided(0, {{100, 56}}, 16)));
    EXPECT_FALSE(ucxdt::same_shape(a, strided(8, {{100, 56}}, 16)));
    EXPECT_FALSE(ucxdt::same_shape(a, strided(0, {{100, 64}}, 16)));
    EXPECT_FALSE(ucxdt::same_shape(a, strided(0, {{50, 56}, {2, 8}}, 16)));
    ucxdt::Plan list = a;
    list.cls = UCXDT_PLAN_BLOCK_LIST;
    EXPECT_FALSE(ucxdt::same_shape(list, list));
}
