// The layout tree of a BLOCK_LIST plan flattened into arrays for the point-based kernel,
// uploaded once per (plan, device) into the device cache. Subtrees shared in the layout
// (indexed_block entries, repeated struct members) stay shared, so the arrays are as small as
// the type's description, not as large as its block list.
#pragma once

#include "cuda/device_cache.hpp"
#include "kernels/pack_kernels.hpp"
#include "dt/plan.hpp"

#include <cuda_runtime_api.h>

#include <memory>

namespace ucxdt::cuda {

struct DeviceTree : DeviceObject {
    kernels::TreeNode *nodes = nullptr;      // on device_id
    kernels::TreeEntry *entries = nullptr;   // on device_id
    int num_nodes = 0, num_entries = 0;
    int64_t align = 0;  // gcd of every block length, displacement and stride of the tree
    int device_id = -1;
    ~DeviceTree() override;
};

/// Whether a plan's unit list would hold more bytes than the data it describes.
bool list_outweighs_data(const Plan &p);

/// The tree of BLOCK_LIST plan `p` on `device` (current), from the cache or uploaded now.
ucxdt_status_t device_tree(const Plan &p, int device, std::shared_ptr<const DeviceTree> *tree);

}  // namespace ucxdt::cuda
