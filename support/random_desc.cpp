#include "random_desc.hpp"

#include "desc_traits.hpp"
#include "support/typemap_walk.hpp"

#include <algorithm>
#include <climits>
#include <cstdlib>
#include <numeric>
#include <vector>

namespace ucxdt::support {

using namespace layouts;

namespace {

class Dice {
public:
    explicit Dice(Rng &rng) : rng_(rng) {}
    // Uniform in [a, b].
    int64_t uni(int64_t a, int64_t b) {
        return std::uniform_int_distribution<int64_t>(a, b)(rng_);
    }
    bool chance(double p) { return std::uniform_real_distribution<double>(0, 1)(rng_) < p; }
    int64_t sign() { return chance(0.5) ? 1 : -1; }
    template <class T> void shuffle(std::vector<T> &v) { std::shuffle(v.begin(), v.end(), rng_); }
    std::vector<size_t> permutation(size_t n) {
        std::vector<size_t> p(n);
        std::iota(p.begin(), p.end(), size_t{0});
        shuffle(p);
        return p;
    }
    // A random divisor of n >= 1.
    int64_t divisor(int64_t n) {
        std::vector<int64_t> d;
        for (int64_t i = 1; i * i <= n; ++i)
            if (n % i == 0) d.push_back(i), d.push_back(n / i);
        return d[static_cast<size_t>(uni(0, static_cast<int64_t>(d.size()) - 1))];
    }
    // n split into k >= 1 parts >= 0 (zeros allowed, they are blocks of nothing).
    std::vector<int64_t> partition(int64_t n, int64_t k) {
        std::vector<int64_t> cuts{0, n};
        for (int64_t i = 1; i < k; ++i) cuts.push_back(uni(0, n));
        std::sort(cuts.begin(), cuts.end());
        std::vector<int64_t> parts;
        for (size_t i = 1; i < cuts.size(); ++i) parts.push_back(cuts[i] - cuts[i - 1]);
        return parts;
    }
    // Reorders displacements: ascending, descending, or as drawn.
    void order(std::vector<int64_t> &v) {
        const int64_t o = uni(0, 2);
        if (o == 0) std::sort(v.begin(), v.end());
        if (o == 1) std::sort(v.rbegin(), v.rend());
    }
    Rng &rng() { return rng_; }

private:
    Rng &rng_;
};

bool has_data(const ref::Bounds &b) { return b.size > 0; }

// v rounded down / up to a multiple of a >= 1.
int64_t align_down(int64_t v, int64_t a) { return v - ((v % a) + a) % a; }
int64_t align_up(int64_t v, int64_t a) { return v + ((-v % a) + a) % a; }

// Open MPI 4.1 applies MPI-4.1 5.1.6's epsilon after each block it adds (opal_datatype_add),
// relative to the lb so far, where MPI applies it once to the whole type map: when a later
// block lowers the lb by a non-multiple of the alignment, the ub padded so far is padded again
// (hindexed_block(1,[2,1,0],int32) gets extent 12, not 8; struct{double@8, char@3, char@1}
// gets 24, not 16, although every primitive is aligned). Only constructors of several blocks
// at byte displacements (hindexed, hindexed_block, struct) are exposed: vector, hvector and
// contiguous add one run, and the blocks of indexed and indexed_block lie whole extents apart,
// a multiple of the alignment. Markers stop the epsilon. So a block of a child without markers
// starts (its lb) at a multiple of the constructor's alignment `a`: `disp` moves down to that.
int64_t align_block(int64_t disp, const TypeDesc &child, int64_t block, int64_t a) {
    if (marked(child)) return disp;
    const ref::Bounds b = ref::type_bounds(child);
    const int64_t lb = b.lb + std::min<int64_t>(0, (block - 1) * b.extent);
    return align_down(disp + lb, a) - lb;
}

// Constructors, numbered as the generators draw them.
enum Kind : int {
    CONTIG, VECTOR, HVECTOR, INDEXED, HINDEXED, INDEXED_BLOCK, HINDEXED_BLOCK, SUBARRAY,
    STRUCT, RESIZED, DUP
};

// Open MPI 4.1 gets the bounds of some constructors of a child of no data wrong (see
// random_desc in the header); such a constructor is swapped for one that places the same
// copies and that it gets right.
Kind sidestep(Kind k, const TypeDesc &child) {
    if (has_data(ref::type_bounds(child))) return k;
    if (marked(child)) {  // it returns an empty type, dropping the child's bounds
        if (k == CONTIG) return VECTOR;
        if (k == INDEXED) return INDEXED_BLOCK;
        if (k == HINDEXED) return HINDEXED_BLOCK;
    } else {  // its copies at nonzero byte offsets move the bounds of nothing
        if (k == HVECTOR) return VECTOR;
        if (k == HINDEXED_BLOCK) return INDEXED_BLOCK;
    }
    return k;
}

// Open MPI 4.1 takes a step of -1 byte between the copies of a (h)vector for +1 extent (it
// packs vector(2,1,-1,int8) as bytes 0, 1): such strides, and extents of -1 that would feed
// them, are never generated. -2 keeps copies as far apart.
int64_t avoid_minus_one(int64_t v) { return v == -1 ? -2 : v; }


// ---- random_desc ------------------------------------------------------------------------------

class Generator {
public:
    Generator(Rng &rng, const RandomDescLimits &lim) : dice_(rng), lim_(lim) {}

