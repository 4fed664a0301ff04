// Which mechanism moves a plan on a GPU: the copy engine or a kernel, chosen by a cost model
// whose constants are measured once per device (HAND, Shi et al.: automatic selection).
#pragma once

#include "ucp_dt/plan.hpp"

#include <ucxdt/ucxdt_cuda.h>

namespace ucxdt::cuda {

/// Where the packed bytes of a copy live, seen from the GPU that makes it.
enum class Packed {
    device,  // its own memory
    peer,    // another GPU's (CUDA IPC or peer access)
    host,    // page-locked host memory (zero copy, across the host link)
};

/// Measured once per device, on first need.
struct CopyCosts {
    double row_seconds = 0;       // cudaMemcpy2DAsync cost per row (fitted on 32-byte rows)
    double copy_bytes_per_s = 0;  // its bandwidth
    double kernel_bytes_per_s = 0;  // strided kernel bandwidth on 1 KiB runs
    double op_seconds = 0;  // one small kernel, from its launch until a query sees its event done
    // Packing into page-locked host memory, from the call to the end on the GPU: a 2-D copy
    // costs host_copy_seconds + bytes * host_copy_byte_seconds + rows * host_row_seconds, a
    // strided kernel host_kernel_seconds + bytes * host_kernel_byte_seconds (0: not measured).
    double host_copy_seconds = 0, host_copy_byte_seconds = 0, host_row_seconds = 0;
    double host_kernel_seconds = 0, host_kernel_byte_seconds = 0;
};

/// The costs of `device`, measured on the first call for it (about 50 ms of GPU work on its
/// internal stream) and cached for the process. Thread safe.
ucxdt_status_t device_costs(int device, CopyCosts *out);

/// The method for plan `p` on `device`, whose packed buffer lives `where`. Env
/// UCXDT_GPU_METHOD=kernel|copy forces kernels or the 2-D copy engine wherever the plan allows
/// it. `batched`: a kernel would share a launch already paid (LaunchBatch), so a copy-engine call
/// costs its enqueueing on top (within the GPU and to a peer, where the launch is what costs).
ucxdt_status_t choose_method(const Plan &p, int device, Packed where, ucxdt_gpu_method_t *method,
                             bool batched = false);

}  // namespace ucxdt::cuda
