#include <cuda_runtime.h>

#include "cuda/type_tree.hpp"

#include "cuda/cuda_check.hpp"
#include "cuda/unit_cache.hpp"

#include <numeric>
#include <unordered_map>
#include <vector>

namespace ucxdt::cuda {

namespace {

int64_t gcd_abs(int64_t a, int64_t b) { return std::gcd(a < 0 ? -a : a, b < 0 ? -b : b); }

class Flattener {
public:
    std::vector<kernels::TreeNode> nodes;
    std::vector<kernels::TreeEntry> entries;
    int64_t align = 0;

    int64_t add(const NodePtr &n) {
        auto seen = index_.find(n.get());
        if (seen != index_.end()) return seen->second;
        const int64_t at = static_cast<int64_t>(nodes.size());
        index_[n.get()] = at;
        nodes.emplace_back();
        kernels::TreeNode t;
        switch (n->kind) {
        case Node::Kind::BLOCK:
            t.kind = kernels::TreeNode::BLOCK;
            align = gcd_abs(align, n->len);
            break;
        case Node::Kind::STRIDED:
            t.kind = kernels::TreeNode::STRIDED;
            t.stride = n->stride;
            t.child_size = kernels::FastDiv(static_cast<uint64_t>(n->child->size));
            t.child = static_cast<int32_t>(add(n->child));
            align = gcd_abs(align, n->stride);
            break;
        case Node::Kind::LIST: {
            t.kind = kernels::TreeNode::LIST;
            t.first = static_cast<int64_t>(entries.size());
            t.n = static_cast<int64_t>(n->kids.size());
            // The list's entries are contiguous; nested lists append after them.
            entries.resize(entries.size() + n->kids.size());
            for (size_t i = 0; i < n->kids.size(); ++i) {
                const int64_t kid = add(n->kids[i]);
                entries[t.first + i] = {n->disps[i], n->prefix[i], kid};
                align = gcd_abs(align, n->disps[i]);
            }
            break;
        }
        }
        nodes[at] = t;
        return at;
    }

private:
    std::unordered_map<const Node *, int64_t> index_;
};

}  // namespace

DeviceTree::~DeviceTree() {
    DeviceGuard guard(device_id);
    if (nodes) cudaFree(nodes);  // waits for work still using the tree
    if (entries) cudaFree(entries);
}

bool list_outweighs_data(const Plan &p) {
    return static_cast<int64_t>(p.len.size() * sizeof(kernels::Unit)) > p.unit_size;
}

ucxdt_status_t device_tree(const Plan &p, int device, std::shared_ptr<const DeviceTree> *out) {
    if (auto cached = cache_find(p.id, device, CacheKind::TREE)) {
        *out = std::static_pointer_cast<const DeviceTree>(cached);
        return UCXDT_OK;
    }
    Flattener f;
    f.add(p.unit_node);
    if (f.nodes.size() > INT32_MAX || f.entries.size() > INT32_MAX) return fail(UCXDT_ERR_UNSUPPORTED, "layout tree too large");
    auto tree = std::make_shared<DeviceTree>();
    tree->device_id = device;
    tree->num_nodes = static_cast<int>(f.nodes.size());
    tree->num_entries = static_cast<int>(f.entries.size());
    tree->align = f.align;
    const size_t node_bytes = f.nodes.size() * sizeof(kernels::TreeNode);
    const size_t entry_bytes = std::max<size_t>(1, f.entries.size()) * sizeof(kernels::TreeEntry);
    // As for work units: upload outside any graph capture in progress.
    cudaStreamCaptureMode mode = cudaStreamCaptureModeRelaxed;
    cudaThreadExchangeStreamCaptureMode(&mode);
    ucxdt_status_t st = check(cudaMalloc(&tree->nodes, node_bytes), "cudaMalloc (type tree)");
    if (!st) st = check(cudaMalloc(&tree->entries, entry_bytes), "cudaMalloc (type tree)");
    if (!st) st = upload(tree->nodes, f.nodes.data(), node_bytes, device);
    if (!st && !f.entries.empty())
        st = upload(tree->entries, f.entries.data(), f.entries.size() * sizeof(kernels::TreeEntry),
                    device);
    cudaThreadExchangeStreamCaptureMode(&mode);
    if (st) return st;
    cache_insert(p.id, device, CacheKind::TREE, tree,
                 static_cast<int64_t>(node_bytes + entry_bytes));
    *out = std::move(tree);
    return UCXDT_OK;
}

}  // namespace ucxdt::cuda
