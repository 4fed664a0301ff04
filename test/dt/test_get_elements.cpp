// ucxdt_type_get_elements (MPI_Get_elements, MPI-4.1 §5.1.11): the primitives in the first
// bytes of a type's packed stream, against the reference walk of the type map
// (support/typemap_walk.hpp): at every primitive boundary the number before it, inside a
// primitive an error.
#include "support/random_desc.hpp"
#include "support/type_desc.hpp"
#include "support/typemap_walk.hpp"

#include <ucxdt/ucxdt.h>

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

namespace {

namespace L = ucxdt::layouts;
namespace T = ucxdt::support;

// A description built and committed as a ucxdt type, freed on scope exit.
struct Built {
    ucxdt_type_t h = UCXDT_TYPE_NULL;
    explicit Built(const L::TypeDesc &d) { EXPECT_EQ(L::build(d, &h, true), UCXDT_OK) << ucxdt_last_error(); }
    ~Built() { ucxdt_type_free(&h); }
};

// ucxdt_type_get_elements' answer, or -(status) when it fails.
int64_t elements(ucxdt_type_t t, int64_t bytes) {
    int64_t n = -1;
    const ucxdt_status_t st = ucxdt_type_get_elements(t, bytes, &n);
    return st == UCXDT_OK ? n : -static_cast<int64_t>(st);
}

// struct {double; int; int; char} (24 bytes of extent, 17 of data): MPI's basic elements.
TEST(GetElements, StructOfFourPrimitives) {
    const auto d = L::structure({1, 2, 1}, {0, 8, 16}, {L::named(UCXDT_DOUBLE), L::named(UCXDT_INT32), L::named(UCXDT_CHAR)});
    Built t(*d);
    const int64_t mismatch = -static_cast<int64_t>(UCXDT_ERR_TYPE_MISMATCH);
    EXPECT_EQ(elements(t.h, 0), 0);
    EXPECT_EQ(elements(t.h, 8), 1);
    EXPECT_EQ(elements(t.h, 12), 2);
    EXPECT_EQ(elements(t.h, 16), 3);
    EXPECT_EQ(elements(t.h, 17), 4);       // one whole element
    EXPECT_EQ(elements(t.h, 17 + 8), 5);   // and the next one's double
    EXPECT_EQ(elements(t.h, 3 * 17), 12);
    EXPECT_EQ(elements(t.h, 4), mismatch);       // inside the double
    EXPECT_EQ(elements(t.h, 17 + 10), mismatch);  // inside the next element's first int
    int64_t n = 0;
    EXPECT_EQ(ucxdt_type_get_elements(t.h, -1, &n), UCXDT_ERR_INVALID_PARAM);
    EXPECT_EQ(ucxdt_type_get_elements(t.h, 8, nullptr), UCXDT_ERR_INVALID_PARAM);
    ucxdt_type_t freed = UCXDT_TYPE_NULL;
    ASSERT_EQ(ucxdt_type_contiguous(2, ucxdt_type_primitive(UCXDT_INT32), &freed), UCXDT_OK);
    const ucxdt_type_t stale = freed;
    ucxdt_type_free(&freed);
    EXPECT_EQ(ucxdt_type_get_elements(stale, 4, &n), UCXDT_ERR_INVALID_PARAM);
    // A type of no data holds no message but the empty one.
    Built empty(*L::contiguous(0, L::named(UCXDT_DOUBLE)));
    EXPECT_EQ(elements(empty.h, 0), 0);
    EXPECT_EQ(elements(empty.h, 8), mismatch);
}

// Random types of every constructor, two elements, every primitive boundary up to the 400th
// and one byte inside each primitive longer than a byte.
TEST(GetElements, RandomTypesAgainstTheTypeMapWalk) {
    T::Rng rng(0x6e1e);
    int checked = 0;
    for (int i = 0; i < 400; ++i) {
        const L::TypeDescPtr d = T::random_desc(rng);
        if (!ucxdt::ref::representable(*d)) continue;
        Built t(*d);
        int64_t at = 0, k = 0;
        std::string bad;
        ucxdt::ref::walk_primitives(*d, 2, [&](int64_t, ucxdt_primitive_t p) {
            if (k >= 400 || !bad.empty()) return;
            if (elements(t.h, at) != k) bad = "at byte " + std::to_string(at) + ": " + std::to_string(elements(t.h, at)) + " elements, expected " + std::to_string(k);
            const int64_t size = L::primitive_size(p);
            if (size > 1 && elements(t.h, at + size / 2) != -static_cast<int64_t>(UCXDT_ERR_TYPE_MISMATCH))
                bad = "byte " + std::to_string(at + size / 2) + ", inside a primitive, was accepted";
            at += size, ++k;
        });
        if (k < 400 && bad.empty() && elements(t.h, at) != k)
            bad = "the whole two elements: " + std::to_string(elements(t.h, at)) + ", expected " + std::to_string(k);
        EXPECT_EQ(bad, "") << "type " << i << ": " << L::to_string(*d).substr(0, 200);
        ++checked;
    }
    EXPECT_GT(checked, 300) << "too few representable random types";
}

}  // namespace
