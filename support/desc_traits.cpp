#include "desc_traits.hpp"

#include "support/typemap_walk.hpp"

#include <algorithm>
#include <numeric>

namespace ucxdt::support {

using namespace layouts;

int64_t copies(const TypeDesc &d) {
    switch (d.combiner) {
    case UCXDT_COMBINER_CONTIGUOUS: return d.count;
    case UCXDT_COMBINER_VECTOR:
    case UCXDT_COMBINER_HVECTOR:
    case UCXDT_COMBINER_INDEXED_BLOCK:
    case UCXDT_COMBINER_HINDEXED_BLOCK: return d.count * d.blocklength;
    case UCXDT_COMBINER_INDEXED:
    case UCXDT_COMBINER_HINDEXED:
        return std::accumulate(d.blocklengths.begin(), d.blocklengths.end(), int64_t{0});
    case UCXDT_COMBINER_SUBARRAY:
        return std::accumulate(d.subsizes.begin(), d.subsizes.end(), int64_t{1},
                               std::multiplies<int64_t>());
    default: return 0;
    }
}

bool marked(const TypeDesc &d) {
    switch (d.combiner) {
    case UCXDT_COMBINER_NAMED: return false;
    case UCXDT_COMBINER_RESIZED:
    case UCXDT_COMBINER_SUBARRAY: return true;
    case UCXDT_COMBINER_DUP: return marked(*d.children.at(0));
    case UCXDT_COMBINER_STRUCT:
        for (int64_t i = 0; i < d.count; ++i)
            if (d.blocklengths[i] > 0 && marked(*d.children[i])) return true;
        return false;
    default: return copies(d) > 0 && marked(*d.children.at(0));
    }
}

int64_t alignment(const TypeDesc &d) {
    if (d.combiner == UCXDT_COMBINER_NAMED) return primitive_size(d.primitive);
    int64_t a = 1;
    for (const TypeDescPtr &c : d.children) a = std::max(a, alignment(*c));
    return a;
}

bool has_data(const TypeDesc &d) { return ref::type_bounds(d).size > 0; }

bool any_node(const TypeDesc &d, const std::function<bool(const TypeDesc &)> &pred) {
    if (pred(d)) return true;
    for (const TypeDescPtr &c : d.children)
        if (any_node(*c, pred)) return true;
    return false;
}

bool has_negative_step(const TypeDesc &d) {
    return any_node(d, [](const TypeDesc &n) {
        if (n.combiner == UCXDT_COMBINER_RESIZED) return n.extent < 0;
        if (n.combiner == UCXDT_COMBINER_NAMED || n.combiner == UCXDT_COMBINER_DUP) return false;
        // Consecutive copies of a child step by its extent; vector blocks by their stride.
        for (size_t i = 0; i < n.children.size(); ++i) {
            const int64_t bl = n.combiner == UCXDT_COMBINER_STRUCT ? n.blocklengths[i]
                                                                   : copies(n);
            if (bl >= 2 && ref::type_bounds(*n.children[i]).extent < 0) return true;
        }
        if (n.combiner == UCXDT_COMBINER_VECTOR || n.combiner == UCXDT_COMBINER_HVECTOR) {
            const int64_t e = ref::type_bounds(*n.children[0]).extent;
            const int64_t step = n.combiner == UCXDT_COMBINER_VECTOR ? n.stride * e : n.stride;
            return n.count >= 2 && n.blocklength >= 1 && step < 0;
        }
        return false;
    });
}

bool overlaps(const TypeDesc &d, int64_t count) {
    auto blocks = ref::typemap_blocks(d, count);
    std::sort(blocks.begin(), blocks.end());
    for (size_t i = 1; i < blocks.size(); ++i)
        if (blocks[i].first < blocks[i - 1].first + blocks[i - 1].second) return true;
    return false;
}

bool has_zero_block(const TypeDesc &d) {
    return any_node(d, [](const TypeDesc &n) {
        return (n.combiner == UCXDT_COMBINER_STRUCT || n.combiner == UCXDT_COMBINER_HINDEXED) &&
               std::find(n.blocklengths.begin(), n.blocklengths.end(), 0) !=
                   n.blocklengths.end();
    });
}

bool near_limit(const TypeDesc &d) {
    auto far = [](int64_t v) {
        constexpr int64_t kFar = int64_t{1} << 40;
        return v >= kFar || v <= -kFar;
    };
    return any_node(d, [&](const TypeDesc &n) {
        const ref::Bounds b = ref::type_bounds(n);
        return far(b.lb) || far(b.lb + b.extent) || far(b.true_lb) ||
               far(b.true_lb + b.true_extent);
    });
}

}  // namespace ucxdt::support