    // The helpers above, or nothing where the limits do not ask to avoid Open MPI's deviations.
    Kind sidestep_(Kind k, const TypeDesc &child) const {
        return lim_.avoid_openmpi_deviations ? sidestep(k, child) : k;
    }
    int64_t align_block_(int64_t disp, const TypeDesc &child, int64_t block, int64_t a) const {
        return lim_.avoid_openmpi_deviations ? align_block(disp, child, block, a) : disp;
    }
    int64_t minus_one_(int64_t v) const {
        return lim_.avoid_openmpi_deviations ? avoid_minus_one(v) : v;
    }

    TypeDescPtr top() {
        // Log-uniform size budgets: most types are small, some reach the limit.
        int64_t budget = int64_t{1} << dice_.uni(3, 16);
        budget = std::min(budget, lim_.max_size);
        return gen(lim_.max_depth, std::max<int64_t>(budget, 1), true);
    }

private:
    TypeDescPtr leaf(int64_t budget) {
        for (;;) {
            auto p = static_cast<ucxdt_primitive_t>(dice_.uni(0, UCXDT_PRIMITIVE_LAST - 1));
            if (primitive_size(p) <= budget) return named(p);
        }
    }

    bool fits(const TypeDescPtr &d, int64_t budget) const {
        const ref::Bounds b = ref::type_bounds(*d);
        const int64_t m = lim_.max_span;
        return b.size <= budget && (b.extent != -1 || !lim_.avoid_openmpi_deviations) &&
               std::abs(b.lb) <= m &&
               std::abs(b.extent) <= m &&
               std::abs(b.true_lb) <= m && b.true_extent <= m;
    }

    TypeDescPtr gen(int depth, int64_t budget, bool top = false) {
        if (depth == 0 || dice_.chance(top ? 0.03 : 0.3)) return leaf(budget);
        for (int attempt = 0; attempt < 8; ++attempt) {
            TypeDescPtr d = node(depth, budget);
            if (d && fits(d, budget)) return d;
        }
        return leaf(budget);
    }

    // Counts in [0, hi], zero now and then.
    int64_t count(int64_t hi) { return dice_.chance(0.02) ? 0 : dice_.uni(std::min<int64_t>(1, hi), hi); }

