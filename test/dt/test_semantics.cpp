// MPI-4.1 chapter 5 semantics of the ucxdt engine, checked against hand-computed values:
// bounds of every constructor, signatures, combiners, plan classes, and byte-exact packing.
#include <ucxdt/ucxdt.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <ostream>
#include <vector>

namespace {

constexpr uint8_t kPackPoison = 0xCD;    // never produced by pattern()
constexpr uint8_t kMemPoison = 0xEE;     // never produced by pattern()
constexpr int64_t kMargin = 16;          // poisoned guard bytes around every buffer

// Source bytes 1..199: distinguishable from both poison values.
uint8_t pattern(int64_t i) { return static_cast<uint8_t>(1 + i % 199); }

ucxdt_type_t P(ucxdt_primitive_t p) { return ucxdt_type_primitive(p); }

struct Bounds {
    int64_t size, lb, extent, true_lb, true_extent;
    bool operator==(const Bounds &) const = default;
};

std::ostream &operator<<(std::ostream &os, const Bounds &b) {
    return os << "{size " << b.size << ", lb " << b.lb << ", extent " << b.extent << ", true_lb "
              << b.true_lb << ", true_extent " << b.true_extent << "}";
}

Bounds bounds_of(ucxdt_type_t t) {
    Bounds b{-1, -1, -1, -1, -1};
    EXPECT_EQ(ucxdt_type_size(t, &b.size), UCXDT_OK) << ucxdt_last_error();
    EXPECT_EQ(ucxdt_type_extent(t, &b.lb, &b.extent), UCXDT_OK) << ucxdt_last_error();
    EXPECT_EQ(ucxdt_type_true_extent(t, &b.true_lb, &b.true_extent), UCXDT_OK)
        << ucxdt_last_error();
    return b;
}

struct Plan {
    ucxdt_plan_class_t cls;
    int64_t blocks;
    bool operator==(const Plan &) const = default;
};

std::ostream &operator<<(std::ostream &os, const Plan &p) {
    static const char *names[] = {"CONTIGUOUS", "STRIDED", "BLOCK_LIST"};
    return os << "{" << (p.cls >= 0 && p.cls <= 2 ? names[p.cls] : "?") << ", " << p.blocks
              << " blocks}";
}

Plan plan_of(ucxdt_type_t t, int64_t count) {
    Plan p{static_cast<ucxdt_plan_class_t>(-1), -1};
    EXPECT_EQ(ucxdt_type_plan_info(t, count, &p.cls, &p.blocks), UCXDT_OK) << ucxdt_last_error();
    return p;
}

ucxdt_signature_t sig_of(ucxdt_type_t t, int64_t count) {
    ucxdt_signature_t s{0, -1};
    EXPECT_EQ(ucxdt_type_signature(t, count, &s), UCXDT_OK) << ucxdt_last_error();
    return s;
}

bool same_sig(const ucxdt_signature_t &a, const ucxdt_signature_t &b) {
    return a.hash == b.hash && a.length == b.length;
}

ucxdt_combiner_t combiner_of(ucxdt_type_t t) {
    ucxdt_combiner_t c = static_cast<ucxdt_combiner_t>(-1);
    EXPECT_EQ(ucxdt_type_combiner(t, &c), UCXDT_OK) << ucxdt_last_error();
    return c;
}

// A run of `len` bytes at memory offset `off` from the buffer pointer; a list of them in pack
// order is the hand-written type map of (type, count).
struct Run {
    int64_t off, len;
};
using Runs = std::vector<Run>;  // inside a TEST_F, Run names testing::Test::Run

// Memory laid out for a run list: the span [lo, hi) the runs touch plus guard margins, the
// pattern-filled source, and the expected packed stream with each stream byte's memory offset.
struct Layout {
    int64_t lo = 0, hi = 0;
    std::vector<uint8_t> src;        // kMargin + (hi - lo) + kMargin bytes
    std::vector<uint8_t> stream;     // expected packed bytes
    std::vector<int64_t> stream_off; // memory offset (relative to the buffer pointer) per byte

