#include "edge_desc.hpp"

#include "desc_traits.hpp"
#include "support/typemap_walk.hpp"

#include <algorithm>
#include <climits>
#include <vector>

namespace ucxdt::support {

using namespace layouts;

namespace {

constexpr int64_t kMax = INT64_MAX;

class Maker {
public:
    explicit Maker(Rng &rng) : rng_(rng) {}

    int64_t uni(int64_t a, int64_t b) { return std::uniform_int_distribution<int64_t>(a, b)(rng_); }
    bool chance(double p) { return std::uniform_real_distribution<double>(0, 1)(rng_) < p; }
    int64_t sign() { return chance(0.5) ? 1 : -1; }

    // A small random type of any MPI-4.1 shape (Open MPI's deviations not avoided).
    TypeDescPtr small(int depth = 3) {
        RandomDescLimits lim;
        lim.max_depth = depth, lim.max_size = 4096, lim.max_span = 16 * 1024;
        lim.avoid_openmpi_deviations = false;
        return random_desc(rng_, lim);
    }
    TypeDescPtr prim() {
        return named(static_cast<ucxdt_primitive_t>(uni(0, UCXDT_PRIMITIVE_LAST - 1)));
    }
    TypeDescPtr small_or_prim() { return chance(0.3) ? prim() : small(2); }

    // Wraps d in a constructor that places copies of it, now and then.
    TypeDescPtr maybe_wrap(TypeDescPtr d) {
        switch (uni(0, 5)) {
        case 0: return contiguous(uni(1, 3), d);
        case 1: return vector(uni(1, 3), uni(1, 2), uni(-3, 3), d);
        case 2: return dup(d);
        default: return d;
        }
    }

    TypeDescPtr negative() {
        TypeDescPtr d = small_or_prim();
        const ref::Bounds b = ref::type_bounds(*d);
        const int64_t span = std::max<int64_t>(1, b.true_extent);
        switch (uni(0, 5)) {
        case 0: return d;  // random_desc draws negative strides and extents itself
        case 1: return hvector(uni(2, 4), uni(1, 3), chance(0.3) ? -1 : -uni(1, 2 * span + 8), d);
        case 2: return vector(uni(2, 4), uni(1, 3), -uni(1, 4), d);
        case 3: return contiguous(uni(1, 4), resized(d, b.true_lb + uni(-8, 8), -uni(0, span + 8)));
        case 4: return contiguous(uni(2, 4), resized(d, b.true_lb, -1));
        default: return hvector(2, 1, -1, named(chance(0.5) ? UCXDT_CHAR : UCXDT_INT8));
        }
    }

    TypeDescPtr overlap() {
        TypeDescPtr d = small_or_prim();
        const ref::Bounds b = ref::type_bounds(*d);
        const int64_t span = std::max<int64_t>(1, b.true_extent);
        switch (uni(0, 4)) {
        case 0: return contiguous(uni(2, 4), resized(d, b.true_lb, uni(0, span - 1)));
        case 1: return hvector(uni(2, 4), uni(1, 2), uni(-span + 1, span - 1), d);
        case 2: {
            const int64_t at = uni(-32, 32);
            return hindexed({uni(1, 2), uni(1, 2)}, {at, at + uni(-span + 1, span - 1)}, d);
        }
        case 3: return structure({1, 1}, {0, uni(0, span - 1)}, {d, chance(0.5) ? d : prim()});
        default: return resized(d, b.true_lb, uni(-span + 1, span - 1));  // count > 1 overlaps
        }
    }

    TypeDescPtr zero_blocks() {
        const bool is_struct = chance(0.6);
        const int64_t k = uni(2, 5);
        std::vector<int64_t> bl, disp;
        std::vector<TypeDescPtr> kids;
        TypeDescPtr one = small_or_prim();
        for (int64_t i = 0; i < k; ++i) {
            bl.push_back(i == 0 || chance(0.4) ? 0 : uni(1, 3));
            disp.push_back(uni(-256, 256));
            // A block of length 0 of a type with bounds adds nothing, markers included.
            if (is_struct)
                kids.push_back(chance(0.3) ? resized(small_or_prim(), uni(-16, 16), uni(-32, 64))
                                           : small_or_prim());
        }
        std::shuffle(bl.begin(), bl.end(), rng_);
        TypeDescPtr d = is_struct ? structure(bl, disp, kids) : hindexed(bl, disp, one);
        return maybe_wrap(d);
    }

    // A type of no data, of one of the shapes that have none.
    TypeDescPtr nothing() {
        TypeDescPtr c = chance(0.5) ? prim() : small(2);
        switch (uni(0, 11)) {
        case 0: return contiguous(0, c);
        case 1: return vector(0, uni(0, 3), uni(-4, 4), c);
        case 2: return vector(uni(1, 3), 0, uni(-4, 4), c);
        case 3: return hvector(uni(0, 3), 0, uni(-64, 64), c);
        case 4: return indexed({0, 0}, {uni(-9, 9), uni(-9, 9)}, c);
        case 5: return hindexed({0, 0, 0}, {uni(-64, 64), uni(-64, 64), uni(-64, 64)}, c);
        case 6: return indexed_block(0, {uni(-9, 9)}, c);
        case 7: return hindexed_block(uni(0, 2), {}, c);
        case 8: return structure({}, {}, {});
        case 9: return structure({0, 0}, {uni(-64, 64), uni(-64, 64)}, {c, prim()});
        case 10: {
            const int64_t s = uni(1, 4);
            return subarray({s, s + 1}, {0, uni(0, s + 1)}, {uni(0, s), 0},
                            chance(0.5) ? UCXDT_ORDER_C : UCXDT_ORDER_FORTRAN, c);
        }
        default: return dup(contiguous(0, c));
        }
    }