    TypeDescPtr node(int depth, int64_t budget) {
        Kind kind = static_cast<Kind>(dice_.uni(0, 10));
        if (kind == STRUCT) return structure_node(depth, budget);
        // Child budgets shrink geometrically, so that nesting leaves room for counts.
        const int64_t child_budget = std::max<int64_t>(1, budget >> dice_.uni(0, 6));
        TypeDescPtr c = gen(depth - 1, child_budget);
        kind = sidestep_(kind, *c);
        const ref::Bounds b = ref::type_bounds(*c);
        const int64_t align = alignment(*c);
        const int64_t max_copies = b.size > 0 ? budget / b.size : 16;
        if (max_copies < 1) return nullptr;
        const int64_t e = b.extent, span = b.true_extent, ae = std::abs(e);
        switch (kind) {
        case CONTIG: return contiguous(count(std::min<int64_t>(max_copies, 256)), c);
        case VECTOR:
        case HVECTOR: {
            int64_t n = count(16), bl = dice_.chance(0.04) ? 0 : dice_.uni(1, 8);
            if (n * bl > max_copies) bl = std::max<int64_t>(1, max_copies / std::max<int64_t>(n, 1));
            if (n * bl > max_copies) n = max_copies / bl;
            if (kind == VECTOR) {
                const int64_t stride = dice_.uni(-2 * (bl + 2), 2 * (bl + 2));
                const bool minus_one = stride * e == -1 && lim_.avoid_openmpi_deviations;
                return vector(n, bl, minus_one ? -2 : stride, c);
            }
            // Byte strides: multiples of the extent, or anything (uneven).
            const int64_t reach = 2 * (bl * ae + span + 16);
            const int64_t stride = dice_.chance(0.5) ? dice_.uni(-2 * bl - 2, 2 * bl + 2) * e
                                                     : dice_.uni(-reach, reach);
            return hvector(n, bl, minus_one_(stride), c);
        }
        case INDEXED:
        case HINDEXED: {
            const int64_t k = dice_.uni(dice_.chance(0.02) ? 0 : 1, 8);
            std::vector<int64_t> bl, disp;
            int64_t total = 0;
            for (int64_t i = 0; i < k; ++i) {
                // Blocks of 0 now and then, but not all of them (few types without data).
                int64_t x = dice_.chance(0.1) && (total > 0 || i + 1 < k) ? 0 : dice_.uni(1, 6);
                x = std::min(x, max_copies - total);
                bl.push_back(x), total += x;
                disp.push_back(kind == INDEXED
                                   ? dice_.uni(-16, 16)
                                   : align_block_(dice_.uni(-4 * (ae + span + 8),
                                                           4 * (ae + span + 8)),
                                                 *c, 1, align));
            }
            dice_.order(disp);
            return kind == INDEXED ? indexed(bl, disp, c) : hindexed(bl, disp, c);
        }
        case INDEXED_BLOCK:
        case HINDEXED_BLOCK: {
            int64_t k = dice_.uni(dice_.chance(0.02) ? 0 : 1, 8);
            int64_t bl = dice_.chance(0.04) ? 0 : dice_.uni(1, 6);
            if (k * bl > max_copies) {
                k = std::min(k, max_copies);
                bl = max_copies / k;
            }
            std::vector<int64_t> disp;
            for (int64_t i = 0; i < k; ++i)
                disp.push_back(kind == INDEXED_BLOCK
                                   ? dice_.uni(-16, 16)
                                   : align_block_(dice_.uni(-4 * (ae + span + 8),
                                                           4 * (ae + span + 8)),
                                                 *c, bl, align));
            dice_.order(disp);
            return kind == INDEXED_BLOCK ? indexed_block(bl, disp, c)
                                         : hindexed_block(bl, disp, c);
        }
        case SUBARRAY: {
            const int64_t nd = dice_.uni(1, 3);
            std::vector<int64_t> sizes, subsizes, starts;
            int64_t n = 1;
            for (int64_t i = 0; i < nd; ++i) {
                // Open MPI rejects subsizes of 0, which MPI-4.1 allows.
                const int64_t sub = lim_.avoid_openmpi_deviations || dice_.chance(0.9)
                                        ? dice_.uni(1, 4)
                                        : 0;
                const int64_t size = std::max<int64_t>(1, sub + dice_.uni(0, 3));
                sizes.push_back(size), subsizes.push_back(sub);
                starts.push_back(dice_.uni(0, size - sub));
                n *= sub;
            }
            if (n > max_copies) return nullptr;
            return subarray(sizes, subsizes, starts,
                            dice_.chance(0.5) ? UCXDT_ORDER_C : UCXDT_ORDER_FORTRAN, c);
        }
        case RESIZED: {
            int64_t lb = b.true_lb + dice_.uni(-16, 16), ext = 0;
            switch (dice_.uni(0, 5)) {
            case 0: lb = b.true_lb, ext = span; break;                  // tight
            case 1: ext = span + dice_.uni(1, 32); break;               // padding
            case 2: ext = -(span + dice_.uni(0, 32)); break;            // negative
            case 3: ext = 0; break;
            case 4: ext = dice_.uni(1, std::max<int64_t>(1, span)); break;  // copies overlap
            default: ext = dice_.uni(-64, 64); break;
            }
            return resized(c, lb, ext);
        }
        default: return dup(c);
        }
    }

