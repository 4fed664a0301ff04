// Bad input to every ucxdt entry point: each must fail with the documented status, change
// nothing (no handle, no output byte, no position), and leave a message naming the argument.
#include <ucxdt/ucxdt.h>

#include <gtest/gtest.h>

#include <cctype>
#include <cstdint>
#include <cstring>
#include <iterator>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace {

constexpr int64_t kMax = INT64_MAX;
constexpr int64_t kMin = INT64_MIN;
constexpr uint8_t kPoison = 0xA5;
// Written into *newtype before a failing constructor: it must still be there afterwards.
const ucxdt_type_t kSentinel = reinterpret_cast<ucxdt_type_t>(static_cast<uintptr_t>(0x5a5a5a50));

ucxdt_type_t P(ucxdt_primitive_t p) { return ucxdt_type_primitive(p); }

std::string lower(std::string s) {
    for (char &c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return s;
}

// Status and last-error check of one failed call. `want` lists acceptable statuses (the
// documented one first; a second only where the sum of two in-range values overflows);
// `names` is '|'-separated: the message must mention one of them.
::testing::AssertionResult failed_as(const char *call, ucxdt_status_t got,
                                     std::initializer_list<ucxdt_status_t> want,
                                     const char *names) {
    std::string msg = ucxdt_last_error();  // copy now: the pointer dies with the next call
    bool status_ok = false;
    for (ucxdt_status_t w : want) status_ok |= got == w;
    std::string lm = lower(msg);
    bool named = false;
    std::stringstream ss(names);
    for (std::string n; std::getline(ss, n, '|');) named |= lm.find(lower(n)) != std::string::npos;
    if (status_ok && named) return ::testing::AssertionSuccess();
    auto r = ::testing::AssertionFailure();
    r << call << " returned " << got << " (" << ucxdt_status_string(got) << "), wanted "
      << ucxdt_status_string(*want.begin()) << "; last_error \"" << msg << "\"";
    if (!named) r << " does not name any of: " << names;
    return r;
}

#define EXPECT_FAIL(want, names, ...) \
    EXPECT_TRUE(failed_as(#__VA_ARGS__, (__VA_ARGS__), {want}, names))
#define EXPECT_FAIL2(want1, want2, names, ...) \
    EXPECT_TRUE(failed_as(#__VA_ARGS__, (__VA_ARGS__), {want1, want2}, names))

// A constructor call that must fail and leave *newtype alone; the call writes through `&nt`.
#define EXPECT_CTOR_FAIL(want, names, ...)                                       \
    do {                                                                         \
        ucxdt_type_t nt = kSentinel;                                             \
        EXPECT_FAIL(want, names, __VA_ARGS__);                                   \
        EXPECT_EQ(nt, kSentinel) << "newtype written by failing " #__VA_ARGS__;  \
        if (nt != kSentinel && nt != UCXDT_TYPE_NULL) ucxdt_type_free(&nt);      \
    } while (0)

// A constructor call that must succeed (controls next to the overflow cases); frees the result.
#define EXPECT_CTOR_OK(...)                                                         \
    do {                                                                            \
        ucxdt_type_t nt = UCXDT_TYPE_NULL;                                          \
        EXPECT_EQ((__VA_ARGS__), UCXDT_OK) << #__VA_ARGS__ << ": " << ucxdt_last_error(); \
        if (nt != UCXDT_TYPE_NULL) {                                                \
            EXPECT_EQ(ucxdt_type_free(&nt), UCXDT_OK);                              \
        }                                                                           \
    } while (0)

// Owns derived handles made in a test and frees them at its end.
class BadInput : public ::testing::Test {
protected:
    void TearDown() override {
        for (ucxdt_type_t &t : owned_)
            if (t != UCXDT_TYPE_NULL) {
                EXPECT_EQ(ucxdt_type_free(&t), UCXDT_OK);
            }
    }
    // `t` by reference: it is read only after the constructor call in the same argument list
    // has written it (argument evaluation order is unspecified).
    ucxdt_type_t own(ucxdt_status_t st, const ucxdt_type_t &t) {
        EXPECT_EQ(st, UCXDT_OK) << ucxdt_last_error();
        if (st != UCXDT_OK) return UCXDT_TYPE_NULL;
        owned_.push_back(t);
        return t;
    }
    ucxdt_type_t contig(int64_t n, ucxdt_type_t old) {
        ucxdt_type_t t = UCXDT_TYPE_NULL;
        return own(ucxdt_type_contiguous(n, old, &t), t);
    }
    ucxdt_type_t vec(int64_t n, int64_t bl, int64_t stride, ucxdt_type_t old) {
        ucxdt_type_t t = UCXDT_TYPE_NULL;
        return own(ucxdt_type_vector(n, bl, stride, old, &t), t);
    }
    ucxdt_type_t resized(ucxdt_type_t old, int64_t lb, int64_t extent) {
        ucxdt_type_t t = UCXDT_TYPE_NULL;
        return own(ucxdt_type_resized(old, lb, extent, &t), t);
    }
    ucxdt_type_t commit(ucxdt_type_t t) {
        EXPECT_EQ(ucxdt_type_commit(t), UCXDT_OK) << ucxdt_last_error();
        return t;
    }
    // vector(3, 2, 4, double): size 48, extent 80, committed.
    ucxdt_type_t vector48() { return commit(vec(3, 2, 4, D)); }
    // Size (INT64_MAX / 16) * 8: fits, but three of them do not.
    ucxdt_type_t huge() { return commit(contig(kMax / 16, D)); }

    const ucxdt_type_t D = P(UCXDT_DOUBLE);
    const ucxdt_type_t B = P(UCXDT_BYTE);

private:
    std::vector<ucxdt_type_t> owned_;
};

bool all_poison(const std::vector<uint8_t> &v) {
    for (uint8_t b : v)
        if (b != kPoison) return false;
    return true;
}

// ---- counts, blocklengths, arrays ------------------------------------------------------------

TEST_F(BadInput, NegativeCountsAndBlocklengths) {
    const int64_t bl[2] = {1, 1}, negbl[2] = {1, -1}, d[2] = {0, 4};
    const ucxdt_type_t types[2] = {D, D};
    for (int64_t n : {int64_t{-1}, kMin}) {
        EXPECT_CTOR_FAIL(UCXDT_ERR_INVALID_PARAM, "count", ucxdt_type_contiguous(n, D, &nt));
        EXPECT_CTOR_FAIL(UCXDT_ERR_INVALID_PARAM, "count", ucxdt_type_vector(n, 1, 1, D, &nt));
        EXPECT_CTOR_FAIL(UCXDT_ERR_INVALID_PARAM, "count", ucxdt_type_hvector(n, 1, 8, D, &nt));
        EXPECT_CTOR_FAIL(UCXDT_ERR_INVALID_PARAM, "count", ucxdt_type_indexed(n, bl, d, D, &nt));
        EXPECT_CTOR_FAIL(UCXDT_ERR_INVALID_PARAM, "count", ucxdt_type_hindexed(n, bl, d, D, &nt));
        EXPECT_CTOR_FAIL(UCXDT_ERR_INVALID_PARAM, "count",
                         ucxdt_type_indexed_block(n, 1, d, D, &nt));
        EXPECT_CTOR_FAIL(UCXDT_ERR_INVALID_PARAM, "count",
                         ucxdt_type_hindexed_block(n, 1, d, D, &nt));
        EXPECT_CTOR_FAIL(UCXDT_ERR_INVALID_PARAM, "count",
                         ucxdt_type_struct(n, bl, d, types, &nt));
    }
    EXPECT_CTOR_FAIL(UCXDT_ERR_INVALID_PARAM, "blocklength", ucxdt_type_vector(2, -1, 1, D, &nt));
    EXPECT_CTOR_FAIL(UCXDT_ERR_INVALID_PARAM, "blocklength",
                     ucxdt_type_hvector(2, kMin, 8, D, &nt));
    EXPECT_CTOR_FAIL(UCXDT_ERR_INVALID_PARAM, "blocklength",
                     ucxdt_type_indexed(2, negbl, d, D, &nt));
    EXPECT_CTOR_FAIL(UCXDT_ERR_INVALID_PARAM, "blocklength",
                     ucxdt_type_hindexed(2, negbl, d, D, &nt));
    EXPECT_CTOR_FAIL(UCXDT_ERR_INVALID_PARAM, "blocklength",
                     ucxdt_type_indexed_block(2, -1, d, D, &nt));
    EXPECT_CTOR_FAIL(UCXDT_ERR_INVALID_PARAM, "blocklength",
                     ucxdt_type_hindexed_block(2, -1, d, D, &nt));
    EXPECT_CTOR_FAIL(UCXDT_ERR_INVALID_PARAM, "blocklength",
                     ucxdt_type_struct(2, negbl, d, types, &nt));

    ucxdt_type_t v = vector48();
    ucxdt_signature_t sig;
    ucxdt_plan_class_t pc;
    int64_t nb = 0, sz = 0;
    EXPECT_FAIL(UCXDT_ERR_INVALID_PARAM, "count", ucxdt_type_signature(v, -1, &sig));
    EXPECT_FAIL(UCXDT_ERR_INVALID_PARAM, "count", ucxdt_type_plan_info(v, -1, &pc, &nb));
    EXPECT_FAIL(UCXDT_ERR_INVALID_PARAM, "incount", ucxdt_pack_size(-1, v, &sz));

    std::vector<uint8_t> mem(128, kPoison), out(128, kPoison);
    int64_t pos = 0;
    EXPECT_FAIL(UCXDT_ERR_INVALID_PARAM, "incount",
                ucxdt_pack(mem.data(), -1, v, out.data(), 128, &pos));
    EXPECT_FAIL(UCXDT_ERR_INVALID_PARAM, "outcount",
                ucxdt_unpack(out.data(), 128, &pos, mem.data(), -1, v));
    EXPECT_FAIL(UCXDT_ERR_INVALID_PARAM, "count",
                ucxdt_pack_range(mem.data(), -1, v, 0, out.data(), 0));
    EXPECT_FAIL(UCXDT_ERR_INVALID_PARAM, "count",
                ucxdt_unpack_range(out.data(), 0, 0, mem.data(), -1, v));
    EXPECT_EQ(pos, 0);
    EXPECT_TRUE(all_poison(mem));
    EXPECT_TRUE(all_poison(out));
}

TEST_F(BadInput, NullArrays) {
    const int64_t bl[2] = {1, 1}, d[2] = {0, 4}, sz[1] = {4}, sub[1] = {2}, st[1] = {1};
    const ucxdt_type_t types[2] = {D, D}, with_null[2] = {D, UCXDT_TYPE_NULL};
    auto I = UCXDT_ERR_INVALID_PARAM;
    EXPECT_CTOR_FAIL(I, "blocklengths", ucxdt_type_indexed(2, nullptr, d, D, &nt));
    EXPECT_CTOR_FAIL(I, "displacements", ucxdt_type_indexed(2, bl, nullptr, D, &nt));
    EXPECT_CTOR_FAIL(I, "blocklengths", ucxdt_type_hindexed(2, nullptr, d, D, &nt));
    EXPECT_CTOR_FAIL(I, "displacements", ucxdt_type_hindexed(2, bl, nullptr, D, &nt));
    EXPECT_CTOR_FAIL(I, "displacements", ucxdt_type_indexed_block(2, 1, nullptr, D, &nt));
    EXPECT_CTOR_FAIL(I, "displacements", ucxdt_type_hindexed_block(2, 1, nullptr, D, &nt));
    EXPECT_CTOR_FAIL(I, "blocklengths", ucxdt_type_struct(2, nullptr, d, types, &nt));
    EXPECT_CTOR_FAIL(I, "displacements", ucxdt_type_struct(2, bl, nullptr, types, &nt));
    EXPECT_CTOR_FAIL(I, "types", ucxdt_type_struct(2, bl, d, nullptr, &nt));
    EXPECT_CTOR_FAIL(I, "types", ucxdt_type_struct(2, bl, d, with_null, &nt));
    EXPECT_CTOR_FAIL(I, "sizes",
                     ucxdt_type_subarray(1, nullptr, sub, st, UCXDT_ORDER_C, D, &nt));
    EXPECT_CTOR_FAIL(I, "subsizes",
                     ucxdt_type_subarray(1, sz, nullptr, st, UCXDT_ORDER_C, D, &nt));
    EXPECT_CTOR_FAIL(I, "starts",
                     ucxdt_type_subarray(1, sz, sub, nullptr, UCXDT_ORDER_C, D, &nt));

    // With count 0 the arrays are never read and may be NULL: an empty type.
    ucxdt_type_t e[5] = {};
    ASSERT_EQ(ucxdt_type_indexed(0, nullptr, nullptr, D, &e[0]), UCXDT_OK);
    ASSERT_EQ(ucxdt_type_hindexed(0, nullptr, nullptr, D, &e[1]), UCXDT_OK);
    ASSERT_EQ(ucxdt_type_indexed_block(0, 3, nullptr, D, &e[2]), UCXDT_OK);
    ASSERT_EQ(ucxdt_type_hindexed_block(0, 3, nullptr, D, &e[3]), UCXDT_OK);
    ASSERT_EQ(ucxdt_type_struct(0, nullptr, nullptr, nullptr, &e[4]), UCXDT_OK);
    for (ucxdt_type_t &t : e) {
        int64_t size = -1, lb = -1, ext = -1;
        EXPECT_EQ(ucxdt_type_size(t, &size), UCXDT_OK);
        EXPECT_EQ(ucxdt_type_extent(t, &lb, &ext), UCXDT_OK);
        EXPECT_EQ(size, 0);
        EXPECT_EQ(ext, 0);
        ASSERT_EQ(ucxdt_type_commit(t), UCXDT_OK);
        uint8_t out = kPoison;
        int64_t pos = 0;
        EXPECT_EQ(ucxdt_pack(nullptr, 5, t, &out, 1, &pos), UCXDT_OK);
        EXPECT_EQ(pos, 0);
        EXPECT_EQ(out, kPoison);
        EXPECT_EQ(ucxdt_type_free(&t), UCXDT_OK);
    }
}

TEST_F(BadInput, NullNewtype) {
    const int64_t bl[1] = {1}, d[1] = {0}, sz[1] = {4}, sub[1] = {2}, st[1] = {1};
    const ucxdt_type_t types[1] = {D};
    auto I = UCXDT_ERR_INVALID_PARAM;
    EXPECT_FAIL(I, "newtype", ucxdt_type_contiguous(2, D, nullptr));
    EXPECT_FAIL(I, "newtype", ucxdt_type_vector(2, 1, 2, D, nullptr));
    EXPECT_FAIL(I, "newtype", ucxdt_type_hvector(2, 1, 16, D, nullptr));
    EXPECT_FAIL(I, "newtype", ucxdt_type_indexed(1, bl, d, D, nullptr));
    EXPECT_FAIL(I, "newtype", ucxdt_type_hindexed(1, bl, d, D, nullptr));
    EXPECT_FAIL(I, "newtype", ucxdt_type_indexed_block(1, 1, d, D, nullptr));
    EXPECT_FAIL(I, "newtype", ucxdt_type_hindexed_block(1, 1, d, D, nullptr));
    EXPECT_FAIL(I, "newtype", ucxdt_type_subarray(1, sz, sub, st, UCXDT_ORDER_C, D, nullptr));
    EXPECT_FAIL(I, "newtype", ucxdt_type_struct(1, bl, d, types, nullptr));
    EXPECT_FAIL(I, "newtype", ucxdt_type_resized(D, 0, 8, nullptr));
    EXPECT_FAIL(I, "newtype", ucxdt_type_dup(D, nullptr));
}

TEST_F(BadInput, NullQueryOutputs) {
    ucxdt_type_t v = vector48();
    int64_t x = 0;
    ucxdt_plan_class_t pc;
    auto I = UCXDT_ERR_INVALID_PARAM;
    EXPECT_FAIL(I, "size", ucxdt_type_size(v, nullptr));
    EXPECT_FAIL(I, "lb", ucxdt_type_extent(v, nullptr, &x));
    EXPECT_FAIL(I, "extent", ucxdt_type_extent(v, &x, nullptr));
    EXPECT_FAIL(I, "true_lb", ucxdt_type_true_extent(v, nullptr, &x));
    EXPECT_FAIL(I, "true_extent", ucxdt_type_true_extent(v, &x, nullptr));
    EXPECT_FAIL(I, "signature", ucxdt_type_signature(v, 1, nullptr));
    EXPECT_FAIL(I, "combiner", ucxdt_type_combiner(v, nullptr));
    EXPECT_FAIL(I, "plan_class", ucxdt_type_plan_info(v, 1, nullptr, &x));
    EXPECT_FAIL(I, "num_blocks", ucxdt_type_plan_info(v, 1, &pc, nullptr));
    EXPECT_FAIL(I, "size", ucxdt_pack_size(1, v, nullptr));
    EXPECT_FAIL(I, "type", ucxdt_type_free(nullptr));
}

// ---- int64 overflow in constructors ----------------------------------------------------------

TEST_F(BadInput, ContiguousOverflow) {
    auto O = UCXDT_ERR_OVERFLOW;
    EXPECT_CTOR_FAIL(O, "count", ucxdt_type_contiguous(kMax / 2, D, &nt));
    EXPECT_CTOR_OK(ucxdt_type_contiguous(kMax / 16, D, &nt));
    EXPECT_CTOR_OK(ucxdt_type_contiguous(kMax, B, &nt));
    // Each half fits; two of them do not.
    ucxdt_type_t half = contig(kMax / 8, D);
    EXPECT_CTOR_FAIL(O, "count", ucxdt_type_contiguous(2, half, &nt));
    // Extent 1 keeps the extent small while size = 1024 x count overflows.
    ucxdt_type_t narrow = resized(contig(1024, B), 0, 1);
    EXPECT_CTOR_FAIL(O, "count", ucxdt_type_contiguous(kMax / 512, narrow, &nt));
    // Zero extent: the extent never grows, the size does.
    EXPECT_CTOR_FAIL(O, "count", ucxdt_type_contiguous(kMax / 4, resized(D, 0, 0), &nt));
    // Negative extent: displacements run towards INT64_MIN.
    EXPECT_CTOR_FAIL(O, "count", ucxdt_type_contiguous(kMax / 4, resized(D, 0, -8), &nt));
}

TEST_F(BadInput, VectorOverflow) {
    auto O = UCXDT_ERR_OVERFLOW;
    EXPECT_CTOR_FAIL(O, "blocklength", ucxdt_type_vector(1, kMax / 4, 1, D, &nt));
    EXPECT_CTOR_FAIL(O, "stride", ucxdt_type_vector(2, 1, kMax / 4, D, &nt));
    // Displacement 2 x (INT64_MIN / 16) x 8 == INT64_MIN fits; the extent 8 - INT64_MIN does not.
    EXPECT_CTOR_FAIL(O, "stride|count|extent", ucxdt_type_vector(3, 1, kMin / 16, D, &nt));
    EXPECT_CTOR_FAIL(O, "stride", ucxdt_type_hvector(2, 1, kMax, D, &nt));
    EXPECT_CTOR_FAIL(O, "stride|count|extent", ucxdt_type_hvector(2, 1, kMin, B, &nt));
    EXPECT_CTOR_FAIL(O, "count|stride", ucxdt_type_hvector(kMax / 2, 1, 4, D, &nt));
    EXPECT_CTOR_FAIL(O, "blocklength", ucxdt_type_hvector(2, kMax / 4, 0, D, &nt));
    // Largest displacement + 1 byte == INT64_MAX - 7: fits.
    EXPECT_CTOR_OK(ucxdt_type_hvector(2, 1, kMax - 8, B, &nt));
}

TEST_F(BadInput, IndexedOverflow) {
    auto O = UCXDT_ERR_OVERFLOW;
    const int64_t one[2] = {1, 1}, zero[2] = {0, 0};
    const int64_t big_bl[2] = {1, kMax / 8 + 1}, half_bl[2] = {kMax / 8 - 1, kMax / 8 - 1};
    const int64_t far[1] = {kMax / 8 + 1}, near_end[1] = {kMax - 4}, at_end[1] = {kMax - 8};
    const int64_t wide[2] = {kMin, 0}, lowest[1] = {kMin};
    EXPECT_CTOR_FAIL(O, "displacements", ucxdt_type_indexed(1, one, far, D, &nt));
    EXPECT_CTOR_FAIL(O, "blocklengths", ucxdt_type_indexed(2, big_bl, zero, D, &nt));
    // Each block fits at displacement 0; their sum is the size, which does not.
    EXPECT_CTOR_FAIL(O, "blocklengths|size", ucxdt_type_indexed(2, half_bl, zero, D, &nt));
    EXPECT_CTOR_FAIL(O, "displacements", ucxdt_type_hindexed(1, one, near_end, D, &nt));
    EXPECT_CTOR_FAIL(O, "displacements|extent", ucxdt_type_hindexed(2, one, wide, B, &nt));
    EXPECT_CTOR_OK(ucxdt_type_hindexed(1, one, at_end, D, &nt));
    EXPECT_CTOR_OK(ucxdt_type_hindexed(1, one, lowest, B, &nt));
    EXPECT_CTOR_FAIL(O, "displacements", ucxdt_type_indexed_block(1, 1, far, D, &nt));
    EXPECT_CTOR_FAIL(O, "blocklength", ucxdt_type_indexed_block(1, kMax / 4, zero, D, &nt));
    EXPECT_CTOR_FAIL(O, "displacements", ucxdt_type_hindexed_block(1, 1, near_end, D, &nt));
    EXPECT_CTOR_FAIL(O, "blocklength|count|size",
                     ucxdt_type_hindexed_block(2, kMax / 8, zero, D, &nt));
    EXPECT_CTOR_OK(ucxdt_type_hindexed_block(1, 1, at_end, D, &nt));
}

TEST_F(BadInput, StructOverflow) {
    auto O = UCXDT_ERR_OVERFLOW;
    const int64_t one[2] = {1, 1}, big[1] = {kMax / 4}, zero[1] = {0};
    const int64_t near_end[1] = {kMax - 4}, wide[2] = {kMin, 8};
    const ucxdt_type_t dd[2] = {D, D}, bb[2] = {B, B};
    EXPECT_CTOR_FAIL(O, "displacements", ucxdt_type_struct(1, one, near_end, dd, &nt));
    EXPECT_CTOR_FAIL(O, "blocklengths", ucxdt_type_struct(1, big, zero, dd, &nt));
    EXPECT_CTOR_FAIL(O, "displacements|extent", ucxdt_type_struct(2, one, wide, bb, &nt));
    // ub == INT64_MAX fits, but rounding the extent up to the double's alignment does not.
    const int64_t to_max[2] = {0, kMax - 1};
    const ucxdt_type_t db[2] = {D, B};
    EXPECT_CTOR_FAIL(O, "displacements|extent|alignment",
                     ucxdt_type_struct(2, one, to_max, db, &nt));
}

TEST_F(BadInput, ResizedOverflow) {
    auto O = UCXDT_ERR_OVERFLOW;
    EXPECT_CTOR_FAIL(O, "lb|extent", ucxdt_type_resized(D, kMax - 4, 8, &nt));
    EXPECT_CTOR_FAIL(O, "lb|extent", ucxdt_type_resized(D, kMin + 4, -8, &nt));
    EXPECT_CTOR_OK(ucxdt_type_resized(D, kMax - 8, 8, &nt));
    EXPECT_CTOR_OK(ucxdt_type_resized(D, kMin, kMax, &nt));
}

TEST_F(BadInput, SubarrayOverflow) {
    auto O = UCXDT_ERR_OVERFLOW;
    const int64_t two32[2] = {int64_t{1} << 32, int64_t{1} << 32}, ones[3] = {1, 1, 1};
    const int64_t zeros[3] = {0, 0, 0};
    const int64_t three[3] = {int64_t{1} << 31, int64_t{1} << 31, 4};
    const int64_t two30[2] = {int64_t{1} << 30, int64_t{1} << 30};
    const int64_t fits[2] = {int64_t{1} << 30, int64_t{1} << 29};
    const int64_t four[1] = {4};
    auto C = UCXDT_ORDER_C;
    // prod(sizes) itself overflows.
    EXPECT_CTOR_FAIL(O, "sizes", ucxdt_type_subarray(2, two32, ones, zeros, C, B, &nt));
    EXPECT_CTOR_FAIL(O, "sizes", ucxdt_type_subarray(3, three, ones, zeros, C, B, &nt));
    // prod(sizes) fits; times the 8-byte extent it does not.
    EXPECT_CTOR_FAIL(O, "sizes", ucxdt_type_subarray(2, two30, ones, zeros, C, D, &nt));
    EXPECT_CTOR_OK(ucxdt_type_subarray(2, fits, ones, zeros, C, D, &nt));
    EXPECT_CTOR_FAIL(O, "sizes|extent|oldtype",
                     ucxdt_type_subarray(1, four, ones, zeros, C, contig(kMax / 16, D), &nt));
}

// Overflow is of what a type reports or touches (size, lb, ub, extent, true bounds), never of
// a product or sum on the way to it: both MPIs accept these, and ucxdt must too (issue 18).
// Each accepted case stands beside one that does overflow and is still refused.
TEST_F(BadInput, OverflowOnlyOfTheTypeMap) {
    auto O = UCXDT_ERR_OVERFLOW;
    constexpr int64_t k40 = int64_t{1} << 40, k61 = int64_t{1} << 61, k62 = int64_t{1} << 62;
    auto bounds = [](ucxdt_type_t t) {
        std::vector<int64_t> b(5);
        EXPECT_EQ(ucxdt_type_size(t, &b[0]), UCXDT_OK);
        EXPECT_EQ(ucxdt_type_extent(t, &b[1], &b[2]), UCXDT_OK);
        EXPECT_EQ(ucxdt_type_true_extent(t, &b[3], &b[4]), UCXDT_OK);
        return b;  // size, lb, extent, true lb, true extent
    };
    ucxdt_type_t wide = resized(D, 0, k40);  // extent 2^40: stride or index x extent overflow
    ucxdt_type_t t = UCXDT_TYPE_NULL;

    // A stride that places no second block is never multiplied out.
    ASSERT_EQ(ucxdt_type_vector(1, 1, INT32_MAX, wide, &t), UCXDT_OK) << ucxdt_last_error();
    EXPECT_EQ(bounds(own(UCXDT_OK, t)), (std::vector<int64_t>{8, 0, k40, 0, 8}));
    EXPECT_CTOR_OK(ucxdt_type_vector(3, 0, INT32_MAX, wide, &nt));
    EXPECT_CTOR_FAIL(O, "stride", ucxdt_type_vector(2, 1, INT32_MAX, wide, &nt));
    // No block at all: its length x extent is no part of the type map, nor of its layout (a
    // block of 256 contiguous copies of 2^59 bytes would be one run of 2^67).
    ASSERT_EQ(ucxdt_type_vector(0, INT32_MAX, 1, wide, &t), UCXDT_OK) << ucxdt_last_error();
    EXPECT_EQ(bounds(own(UCXDT_OK, t)), (std::vector<int64_t>{0, 0, 0, 0, 0}));
    EXPECT_CTOR_FAIL(O, "blocklength", ucxdt_type_vector(1, INT32_MAX, 1, wide, &nt));
    ucxdt_type_t run59 = contig(int64_t{1} << 59, B);
    ASSERT_EQ(ucxdt_type_vector(0, 256, 1, run59, &t), UCXDT_OK) << ucxdt_last_error();
    ucxdt_type_t no_blocks = commit(own(UCXDT_OK, t));
    int64_t none_pos = 0;
    uint8_t none_out = kPoison;
    EXPECT_EQ(ucxdt_pack(nullptr, 1, no_blocks, &none_out, 1, &none_pos), UCXDT_OK);
    EXPECT_EQ(none_pos, 0);
    EXPECT_CTOR_FAIL(O, "blocklength|size", ucxdt_type_vector(1, 256, 1, run59, &nt));

    // A block of length 0 at a displacement x extent beyond int64.
    const int64_t bl10[2] = {1, 0}, bl11[2] = {1, 1}, far[2] = {0, INT32_MAX};
    ASSERT_EQ(ucxdt_type_indexed(2, bl10, far, wide, &t), UCXDT_OK) << ucxdt_last_error();
    EXPECT_EQ(bounds(own(UCXDT_OK, t)), (std::vector<int64_t>{8, 0, k40, 0, 8}));
    EXPECT_CTOR_FAIL(O, "displacements", ucxdt_type_indexed(2, bl11, far, wide, &nt));

    // A block whose origin, 4 x 2^61 = 2^63, lies beyond int64 while its byte, 2^62 below the
    // origin of its type, and its bounds do not; one extent further, its ub is 2^63.
    const int64_t one[1] = {1}, minus62[1] = {-k62}, four[1] = {4}, five[1] = {5};
    ucxdt_type_t low = UCXDT_TYPE_NULL, shifted = UCXDT_TYPE_NULL;
    ASSERT_EQ(ucxdt_type_hindexed(1, one, minus62, B, &low), UCXDT_OK);
    own(UCXDT_OK, low);
    ASSERT_EQ(ucxdt_type_resized(low, -k62, k61, &shifted), UCXDT_OK);
    own(UCXDT_OK, shifted);
    ASSERT_EQ(ucxdt_type_indexed(1, one, four, shifted, &t), UCXDT_OK) << ucxdt_last_error();
    ucxdt_type_t at62 = commit(own(UCXDT_OK, t));
    EXPECT_EQ(bounds(at62), (std::vector<int64_t>{1, k62, k61, k62, 1}));
    EXPECT_CTOR_OK(ucxdt_type_indexed_block(1, 1, four, shifted, &nt));
    EXPECT_CTOR_FAIL(O, "displacements", ucxdt_type_indexed(1, one, five, shifted, &nt));
    // ... and packs the byte 2^62 past the buffer pointer.
    std::vector<uint8_t> mem{42}, out(4, kPoison);
    const void *origin = reinterpret_cast<const void *>(reinterpret_cast<uintptr_t>(mem.data()) -
                                                        static_cast<uintptr_t>(k62));
    int64_t pos = 0;
    ASSERT_EQ(ucxdt_pack(origin, 1, at62, out.data(), 2, &pos), UCXDT_OK) << ucxdt_last_error();
    EXPECT_EQ(pos, 1);
    EXPECT_EQ(out[0], 42);
    EXPECT_EQ(out[1], kPoison);

    // Explicit bounds take precedence over an entry's bounds without them, which then need
    // not fit: struct{double, char} has ub 16 past its 9 bytes of data.
    const int64_t dc_disp[2] = {0, 8}, pair_disp[2] = {kMax - 9, 0};
    const ucxdt_type_t dc_types[2] = {D, P(UCXDT_CHAR)};
    ucxdt_type_t dc = UCXDT_TYPE_NULL;
    ASSERT_EQ(ucxdt_type_struct(2, bl11, dc_disp, dc_types, &dc), UCXDT_OK);
    own(UCXDT_OK, dc);
    const ucxdt_type_t with_markers[2] = {dc, resized(B, 0, 1)};
    ASSERT_EQ(ucxdt_type_struct(2, bl11, pair_disp, with_markers, &t), UCXDT_OK)
        << ucxdt_last_error();
    EXPECT_EQ(bounds(own(UCXDT_OK, t)), (std::vector<int64_t>{10, 0, 1, 0, kMax}));
    EXPECT_CTOR_FAIL(O, "bounds|extent", ucxdt_type_struct(1, one, pair_disp, &dc, &nt));

    // Elements of a type without data are never placed: any count of them packs nothing.
    ucxdt_type_t none = commit(resized(contig(0, B), 0, kMax));
    int64_t size = -1, nb = -1;
    ucxdt_plan_class_t pc;
    pos = 0;
    EXPECT_EQ(ucxdt_pack(origin, 3, none, out.data(), 2, &pos), UCXDT_OK) << ucxdt_last_error();
    EXPECT_EQ(pos, 0);
    EXPECT_EQ(ucxdt_pack_size(3, none, &size), UCXDT_OK);
    EXPECT_EQ(size, 0);
    EXPECT_EQ(ucxdt_type_plan_info(none, 3, &pc, &nb), UCXDT_OK) << ucxdt_last_error();
    EXPECT_EQ(nb, 0);
    // Three elements of a byte that far apart do not fit: refused, nothing written.
    ucxdt_type_t apart = commit(resized(B, 0, kMax / 2 + 1));
    pos = 1;
    EXPECT_FAIL(O, "incount", ucxdt_pack(mem.data(), 3, apart, out.data(), 4, &pos));
    EXPECT_EQ(pos, 1);
    EXPECT_EQ(out[1], kPoison);
    EXPECT_EQ(ucxdt_type_plan_info(apart, 2, &pc, &nb), UCXDT_OK) << ucxdt_last_error();
    EXPECT_FAIL(O, "count", ucxdt_type_plan_info(apart, 3, &pc, &nb));
}

// ---- subarray and primitive arguments ---------------------------------------------------------

TEST_F(BadInput, SubarrayArguments) {
    auto I = UCXDT_ERR_INVALID_PARAM;
    auto C = UCXDT_ORDER_C;
    std::vector<int64_t> sz(40, 2), sub(40, 1), st(40, 0);
    for (int nd : {0, 33, -1, INT32_MIN})
        EXPECT_CTOR_FAIL(I, "ndims",
                         ucxdt_type_subarray(nd, sz.data(), sub.data(), st.data(), C, D, &nt));
    EXPECT_CTOR_OK(ucxdt_type_subarray(32, sz.data(), sub.data(), st.data(), C, B, &nt));
    EXPECT_CTOR_OK(ucxdt_type_subarray(1, sz.data(), sub.data(), st.data(), C, B, &nt));

    auto sa = [&](std::vector<int64_t> s, std::vector<int64_t> u, std::vector<int64_t> t,
                  ucxdt_order_t o, ucxdt_type_t *out) {
        return ucxdt_type_subarray(static_cast<int>(s.size()), s.data(), u.data(), t.data(), o, D,
                                   out);
    };
    EXPECT_CTOR_FAIL(I, "sizes", sa({4, 0}, {1, 0}, {0, 0}, C, &nt));
    EXPECT_CTOR_FAIL(I, "sizes", sa({4, -3}, {1, 0}, {0, 0}, C, &nt));
    EXPECT_CTOR_FAIL(I, "subsizes", sa({4, 5}, {1, 6}, {0, 0}, C, &nt));
    EXPECT_CTOR_FAIL(I, "subsizes", sa({4, 5}, {-1, 2}, {0, 0}, C, &nt));
    EXPECT_CTOR_FAIL(I, "starts", sa({4, 5}, {1, 2}, {-1, 0}, C, &nt));
    EXPECT_CTOR_FAIL(I, "starts", sa({4, 5}, {1, 2}, {0, 4}, C, &nt));
    EXPECT_CTOR_FAIL(I, "starts", sa({4, 5}, {1, 2}, {kMax, 0}, C, &nt));
    EXPECT_CTOR_OK(sa({4, 5}, {1, 2}, {3, 3}, C, &nt));
    EXPECT_CTOR_OK(sa({4, 5}, {0, 2}, {4, 0}, C, &nt));  // empty: start may equal the size
    for (int o : {2, -1, 1000})
        EXPECT_CTOR_FAIL(I, "order", sa({4, 5}, {1, 2}, {0, 0}, static_cast<ucxdt_order_t>(o), &nt));
}

TEST_F(BadInput, InvalidPrimitive) {
    for (int p : {-1, static_cast<int>(UCXDT_PRIMITIVE_LAST), 1000, INT32_MIN})
        EXPECT_EQ(P(static_cast<ucxdt_primitive_t>(p)), UCXDT_TYPE_NULL) << "primitive " << p;
    std::set<ucxdt_type_t> seen;
    for (int p = 0; p < UCXDT_PRIMITIVE_LAST; ++p) {
        ucxdt_type_t t = P(static_cast<ucxdt_primitive_t>(p));
        EXPECT_NE(t, UCXDT_TYPE_NULL);
        seen.insert(t);
    }
    EXPECT_EQ(seen.size(), static_cast<size_t>(UCXDT_PRIMITIVE_LAST));
}

// ---- commit state and handle lifetime --------------------------------------------------------

TEST_F(BadInput, UncommittedRejectedButQueryable) {
    ucxdt_type_t v = vec(3, 2, 4, D);  // not committed
    std::vector<uint8_t> mem(256, kPoison), out(128, kPoison);
    int64_t pos = 0;
    auto N = UCXDT_ERR_NOT_COMMITTED;
    EXPECT_FAIL(N, "type", ucxdt_pack(mem.data(), 1, v, out.data(), 128, &pos));
    EXPECT_FAIL(N, "type", ucxdt_unpack(out.data(), 128, &pos, mem.data(), 1, v));
    EXPECT_FAIL(N, "type", ucxdt_pack_range(mem.data(), 1, v, 0, out.data(), 8));
    EXPECT_FAIL(N, "type", ucxdt_unpack_range(out.data(), 0, 8, mem.data(), 1, v));
    ucxdt_plan_class_t pc;
    int64_t nb = -1;
    EXPECT_FAIL(N, "type", ucxdt_type_plan_info(v, 1, &pc, &nb));
    EXPECT_EQ(nb, -1);
    EXPECT_EQ(pos, 0);
    EXPECT_TRUE(all_poison(mem));
    EXPECT_TRUE(all_poison(out));

    int64_t size = 0, lb = 1, ext = 0, tlb = 1, text = 0;
    ucxdt_signature_t sig{};
    ucxdt_combiner_t comb;
    EXPECT_EQ(ucxdt_type_size(v, &size), UCXDT_OK);
    EXPECT_EQ(size, 48);
    EXPECT_EQ(ucxdt_type_extent(v, &lb, &ext), UCXDT_OK);
    EXPECT_EQ(ext, 80);
    EXPECT_EQ(ucxdt_type_true_extent(v, &tlb, &text), UCXDT_OK);
    EXPECT_EQ(text, 80);
    EXPECT_EQ(ucxdt_type_signature(v, 2, &sig), UCXDT_OK);
    EXPECT_EQ(sig.length, 12);
    EXPECT_EQ(ucxdt_type_combiner(v, &comb), UCXDT_OK);
    EXPECT_EQ(comb, UCXDT_COMBINER_VECTOR);

    // A type built from a committed type starts uncommitted.
    ucxdt_type_t c = contig(2, commit(v));
    EXPECT_FAIL(N, "type", ucxdt_pack(mem.data(), 1, c, out.data(), 128, &pos));
    EXPECT_EQ(ucxdt_pack(mem.data(), 1, v, out.data(), 128, &pos), UCXDT_OK);
    EXPECT_EQ(pos, 48);
}

TEST_F(BadInput, FreedHandles) {
    ucxdt_type_t t = UCXDT_TYPE_NULL;
    ASSERT_EQ(ucxdt_type_vector(2, 1, 2, D, &t), UCXDT_OK);
    ASSERT_EQ(ucxdt_type_commit(t), UCXDT_OK);
    const ucxdt_type_t stale = t;
    ASSERT_EQ(ucxdt_type_free(&t), UCXDT_OK);
    EXPECT_EQ(t, UCXDT_TYPE_NULL);

    auto I = UCXDT_ERR_INVALID_PARAM;
    auto check_rejected = [&](ucxdt_type_t h) {
        int64_t x = 0, y = 0;
        ucxdt_signature_t sig;
        ucxdt_combiner_t comb;
        ucxdt_plan_class_t pc;
        const int64_t bl[1] = {1}, d[1] = {0};
        const ucxdt_type_t types[2] = {D, h};
        const int64_t bl2[2] = {1, 1}, d2[2] = {0, 8};
        std::vector<uint8_t> mem(64, kPoison), out(64, kPoison);
        int64_t pos = 0;
        EXPECT_FAIL(I, "type", ucxdt_type_size(h, &x));
        EXPECT_FAIL(I, "type", ucxdt_type_extent(h, &x, &y));
        EXPECT_FAIL(I, "type", ucxdt_type_true_extent(h, &x, &y));
        EXPECT_FAIL(I, "type", ucxdt_type_signature(h, 1, &sig));
        EXPECT_FAIL(I, "type", ucxdt_type_combiner(h, &comb));
        EXPECT_FAIL(I, "type", ucxdt_type_plan_info(h, 1, &pc, &x));
        EXPECT_FAIL(I, "type", ucxdt_type_commit(h));
        EXPECT_FAIL(I, "type", ucxdt_pack_size(1, h, &x));
        EXPECT_CTOR_FAIL(I, "oldtype", ucxdt_type_contiguous(2, h, &nt));
        EXPECT_CTOR_FAIL(I, "oldtype", ucxdt_type_vector(2, 1, 2, h, &nt));
        EXPECT_CTOR_FAIL(I, "oldtype", ucxdt_type_indexed(1, bl, d, h, &nt));
        EXPECT_CTOR_FAIL(I, "oldtype", ucxdt_type_resized(h, 0, 8, &nt));
        EXPECT_CTOR_FAIL(I, "oldtype", ucxdt_type_dup(h, &nt));
        EXPECT_CTOR_FAIL(I, "types", ucxdt_type_struct(2, bl2, d2, types, &nt));
        EXPECT_FAIL(I, "type", ucxdt_pack(mem.data(), 1, h, out.data(), 64, &pos));
        EXPECT_FAIL(I, "type", ucxdt_unpack(out.data(), 64, &pos, mem.data(), 1, h));
        EXPECT_FAIL(I, "type", ucxdt_pack_range(mem.data(), 1, h, 0, out.data(), 8));
        EXPECT_FAIL(I, "type", ucxdt_unpack_range(out.data(), 0, 8, mem.data(), 1, h));
        EXPECT_EQ(pos, 0);
        EXPECT_TRUE(all_poison(mem));
        EXPECT_TRUE(all_poison(out));
        ucxdt_type_t copy = h;
        EXPECT_FAIL(I, "type", ucxdt_type_free(&copy));
        EXPECT_EQ(copy, h) << "a failing free must not touch the handle";
    };
    check_rejected(stale);
    check_rejected(UCXDT_TYPE_NULL);  // also covers the double free through the nulled handle

    // Detection must survive new types being created after the free.
    std::vector<ucxdt_type_t> fresh(64);
    for (ucxdt_type_t &f : fresh) ASSERT_EQ(ucxdt_type_vector(2, 1, 2, D, &f), UCXDT_OK);
    int64_t size = 0;
    for (ucxdt_type_t f : fresh)
        if (f == stale) ADD_FAILURE() << "a new type reuses the freed handle value";
    EXPECT_FAIL(I, "type", ucxdt_type_size(stale, &size));
    for (ucxdt_type_t &f : fresh) EXPECT_EQ(ucxdt_type_free(&f), UCXDT_OK);
}

TEST_F(BadInput, FreePrimitive) {
    for (int p = 0; p < UCXDT_PRIMITIVE_LAST; ++p) {
        ucxdt_type_t t = P(static_cast<ucxdt_primitive_t>(p));
        EXPECT_FAIL(UCXDT_ERR_INVALID_PARAM, "type", ucxdt_type_free(&t));
        EXPECT_EQ(t, P(static_cast<ucxdt_primitive_t>(p)));
    }
    double x = 3.25, y = 0;
    int64_t pos = 0;
    ASSERT_EQ(ucxdt_pack(&x, 1, D, &y, 8, &pos), UCXDT_OK) << "primitive unusable after free";
    EXPECT_EQ(y, 3.25);
}

TEST_F(BadInput, TypesBuiltFromFreedTypeStayValid) {
    ucxdt_type_t v = UCXDT_TYPE_NULL;  // doubles 0 and 3 of 4: extent 32
    ASSERT_EQ(ucxdt_type_vector(2, 1, 3, D, &v), UCXDT_OK);
    ucxdt_type_t c = contig(2, v);
    ucxdt_type_t d = UCXDT_TYPE_NULL;
    ASSERT_EQ(ucxdt_type_dup(v, &d), UCXDT_OK);
    own(UCXDT_OK, d);
    ucxdt_type_t r = resized(v, 0, 40);
    ASSERT_EQ(ucxdt_type_free(&v), UCXDT_OK);
    commit(c), commit(d), commit(r);

    double a[10];
    for (int i = 0; i < 10; ++i) a[i] = i;
    double out[4] = {};
    int64_t pos = 0;
    ASSERT_EQ(ucxdt_pack(a, 1, c, out, sizeof out, &pos), UCXDT_OK) << ucxdt_last_error();
    EXPECT_EQ(out[0], 0.0);
    EXPECT_EQ(out[1], 3.0);
    EXPECT_EQ(out[2], 4.0);
    EXPECT_EQ(out[3], 7.0);
    pos = 0;
    ASSERT_EQ(ucxdt_pack(a, 2, r, out, sizeof out, &pos), UCXDT_OK) << ucxdt_last_error();
    EXPECT_EQ(out[2], 5.0);
    EXPECT_EQ(out[3], 8.0);
    pos = 0;
    ASSERT_EQ(ucxdt_pack(a + 1, 1, d, out, sizeof out, &pos), UCXDT_OK) << ucxdt_last_error();
    EXPECT_EQ(pos, 16);
    EXPECT_EQ(out[0], 1.0);
    EXPECT_EQ(out[1], 4.0);
}

// Handle values that never came from ucxdt: a small integer, all-ones, and the address of
// ordinary memory that holds no type (zeroed and 0xFF-filled).
void check_garbage_rejected() {
    alignas(64) static uint64_t zeros[32] = {}, ones[32];
    std::memset(ones, 0xFF, sizeof ones);
    const ucxdt_type_t garbage[] = {
        reinterpret_cast<ucxdt_type_t>(static_cast<uintptr_t>(0x1234)),
        reinterpret_cast<ucxdt_type_t>(~uintptr_t{0}),
        reinterpret_cast<ucxdt_type_t>(zeros), reinterpret_cast<ucxdt_type_t>(ones)};
    auto I = UCXDT_ERR_INVALID_PARAM;
    for (ucxdt_type_t g : garbage) {
        int64_t x = 0, y = 0;
        double mem[4] = {}, out[4] = {};
        int64_t pos = 0;
        EXPECT_FAIL(I, "type", ucxdt_type_size(g, &x));
        EXPECT_FAIL(I, "type", ucxdt_type_extent(g, &x, &y));
        EXPECT_FAIL(I, "type", ucxdt_type_commit(g));
        EXPECT_CTOR_FAIL(I, "oldtype",
                         ucxdt_type_contiguous(2, g, &nt));
        EXPECT_FAIL(I, "type", ucxdt_pack(mem, 1, g, out, sizeof out, &pos));
        ucxdt_type_t copy = g;
        EXPECT_FAIL(I, "type", ucxdt_type_free(&copy));
        EXPECT_EQ(copy, g);
    }
}

// In a child process, so that an engine which dereferences the garbage fails this test alone.
TEST(BadInputDeathTest, GarbageHandles) {
    EXPECT_EXIT(
        {
            check_garbage_rejected();
            std::_Exit(::testing::Test::HasFailure() ? 1 : 0);
        },
        ::testing::ExitedWithCode(0), "");
}

// ---- buffers, positions, ranges --------------------------------------------------------------

TEST_F(BadInput, PackTruncatedWritesNothing) {
    ucxdt_type_t v = vector48();
    std::vector<uint8_t> mem(80), out(256, kPoison);
    for (size_t i = 0; i < mem.size(); ++i) mem[i] = static_cast<uint8_t>(i + 1);
    auto T = UCXDT_ERR_TRUNCATED;
    struct Case {
        int64_t count, pos, outsize;
    };
    for (Case c : {Case{1, 0, 47}, Case{1, 10, 57}, Case{2, 0, 95}, Case{1, 100, 50},
                   Case{1, 0, 0}}) {
        int64_t pos = c.pos;
        EXPECT_FAIL(T, "outsize", ucxdt_pack(mem.data(), c.count, v, out.data(), c.outsize, &pos))
            << " count " << c.count << " pos " << c.pos << " outsize " << c.outsize;
        EXPECT_EQ(pos, c.pos);
        EXPECT_TRUE(all_poison(out)) << "count " << c.count << " outsize " << c.outsize;
    }
    // position + size past INT64_MAX.
    int64_t pos = kMax - 4;
    EXPECT_FAIL2(T, UCXDT_ERR_OVERFLOW, "outsize|position",
                 ucxdt_pack(mem.data(), 1, v, out.data(), kMax, &pos));
    EXPECT_EQ(pos, kMax - 4);
    EXPECT_TRUE(all_poison(out));

    // Exactly enough room: written from position up to outsize, nothing around it.
    pos = 10;
    ASSERT_EQ(ucxdt_pack(mem.data(), 1, v, out.data(), 58, &pos), UCXDT_OK);
    EXPECT_EQ(pos, 58);
    for (size_t i = 0; i < out.size(); ++i)
        if (i < 10 || i >= 58) {
            ASSERT_EQ(out[i], kPoison) << "byte " << i;
        }
}

TEST_F(BadInput, PackArgumentsInvalid) {
    ucxdt_type_t v = vector48();
    std::vector<uint8_t> mem(80, 1), out(64, kPoison);
    auto I = UCXDT_ERR_INVALID_PARAM;
    int64_t pos = -1;
    EXPECT_FAIL(I, "position", ucxdt_pack(mem.data(), 1, v, out.data(), 64, &pos));
    EXPECT_EQ(pos, -1);
    pos = 0;
    EXPECT_FAIL(I, "outsize", ucxdt_pack(mem.data(), 1, v, out.data(), -1, &pos));
    EXPECT_FAIL(I, "outsize", ucxdt_pack(mem.data(), 0, v, out.data(), kMin, &pos));
    EXPECT_FAIL(I, "outbuf", ucxdt_pack(mem.data(), 1, v, nullptr, 64, &pos));
    EXPECT_FAIL(I, "position", ucxdt_pack(mem.data(), 1, v, out.data(), 64, nullptr));
    EXPECT_EQ(pos, 0);
    EXPECT_TRUE(all_poison(out));

    // incount x size overflows int64.
    ucxdt_type_t h = huge();
    int64_t sz = 0;
    EXPECT_FAIL(UCXDT_ERR_OVERFLOW, "incount", ucxdt_pack(mem.data(), 3, h, out.data(), kMax, &pos));
    EXPECT_FAIL(UCXDT_ERR_OVERFLOW, "incount", ucxdt_pack_size(3, h, &sz));
    EXPECT_EQ(pos, 0);
    EXPECT_TRUE(all_poison(out));
}

TEST_F(BadInput, UnpackTruncatedWritesNothing) {
    ucxdt_type_t v = vector48();
    std::vector<uint8_t> packed(256), mem(2 * 80, kPoison);
    for (size_t i = 0; i < packed.size(); ++i) packed[i] = static_cast<uint8_t>(i + 1);
    auto T = UCXDT_ERR_TRUNCATED;
    struct Case {
        int64_t count, pos, insize;
    };
    for (Case c : {Case{1, 0, 47}, Case{1, 10, 57}, Case{2, 0, 95}, Case{1, 100, 50}}) {
        int64_t pos = c.pos;
        EXPECT_FAIL(T, "insize", ucxdt_unpack(packed.data(), c.insize, &pos, mem.data(), c.count, v))
            << " count " << c.count << " pos " << c.pos << " insize " << c.insize;
        EXPECT_EQ(pos, c.pos);
        EXPECT_TRUE(all_poison(mem));
    }
    auto I = UCXDT_ERR_INVALID_PARAM;
    int64_t pos = -8;
    EXPECT_FAIL(I, "position", ucxdt_unpack(packed.data(), 256, &pos, mem.data(), 1, v));
    EXPECT_EQ(pos, -8);
    pos = 0;
    EXPECT_FAIL(I, "insize", ucxdt_unpack(packed.data(), -1, &pos, mem.data(), 1, v));
    EXPECT_FAIL(I, "inbuf", ucxdt_unpack(nullptr, 256, &pos, mem.data(), 1, v));
    EXPECT_FAIL(I, "position", ucxdt_unpack(packed.data(), 256, nullptr, mem.data(), 1, v));
    EXPECT_FAIL(UCXDT_ERR_OVERFLOW, "outcount",
                ucxdt_unpack(packed.data(), kMax, &pos, mem.data(), 3, huge()));
    EXPECT_EQ(pos, 0);
    EXPECT_TRUE(all_poison(mem));
}

TEST_F(BadInput, PackRangeOutsideStream) {
    ucxdt_type_t v = vector48();  // 2 elements: stream of 96 bytes
    std::vector<uint8_t> mem(160, 1), out(128, kPoison);
    auto I = UCXDT_ERR_INVALID_PARAM;
    EXPECT_FAIL(I, "offset", ucxdt_pack_range(mem.data(), 2, v, -1, out.data(), 8));
    EXPECT_FAIL(I, "offset", ucxdt_pack_range(mem.data(), 2, v, kMin, out.data(), 8));
    EXPECT_FAIL(I, "length", ucxdt_pack_range(mem.data(), 2, v, 0, out.data(), -1));
    EXPECT_FAIL(I, "offset|length", ucxdt_pack_range(mem.data(), 2, v, 97, out.data(), 0));
    EXPECT_FAIL(I, "offset|length", ucxdt_pack_range(mem.data(), 2, v, 90, out.data(), 7));
    EXPECT_FAIL(I, "offset|length", ucxdt_pack_range(mem.data(), 2, v, 0, out.data(), 97));
    EXPECT_FAIL2(I, UCXDT_ERR_OVERFLOW, "offset|length",
                 ucxdt_pack_range(mem.data(), 2, v, 1, out.data(), kMax));
    EXPECT_FAIL(I, "offset|length", ucxdt_pack_range(mem.data(), 2, v, kMax, out.data(), 0));
    EXPECT_FAIL(I, "packed", ucxdt_pack_range(mem.data(), 2, v, 0, nullptr, 8));
    EXPECT_FAIL(UCXDT_ERR_OVERFLOW, "count",
                ucxdt_pack_range(mem.data(), 3, huge(), 0, out.data(), 8));
    EXPECT_TRUE(all_poison(out));
    // The edges of [0, 96] themselves are valid.
    EXPECT_EQ(ucxdt_pack_range(mem.data(), 2, v, 96, out.data(), 0), UCXDT_OK);
    EXPECT_TRUE(all_poison(out));
    EXPECT_EQ(ucxdt_pack_range(mem.data(), 2, v, 0, out.data(), 96), UCXDT_OK);
    for (size_t i = 96; i < out.size(); ++i) ASSERT_EQ(out[i], kPoison) << "byte " << i;
}

TEST_F(BadInput, UnpackRangePastEnd) {
    ucxdt_type_t v = vector48();
    std::vector<uint8_t> packed(128, 7), mem(160, kPoison);
    auto T = UCXDT_ERR_TRUNCATED;
    auto I = UCXDT_ERR_INVALID_PARAM;
    EXPECT_FAIL(T, "offset|length", ucxdt_unpack_range(packed.data(), 90, 7, mem.data(), 2, v));
    EXPECT_FAIL(T, "offset|length", ucxdt_unpack_range(packed.data(), 0, 97, mem.data(), 2, v));
    EXPECT_FAIL(T, "offset|length", ucxdt_unpack_range(packed.data(), 97, 0, mem.data(), 2, v));
    EXPECT_FAIL2(T, UCXDT_ERR_OVERFLOW, "offset|length",
                 ucxdt_unpack_range(packed.data(), kMax, 1, mem.data(), 2, v));
    EXPECT_FAIL(I, "offset", ucxdt_unpack_range(packed.data(), -1, 8, mem.data(), 2, v));
    EXPECT_FAIL(I, "length", ucxdt_unpack_range(packed.data(), 0, -1, mem.data(), 2, v));
    EXPECT_FAIL(I, "packed", ucxdt_unpack_range(nullptr, 0, 8, mem.data(), 2, v));
    EXPECT_FAIL(UCXDT_ERR_OVERFLOW, "count",
                ucxdt_unpack_range(packed.data(), 0, 8, mem.data(), 3, huge()));
    EXPECT_TRUE(all_poison(mem));
    EXPECT_EQ(ucxdt_unpack_range(packed.data(), 96, 0, mem.data(), 2, v), UCXDT_OK);
    EXPECT_TRUE(all_poison(mem));
}

TEST_F(BadInput, QueryCountOverflow) {
    ucxdt_type_t h = huge();  // two elements are INT64_MAX - 15 bytes, three overflow
    ucxdt_signature_t sig{};
    ucxdt_plan_class_t pc;
    int64_t nb = 0;
    EXPECT_EQ(ucxdt_type_signature(h, 2, &sig), UCXDT_OK) << ucxdt_last_error();
    EXPECT_EQ(sig.length, 2 * (kMax / 16));
    EXPECT_FAIL(UCXDT_ERR_OVERFLOW, "count", ucxdt_type_signature(h, 3, &sig));
    EXPECT_FAIL(UCXDT_ERR_OVERFLOW, "count", ucxdt_type_plan_info(h, 3, &pc, &nb));
}

// ---- status strings and the error slot -------------------------------------------------------

TEST(BadInputStatus, StatusStringsDistinct) {
    const ucxdt_status_t all[] = {
        UCXDT_OK,          UCXDT_ERR_INVALID_PARAM, UCXDT_ERR_NO_MEMORY, UCXDT_ERR_OVERFLOW,
        UCXDT_ERR_NOT_COMMITTED, UCXDT_ERR_TRUNCATED, UCXDT_ERR_TYPE_MISMATCH, UCXDT_ERR_CUDA,
        UCXDT_ERR_UCX,     UCXDT_ERR_PEER_FAILURE, UCXDT_ERR_CANCELED, UCXDT_ERR_UNSUPPORTED};
    std::set<std::string> texts;
    for (ucxdt_status_t s : all) {
        const char *t = ucxdt_status_string(s);
        ASSERT_NE(t, nullptr) << s;
        EXPECT_GT(std::strlen(t), 2u) << s;
        texts.insert(t);
    }
    EXPECT_EQ(texts.size(), std::size(all));
    for (int s : {-999, 42, INT32_MIN, -12, 1}) {
        const char *t = ucxdt_status_string(static_cast<ucxdt_status_t>(s));
        ASSERT_NE(t, nullptr) << s;
        EXPECT_EQ(texts.count(t), 0u) << "unknown status " << s << " reads as a known one";
    }
}

TEST(BadInputStatus, LastErrorIsPerThread) {
    int64_t size = 0;
    ASSERT_NE(ucxdt_type_size(UCXDT_TYPE_NULL, &size), UCXDT_OK);
    std::string here = ucxdt_last_error();
    ASSERT_FALSE(here.empty());
    std::string there = "unset";
    std::thread([&] { there = ucxdt_last_error(); }).join();
    EXPECT_EQ(there, "") << "a fresh thread has no failed call";
    std::thread([] {
        ucxdt_type_t t = UCXDT_TYPE_NULL;
        ucxdt_type_contiguous(-1, ucxdt_type_primitive(UCXDT_BYTE), &t);
    }).join();
    EXPECT_EQ(std::string(ucxdt_last_error()), here) << "another thread's failure leaked here";
}

}  // namespace
