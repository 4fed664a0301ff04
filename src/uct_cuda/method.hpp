// Which mechanism moves a plan on a GPU: the copy engine or a kernel, chosen by a cost model
// whose constants are measured once per device (HAND, Shi et al.: automatic selection).
#pragma once

#include "ucp_dt/plan.hpp"

#include <ucxdt/ucxdt_cuda.h>

namespace ucxdt::cuda {

/// Measured once per device, on first need.
struct CopyCosts {
    double row_seconds = 0;       // cudaMemcpy2DAsync cost per row (fitted on 32-byte rows)
    double copy_bytes_per_s = 0;  // its bandwidth
    double kernel_bytes_per_s = 0;  // strided kernel bandwidth on 1 KiB runs
    double op_seconds = 0;  // one small kernel, from its launch until a query sees its event done
};

/// The costs of `device`, measured on the first call for it (about 50 ms of GPU work on its
/// internal stream) and cached for the process. Thread safe.
ucxdt_status_t device_costs(int device, CopyCosts *out);

/// The method for plan `p` on `device`; `peer`: the packed buffer is another GPU's memory
/// (CUDA IPC or peer access). Env UCXDT_GPU_METHOD=kernel|copy forces kernels or the 2-D copy
/// engine wherever the plan allows it. `batched`: a kernel would share a launch already paid
/// (LaunchBatch), so a copy-engine call costs its enqueueing on top.
ucxdt_status_t choose_method(const Plan &p, int device, bool peer, ucxdt_gpu_method_t *method,
                             bool batched = false);

}  // namespace ucxdt::cuda
