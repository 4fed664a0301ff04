// Work units of BLOCK_LIST plans (Wu et al., HPDC'16, 3.1): the plan's blocks cut on the
// host into units of at most kUnitBytes, uploaded once per (plan, device) and kept in an
// LRU cache bounded by the device memory it holds (env UCXDT_GPU_PLAN_CACHE_MB, default 256).
#pragma once

#include "pack_kernels.hpp"
#include "ucp_dt/plan.hpp"

#include <cuda_runtime_api.h>

#include <memory>
#include <vector>

namespace ucxdt::cuda {

/// Blocks longer than this are cut, so that a group of lanes gets a bounded share of work.
constexpr int64_t kUnitBytes = 2048;

struct DeviceUnits {
    std::vector<kernels::Unit> host;   // the same units, for seeking on the host
    kernels::Unit *device = nullptr;   // on `device`
    int device_id = -1;
    int lanes_log2 = 5;                // lanes per unit, from the mean unit length
    ~DeviceUnits();
};

/// Cuts the unit list of plan `p` (BLOCK_LIST) into units, in packed order.
std::vector<kernels::Unit> cut_units(const Plan &p);

/// The units of `p` on `device`, uploaded on first use. Holding the returned pointer keeps
/// them alive while work that uses them is enqueued. `fresh` tells whether this call built
/// them (for first-use measurements).
ucxdt_status_t device_units(const Plan &p, int device, std::shared_ptr<const DeviceUnits> *units,
                            bool *fresh = nullptr);

/// Index of the unit that holds packed byte `pos` (0 <= pos < unit size) of one outer index.
uint64_t unit_at(const std::vector<kernels::Unit> &units, int64_t pos);

}  // namespace ucxdt::cuda