    explicit Layout(const std::vector<Run> &runs) {
        if (!runs.empty()) {
            lo = runs[0].off, hi = runs[0].off + runs[0].len;
            for (const Run &r : runs) lo = std::min(lo, r.off), hi = std::max(hi, r.off + r.len);
        }
        src.resize(static_cast<size_t>(hi - lo + 2 * kMargin));
        for (size_t i = 0; i < src.size(); ++i) src[i] = pattern(static_cast<int64_t>(i));
        for (const Run &r : runs)
            for (int64_t j = 0; j < r.len; ++j) {
                stream.push_back(src[index(r.off + j)]);
                stream_off.push_back(r.off + j);
            }
    }
    size_t index(int64_t off) const { return static_cast<size_t>(off - lo + kMargin); }
    std::vector<uint8_t> poisoned() const { return std::vector<uint8_t>(src.size(), kMemPoison); }
    // The buffer pointer (MPI's buf argument) inside a memory image of this layout.
    // A signed offset: where the layout's lb is past the margin, the pointer lies before the image.
    uint8_t *base(std::vector<uint8_t> &mem) const { return mem.data() + static_cast<std::ptrdiff_t>(kMargin - lo); }
    const uint8_t *base(const std::vector<uint8_t> &mem) const { return mem.data() + static_cast<std::ptrdiff_t>(kMargin - lo); }
    int64_t total() const { return static_cast<int64_t>(stream.size()); }
};

// Packs and unpacks (type, count) whole and checks every byte against the run list: the packed
// stream, the guard bytes, the advanced position, and that unpack writes exactly the type map.
void check_pack_unpack(ucxdt_type_t type, int64_t count, const std::vector<Run> &runs) {
    Layout L(runs);
    int64_t size = -1;
    ASSERT_EQ(ucxdt_type_size(type, &size), UCXDT_OK);
    ASSERT_EQ(size * count, L.total()) << "hand-written runs disagree with the type size";

    std::vector<uint8_t> out(static_cast<size_t>(L.total() + 2 * kMargin), kPackPoison);
    int64_t pos = kMargin;
    ASSERT_EQ(ucxdt_pack(L.base(L.src), count, type, out.data(), kMargin + L.total(), &pos),
              UCXDT_OK)
        << ucxdt_last_error();
    EXPECT_EQ(pos, kMargin + L.total());
    for (int64_t i = 0; i < static_cast<int64_t>(out.size()); ++i) {
        bool in = i >= kMargin && i < kMargin + L.total();
        uint8_t want = in ? L.stream[static_cast<size_t>(i - kMargin)] : kPackPoison;
        ASSERT_EQ(out[static_cast<size_t>(i)], want) << "packed byte " << i - kMargin;
    }

    std::vector<uint8_t> mem = L.poisoned();
    pos = 0;
    ASSERT_EQ(ucxdt_unpack(L.stream.data(), L.total(), &pos, L.base(mem), count, type), UCXDT_OK)
        << ucxdt_last_error();
    EXPECT_EQ(pos, L.total());
    std::vector<uint8_t> want = L.poisoned();
    for (size_t s = 0; s < L.stream.size(); ++s) want[L.index(L.stream_off[s])] = L.stream[s];
    for (size_t i = 0; i < mem.size(); ++i)
        ASSERT_EQ(mem[i], want[i]) << "memory offset " << static_cast<int64_t>(i) - L.index(0);
}

// Every range [a, b) of the packed stream through pack_range and unpack_range: pack_range
// writes exactly stream[a, b) and nothing past `length`; unpack_range writes exactly the memory
// bytes of stream positions [a, b).
void check_all_ranges(ucxdt_type_t type, int64_t count, const std::vector<Run> &runs) {
    Layout L(runs);
    const int64_t n = L.total();
    std::vector<uint8_t> packed(static_cast<size_t>(n + 2 * kMargin));
    for (int64_t a = 0; a <= n; ++a) {
        for (int64_t b = a; b <= n; ++b) {
            std::fill(packed.begin(), packed.end(), kPackPoison);
            ASSERT_EQ(ucxdt_pack_range(L.base(L.src), count, type, a, packed.data() + kMargin,
                                       b - a),
                      UCXDT_OK)
                << "[" << a << "," << b << "): " << ucxdt_last_error();
            for (int64_t i = 0; i < n + 2 * kMargin; ++i) {
                int64_t s = i - kMargin + a;
                bool in = i >= kMargin && s < b;
                uint8_t want = in ? L.stream[static_cast<size_t>(s)] : kPackPoison;
                ASSERT_EQ(packed[static_cast<size_t>(i)], want)
                    << "pack_range [" << a << "," << b << ") byte " << i - kMargin;
            }

            std::vector<uint8_t> mem = L.poisoned();
            ASSERT_EQ(ucxdt_unpack_range(L.stream.data() + a, a, b - a, L.base(mem), count, type),
                      UCXDT_OK)
                << "[" << a << "," << b << "): " << ucxdt_last_error();
            std::vector<uint8_t> want = L.poisoned();
            for (int64_t s = a; s < b; ++s)
                want[L.index(L.stream_off[static_cast<size_t>(s)])] =
                    L.stream[static_cast<size_t>(s)];
            ASSERT_EQ(mem, want) << "unpack_range [" << a << "," << b << ")";
        }
    }

    // Ranges may come in any order: assemble the stream from 5-byte pieces, last piece first.
    std::vector<uint8_t> whole(static_cast<size_t>(n), kPackPoison);
    std::vector<uint8_t> mem = L.poisoned(), want = L.poisoned();
    for (int64_t a = (n - 1) / 5 * 5; n > 0 && a >= 0; a -= 5) {
        int64_t len = std::min<int64_t>(5, n - a);
        ASSERT_EQ(ucxdt_pack_range(L.base(L.src), count, type, a, whole.data() + a, len),
                  UCXDT_OK);
        ASSERT_EQ(ucxdt_unpack_range(L.stream.data() + a, a, len, L.base(mem), count, type),
                  UCXDT_OK);
    }
    EXPECT_EQ(whole, L.stream);
    for (size_t s = 0; s < L.stream.size(); ++s) want[L.index(L.stream_off[s])] = L.stream[s];
    EXPECT_EQ(mem, want);
}

// One run per element of `elem` bytes at the given element indices, in that order.
std::vector<Run> elements(std::initializer_list<int64_t> idx, int64_t elem) {
    std::vector<Run> r;
    for (int64_t i : idx) r.push_back({i * elem, elem});
    return r;
}

class Semantics : public ::testing::Test {
protected:
    void TearDown() override {
        for (ucxdt_type_t &t : owned_) EXPECT_EQ(ucxdt_type_free(&t), UCXDT_OK);
    }

    // `t` by reference: it is read only after the constructor call in the same argument list
    // has written it (argument evaluation order is unspecified).
    ucxdt_type_t own(ucxdt_status_t st, const ucxdt_type_t &t, const char *what) {
        EXPECT_EQ(st, UCXDT_OK) << what << ": " << ucxdt_last_error();
        if (st != UCXDT_OK) return UCXDT_TYPE_NULL;
        owned_.push_back(t);
        return t;
    }
    ucxdt_type_t commit(ucxdt_type_t t) {
        EXPECT_EQ(ucxdt_type_commit(t), UCXDT_OK) << ucxdt_last_error();
        return t;
    }

