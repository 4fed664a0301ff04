// The GPU pack engine: moves any byte window of a plan's packed stream between a user buffer
// in the plan's layout and a packed buffer, enqueued on a stream, by the method that
// method.hpp picks (copy engine, 2-D copy engine, strided kernel, work-unit kernel).
#pragma once

#include "ucp_dt/plan.hpp"

#include <ucxdt/ucxdt_cuda.h>

#include <cuda_runtime_api.h>

namespace ucxdt::cuda {

/// Enqueues on `stream` the copy of packed bytes [offset, offset + length) of (layout, p)
/// to or from `packed` (which holds exactly those bytes); pack: layout -> packed. Both
/// buffers must be accessible from `device`, which must be current; `peer`: `packed` is
/// another GPU's memory (the choice of method differs).
ucxdt_status_t transfer_async(const Plan &p, char *layout, char *packed, int64_t offset,
                              int64_t length, bool pack, int device, cudaStream_t stream,
                              bool peer = false);

/// The kernel path alone, for STRIDED and CONTIGUOUS plans (calibration, tests).
ucxdt_status_t launch_plan_kernel(const Plan &p, char *layout, char *packed, int64_t offset,
                                  int64_t length, bool pack, cudaStream_t stream);

}  // namespace ucxdt::cuda
