#include "dt/type.hpp"

#include "base/checked.hpp"
#include "base/error.hpp"

#include <algorithm>
#include <climits>
#include <complex>
#include <string>

namespace ucxdt {

namespace {

// Bytes in 128 bits: a block's origin or a bound that the type does not report may lie beyond
// int64 where what it reports and touches does not (both MPIs compute those by wrapping).
using Wide = __int128;

bool fits64(Wide v) { return v >= INT64_MIN && v <= INT64_MAX; }

struct Bounds {
    Wide lb = 0, ub = 0;
    bool any = false;

    void add(Wide lo, Wide hi) {
        lb = any ? std::min(lb, lo) : lo;
        ub = any ? std::max(ub, hi) : hi;
        any = true;
    }
    bool fits() const { return fits64(lb) && fits64(ub) && fits64(ub - lb); }
};

// Span [lo, hi) covered by `n` >= 1 repetitions `step` bytes apart of a span [clo, chi),
// displaced by `disp`: the extreme repetitions are the first and the last.
void span_of(Wide disp, int64_t n, int64_t step, Wide clo, Wide chi, Wide *lo, Wide *hi) {
    const Wide last = Wide{n - 1} * step;
    *lo = disp + clo + std::min<Wide>(0, last);
    *hi = disp + chi + std::max<Wide>(0, last);
}

NodePtr build_layout(const Type &t) {
    switch (t.shape) {
    case Type::Shape::PRIMITIVE: return layout::block(t.size);
    case Type::Shape::VECTOR: {
        // Without blocks, the block is no part of the type map (finish_type did not size it).
        if (t.count == 0 || t.blocklength == 0) return layout::empty();
        const Type &c = *t.kids[0];
        return layout::strided(t.count, t.stride_bytes,
                               layout::strided(t.blocklength, c.extent(), c.layout()));
    }
    case Type::Shape::INDEXED: {
        std::vector<std::pair<int64_t, NodePtr>> entries;
        entries.reserve(t.blocklengths.size());
        // Entries sharing one child and one blocklength share one node, so that the
        // list of an indexed_block folds into a strided level when it is regular.
        NodePtr last_node;
        int64_t last_bl = -1;
        for (size_t i = 0; i < t.blocklengths.size(); ++i) {
            const Type &c = *t.kid(i);
            if (t.kids.size() != 1 || t.blocklengths[i] != last_bl) {
                last_node = layout::strided(t.blocklengths[i], c.extent(), c.layout());
                last_bl = t.blocklengths[i];
            }
            if (last_node->empty()) continue;
            // Placed by its anchor, a byte of the type map, which fits int64 where the
            // block's origin need not (finish_type checked the true bounds).
            const auto [at, node] = layout::anchor(last_node);
            entries.emplace_back(static_cast<int64_t>(t.disp_bytes(i) + at), node);
        }
        return layout::list(std::move(entries));
    }
    }
    return layout::empty();
}

}  // namespace

const NodePtr &Type::layout() const {
    std::call_once(layout_once_, [this] { layout_ = build_layout(*this); });
    return layout_;
}

namespace {

// What a parent needs of a child: its bounds (explicit ones apart, since they take
// precedence), the span of its data, size and signature.
struct Summary {
    Bounds bounds, explicit_bounds, data;
    int64_t size = 0;
    int64_t alignment = 1;
    Signature sig;
};

Summary summary_of(const Type &c) {
    Summary s;
    if (c.explicit_bounds) s.explicit_bounds.add(c.lb, c.ub);
    else if (c.has_bounds) s.bounds.add(c.lb, c.ub);
    if (c.size > 0) s.data.add(c.true_lb, c.true_ub);
    s.size = c.size;
    s.alignment = c.alignment;
    s.sig = c.signature;
    return s;
}

// Adds to `acc` n copies of `c`, `step` bytes apart, starting at `disp`. `what` names the
// user's arguments that produced n, step and disp (entry `index` of arrays, if >= 0). Data
// and explicit bounds are the type's wherever they are, so they must fit as they come; the
// other bounds only where no explicit ones take precedence (finish_type checks those).
ucxdt_status_t accumulate(Summary &acc, Wide disp, int64_t n, int64_t step, const Summary &c,
                          const char *what, int64_t index = -1) {
    auto overflow = [&](const char *which) {
        std::string arg = what;
        if (index >= 0) arg += " at index " + std::to_string(index);
        return fail(UCXDT_ERR_OVERFLOW, arg + ": the " + which + " overflow int64");
    };
    if (n == 0) return UCXDT_OK;
    Wide lo, hi;
    if (c.bounds.any) {
        span_of(disp, n, step, c.bounds.lb, c.bounds.ub, &lo, &hi);
        acc.bounds.add(lo, hi);
    }
    if (c.explicit_bounds.any) {
        span_of(disp, n, step, c.explicit_bounds.lb, c.explicit_bounds.ub, &lo, &hi);
        acc.explicit_bounds.add(lo, hi);
        if (!acc.explicit_bounds.fits()) return overflow("bounds");
    }
    if (c.data.any) {
        span_of(disp, n, step, c.data.lb, c.data.ub, &lo, &hi);
        acc.data.add(lo, hi);
        if (!acc.data.fits()) return overflow("true bounds");
    }
    int64_t bytes;
    if (!checked_mul(n, c.size, &bytes) || !checked_add(acc.size, bytes, &acc.size))
        return overflow("type size would");
    acc.sig = Signature::concat(acc.sig, Signature::repeat(c.sig, n));
    acc.alignment = std::max(acc.alignment, c.alignment);
    return UCXDT_OK;
}

}  // namespace

ucxdt_status_t finish_type(Type &t, bool has_explicit, int64_t explicit_lb, int64_t explicit_ub) {
    Summary acc;
    ucxdt_status_t st = UCXDT_OK;
    switch (t.shape) {
    case Type::Shape::PRIMITIVE:
        acc.bounds.add(0, t.size);
        acc.data.add(0, t.size);
        acc.size = t.size;
        acc.alignment = t.alignment;
        acc.sig = Signature::primitive(t.primitive);
        break;
    case Type::Shape::VECTOR: {
        // The first block, then its copies; without blocks it is no part of the type map.
        if (t.count == 0 || t.blocklength == 0) break;
        const Type &c = *t.kids[0];
        Summary block;
        st = accumulate(block, 0, t.blocklength, c.extent(), summary_of(c),
                        "blocklength x extent of oldtype");
        if (st == UCXDT_OK) st = accumulate(acc, 0, t.count, t.stride_bytes, block, "count x stride");
        break;
    }
    case Type::Shape::INDEXED:
        for (size_t i = 0; st == UCXDT_OK && i < t.blocklengths.size(); ++i) {
            const Type &c = *t.kid(i);
            st = accumulate(acc, t.disp_bytes(i), t.blocklengths[i], c.extent(), summary_of(c),
                            "blocklengths and displacements", static_cast<int64_t>(i));
        }
        break;
    }
    if (st != UCXDT_OK) return st;
    const Bounds &b = acc.explicit_bounds.any ? acc.explicit_bounds : acc.bounds;
    t.explicit_bounds = has_explicit || acc.explicit_bounds.any;
    if (has_explicit) {
        t.lb = explicit_lb, t.ub = explicit_ub, t.has_bounds = true;
    } else if (b.any) {
        if (!b.fits()) return fail(UCXDT_ERR_OVERFLOW, "lb, ub or extent overflows int64");
        const Wide ext = b.ub - b.lb;
        const Wide pad = acc.explicit_bounds.any ? 0 : (acc.alignment - ext % acc.alignment) %
                                                           acc.alignment;
        if (!fits64(b.ub + pad) || !fits64(ext + pad))
            return fail(UCXDT_ERR_OVERFLOW, "extent rounded up to the alignment overflows int64");
        t.lb = static_cast<int64_t>(b.lb), t.ub = static_cast<int64_t>(b.ub + pad);
        t.has_bounds = true;
    } else {
        t.lb = t.ub = 0, t.has_bounds = false;
    }
    if (acc.size > 0) {  // acc.data fits (accumulate)
        t.true_lb = static_cast<int64_t>(acc.data.lb), t.true_ub = static_cast<int64_t>(acc.data.ub);
    } else {
        t.true_lb = t.true_ub = 0;
    }
    t.size = acc.size;
    t.alignment = acc.alignment;
    t.signature = acc.sig;
    return UCXDT_OK;
}

TypePtr primitive_type(ucxdt_primitive_t p) {
    static const std::vector<TypePtr> table = [] {
        static const int64_t sizes[UCXDT_PRIMITIVE_LAST] = {
            1, 1, 1, 2, 4, 8, 1, 2, 4, 8, 4, 8,
            sizeof(long double), sizeof(std::complex<float>), sizeof(std::complex<double>)};
        static const int64_t alignments[UCXDT_PRIMITIVE_LAST] = {
            1, 1, 1, 2, 4, 8, 1, 2, 4, 8, 4, 8,
            alignof(long double), alignof(std::complex<float>), alignof(std::complex<double>)};
        std::vector<TypePtr> v;
        for (int i = 0; i < UCXDT_PRIMITIVE_LAST; ++i) {
            auto t = std::make_shared<Type>();
            t->primitive = static_cast<ucxdt_primitive_t>(i);
            t->size = sizes[i];
            t->alignment = alignments[i];
            finish_type(*t, false, 0, 0);
            t->committed = true;
            v.push_back(std::move(t));
        }
        return v;
    }();
    return p >= 0 && p < UCXDT_PRIMITIVE_LAST ? table[p] : nullptr;
}

}  // namespace ucxdt