    TypeDescPtr structure_node(int depth, int64_t budget) {
        const int64_t k = dice_.uni(dice_.chance(0.03) ? 0 : 1, 4);
        std::vector<TypeDescPtr> kids;
        std::vector<int64_t> bl, disp;
        int64_t used = 0, reach = 16;
        for (int64_t i = 0; i < k; ++i) {
            TypeDescPtr c = gen(depth - 1, std::max<int64_t>(1, budget / k));
            const ref::Bounds b = ref::type_bounds(*c);
            // Entries of no data get no copies (see random_desc in the header).
            const bool avoid = !has_data(b) && lim_.avoid_openmpi_deviations;
            int64_t x = avoid || (dice_.chance(0.1) && (used > 0 || i + 1 < k))
                            ? 0
                            : dice_.uni(1, 4);
            if (b.size > 0) x = std::min(x, (budget - used) / b.size);
            used += x * b.size;
            reach = std::max(reach, 2 * (x * std::abs(b.extent) + b.true_extent));
            kids.push_back(std::move(c)), bl.push_back(x);
        }
        for (int64_t i = 0; i < k; ++i) disp.push_back(dice_.uni(-reach, reach));
        dice_.order(disp);
        int64_t align = 1;
        for (const TypeDescPtr &c : kids) align = std::max(align, alignment(*c));
        for (int64_t i = 0; i < k; ++i) disp[i] = align_block_(disp[i], *kids[i], bl[i], align);
        return structure(bl, disp, kids);
    }

    Dice dice_;
    RandomDescLimits lim_;
};

// ---- relayout ---------------------------------------------------------------------------------

// One run of the new node's type map: `copies` consecutive copies of a child.
struct Piece {
    TypeDescPtr child;
    int64_t copies;
};

class Relayouter {
public:
    explicit Relayouter(Rng &rng) : dice_(rng) {}

    // Same signature, and copies of the result that are |extent| apart never share a byte.
    TypeDescPtr top(const TypeDesc &d) { return safe(relay(d), true); }

private:
    // Same signature as d; one element touches no byte twice.
    TypeDescPtr relay(const TypeDesc &d) {
        TypeDescPtr r;
        switch (d.combiner) {
        case UCXDT_COMBINER_NAMED: r = named(d.primitive); break;
        case UCXDT_COMBINER_RESIZED:
        case UCXDT_COMBINER_DUP: r = relay(*d.children.at(0)); break;
        case UCXDT_COMBINER_STRUCT: {
            std::vector<Piece> pieces;
            // Entries of no data add nothing to the signature; Open MPI mishandles them.
            for (int64_t i = 0; i < d.count; ++i)
                if (d.blocklengths[i] > 0 && has_data(ref::type_bounds(*d.children[i])))
                    pieces.push_back({safe(relay(*d.children[i]), true), d.blocklengths[i]});
            r = place(pieces);
            break;
        }
        default: {
            const int64_t n = copies(d);
            // A subarray's extent is a multiple of its child's: keep that positive.
            const TypeDescPtr c = safe(relay(*d.children.at(0)), dice_.chance(0.7));
            r = n > 0 ? place({{c, n}}) : empty(c);
            break;
        }
        }
        // Wrappers that the parent's safe() accounts for.
        if (dice_.chance(0.1)) r = dup(r);
        if (dice_.chance(0.1))
            r = resized(r, dice_.uni(-32, 32), avoid_minus_one(dice_.uni(-64, 64)));
        return r;
    }

    // A type of no data.
    TypeDescPtr empty(const TypeDescPtr &c) {
        switch (dice_.uni(0, 3)) {
        case 0: return contiguous(0, c);
        case 1: return vector(dice_.uni(0, 3), 0, dice_.uni(-4, 4), c);
        case 2: return indexed({0, 0}, {dice_.uni(-9, 9), dice_.uni(-9, 9)}, c);
        default: return structure({}, {}, {});
        }
    }

