// The normalized form of a type map that commit produces (see docs/design.md, "Layout").
//
// A layout is a tree of three node kinds, each describing bytes relative to offset 0:
//   BLOCK(len)                  len contiguous bytes
//   STRIDED(count, stride, c)   c at 0, stride, 2*stride, ... (stride in bytes, any sign)
//   LIST((d_i, c_i)...)         c_0 at d_0, then c_1 at d_1, ... in that pack order
// The smart constructors below fold as they build: adjacent blocks merge, strided levels
// whose stride equals the inner span merge into one level or one block, regular lists become
// STRIDED, single-entry lists move their displacement up, and small nested lists are
// spliced into their parent. Nodes are immutable and shared between parents.
//
// Every node but a single-entry list (a displacement) is anchored: its offset 0 is a byte of
// its data (a BLOCK's first, a STRIDED's first copy's, a LIST's first entry's), so that every
// displacement stored is a difference of data bytes, within the true extent, however far
// from them the origins of the types that built it lie.
#pragma once

#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

namespace ucxdt {

struct Node;
using NodePtr = std::shared_ptr<const Node>;

struct Node {
    enum class Kind : uint8_t { BLOCK, STRIDED, LIST };

    Kind kind = Kind::BLOCK;
    int64_t size = 0;     // packed bytes
    int64_t blocks = 0;   // contiguous runs when flattened (saturates at INT64_MAX)
    int64_t len = 0;      // BLOCK
    int64_t count = 0;    // STRIDED
    int64_t stride = 0;   // STRIDED
    NodePtr child;        // STRIDED
    std::vector<int64_t> disps;   // LIST: displacement of each entry
    std::vector<NodePtr> kids;    // LIST: node of each entry
    std::vector<int64_t> prefix;  // LIST: packed offset where entry i starts; n + 1 values

    bool empty() const { return size == 0; }
};

namespace layout {

/// The empty layout (no bytes).
NodePtr empty();
/// `len` contiguous bytes.
NodePtr block(int64_t len);
/// `count` copies of `child`, `stride` bytes apart.
NodePtr strided(int64_t count, int64_t stride, const NodePtr &child);
/// `node` displaced by `disp` bytes.
NodePtr shift(int64_t disp, const NodePtr &node);
/// Entries in pack order; empty entries are dropped.
NodePtr list(std::vector<std::pair<int64_t, NodePtr>> entries);

/// The displacement of node's anchor and the anchored node: (d, n) for shift(d, n), else
/// (0, node).
std::pair<int64_t, NodePtr> anchor(const NodePtr &node);

/// Appends the contiguous runs of `node` at displacement `base`, in pack order, merging a
/// run with the previous one when they touch. `limit` bounds the number of runs: returns
/// false (output incomplete) if more would be needed.
bool flatten(const Node &node, int64_t base, std::vector<int64_t> &disp,
             std::vector<int64_t> &len, int64_t limit);

}  // namespace layout
}  // namespace ucxdt
