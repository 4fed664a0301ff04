// Point-based pack/unpack (Jenkins et al., TPDS'14, 3.2): no list of blocks at all; each
// thread computes the address of its packed bytes from the layout tree, which sits in shared
// memory when it fits. For types of many tiny blocks, whose unit list would outweigh the data.
#include "pack_kernels.hpp"

#include "batch.cuh"
#include "copy.cuh"
#include "launch.cuh"

#include <algorithm>

namespace ucxdt::kernels {

namespace {

constexpr int kSharedNodes = 256, kSharedEntries = 256;

// The tree of `a` as this block reads it: in shared memory when it fits, else in device memory.
// Every thread of the block must call it (it synchronizes). A small message is one descent per
// thread, so its time is the chain of dependent loads there: in shared memory, the binary
// searches over LIST entries do not wait on the memory system each step.
struct Tree {
    const TreeNode *nodes;
    const TreeEntry *entries;
};

__device__ __forceinline__ Tree load_tree(const PointArgs &a, TreeNode *nodes, TreeEntry *entries) {
    const bool nodes_in = a.num_nodes <= kSharedNodes, entries_in = a.num_entries <= kSharedEntries;
    if (nodes_in)
        for (int i = threadIdx.x; i < a.num_nodes; i += blockDim.x) nodes[i] = a.nodes[i];
    if (entries_in)
        for (int i = threadIdx.x; i < a.num_entries; i += blockDim.x) entries[i] = a.entries[i];
    __syncthreads();
    return {nodes_in ? nodes : a.nodes, entries_in ? entries : a.entries};
}

// The copy of one PointArgs by `threads` threads, of which this one is `tid`.
template <int V, bool PACK>
__device__ __forceinline__ void point_copy(const PointArgs &a, const Tree &t, uint64_t tid, uint64_t threads) {
    using Vec = typename VecOf<V>::type;
    const uint64_t chunks = static_cast<uint64_t>(a.end - a.offset) / V;
    for (uint64_t c = tid; c < chunks; c += threads) {
        const int64_t pos = a.offset + static_cast<int64_t>(c) * V;
        const uint64_t outer = a.unit_size.div(static_cast<uint64_t>(pos));
        uint64_t q = static_cast<uint64_t>(pos) - outer * a.unit_size.d;
        int64_t disp = a.base + outer_disp(a.dims, outer);
        for (int64_t node = 0;;) {
            const TreeNode &n = t.nodes[node];
            if (n.kind == TreeNode::BLOCK) {
                disp += static_cast<int64_t>(q);
                break;
            }
            if (n.kind == TreeNode::STRIDED) {
                const uint64_t i = n.child_size.div(q);
                q -= i * n.child_size.d;
                disp += static_cast<int64_t>(i) * n.stride;
                node = n.child;
                continue;
            }
            // LIST: the last entry that starts at or before q.
            int64_t lo = n.first, hi = n.first + n.n - 1;
            while (lo < hi) {
                const int64_t mid = (lo + hi + 1) / 2;
                if (static_cast<uint64_t>(t.entries[mid].prefix) <= q) lo = mid;
                else hi = mid - 1;
            }
            const TreeEntry e = t.entries[lo];
            q -= static_cast<uint64_t>(e.prefix);
            disp += e.disp;
            node = e.node;
        }
        char *lay = at(a.layout, disp);
        char *pk = a.twin ? at(a.twin, disp) : a.packed + (pos - a.offset);
        if (PACK) *reinterpret_cast<Vec *>(pk) = *reinterpret_cast<const Vec *>(lay);
        else *reinterpret_cast<Vec *>(lay) = *reinterpret_cast<const Vec *>(pk);
    }
}

template <int V, bool PACK>
__global__ void point_kernel(const __grid_constant__ PointArgs a) {
    __shared__ TreeNode nodes[kSharedNodes];
    __shared__ TreeEntry entries[kSharedEntries];
    const Tree t = load_tree(a, nodes, entries);
    point_copy<V, PACK>(a, t, static_cast<uint64_t>(blockIdx.x) * blockDim.x + threadIdx.x,
                        static_cast<uint64_t>(gridDim.x) * blockDim.x);
}

struct PointBatch {
    PointArgs a[kMaxBatch];
};

// Row y of the grid copies b.a[y], in its own direction, with its own tree.
template <int V>
__global__ void point_batch_kernel(const __grid_constant__ PointBatch b) {
    __shared__ TreeNode nodes[kSharedNodes];
    __shared__ TreeEntry entries[kSharedEntries];
    const PointArgs &a = b.a[blockIdx.y];
    const Tree t = load_tree(a, nodes, entries);
    const uint64_t tid = static_cast<uint64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
    const uint64_t threads = static_cast<uint64_t>(gridDim.x) * blockDim.x;
    if (a.pack) point_copy<V, true>(a, t, tid, threads);
    else point_copy<V, false>(a, t, tid, threads);
}

template <int V>
cudaError_t launch(const PointArgs &a, dim3 grid, dim3 block, cudaStream_t stream) {
    return launch_kernel(a.pack ? point_kernel<V, true> : point_kernel<V, false>, grid, block, 0, stream, a);
}

}  // namespace

cudaError_t launch_point(const PointArgs &a, cudaStream_t stream) {
    if (a.end <= a.offset) return cudaSuccess;
    constexpr unsigned kBlock = 256;
    const dim3 grid(grid_blocks(threads_of(a), kBlock));
    const dim3 block(kBlock);
    switch (a.vec) {
    case 16: return launch<16>(a, grid, block, stream);
    case 8: return launch<8>(a, grid, block, stream);
    case 4: return launch<4>(a, grid, block, stream);
    case 2: return launch<2>(a, grid, block, stream);
    default: return launch<1>(a, grid, block, stream);
    }
}

cudaError_t launch_point_batch(const PointArgs *args, int n, cudaStream_t stream) {
    return launch_in_batches<PointBatch>(args, n, [&](const PointBatch &b, int rows, dim3 grid, dim3 block) {
        int vec = 16;  // powers of two: the least serves all
        for (int i = 0; i < rows; ++i) vec = std::min(vec, b.a[i].vec);
        const auto kernel = vec == 16 ? point_batch_kernel<16>
                            : vec == 8 ? point_batch_kernel<8>
                            : vec == 4 ? point_batch_kernel<4>
                            : vec == 2 ? point_batch_kernel<2>
                                       : point_batch_kernel<1>;
        return launch_kernel(kernel, grid, block, 0, stream, b);
    });
}

}  // namespace ucxdt::kernels
