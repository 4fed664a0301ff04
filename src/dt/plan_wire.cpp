#include "dt/plan_wire.hpp"

#include "base/checked.hpp"
#include "base/error.hpp"
#include "dt/layout.hpp"

#include <cstring>
#include <new>

namespace ucxdt {

namespace {

constexpr uint32_t kMagic = 0x6e6c7078;  // "xpln"
constexpr int kMaxDepth = 64;            // layouts nest a few levels; a deeper tree is malformed
constexpr int64_t kMaxDims = 64;

void put(std::vector<char> *out, int64_t v) {
    const size_t at = out->size();
    out->resize(at + sizeof v);
    std::memcpy(out->data() + at, &v, sizeof v);
}

// Preorder: kind, then BLOCK len | STRIDED count, stride, child | LIST n, (disp, child) x n.
void put_node(std::vector<char> *out, const Node &n) {
    put(out, static_cast<int64_t>(n.kind));
    switch (n.kind) {
    case Node::Kind::BLOCK:
        put(out, n.len);
        break;
    case Node::Kind::STRIDED:
        put(out, n.count), put(out, n.stride), put_node(out, *n.child);
        break;
    case Node::Kind::LIST:
        put(out, static_cast<int64_t>(n.kids.size()));
        for (size_t i = 0; i < n.kids.size(); ++i) put(out, n.disps[i]), put_node(out, *n.kids[i]);
        break;
    }
}

// The lowest and one past the highest byte of a node, from its offset 0, as wide integers.
struct Span {
    __int128 lo, hi;
};

class Reader {
public:
    Reader(const char *p, size_t n) : p_(p), end_(p + n) {}
    bool get(int64_t *v) {
        if (static_cast<size_t>(end_ - p_) < sizeof *v) return false;
        std::memcpy(v, p_, sizeof *v);
        p_ += sizeof *v;
        return true;
    }
    bool done() const { return p_ == end_; }

    // A node and its span, or null (malformed: a reason in *why).
    NodePtr node(int depth, Span *span, const char **why) {
        int64_t kind;
        if (depth > kMaxDepth) return *why = "layout tree nested too deep", nullptr;
        if (!get(&kind)) return *why = "truncated", nullptr;
        switch (static_cast<Node::Kind>(kind)) {
        case Node::Kind::BLOCK: {
            int64_t len;
            if (!get(&len) || len <= 0) return *why = "a block of no bytes", nullptr;
            *span = {0, len};
            return layout::block(len);
        }
        case Node::Kind::STRIDED: {
            int64_t count, stride;
            Span c{};
            if (!get(&count) || !get(&stride) || count <= 0) return *why = "a strided level of no copies", nullptr;
            NodePtr child = node(depth + 1, &c, why);
            if (!child) return nullptr;
            int64_t size;
            if (!checked_mul(count, child->size, &size)) return *why = "a strided level's size overflows", nullptr;
            const __int128 reach = static_cast<__int128>(count - 1) * stride;
            *span = {c.lo + (reach < 0 ? reach : 0), c.hi + (reach > 0 ? reach : 0)};
            if (!fits(*span)) return *why = "a strided level's span overflows", nullptr;
            return layout::strided(count, stride, child);
        }
        case Node::Kind::LIST: {
            int64_t n;
            if (!get(&n) || n <= 0 || n > static_cast<int64_t>((end_ - p_) / (2 * sizeof(int64_t))))
                return *why = "a list of no entries, or more than its bytes hold", nullptr;
            std::vector<std::pair<int64_t, NodePtr>> entries;
            entries.reserve(static_cast<size_t>(n));
            int64_t size = 0;
            for (int64_t i = 0; i < n; ++i) {
                int64_t d;
                Span c{};
                if (!get(&d)) return *why = "truncated", nullptr;
                NodePtr kid = node(depth + 1, &c, why);
                if (!kid) return nullptr;
                if (!checked_add(size, kid->size, &size)) return *why = "a list's size overflows", nullptr;
                const Span at{c.lo + d, c.hi + d};
                *span = i == 0 ? at : Span{std::min(span->lo, at.lo), std::max(span->hi, at.hi)};
                if (!fits(*span)) return *why = "a list's span overflows", nullptr;
                entries.emplace_back(d, std::move(kid));
            }
            return layout::list(std::move(entries));
        }
        }
        return *why = "an unknown node kind", nullptr;
    }

