#include "type.hpp"

#include "checked.hpp"
#include "error.hpp"

#include <algorithm>
#include <complex>
#include <limits>

namespace ucxdt {

namespace {

struct Bounds {
    int64_t lb = std::numeric_limits<int64_t>::max();
    int64_t ub = std::numeric_limits<int64_t>::min();
    bool any = false;

    void add(int64_t lo, int64_t hi) {
        lb = std::min(lb, lo);
        ub = std::max(ub, hi);
        any = true;
    }
};

// Span [lo, hi) covered by `n` repetitions `step` bytes apart of a span [clo, chi),
// displaced by `disp`: the extreme repetitions are the first and the last.
bool span_of(int64_t disp, int64_t n, int64_t step, int64_t clo, int64_t chi, int64_t *lo,
             int64_t *hi) {
    int64_t last;
    if (!checked_mul(n - 1, step, &last)) return false;
    int64_t a, b;
    if (!checked_add(disp, clo, &a) || !checked_add(disp, chi, &b)) return false;
    int64_t a2, b2;
    if (!checked_add(a, std::min<int64_t>(0, last), &a2) ||
        !checked_add(b, std::max<int64_t>(0, last), &b2))
        return false;
    *lo = a2, *hi = b2;
    return true;
}

NodePtr build_layout(const Type &t) {
    switch (t.shape) {
    case Type::Shape::PRIMITIVE: return layout::block(t.size);
    case Type::Shape::VECTOR: {
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
            entries.emplace_back(t.disps_bytes[i], last_node);
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
// user's arguments that produced n, step and disp (entry `index` of arrays, if >= 0).
ucxdt_status_t accumulate(Summary &acc, int64_t disp, int64_t n, int64_t step, const Summary &c,
                          const char *what, int64_t index = -1) {
    auto overflow = [&](const char *which) {
        std::string arg = what;
        if (index >= 0) arg += " at index " + std::to_string(index);
        return fail(UCXDT_ERR_OVERFLOW, arg + ": the " + which + " overflow int64");
    };
    if (n == 0) return UCXDT_OK;
    int64_t lo, hi, bytes;
    for (auto [from, to] : {std::pair{&c.bounds, &acc.bounds},
                            std::pair{&c.explicit_bounds, &acc.explicit_bounds}}) {
        if (!from->any) continue;
        if (!span_of(disp, n, step, from->lb, from->ub, &lo, &hi))
            return overflow("bounds");
        to->add(lo, hi);
    }
    if (c.data.any) {
        if (!span_of(disp, n, step, c.data.lb, c.data.ub, &lo, &hi))
            return overflow("true bounds");
        acc.data.add(lo, hi);
    }
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
            st = accumulate(acc, t.disps_bytes[i], t.blocklengths[i], c.extent(), summary_of(c),
                            "blocklengths and displacements", static_cast<int64_t>(i));
        }
        break;
    }
    if (st != UCXDT_OK) return st;
    int64_t ext;
    const Bounds &b = acc.explicit_bounds.any ? acc.explicit_bounds : acc.bounds;
    t.explicit_bounds = has_explicit || acc.explicit_bounds.any;
    if (has_explicit) {
        t.lb = explicit_lb, t.ub = explicit_ub, t.has_bounds = true;
    } else if (b.any) {
        t.lb = b.lb, t.ub = b.ub, t.has_bounds = true;
        if (!checked_sub(b.ub, b.lb, &ext))
            return fail(UCXDT_ERR_OVERFLOW, "extent overflows int64");
        const int64_t pad = acc.explicit_bounds.any ? 0 : (acc.alignment - ext % acc.alignment) %
                                                              acc.alignment;
        if (!checked_add(t.ub, pad, &t.ub))
            return fail(UCXDT_ERR_OVERFLOW, "extent rounded up to the alignment overflows int64");
    } else {
        t.lb = t.ub = 0, t.has_bounds = false;
    }
    if (acc.size > 0) {
        if (!checked_sub(acc.data.ub, acc.data.lb, &ext))
            return fail(UCXDT_ERR_OVERFLOW, "true extent overflows int64");
        t.true_lb = acc.data.lb, t.true_ub = acc.data.ub;
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
