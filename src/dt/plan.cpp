#include "dt/plan.hpp"

#include "dt/address_order.hpp"

#include "base/checked.hpp"
#include "base/error.hpp"

#include <algorithm>
#include <atomic>
#include <new>

namespace ucxdt {

namespace {

// Plans kept per type; MPI codes use a handful of counts per type.
constexpr size_t kPlansPerType = 8;

// A run list with equal lengths at equal distances is one more strided dim.
bool regular_runs(const std::vector<int64_t> &disp, const std::vector<int64_t> &len) {
    if (disp.size() < 2) return false;
    const int64_t step = disp[1] - disp[0];
    for (size_t j = 1; j < disp.size(); ++j)
        if (len[j] != len[0] || disp[j] - disp[j - 1] != step) return false;
    return true;
}

// 64 bits of a block list's layout (its base, dims and units), for a peer to tell whether its
// plan moves the same byte addresses (the rendezvous's same-layout copy). Each word goes
// through splitmix64's finalizer before it is folded in, so that the order counts.
uint64_t layout_hash(const Plan &p) {
    uint64_t h = 0x9e3779b97f4a7c15ull;
    auto mix = [&h](int64_t v) {
        uint64_t z = static_cast<uint64_t>(v) + h + 0x9e3779b97f4a7c15ull;
        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
        h = (z ^ (z >> 31)) * 0x100000001b3ull + (h << 7 | h >> 57);
    };
    mix(p.base);
    mix(p.block_len);
    mix(static_cast<int64_t>(p.dims.size()));
    for (const Plan::Dim &d : p.dims) mix(d.count), mix(d.stride);
    mix(static_cast<int64_t>(p.disp.size()));
    for (size_t j = 0; j < p.disp.size(); ++j) mix(p.disp[j]), mix(p.len[j]);
    return h | 1;  // never 0, which means "no hash"
}

ucxdt_status_t build_plan(const Type &t, int64_t count, Plan &p) {
    int64_t total;
    if (!checked_mul(count, t.size, &total))
        return fail(UCXDT_ERR_OVERFLOW, "count x type size overflows int64");
    p.count = count;
    p.packed_size = total;
    if (total == 0) return UCXDT_OK;  // no element is placed: its extent does not matter
    // Every byte address of the plan, and the span of them, must fit in int64 (the engines
    // step elements by i x extent): the data of the first and the last element.
    using Wide = __int128;
    const Wide span = Wide{count - 1} * t.extent();
    const Wide lo = t.true_lb + std::min<Wide>(0, span), hi = t.true_ub + std::max<Wide>(0, span);
    if (lo < INT64_MIN || hi > INT64_MAX || hi - lo > INT64_MAX)
        return fail(UCXDT_ERR_OVERFLOW, "count x extent overflows int64");
    p.data_lo = static_cast<int64_t>(lo), p.data_hi = static_cast<int64_t>(hi);

    return lower_plan(layout::strided(count, t.extent(), t.layout()), p);
}

}  // namespace

ucxdt_status_t lower_plan(NodePtr node, Plan &p) {
    if (node->kind == Node::Kind::LIST && node->kids.size() == 1) {
        p.base = node->disps[0];
        node = node->kids[0];
    }
    while (node->kind == Node::Kind::STRIDED) {
        p.dims.push_back({node->count, node->stride});
        node = node->child;
    }
    if (node->kind == Node::Kind::BLOCK) {
        p.block_len = node->len;
    } else {
        try {
            layout::flatten(*node, 0, p.disp, p.len, INT64_MAX);
        } catch (const std::bad_alloc &) {
            return fail(UCXDT_ERR_NO_MEMORY, "block list of the plan does not fit in memory");
        }
        if (p.disp.size() == 1 || regular_runs(p.disp, p.len)) {
            if (p.disp.size() > 1)
                p.dims.push_back({static_cast<int64_t>(p.disp.size()), p.disp[1] - p.disp[0]});
            p.base += p.disp[0];
            p.block_len = p.len[0];
            p.disp.clear();
            p.len.clear();
        }
    }
    if (p.disp.empty()) {
        fold_dims(p.dims, p.block_len);
        p.cls = p.dims.empty() ? UCXDT_PLAN_CONTIGUOUS : UCXDT_PLAN_STRIDED;
        p.unit_size = p.block_len;
        p.num_blocks = 1;
        if (p.cls == UCXDT_PLAN_STRIDED) p.layout_hash = layout_hash(p);
    } else {
        p.cls = UCXDT_PLAN_BLOCK_LIST;
        p.unit_node = node;
        p.prefix.resize(p.len.size() + 1);
        p.prefix[0] = 0;
        for (size_t j = 0; j < p.len.size(); ++j) p.prefix[j + 1] = p.prefix[j] + p.len[j];
        p.unit_size = p.prefix.back();
        p.num_blocks = static_cast<int64_t>(p.len.size());
        std::vector<Plan::Dim> dims;
        for (const auto &d : p.dims)
            if (d.count != 1) dims.push_back(d);
        p.dims = std::move(dims);
        p.layout_hash = layout_hash(p);
    }
    for (const auto &d : p.dims) p.num_blocks *= d.count;
    return UCXDT_OK;
}

uint64_t new_plan_id() {
    static std::atomic<uint64_t> next_id{1};
    return next_id.fetch_add(1, std::memory_order_relaxed);
}

ucxdt_status_t get_plan(const Type &t, int64_t count, PlanPtr *plan) {
    {
        std::lock_guard<std::mutex> lock(t.plan_mutex);
        auto it = std::find_if(t.plans.begin(), t.plans.end(),
                               [&](const PlanPtr &p) { return p->count == count; });
        if (it != t.plans.end()) {
            *plan = *it;
            std::rotate(it, it + 1, t.plans.end());  // most recently used last
            return UCXDT_OK;
        }
    }
    // Built outside the lock: two threads may build the same plan; both are correct.
    auto p = std::make_shared<Plan>();
    p->id = new_plan_id();
    ucxdt_status_t st = build_plan(t, count, *p);
    if (st != UCXDT_OK) return st;
    std::lock_guard<std::mutex> lock(t.plan_mutex);
    if (t.plans.size() >= kPlansPerType) t.plans.erase(t.plans.begin());
    t.plans.push_back(p);
    *plan = std::move(p);
    return UCXDT_OK;
}

}  // namespace ucxdt