    ucxdt_type_t contig(int64_t n, ucxdt_type_t old) {
        ucxdt_type_t t = UCXDT_TYPE_NULL;
        return own(ucxdt_type_contiguous(n, old, &t), t, "contiguous");
    }
    ucxdt_type_t vec(int64_t n, int64_t bl, int64_t stride, ucxdt_type_t old) {
        ucxdt_type_t t = UCXDT_TYPE_NULL;
        return own(ucxdt_type_vector(n, bl, stride, old, &t), t, "vector");
    }
    ucxdt_type_t hvec(int64_t n, int64_t bl, int64_t stride, ucxdt_type_t old) {
        ucxdt_type_t t = UCXDT_TYPE_NULL;
        return own(ucxdt_type_hvector(n, bl, stride, old, &t), t, "hvector");
    }
    ucxdt_type_t indexed(std::vector<int64_t> bl, std::vector<int64_t> d, ucxdt_type_t old) {
        ucxdt_type_t t = UCXDT_TYPE_NULL;
        return own(ucxdt_type_indexed(static_cast<int64_t>(bl.size()), bl.data(), d.data(), old,
                                      &t),
                   t, "indexed");
    }
    ucxdt_type_t hindexed(std::vector<int64_t> bl, std::vector<int64_t> d, ucxdt_type_t old) {
        ucxdt_type_t t = UCXDT_TYPE_NULL;
        return own(ucxdt_type_hindexed(static_cast<int64_t>(bl.size()), bl.data(), d.data(), old,
                                       &t),
                   t, "hindexed");
    }
    ucxdt_type_t idx_block(int64_t bl, std::vector<int64_t> d, ucxdt_type_t old) {
        ucxdt_type_t t = UCXDT_TYPE_NULL;
        return own(ucxdt_type_indexed_block(static_cast<int64_t>(d.size()), bl, d.data(), old, &t),
                   t, "indexed_block");
    }
    ucxdt_type_t hidx_block(int64_t bl, std::vector<int64_t> d, ucxdt_type_t old) {
        ucxdt_type_t t = UCXDT_TYPE_NULL;
        return own(ucxdt_type_hindexed_block(static_cast<int64_t>(d.size()), bl, d.data(), old,
                                             &t),
                   t, "hindexed_block");
    }
    ucxdt_type_t subarray(std::vector<int64_t> sizes, std::vector<int64_t> sub,
                          std::vector<int64_t> starts, ucxdt_order_t order, ucxdt_type_t old) {
        ucxdt_type_t t = UCXDT_TYPE_NULL;
        return own(ucxdt_type_subarray(static_cast<int>(sizes.size()), sizes.data(), sub.data(),
                                       starts.data(), order, old, &t),
                   t, "subarray");
    }
    ucxdt_type_t structure(std::vector<int64_t> bl, std::vector<int64_t> d,
                           std::vector<ucxdt_type_t> types) {
        ucxdt_type_t t = UCXDT_TYPE_NULL;
        return own(ucxdt_type_struct(static_cast<int64_t>(bl.size()), bl.data(), d.data(),
                                     types.data(), &t),
                   t, "struct");
    }
    ucxdt_type_t resized(ucxdt_type_t old, int64_t lb, int64_t extent) {
        ucxdt_type_t t = UCXDT_TYPE_NULL;
        return own(ucxdt_type_resized(old, lb, extent, &t), t, "resized");
    }
    ucxdt_type_t dup(ucxdt_type_t old) {
        ucxdt_type_t t = UCXDT_TYPE_NULL;
        return own(ucxdt_type_dup(old, &t), t, "dup");
    }

    // The struct used by several tests: int32 at 20, two doubles at 0, three int16 at -6.
    // size 26; lb -6, data up to 24, so extent 30 rounded up to the double's alignment: 32.
    // Pack order follows the type map.
    ucxdt_type_t mixed_struct() {
        return structure({1, 2, 3}, {20, 0, -6},
                         {P(UCXDT_INT32), P(UCXDT_DOUBLE), P(UCXDT_INT16)});
    }

