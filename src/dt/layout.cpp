#include "dt/layout.hpp"

#include <limits>

namespace ucxdt::layout {

namespace {

// Nested lists up to this many entries are spliced into their parent, so that blocks of
// different constructor levels can merge. Larger ones stay shared rather than copied.
constexpr size_t kSpliceMax = 64;

int64_t sat_mul(int64_t a, int64_t b) {
    int64_t r;
    return __builtin_mul_overflow(a, b, &r) ? std::numeric_limits<int64_t>::max() : r;
}

int64_t sat_add(int64_t a, int64_t b) {
    int64_t r;
    return __builtin_add_overflow(a, b, &r) ? std::numeric_limits<int64_t>::max() : r;
}

bool is_shift(const Node &n) { return n.kind == Node::Kind::LIST && n.kids.size() == 1; }

// Same byte pattern relative to offset 0 (conservative: false when unsure).
bool same_shape(const NodePtr &a, const NodePtr &b, int depth = 0) {
    if (a == b) return true;
    if (a->kind != b->kind || a->size != b->size || depth > 8) return false;
    switch (a->kind) {
    case Node::Kind::BLOCK: return a->len == b->len;
    case Node::Kind::STRIDED:
        return a->count == b->count && a->stride == b->stride &&
               same_shape(a->child, b->child, depth + 1);
    case Node::Kind::LIST:
        if (a->kids.size() != b->kids.size() || a->kids.size() > kSpliceMax) return false;
        for (size_t i = 0; i < a->kids.size(); ++i)
            if (a->disps[i] != b->disps[i] || !same_shape(a->kids[i], b->kids[i], depth + 1))
                return false;
        return true;
    }
    return false;
}

NodePtr make_list(std::vector<int64_t> disps, std::vector<NodePtr> kids) {
    auto n = std::make_shared<Node>();
    n->kind = Node::Kind::LIST;
    n->prefix.reserve(kids.size() + 1);
    n->prefix.push_back(0);
    for (const auto &k : kids) {
        n->size += k->size;
        n->blocks = sat_add(n->blocks, k->blocks);
        n->prefix.push_back(n->size);
    }
    n->disps = std::move(disps);
    n->kids = std::move(kids);
    return n;
}

}  // namespace

NodePtr empty() {
    static const NodePtr e = std::make_shared<const Node>();
    return e;
}

NodePtr block(int64_t len) {
    if (len == 0) return empty();
    auto n = std::make_shared<Node>();
    n->kind = Node::Kind::BLOCK;
    n->size = n->len = len;
    n->blocks = 1;
    return n;
}

NodePtr shift(int64_t disp, const NodePtr &node) {
    if (node->empty()) return empty();
    if (is_shift(*node)) disp += node->disps[0];
    const NodePtr &inner = is_shift(*node) ? node->kids[0] : node;
    if (disp == 0) return inner;
    return make_list({disp}, {inner});
}

NodePtr strided(int64_t count, int64_t stride, const NodePtr &child) {
    if (count == 0 || child->empty()) return empty();
    if (count == 1) return child;
    if (is_shift(*child)) return shift(child->disps[0], strided(count, stride, child->kids[0]));
    if (child->kind == Node::Kind::BLOCK && stride == child->len)
        return block(count * child->len);
    int64_t inner_span;
    if (child->kind == Node::Kind::STRIDED &&
        !__builtin_mul_overflow(child->count, child->stride, &inner_span) && stride == inner_span)
        return strided(count * child->count, child->stride, child->child);
    auto n = std::make_shared<Node>();
    n->kind = Node::Kind::STRIDED;
    n->count = count;
    n->stride = stride;
    n->child = child;
    n->size = count * child->size;
    n->blocks = sat_mul(count, child->blocks);
    return n;
}

NodePtr list(std::vector<std::pair<int64_t, NodePtr>> entries) {
    std::vector<int64_t> disps;
    std::vector<NodePtr> kids;
    auto push = [&](int64_t d, const NodePtr &k) {
        // Touching blocks merge: the packed stream is the same, the layout has fewer runs.
        if (!kids.empty() && k->kind == Node::Kind::BLOCK &&
            kids.back()->kind == Node::Kind::BLOCK && disps.back() + kids.back()->len == d) {
            kids.back() = block(kids.back()->len + k->len);
            return;
        }
        disps.push_back(d);
        kids.push_back(k);
    };
    // Small lists, and displaced ones, splice in entry by entry.
    auto splice = [&](auto &self, int64_t d, const NodePtr &k) -> void {
        if (k->kind == Node::Kind::LIST && k->kids.size() <= kSpliceMax) {
            for (size_t i = 0; i < k->kids.size(); ++i) self(self, d + k->disps[i], k->kids[i]);
        } else {
            push(d, k);
        }
    };
    for (auto &[d, k] : entries)
        if (!k->empty()) splice(splice, d, k);
    if (kids.empty()) return empty();
    if (kids.size() == 1) return shift(disps[0], kids[0]);
    // A list of equal shapes at equal distances is a strided level.
    bool regular = true;
    const int64_t step = disps[1] - disps[0];
    for (size_t i = 1; regular && i < kids.size(); ++i)
        regular = disps[i] - disps[i - 1] == step && same_shape(kids[i], kids[0]);
    if (regular)
        return shift(disps[0], strided(static_cast<int64_t>(kids.size()), step, kids[0]));
    // Anchored at its first entry.
    const int64_t first = disps[0];
    for (int64_t &d : disps) d -= first;
    return shift(first, make_list(std::move(disps), std::move(kids)));
}

std::pair<int64_t, NodePtr> anchor(const NodePtr &node) {
    if (is_shift(*node)) return {node->disps[0], node->kids[0]};
    return {0, node};
}

bool flatten(const Node &node, int64_t base, std::vector<int64_t> &disp, std::vector<int64_t> &len,
             int64_t limit) {
    switch (node.kind) {
    case Node::Kind::BLOCK:
        if (node.len == 0) return true;
        if (!disp.empty() && disp.back() + len.back() == base) {
            len.back() += node.len;
            return true;
        }
        if (static_cast<int64_t>(disp.size()) >= limit) return false;
        disp.push_back(base);
        len.push_back(node.len);
        return true;
    case Node::Kind::STRIDED:
        for (int64_t i = 0; i < node.count; ++i)
            if (!flatten(*node.child, base + i * node.stride, disp, len, limit)) return false;
        return true;
    case Node::Kind::LIST:
        for (size_t i = 0; i < node.kids.size(); ++i)
            if (!flatten(*node.kids[i], base + node.disps[i], disp, len, limit)) return false;
        return true;
    }
    return true;
}

}  // namespace ucxdt::layout