    TypeDescPtr empty() {
        TypeDescPtr e = nothing();
        switch (uni(0, 5)) {
        case 0: e = resized(e, uni(-16, 16), uni(-16, 32)); break;  // bounds without data
        case 1: e = contiguous(uni(1, 3), resized(e, uni(-16, 16), uni(-16, 32))); break;
        case 2: e = structure({uni(1, 2), 0}, {uni(-32, 32), uni(-32, 32)},
                              {resized(e, uni(-8, 8), uni(0, 16)), nothing()});
            break;
        case 3: e = contiguous(uni(0, 3), e); break;
        default: break;
        }
        return e;
    }

    // Near the int64 limits: a small type placed far away, or given far bounds, or copies of
    // it far apart. Bounds must still fit; the oracle touches memory only where its data is
    // close together.
    TypeDescPtr near_limit() {
        TypeDescPtr x = small_or_prim();
        const ref::Bounds b = ref::type_bounds(*x);
        const int64_t margin = int64_t{1} << 20;
        auto far = [&] { return int64_t{1} << uni(40, 62); };
        auto huge = [&] { return uni(kMax / 2, kMax - margin); };
        switch (uni(0, 9)) {
        case 0: return hindexed({uni(1, 2)}, {sign() * (chance(0.5) ? huge() : far())}, x);
        case 1: {  // two blocks far from the origin, close to each other
            const int64_t at = sign() * (chance(0.5) ? huge() : far());
            return hindexed({1, uni(1, 2)}, {at, at + uni(-4096, 4096)}, x);
        }
        case 2: {  // a struct of one far and one near entry: a large extent, small data
            const int64_t at = sign() * far() / 2;
            return structure({1, 1}, {at, uni(-64, 64)}, {x, prim()});
        }
        case 3:  // far bounds, small data
            return resized(x, sign() * far(), chance(0.5) ? far() : -far());
        case 4:
            return resized(x, chance(0.5) ? -kMax : kMax - margin, uni(0, margin / 2));
        case 5: {  // copies far apart
            const int64_t n = uni(2, 3);
            return hvector(n, 1, sign() * (huge() / n), x);
        }
        case 6: {  // a byte far from its type's origin; that type at indexed displacements
                   // whose origin, displacement x extent, lies beyond int64
            const int64_t k = int64_t{1} << 62, e = int64_t{1} << uni(59, 61);
            auto t = resized(hindexed({1}, {-k}, x), -k, e);
            return indexed({1}, {k / e + uni(0, 1)}, t);
        }
        case 7: {  // a stride that places no second block: vector count 1, or blocks of 0
            auto big = resized(x, 0, int64_t{1} << uni(33, 40));
            return chance(0.5) ? vector(1, 1, INT_MAX - uni(0, 9), big)
                               : indexed({1, 0}, {0, INT_MAX - uni(0, 9)}, big);
        }
        case 8: {  // no copies at all of a type whose blocks would reach far
            auto big = resized(x, 0, int64_t{1} << uni(33, 40));
            return vector(0, INT_MAX - uni(0, 9), uni(1, 9), big);
        }
        default: {  // consecutive copies of a type of a far extent
            const int64_t e = int64_t{1} << uni(40, 61);
            return contiguous(uni(1, 3), resized(x, b.true_lb, chance(0.5) ? e : -e));
        }
        }
    }

private:
    Rng &rng_;
};

}  // namespace

const char *edge_name(Edge e) {
    switch (e) {
    case Edge::NEGATIVE: return "negative strides/extents";
    case Edge::OVERLAP: return "overlapping type maps (pack only)";
    case Edge::ZERO_BLOCKS: return "zero-length blocks in struct/hindexed";
    case Edge::EMPTY: return "types without data";
    case Edge::NEAR_LIMIT: return "bounds near the MPI_Aint limits";
    default: return "?";
    }
}

bool in_category(Edge e, const TypeDesc &desc, int64_t count) {
    switch (e) {
    case Edge::NEGATIVE: return has_negative_step(desc);
    case Edge::OVERLAP: return !near_limit(desc) && overlaps(desc, count);
    case Edge::ZERO_BLOCKS: return has_zero_block(desc);
    case Edge::EMPTY: return !has_data(desc);
    case Edge::NEAR_LIMIT: return near_limit(desc);
    default: return false;
    }
}

EdgeCase edge_desc(Edge e, Rng &rng) {
    Maker m(rng);
    for (;;) {
        EdgeCase c;
        c.count = m.uni(1, 3);
        switch (e) {
        case Edge::NEGATIVE: c.desc = m.negative(); break;
        case Edge::OVERLAP: c.desc = m.overlap(); break;
        case Edge::ZERO_BLOCKS: c.desc = m.zero_blocks(); break;
        case Edge::EMPTY: c.desc = m.empty(); break;
        default: c.desc = m.near_limit(); break;
        }
        if (ref::representable(*c.desc) && in_category(e, *c.desc, c.count)) return c;
    }
}

}  // namespace ucxdt::support