    const ucxdt_type_t D = P(UCXDT_DOUBLE);
    const ucxdt_type_t I32 = P(UCXDT_INT32);
    const ucxdt_type_t I16 = P(UCXDT_INT16);

private:
    std::vector<ucxdt_type_t> owned_;
};

// ---- bounds ---------------------------------------------------------------------------------

TEST_F(Semantics, PrimitiveBounds) {
    const int64_t sizes[UCXDT_PRIMITIVE_LAST] = {
        1, 1, 1, 2, 4, 8, 1, 2, 4, 8, 4, 8, static_cast<int64_t>(sizeof(long double)), 8, 16};
    for (int p = 0; p < UCXDT_PRIMITIVE_LAST; ++p) {
        ucxdt_type_t t = P(static_cast<ucxdt_primitive_t>(p));
        ASSERT_NE(t, UCXDT_TYPE_NULL) << "primitive " << p;
        EXPECT_EQ(bounds_of(t), (Bounds{sizes[p], 0, sizes[p], 0, sizes[p]})) << "primitive " << p;
        EXPECT_EQ(combiner_of(t), UCXDT_COMBINER_NAMED);
        EXPECT_EQ(sig_of(t, 1).length, 1);
    }
}

TEST_F(Semantics, ContiguousBounds) {
    EXPECT_EQ(bounds_of(contig(3, D)), (Bounds{24, 0, 24, 0, 24}));
    EXPECT_EQ(bounds_of(contig(0, D)), (Bounds{0, 0, 0, 0, 0}));
    // Copies of resized(double, -4, 16) at 0 and 16: lb markers -4, 12; ub markers 12, 28.
    EXPECT_EQ(bounds_of(contig(2, resized(D, -4, 16))), (Bounds{16, -4, 32, 0, 24}));
    // Zero extent: all copies overlap at 0.
    EXPECT_EQ(bounds_of(contig(2, resized(D, 0, 0))), (Bounds{16, 0, 0, 0, 8}));
}

TEST_F(Semantics, VectorBounds) {
    EXPECT_EQ(bounds_of(vec(3, 2, 4, D)), (Bounds{48, 0, 80, 0, 80}));
    // Negative stride: blocks at 0, -16, -32.
    EXPECT_EQ(bounds_of(vec(3, 1, -2, D)), (Bounds{24, -32, 40, -32, 40}));
    // Zero stride: every block at 0.
    EXPECT_EQ(bounds_of(vec(3, 2, 0, I32)), (Bounds{24, 0, 8, 0, 8}));
    EXPECT_EQ(bounds_of(vec(0, 2, 4, D)), (Bounds{0, 0, 0, 0, 0}));
    EXPECT_EQ(bounds_of(vec(3, 0, 4, D)), (Bounds{0, 0, 0, 0, 0}));
    EXPECT_EQ(bounds_of(hvec(3, 1, -12, I32)), (Bounds{12, -24, 28, -24, 28}));
    // Byte stride not a multiple of the element: blocks at 0 and 3 overlap; the extent 11 is
    // rounded up to the double's alignment (the epsilon of MPI-4.1 5.1.6).
    EXPECT_EQ(bounds_of(hvec(2, 1, 3, D)), (Bounds{16, 0, 16, 0, 11}));
}

TEST_F(Semantics, IndexedBounds) {
    // int16 blocks at [10,14), [0,2), [-8,-2).
    EXPECT_EQ(bounds_of(indexed({2, 1, 3}, {5, 0, -4}, I16)), (Bounds{12, -8, 22, -8, 22}));
    // Zero-length blocks are not in the type map and do not move the bounds.
    EXPECT_EQ(bounds_of(indexed({0, 2, 0}, {100, 3, -50}, D)), (Bounds{16, 24, 16, 24, 16}));
    EXPECT_EQ(bounds_of(hindexed({1, 1}, {-5, 7}, I32)), (Bounds{8, -5, 16, -5, 16}));
    EXPECT_EQ(bounds_of(idx_block(2, {4, -3}, D)), (Bounds{32, -24, 72, -24, 72}));
    EXPECT_EQ(bounds_of(hidx_block(1, {6, -2}, I16)), (Bounds{4, -2, 10, -2, 10}));
    ucxdt_type_t e = UCXDT_TYPE_NULL;
    ASSERT_EQ(ucxdt_type_indexed(0, nullptr, nullptr, D, &e), UCXDT_OK);
    EXPECT_EQ(bounds_of(own(UCXDT_OK, e, "indexed")), (Bounds{0, 0, 0, 0, 0}));
}

TEST_F(Semantics, StructBounds) {
    EXPECT_EQ(bounds_of(mixed_struct()), (Bounds{26, -6, 32, -6, 30}));
    // Extents are rounded up to the largest alignment of the primitives, as C pads structs.
    const ucxdt_type_t C = P(UCXDT_CHAR);
    EXPECT_EQ(bounds_of(structure({1, 1}, {0, 8}, {D, C})), (Bounds{9, 0, 16, 0, 9}));
    EXPECT_EQ(bounds_of(structure({1, 2, 1}, {0, 8, 16}, {D, I32, C})),
              (Bounds{17, 0, 24, 0, 17}));
    EXPECT_EQ(bounds_of(structure({1, 1}, {0, 2}, {I16, C})), (Bounds{3, 0, 4, 0, 3}));
    EXPECT_EQ(bounds_of(structure({1, 1}, {0, 16}, {P(UCXDT_LONG_DOUBLE), C})),
              (Bounds{static_cast<int64_t>(sizeof(long double)) + 1, 0,
                      16 + static_cast<int64_t>(alignof(long double)), 0,
                      static_cast<int64_t>(sizeof(long double)) + 1}));
    // Zero-length entries are not in the type map: neither their bounds nor their alignment
    // count (the doubles would round the extent up to 8).
    EXPECT_EQ(bounds_of(structure({0, 1, 0}, {-100, 4, 100}, {D, I32, D})),
              (Bounds{4, 4, 4, 4, 4}));
    // A resized child's markers move with its copies: copies at 10 and 18.
    EXPECT_EQ(bounds_of(structure({2}, {10}, {resized(I32, 0, 8)})), (Bounds{8, 10, 16, 10, 12}));
}

TEST_F(Semantics, ResizedBounds) {
    EXPECT_EQ(bounds_of(resized(D, 0, 16)), (Bounds{8, 0, 16, 0, 8}));
    EXPECT_EQ(bounds_of(resized(D, -8, 24)), (Bounds{8, -8, 24, 0, 8}));
    EXPECT_EQ(bounds_of(resized(D, 0, -8)), (Bounds{8, 0, -8, 0, 8}));
    EXPECT_EQ(bounds_of(resized(D, 0, 0)), (Bounds{8, 0, 0, 0, 8}));
    EXPECT_EQ(bounds_of(resized(resized(D, 0, 16), 4, 32)), (Bounds{8, 4, 32, 0, 8}));
    // True bounds see through resizing at every level.
    EXPECT_EQ(bounds_of(contig(3, resized(D, 0, 16))), (Bounds{24, 0, 48, 0, 40}));
}

TEST_F(Semantics, SubarrayBounds) {
    // 4x5 doubles, 2x3 block at (1,1). C: rows of 5; elements 6..8, 11..13.
    EXPECT_EQ(bounds_of(subarray({4, 5}, {2, 3}, {1, 1}, UCXDT_ORDER_C, D)),
              (Bounds{48, 0, 160, 48, 64}));
    // Fortran: (i,j) at i + 4j; elements 5,6, 9,10, 13,14.
    EXPECT_EQ(bounds_of(subarray({4, 5}, {2, 3}, {1, 1}, UCXDT_ORDER_FORTRAN, D)),
              (Bounds{48, 0, 160, 40, 80}));
    // Empty subarray still spans the whole array.
    EXPECT_EQ(bounds_of(subarray({4}, {0}, {4}, UCXDT_ORDER_C, D)), (Bounds{0, 0, 32, 0, 0}));
    EXPECT_EQ(bounds_of(subarray({2, 3, 4}, {1, 2, 2}, {1, 0, 2}, UCXDT_ORDER_C, I32)),
              (Bounds{16, 0, 96, 56, 24}));
    EXPECT_EQ(bounds_of(subarray({2, 3, 4}, {1, 2, 2}, {1, 0, 2}, UCXDT_ORDER_FORTRAN, I32)),
              (Bounds{16, 0, 96, 52, 36}));
}

TEST_F(Semantics, DupKeepsEverythingAndCommitState) {
    ucxdt_type_t v = commit(vec(3, 2, 4, D));
    ucxdt_type_t d = dup(v);
    EXPECT_EQ(combiner_of(d), UCXDT_COMBINER_DUP);
    EXPECT_EQ(bounds_of(d), bounds_of(v));
    EXPECT_TRUE(same_sig(sig_of(d, 2), sig_of(v, 2)));
    EXPECT_EQ(plan_of(d, 2), plan_of(v, 2)) << "dup of a committed type must be committed";
    check_pack_unpack(d, 1, {{0, 16}, {32, 16}, {64, 16}});

    ucxdt_type_t u = vec(2, 1, 2, I32);
    ucxdt_type_t du = dup(u);
    ucxdt_plan_class_t c;
    int64_t nb;
    EXPECT_EQ(ucxdt_type_plan_info(du, 1, &c, &nb), UCXDT_ERR_NOT_COMMITTED)
        << "dup of an uncommitted type must be uncommitted";
    commit(du);
    EXPECT_EQ(ucxdt_type_plan_info(u, 1, &c, &nb), UCXDT_ERR_NOT_COMMITTED)
        << "committing the dup must not commit the original";
    check_pack_unpack(du, 2, {{0, 4}, {8, 4}, {12, 4}, {20, 4}});
}

// ---- signatures and combiners ---------------------------------------------------------------

TEST_F(Semantics, Signatures) {
    ucxdt_signature_t four = sig_of(D, 4);
    EXPECT_EQ(four.length, 4);
    EXPECT_TRUE(same_sig(sig_of(contig(4, D), 1), four));
    EXPECT_TRUE(same_sig(sig_of(vec(2, 2, 5, D), 1), four));
    EXPECT_TRUE(same_sig(sig_of(structure({1, 1}, {0, 8}, {D, D}), 2), four));
    EXPECT_TRUE(same_sig(sig_of(structure({2, 2}, {40, 0}, {D, D}), 1), four));
    EXPECT_TRUE(same_sig(sig_of(vec(4, 1, -3, D), 1), four)) << "displacements are not signature";
    EXPECT_TRUE(same_sig(sig_of(resized(contig(2, D), -8, 100), 2), four));

    ucxdt_signature_t f = sig_of(P(UCXDT_FLOAT), 1), i = sig_of(I32, 1);
    EXPECT_EQ(f.length, i.length);
    EXPECT_NE(f.hash, i.hash) << "float and int32 are different primitives of equal size";
    EXPECT_FALSE(same_sig(sig_of(contig(2, D), 1), sig_of(P(UCXDT_INT64), 2)));

    ucxdt_type_t ma = structure({1, 1}, {0, 8}, {I32, D});
    ucxdt_type_t mb = structure({1, 1}, {0, 8}, {D, I32});
    EXPECT_FALSE(same_sig(sig_of(ma, 1), sig_of(mb, 1))) << "the sequence order matters";

    ucxdt_type_t m = mixed_struct();
    EXPECT_EQ(sig_of(m, 1).length, 6);
    EXPECT_TRUE(same_sig(sig_of(m, 3), sig_of(contig(3, m), 1)));
    EXPECT_FALSE(same_sig(sig_of(m, 3), sig_of(m, 2)));
    EXPECT_EQ(sig_of(m, 0).length, 0);
    EXPECT_TRUE(same_sig(sig_of(m, 0), sig_of(contig(0, D), 1)));
}

TEST_F(Semantics, Combiners) {
    EXPECT_EQ(combiner_of(contig(2, D)), UCXDT_COMBINER_CONTIGUOUS);
    EXPECT_EQ(combiner_of(vec(2, 1, 2, D)), UCXDT_COMBINER_VECTOR);
    EXPECT_EQ(combiner_of(hvec(2, 1, 16, D)), UCXDT_COMBINER_HVECTOR);
    EXPECT_EQ(combiner_of(indexed({1}, {1}, D)), UCXDT_COMBINER_INDEXED);
    EXPECT_EQ(combiner_of(hindexed({1}, {8}, D)), UCXDT_COMBINER_HINDEXED);
    EXPECT_EQ(combiner_of(idx_block(1, {1}, D)), UCXDT_COMBINER_INDEXED_BLOCK);
    EXPECT_EQ(combiner_of(hidx_block(1, {8}, D)), UCXDT_COMBINER_HINDEXED_BLOCK);
    EXPECT_EQ(combiner_of(subarray({2}, {1}, {1}, UCXDT_ORDER_C, D)), UCXDT_COMBINER_SUBARRAY);
    EXPECT_EQ(combiner_of(structure({1}, {0}, {D})), UCXDT_COMBINER_STRUCT);
    EXPECT_EQ(combiner_of(resized(D, 0, 8)), UCXDT_COMBINER_RESIZED);
    EXPECT_EQ(combiner_of(dup(D)), UCXDT_COMBINER_DUP);
    // Constructors that describe a contiguous layout still report how they were built.
    EXPECT_EQ(combiner_of(commit(vec(2, 2, 2, D))), UCXDT_COMBINER_VECTOR);
}

// ---- plans ----------------------------------------------------------------------------------

TEST_F(Semantics, ContiguousPlans) {
    const Plan one{UCXDT_PLAN_CONTIGUOUS, 1};
    ucxdt_type_t cc = commit(contig(4, contig(3, D)));
    EXPECT_EQ(plan_of(cc, 1), one);
    EXPECT_EQ(plan_of(cc, 5), one);
    ucxdt_type_t v = commit(vec(4, 3, 3, D));  // stride == blocklength
    EXPECT_EQ(plan_of(v, 1), one);
    EXPECT_EQ(plan_of(v, 3), one);
    ucxdt_type_t s = commit(structure({2, 1}, {0, 8}, {I32, D}));  // adjacent fields
    EXPECT_EQ(plan_of(s, 1), one);
    EXPECT_EQ(plan_of(s, 3), one);
    // Padding removed by resizing back to the size makes count > 1 contiguous again.
    ucxdt_type_t padded = resized(D, 0, 16);
    ucxdt_type_t tight = commit(resized(padded, 0, 8));
    EXPECT_EQ(plan_of(tight, 4), one);
    EXPECT_EQ(plan_of(commit(padded), 3), (Plan{UCXDT_PLAN_STRIDED, 3}));
    // count > 1 of a type with extent == size.
    EXPECT_EQ(plan_of(commit(contig(3, D)), 7), one);
    EXPECT_EQ(plan_of(commit(hindexed({1, 1}, {0, 8}, D)), 1), one);
    // Touching blocks in pack order merge into one.
    EXPECT_EQ(plan_of(commit(indexed({2, 3, 1}, {0, 2, 5}, D)), 1), one);
    // vector of a contiguous vector is contiguous.
    EXPECT_EQ(plan_of(commit(vec(3, 1, 1, vec(2, 2, 2, D))), 2), one);
}

TEST_F(Semantics, StridedPlans) {
    ucxdt_type_t v = commit(vec(4, 4, 10, D));  // N x N block of an ld = 10 matrix
    EXPECT_EQ(plan_of(v, 1), (Plan{UCXDT_PLAN_STRIDED, 4}));
    EXPECT_EQ(plan_of(v, 2), (Plan{UCXDT_PLAN_STRIDED, 8}));
    // Vector of vector folds into a 2-D strided plan.
    ucxdt_type_t vv = commit(hvec(3, 1, 512, vec(4, 2, 8, D)));
    EXPECT_EQ(plan_of(vv, 1), (Plan{UCXDT_PLAN_STRIDED, 12}));
    // Inner blocks at 0, 16; outer stride 32: six blocks 16 bytes apart.
    ucxdt_type_t flat = commit(hvec(3, 1, 32, vec(2, 1, 2, D)));
    EXPECT_EQ(plan_of(flat, 1), (Plan{UCXDT_PLAN_STRIDED, 6}));
}

TEST_F(Semantics, BlockListPlans) {
    // Lower triangle of a 4x4 C matrix: rows of 1..4 elements.
    ucxdt_type_t tri = commit(indexed({1, 2, 3, 4}, {0, 4, 8, 12}, D));
    EXPECT_EQ(plan_of(tri, 1), (Plan{UCXDT_PLAN_BLOCK_LIST, 4}));
    // First two blocks touch and merge; the third stays apart.
    EXPECT_EQ(plan_of(commit(indexed({2, 2, 1}, {0, 2, 10}, D)), 1),
              (Plan{UCXDT_PLAN_BLOCK_LIST, 2}));
    // Adjacent in memory but reversed in pack order: merging would reorder the stream.
    ucxdt_plan_class_t c;
    int64_t nb = -1;
    ASSERT_EQ(ucxdt_type_plan_info(commit(indexed({1, 1}, {1, 0}, D)), 1, &c, &nb), UCXDT_OK);
    EXPECT_EQ(nb, 2);
}

// ---- packing --------------------------------------------------------------------------------

TEST_F(Semantics, PackNegativeStrideOrder) {
    // Pack order follows the type map: blocks at 0, -16, -32.
    check_pack_unpack(commit(vec(3, 1, -2, D)), 1, {{0, 8}, {-16, 8}, {-32, 8}});
    double a[7] = {0, 1, 2, 3, 4, 5, 6}, out[3] = {};
    int64_t pos = 0;
    ucxdt_type_t v = vec(3, 1, -2, D);
    commit(v);
    ASSERT_EQ(ucxdt_pack(&a[4], 1, v, out, sizeof out, &pos), UCXDT_OK);
    EXPECT_EQ(out[0], 4.0);
    EXPECT_EQ(out[1], 2.0);
    EXPECT_EQ(out[2], 0.0);
    check_pack_unpack(commit(hvec(3, 1, -12, I32)), 2,
                      {{0, 4}, {-12, 4}, {-24, 4}, {28, 4}, {16, 4}, {4, 4}});
}

TEST_F(Semantics, PackResizedSteps) {
    // Negative extent with count 3: element i at i * -8, so the elements run backwards.
    ucxdt_type_t back = commit(resized(D, 0, -8));
    check_pack_unpack(back, 3, {{0, 8}, {-8, 8}, {-16, 8}});
    double a[3] = {10, 11, 12}, out[3] = {};
    int64_t pos = 0;
    ASSERT_EQ(ucxdt_pack(&a[2], 3, back, out, sizeof out, &pos), UCXDT_OK);
    EXPECT_EQ(out[0], 12.0);
    EXPECT_EQ(out[1], 11.0);
    EXPECT_EQ(out[2], 10.0);
    // Padding: element i at i * 16; lb does not shift the data.
    check_pack_unpack(commit(resized(D, 0, 16)), 3, {{0, 8}, {16, 8}, {32, 8}});
    check_pack_unpack(commit(resized(D, -8, 24)), 2, {{0, 8}, {24, 8}});
    check_pack_unpack(commit(resized(resized(D, 0, 16), 4, 32)), 2, {{0, 8}, {32, 8}});
    check_pack_unpack(commit(contig(2, resized(D, -4, 16))), 2,
                      {{0, 8}, {16, 8}, {32, 8}, {48, 8}});
}

TEST_F(Semantics, PackIndexedAndStruct) {
    check_pack_unpack(commit(indexed({1, 1, 1}, {2, 0, 1}, D)), 1, elements({2, 0, 1}, 8));
    check_pack_unpack(commit(indexed({2, 1, 3}, {5, 0, -4}, I16)), 2,
                      {{10, 4}, {0, 2}, {-8, 6}, {32, 4}, {22, 2}, {14, 6}});
    check_pack_unpack(commit(hindexed({1, 1}, {-5, 7}, I32)), 1, {{-5, 4}, {7, 4}});
    check_pack_unpack(commit(idx_block(2, {4, -3}, D)), 1, {{32, 16}, {-24, 16}});
    check_pack_unpack(commit(hidx_block(1, {6, -2}, I16)), 2, {{6, 2}, {-2, 2}, {16, 2}, {8, 2}});
    ucxdt_type_t m = commit(mixed_struct());
    check_pack_unpack(m, 2, {{20, 4}, {0, 16}, {-6, 6}, {52, 4}, {32, 16}, {26, 6}});
    // Alignment padding steps the second element to 16.
    check_pack_unpack(commit(structure({1, 1}, {0, 8}, {D, P(UCXDT_CHAR)})), 2,
                      {{0, 9}, {16, 9}});
    check_pack_unpack(commit(structure({2}, {10}, {resized(I32, 0, 8)})), 1, {{10, 4}, {18, 4}});
    check_pack_unpack(commit(structure({0, 1, 0}, {-100, 4, 100}, {D, I32, D})), 3,
                      {{4, 4}, {8, 4}, {12, 4}});
}

TEST_F(Semantics, PackSubarrayOrder) {
    check_pack_unpack(commit(subarray({4, 5}, {2, 3}, {1, 1}, UCXDT_ORDER_C, D)), 2,
                      elements({6, 7, 8, 11, 12, 13, 26, 27, 28, 31, 32, 33}, 8));
    check_pack_unpack(commit(subarray({4, 5}, {2, 3}, {1, 1}, UCXDT_ORDER_FORTRAN, D)), 1,
                      elements({5, 6, 9, 10, 13, 14}, 8));
    check_pack_unpack(commit(subarray({2, 3, 4}, {1, 2, 2}, {1, 0, 2}, UCXDT_ORDER_C, I32)), 1,
                      elements({14, 15, 18, 19}, 4));
    check_pack_unpack(
        commit(subarray({2, 3, 4}, {1, 2, 2}, {1, 0, 2}, UCXDT_ORDER_FORTRAN, I32)), 1,
        elements({13, 15, 19, 21}, 4));
}

TEST_F(Semantics, PackEmptyTypes) {
    for (ucxdt_type_t e : {contig(0, D), vec(3, 0, 4, D), indexed({0, 0}, {3, 9}, D)}) {
        commit(e);
        check_pack_unpack(e, 4, {});
        int64_t pos = 0;
        uint8_t b = kPackPoison;
        EXPECT_EQ(ucxdt_pack(&b, 4, e, &b, 0, &pos), UCXDT_OK);
        EXPECT_EQ(pos, 0);
    }
    check_pack_unpack(commit(vec(2, 1, 2, D)), 0, {});
}

TEST_F(Semantics, PackAbsoluteAddresses) {
    // MPI_BOTTOM: displacements are addresses and inbuf is NULL.
    double x = 1.5;
    int32_t y = -7;
    ucxdt_type_t abs = commit(structure(
        {1, 1}, {static_cast<int64_t>(reinterpret_cast<intptr_t>(&y)),
                 static_cast<int64_t>(reinterpret_cast<intptr_t>(&x))},
        {I32, D}));
    uint8_t out[12];
    int64_t pos = 0;
    ASSERT_EQ(ucxdt_pack(nullptr, 1, abs, out, sizeof out, &pos), UCXDT_OK) << ucxdt_last_error();
    EXPECT_EQ(pos, 12);
    EXPECT_EQ(std::memcmp(out, &y, 4), 0);
    EXPECT_EQ(std::memcmp(out + 4, &x, 8), 0);
}

TEST_F(Semantics, PackPositionAppends) {
    ucxdt_type_t v = commit(vec(2, 1, 2, I32));
    const int32_t a[4] = {10, 20, 30, 40};
    const double d[2] = {1.25, -2.5};
    uint8_t buf[64];
    std::memset(buf, kPackPoison, sizeof buf);
    int64_t pos = 3;
    ASSERT_EQ(ucxdt_pack(a, 1, v, buf, sizeof buf, &pos), UCXDT_OK);
    EXPECT_EQ(pos, 11);
    ASSERT_EQ(ucxdt_pack(d, 2, D, buf, sizeof buf, &pos), UCXDT_OK);
    EXPECT_EQ(pos, 27);
    uint8_t want[64];
    std::memset(want, kPackPoison, sizeof want);
    std::memcpy(want + 3, &a[0], 4);
    std::memcpy(want + 7, &a[2], 4);
    std::memcpy(want + 11, d, 16);
    EXPECT_EQ(std::memcmp(buf, want, sizeof buf), 0);

    // Unpacking the same sequence advances through it and leaves the vector's gaps alone.
    int32_t b[4] = {-1, -1, -1, -1};
    double e[2] = {0, 0};
    pos = 3;
    ASSERT_EQ(ucxdt_unpack(buf, 27, &pos, b, 1, v), UCXDT_OK);
    EXPECT_EQ(pos, 11);
    ASSERT_EQ(ucxdt_unpack(buf, 27, &pos, e, 2, D), UCXDT_OK);
    EXPECT_EQ(pos, 27);
    EXPECT_EQ(b[0], 10);
    EXPECT_EQ(b[1], -1);
    EXPECT_EQ(b[2], 30);
    EXPECT_EQ(b[3], -1);
    EXPECT_EQ(e[0], 1.25);
    EXPECT_EQ(e[1], -2.5);

    int64_t need = -1;
    ASSERT_EQ(ucxdt_pack_size(5, v, &need), UCXDT_OK);
    EXPECT_GE(need, 40);
}

TEST_F(Semantics, PackRangeEveryRangeStruct) {
    check_all_ranges(commit(mixed_struct()), 2,
                     {{20, 4}, {0, 16}, {-6, 6}, {52, 4}, {32, 16}, {26, 6}});
}

TEST_F(Semantics, PackRangeEveryRangeNegativeStride) {
    // Element extent 40 (lb -32, ub 8): the second element's blocks at 40, 24, 8.
    check_all_ranges(commit(hvec(3, 1, -16, D)), 2,
                     {{0, 8}, {-16, 8}, {-32, 8}, {40, 8}, {24, 8}, {8, 8}});
}

TEST_F(Semantics, PackRangeEveryRangeStrided) {
    check_all_ranges(commit(vec(3, 2, 3, I16)), 2,
                     {{0, 4}, {6, 4}, {12, 4}, {16, 4}, {22, 4}, {28, 4}});
}

// The CPU engine moves runs of 1, 2, 4, 8, 12, 16, 24 and 32 bytes by fixed-size copies and
// others of up to 32 bytes by two overlapping ones (issue 62): every range of two strided levels
// of each run length around those, forward and backward.
TEST_F(Semantics, PackRangeEveryRangeRunLengths) {
    const ucxdt_type_t U8 = P(UCXDT_UINT8);
    for (int64_t b : {1, 2, 3, 4, 5, 7, 8, 9, 12, 15, 16, 17, 24, 31, 32, 33}) {
        SCOPED_TRACE("run length " + std::to_string(b));
        const int64_t gap = b + 3, ext = 3 * gap + b;
        Runs fwd, bwd;
        for (int64_t e = 0; e < 3; ++e)
            for (int64_t k = 0; k < 4; ++k) fwd.push_back({e * ext + k * gap, b});
        const ucxdt_type_t f = commit(vec(4, b, gap, U8));
        EXPECT_EQ(plan_of(f, 3), (Plan{UCXDT_PLAN_STRIDED, 12}));
        check_all_ranges(f, 3, fwd);
        // Backward: element extent 3 * gap + b from lb -3 * gap.
        for (int64_t e = 0; e < 2; ++e)
            for (int64_t k = 0; k < 4; ++k) bwd.push_back({e * ext - k * gap, b});
        check_all_ranges(commit(hvec(4, b, -gap, U8)), 2, bwd);
    }
    // Every other run (stride twice the run), 9 to a row: the shuffled copies and their ends.
    for (int64_t b : {1, 2, 4, 8}) {
        SCOPED_TRACE("every other run of " + std::to_string(b));
        const int64_t ext = 17 * b + 5;
        Runs runs;
        for (int64_t e = 0; e < 2; ++e)
            for (int64_t k = 0; k < 9; ++k) runs.push_back({e * ext + k * 2 * b, b});
        check_all_ranges(commit(resized(vec(9, b, 2 * b, U8), 0, ext)), 2, runs);
    }
}

// Every range of a block list whose blocks take each path of the engine's copy.
TEST_F(Semantics, PackRangeEveryRangeBlockLengths) {
    const std::vector<int64_t> len = {1, 2, 3, 5, 8, 9, 13, 16, 17, 24, 31, 33, 40};
    std::vector<int64_t> disp;
    Runs runs;
    int64_t at = 0;
    for (int64_t l : len) disp.push_back(at), at += l + 2;
    const int64_t ext = at - 2;
    for (int64_t e = 0; e < 2; ++e)
        for (size_t j = 0; j < len.size(); ++j) runs.push_back({e * ext + disp[j], len[j]});
    const ucxdt_type_t t = commit(hindexed(len, disp, P(UCXDT_UINT8)));
    EXPECT_EQ(plan_of(t, 2).cls, UCXDT_PLAN_BLOCK_LIST);
    check_all_ranges(t, 2, runs);
}

}  // namespace
