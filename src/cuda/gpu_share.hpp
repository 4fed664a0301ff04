// How ucxdt's GPU work shares the GPU with the application's (Wu et al. HPDC'16 §5.4): the
// priority of ucxdt's streams, and the bound on the multiprocessors its kernels occupy.
#pragma once

#include "ucxdt/ucxdt.h"

#include <cuda_runtime_api.h>

#include <string>

namespace ucxdt::cuda {

/// The priorities a ucxdt stream may take (UCXDT_GPU_STREAM_PRIORITY).
enum class StreamPriority { HIGH, NORMAL, LOW };

/// UCXDT_GPU_STREAM_PRIORITY, read once per process: `high` (the default), `normal` or `low`;
/// anything else is the default. High lets the block scheduler start the blocks of ucxdt's
/// short pack kernels ahead of pending blocks of an application's long kernels, so that a halo
/// exchange overlaps a stencil's interior compute (CUDA Programming Guide, "Stream
/// Priorities"; Wu et al. HPDC'16 §5.4).
StreamPriority stream_priority();

/// The CUDA priority value of `p` on the current device (lower is more urgent).
int cuda_priority(StreamPriority p);

/// Creates `*stream` on the current device: blocking (ordered after the legacy default stream,
/// as cudaMemcpy is, so that a program's pageable copy has landed before ucxdt reads it), at
/// stream_priority(). `what` names the stream in the error. Thread-safe.
ucxdt_status_t create_stream(cudaStream_t *stream, const char *what);

/// The settings, as lines of NAME=value for ucxdt_worker_print_config: UCXDT_GPU_STREAM_PRIORITY
/// and UCXDT_GPU_SMS (kernels/pack_kernels.hpp, sm_bound).
std::string sharing_settings();

}  // namespace ucxdt::cuda