    static bool fits(const Span &s) { return s.lo >= INT64_MIN && s.hi <= INT64_MAX && s.hi - s.lo <= INT64_MAX; }

private:
    const char *p_, *end_;
};

}  // namespace

void encode_plan(const Plan &p, std::vector<char> *out) {
    put(out, kMagic);
    put(out, p.packed_size);
    put(out, p.base);
    put(out, static_cast<int64_t>(p.dims.size()));
    for (const Plan::Dim &d : p.dims) put(out, d.count), put(out, d.stride);
    if (p.cls == UCXDT_PLAN_BLOCK_LIST) {
        put_node(out, *p.unit_node);
    } else {
        put(out, static_cast<int64_t>(Node::Kind::BLOCK));
        put(out, p.block_len);
    }
}

ucxdt_status_t decode_plan(const char *bytes, size_t size, int64_t packed, PlanPtr *out) {
    try {
        Reader in(bytes, size);
        int64_t magic, packed_size, base, ndims;
        if (!in.get(&magic) || magic != kMagic || !in.get(&packed_size) || !in.get(&base) || !in.get(&ndims) ||
            ndims < 0 || ndims > kMaxDims)
            return fail(UCXDT_ERR_INVALID_PARAM, "a plan description with a bad header");
        if (packed_size != packed || packed <= 0)
            return fail(UCXDT_ERR_INVALID_PARAM, "a plan description whose size differs from its data's");
        std::vector<Plan::Dim> dims(static_cast<size_t>(ndims));
        for (auto &d : dims)
            if (!in.get(&d.count) || !in.get(&d.stride) || d.count <= 0)
                return fail(UCXDT_ERR_INVALID_PARAM, "a plan description with a bad dim");
        const char *why = nullptr;
        Span span{};
        NodePtr node = in.node(0, &span, &why);
        if (!node) return fail(UCXDT_ERR_INVALID_PARAM, std::string("a plan description with ") + why);
        if (!in.done()) return fail(UCXDT_ERR_INVALID_PARAM, "a plan description with bytes after its layout");
        for (auto d = dims.rbegin(); d != dims.rend(); ++d) {
            int64_t s;
            if (!checked_mul(d->count, node->size, &s)) return fail(UCXDT_ERR_OVERFLOW, "a plan description's size overflows");
            const __int128 reach = static_cast<__int128>(d->count - 1) * d->stride;
            span = {span.lo + (reach < 0 ? reach : 0), span.hi + (reach > 0 ? reach : 0)};
            if (!Reader::fits(span)) return fail(UCXDT_ERR_OVERFLOW, "a plan description's span overflows");
            node = layout::strided(d->count, d->stride, node);
        }
        span = {span.lo + base, span.hi + base};
        if (!Reader::fits(span)) return fail(UCXDT_ERR_OVERFLOW, "a plan description's span overflows");
        if (node->size != packed)
            return fail(UCXDT_ERR_INVALID_PARAM, "a plan description whose layout differs from its size");
        auto p = std::make_shared<Plan>();
        p->id = new_plan_id();
        p->count = 1;
        p->packed_size = packed;
        p->data_lo = static_cast<int64_t>(span.lo);
        p->data_hi = static_cast<int64_t>(span.hi);
        if (ucxdt_status_t st = lower_plan(layout::shift(base, node), *p)) return st;
        *out = std::move(p);
        return UCXDT_OK;
    } catch (const std::bad_alloc &) {
        return fail(UCXDT_ERR_NO_MEMORY, "rebuilding a plan description");
    }
}

}  // namespace ucxdt