    // c, or c resized so that |extent| >= true extent (copies one extent apart are disjoint),
    // with a positive extent unless allow_negative. A type of no data is always resized.
    TypeDescPtr safe(TypeDescPtr c, bool allow_negative) {
        const ref::Bounds b = ref::type_bounds(*c);
        if (!has_data(b))
            return resized(c, dice_.uni(-8, 8),
                           allow_negative ? avoid_minus_one(dice_.uni(-16, 16))
                                          : dice_.uni(0, 16));
        const int64_t s = b.true_extent;
        if (std::abs(b.extent) >= s && b.extent != -1 && (allow_negative || b.extent > 0) &&
            dice_.chance(0.6))
            return c;
        // Padding in proportion to the data, so that nested padding stays bounded.
        const int64_t pad = dice_.chance(0.5) ? 0 : dice_.uni(1, std::min<int64_t>(16, s));
        const int64_t sgn = allow_negative && dice_.chance(0.25) ? -1 : 1;
        return resized(c, b.true_lb - dice_.uni(0, pad), avoid_minus_one(sgn * (s + pad)));
    }

    // Byte interval [lo, hi), relative to the block's displacement, of a block of b copies of
    // c; and the displacements that align_block allows in a constructor aligned to `align`:
    // shift + multiples of align.
    struct Span {
        int64_t lo, hi;
        int64_t shift = 0, align = 1;
    };
    static Span block_span(const TypeDesc &c, const ref::Bounds &cb, int64_t b, int64_t align) {
        if (marked(c)) align = 1;
        const int64_t shift = align_block(0, c, b, align);
        if (b == 0 || !has_data(cb)) return {0, 0, shift, align};
        const int64_t run = (b - 1) * cb.extent;
        return {cb.true_lb + std::min<int64_t>(0, run),
                cb.true_lb + std::max<int64_t>(0, run) + cb.true_extent, shift, align};
    }
    int64_t gap() { return dice_.chance(0.4) ? 0 : dice_.uni(1, 24); }

    // Byte displacements for blocks laid out disjointly, in a random order of addresses.
    std::vector<int64_t> place_bytes(const std::vector<Span> &spans) {
        std::vector<int64_t> disp(spans.size());
        int64_t cursor = dice_.uni(-64, 64);
        for (size_t j : dice_.permutation(spans.size())) {
            if (spans[j].lo == spans[j].hi) {
                disp[j] = dice_.uni(-64, 64);  // no data: anywhere
                continue;
            }
            // Up to the alignment of the block's lb (see align_block), past the cursor.
            disp[j] = align_up(cursor - spans[j].lo - spans[j].shift, spans[j].align) +
                      spans[j].shift;
            cursor = disp[j] + spans[j].hi + gap();
        }
        return disp;
    }

    // Displacements in extents of blocks of bl[j] copies: disjoint runs of slots.
    std::vector<int64_t> place_slots(const std::vector<int64_t> &bl) {
        std::vector<int64_t> disp(bl.size());
        int64_t cursor = dice_.uni(-8, 8);
        for (size_t j : dice_.permutation(bl.size())) {
            disp[j] = cursor;
            cursor += bl[j] + (dice_.chance(0.5) ? 0 : dice_.uni(1, 3));
        }
        return disp;
    }

