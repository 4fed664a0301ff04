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
    /// Moving packed bytes across the host link, one direction, from the call to the end on the
    /// GPU: a 2-D copy costs copy_seconds + bytes * copy_byte_seconds + rows * row_seconds, a
    /// strided kernel kernel_seconds + bytes * kernel_byte_seconds (all 0: not measured).
    struct HostLink {
        double copy_seconds = 0, copy_byte_seconds = 0, row_seconds = 0;
        double kernel_seconds = 0, kernel_byte_seconds = 0;
        bool measured() const { return copy_seconds + kernel_seconds > 0; }
    };
    HostLink to_host;    // packing into page-locked host memory (the kernel writes across the link)
    HostLink from_host;  // unpacking out of it (the kernel reads across the link)
};

/// The costs of `device`, measured on the first call for it (about 50 ms of GPU work on its
/// internal stream) and cached for the process. Thread safe.
ucxdt_status_t device_costs(int device, CopyCosts *out);

/// The method for plan `p` on `device`, whose packed buffer lives `where`. Env
/// UCXDT_GPU_METHOD=kernel|copy forces kernels or the 2-D copy engine wherever the plan allows
/// it. `batched`: a kernel would share a launch already paid (LaunchBatch), so a copy-engine call
/// costs its enqueueing on top (within the GPU and to a peer, where the launch is what costs).
/// `pack`: the direction, which host memory prices apart (CopyCosts::to_host, from_host).
ucxdt_status_t choose_method(const Plan &p, int device, Packed where, ucxdt_gpu_method_t *method,
                             bool batched = false, bool pack = true);

}  // namespace ucxdt::cuda
