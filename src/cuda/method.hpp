// Which mechanism moves a plan on a GPU: the copy engine or a kernel, chosen by a cost model
// whose constants are measured once per device (HAND, Shi et al.: automatic selection).
#pragma once

#include "dt/plan.hpp"

#include <ucxdt/ucxdt_cuda.h>

#include <algorithm>
#include <cstdlib>

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
/// costs its enqueueing on top (within the GPU and to a peer, where the launch is what costs);
/// alone, to a peer, a kernel's launch costs about that much more than a copy's call.
/// `pack`: the direction, which host memory prices apart (CopyCosts::to_host, from_host).
ucxdt_status_t choose_method(const Plan &p, int device, Packed where, ucxdt_gpu_method_t *method,
                             bool batched = false, bool pack = true);

/// The fastest peer link known, NVLink 4 at 450 GB/s one way, in bytes a second.
inline constexpr double kFastestPeerLinkBytesPerS = 450e9;

/// Whether a strided plan p's runs should cross a peer link one by one (a kernel reading or
/// writing the other GPU's layout, run by run) rather than be packed, copied contiguously and
/// unpacked (the fragment pipeline). Short runs cost the link a transaction each, so many of
/// them lose to the pipeline's fixed cost, which is higher for a message `alone` (the only send
/// in progress, no GPU work of its worker in flight: its two kernels, their launches and the hop
/// between them run one after the other; runs of whole words closer than a 32-byte sector then
/// count as the sectors they fill) than in a window, where launches are shared and the kernels
/// of several messages overlap. Other plan classes: true (not judged). Pure.
inline bool runs_cross_peer_link(const Plan &p, bool alone = false) {
    // Two H100s over NVLink, windows of 32 (performance-log.md, run 28): a batched kernel moved
    // 5.3-7.1 G runs/s of 8- and 16-byte runs across the link, so 65,536 runs of 8 B took
    // 10.4-12.6 us a message and 262,144 took 44 us, where packing, one contiguous copy and
    // unpacking took 7.3-12 us and 9.3-12 us; 32,768 runs of 16 B (fft2_scatter) ran at 1.0-1.5
    // of UCP's contiguous rate run by run. The pipeline costs the link time of its bytes and
    // about 4 us more a message in a window. One message at a time on two H200s (run 47): the
    // pipeline took 18-21 us more than the contiguous message of its bytes (256 KiB-1 MiB of 4-
    // and 8-byte runs), run by run 0.10-0.17 ns more per sector touched (4-byte runs 8 B apart:
    // four to a sector).
    constexpr double kRunSeconds = 0.15e-9, kWindowPipelineSeconds = 4e-6, kAlonePipelineSeconds = 18e-6;
    if (p.cls != UCXDT_PLAN_STRIDED || p.block_len <= 0) return true;
    // Alone, runs of whole 4-byte words (the kernel's word copies; 17-byte struct elements 32 B
    // apart took 1.3 ns a run, run 47) closer than a sector count as the sectors they fill; a
    // window, and other runs, keep run 28's rule, by runs.
    const int64_t stride = p.dims.empty() ? p.block_len : std::abs(p.dims.back().stride);
    const bool words = alone && p.block_len % 4 == 0 && stride % 4 == 0;
    const double per_sector = words && p.block_len < 32 && stride < 32
                                  ? static_cast<double>(std::max(p.block_len, stride)) / 32 : 1;
    const double runs = static_cast<double>(p.packed_size / p.block_len) * per_sector;
    return runs * kRunSeconds <= static_cast<double>(p.packed_size) / kFastestPeerLinkBytesPerS +
                                     (words ? kAlonePipelineSeconds : kWindowPipelineSeconds);
}

}  // namespace ucxdt::cuda