    TypeDescPtr place(const std::vector<Piece> &pieces) {
        if (pieces.empty()) return empty(named(UCXDT_BYTE));
        if (pieces.size() > 1 || dice_.chance(0.1)) return as_struct(pieces);
        const TypeDescPtr &c = pieces[0].child;
        const int64_t n = pieces[0].copies;
        const ref::Bounds cb = ref::type_bounds(*c);
        const int64_t align = alignment(*c);
        Kind kind = sidestep(static_cast<Kind>(dice_.uni(0, 7)), *c);
        // A subarray's extent is a multiple of its child's: it needs a positive one.
        if (kind == SUBARRAY && cb.extent <= 0) kind = sidestep(CONTIG, *c);
        switch (kind) {
        case CONTIG: return contiguous(n, c);
        case VECTOR: {
            const int64_t b = dice_.divisor(n), a = n / b;
            const int64_t stride = dice_.sign() * (b + dice_.uni(0, 3));
            return vector(a, b, stride * cb.extent == -1 ? -2 : stride, c);
        }
        case HVECTOR: {
            const int64_t b = dice_.divisor(n), a = n / b;
            const Span s = block_span(*c, cb, b, 1);
            return hvector(a, b, avoid_minus_one(dice_.sign() * (s.hi - s.lo + gap())), c);
        }
        case INDEXED: {
            auto bl = dice_.partition(n, dice_.uni(1, std::min<int64_t>(n, 8)));
            return indexed(bl, place_slots(bl), c);
        }
        case HINDEXED: {
            auto bl = dice_.partition(n, dice_.uni(1, std::min<int64_t>(n, 8)));
            std::vector<Span> spans;
            for (int64_t b : bl) spans.push_back(block_span(*c, cb, b, align));
            return hindexed(bl, place_bytes(spans), c);
        }
        case INDEXED_BLOCK: {
            const int64_t b = dice_.divisor(n), a = n / b;
            return indexed_block(b, place_slots(std::vector<int64_t>(a, b)), c);
        }
        case HINDEXED_BLOCK: {
            const int64_t b = dice_.divisor(n), a = n / b;
            return hindexed_block(
                b, place_bytes(std::vector<Span>(a, block_span(*c, cb, b, align))), c);
        }
        default: {
            // n as a product of up to 3 subsizes; distinct array positions are disjoint.
            std::vector<int64_t> sizes, subsizes, starts;
            int64_t rest = n;
            const int64_t nd = dice_.uni(1, 3);
            for (int64_t i = 0; i < nd; ++i) {
                const int64_t sub = i + 1 == nd ? rest : dice_.divisor(rest);
                rest /= sub;
                const int64_t size = sub + dice_.uni(0, 2);
                sizes.push_back(size), subsizes.push_back(sub);
                starts.push_back(dice_.uni(0, size - sub));
            }
            return subarray(sizes, subsizes, starts,
                            dice_.chance(0.5) ? UCXDT_ORDER_C : UCXDT_ORDER_FORTRAN, c);
        }
        }
    }

    // Struct entries in piece order, pieces split into blocks now and then.
    TypeDescPtr as_struct(const std::vector<Piece> &pieces) {
        std::vector<TypeDescPtr> kids;
        std::vector<int64_t> bl;
        std::vector<Span> spans;
        int64_t align = 1;
        for (const Piece &p : pieces) align = std::max(align, alignment(*p.child));
        for (const Piece &p : pieces) {
            const ref::Bounds cb = ref::type_bounds(*p.child);
            const int64_t k = dice_.chance(0.3) ? dice_.uni(1, std::min<int64_t>(p.copies, 4)) : 1;
            for (int64_t b : dice_.partition(p.copies, k)) {
                kids.push_back(p.child), bl.push_back(b);
                spans.push_back(block_span(*p.child, cb, b, align));
            }
        }
        return structure(bl, place_bytes(spans), kids);
    }

    Dice dice_;
};

}  // namespace

TypeDescPtr random_desc(Rng &rng, const RandomDescLimits &limits) {
    return Generator(rng, limits).top();
}

TypeDescPtr relayout(const TypeDesc &desc, Rng &rng) { return Relayouter(rng).top(desc); }

BufferSpan buffer_span(const TypeDesc &desc, int64_t count, int64_t slack) {
    const ref::Bounds b = ref::type_bounds(desc);
    return buffer_span(b.size, b.extent, b.true_lb, b.true_extent, count, slack);
}

BufferSpan buffer_span(int64_t size, int64_t extent, int64_t true_lb, int64_t true_extent,
                       int64_t count, int64_t slack) {
    if (size == 0 || count <= 0) return {std::max<int64_t>(1, 2 * slack), slack};
    // 128 bits: the elements of a near-limit type may lie too far apart for int64.
    using Wide = __int128;
    const Wide run = Wide{count - 1} * extent;
    const Wide lo = true_lb + std::min<Wide>(0, run);
    const Wide hi = Wide{true_lb} + true_extent + std::max<Wide>(0, run);
    const Wide bytes = hi - lo + 2 * slack, origin = slack - lo;
    if (bytes > INT64_MAX || origin > INT64_MAX || origin < INT64_MIN) return {INT64_MAX, 0};
    return {static_cast<int64_t>(bytes), static_cast<int64_t>(origin)};
}

}  // namespace ucxdt::support
