// Point-based pack/unpack (Jenkins et al., TPDS'14, 3.2): no list of blocks at all; each
// thread computes the address of its packed bytes from the layout tree, which sits in shared
// memory when it fits. For types of many tiny blocks, whose unit list would outweigh the data.
#include "pack_kernels.hpp"

#include "copy.cuh"

namespace ucxdt::kernels {

namespace {

constexpr int kSharedNodes = 256;

template <int V, bool PACK>
__global__ void point_kernel(const __grid_constant__ PointArgs a) {
    using Vec = typename VecOf<V>::type;
    __shared__ TreeNode shared[kSharedNodes];
    const bool in_shared = a.num_nodes <= kSharedNodes;
    if (in_shared)
        for (int i = threadIdx.x; i < a.num_nodes; i += blockDim.x) shared[i] = a.nodes[i];
    __syncthreads();
    const TreeNode *nodes = in_shared ? shared : a.nodes;

    const uint64_t threads = static_cast<uint64_t>(gridDim.x) * blockDim.x;
    const uint64_t chunks = static_cast<uint64_t>(a.end - a.offset) / V;
    for (uint64_t c = static_cast<uint64_t>(blockIdx.x) * blockDim.x + threadIdx.x; c < chunks;
         c += threads) {
        const int64_t pos = a.offset + static_cast<int64_t>(c) * V;
        const uint64_t outer = a.unit_size.div(static_cast<uint64_t>(pos));
        uint64_t q = static_cast<uint64_t>(pos) - outer * a.unit_size.d;
        int64_t disp = a.base + outer_disp(a.dims, outer);
        for (int64_t node = 0;;) {
            const TreeNode &n = nodes[node];
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
                if (static_cast<uint64_t>(a.entries[mid].prefix) <= q) lo = mid;
                else hi = mid - 1;
            }
            const TreeEntry e = a.entries[lo];
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

template <int V>
cudaError_t launch(const PointArgs &a, dim3 grid, dim3 block, cudaStream_t stream) {
    if (a.pack) point_kernel<V, true><<<grid, block, 0, stream>>>(a);
    else point_kernel<V, false><<<grid, block, 0, stream>>>(a);
    return cudaGetLastError();
}

}  // namespace

cudaError_t launch_point(const PointArgs &a, cudaStream_t stream) {
    if (a.end <= a.offset) return cudaSuccess;
    constexpr unsigned kBlock = 256;
    const dim3 grid(grid_blocks(static_cast<uint64_t>(a.end - a.offset) / a.vec, kBlock));
    const dim3 block(kBlock);
    switch (a.vec) {
    case 16: return launch<16>(a, grid, block, stream);
    case 8: return launch<8>(a, grid, block, stream);
    case 4: return launch<4>(a, grid, block, stream);
    case 2: return launch<2>(a, grid, block, stream);
    default: return launch<1>(a, grid, block, stream);
    }
}

}  // namespace ucxdt::kernels
