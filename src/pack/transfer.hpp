// Routes a packed-stream window to the engine that can reach both buffers: the CPU engine
// for host memory, the GPU engine when either side is device or managed memory, and the
// bounded staging buffers when one side is pageable host memory that a GPU cannot touch.
#pragma once

#include "dt/plan.hpp"

#include <cuda_runtime_api.h>

namespace ucxdt {

namespace cuda {
class LaunchBatch;
}

/// The GPU holding the layout side of (buf, p), or -1 when it is not device or managed
/// memory. Told by the layout's first data byte: the buffer pointer may be NULL with absolute
/// displacements (MPI_BOTTOM), and the plan's origin need not be in memory.
int layout_gpu(const Plan &p, const void *buf);

/// Moves packed bytes [offset, offset + length) of (layout, p) to or from `packed` (pack:
/// layout -> packed) and returns when they are in place. When stream is non-null, enqueues
/// the work on *stream instead, without host synchronization; both buffers must then be
/// GPU-accessible (UCXDT_ERR_UNSUPPORTED otherwise). `peer`: `packed` is known to be another
/// GPU's memory (a CUDA IPC mapping, which the runtime reports as the importing device's).
ucxdt_status_t transfer(const Plan &p, char *layout, char *packed, int64_t offset, int64_t length,
                        bool pack, const cudaStream_t *stream, bool peer = false);

/// transfer() enqueued on `stream` for a caller that already knows where both buffers are: the
/// layout on GPU `device`, the packed bytes in GPU memory (that GPU's, or another's when
/// `peer`). Skips transfer()'s two memory-type queries, which cost as much as the launch for
/// the fragments of small messages. `batch`: kernels go there (cuda::transfer_async).
ucxdt_status_t transfer_on_gpu(const Plan &p, char *layout, char *packed, int64_t offset, int64_t length,
                               bool pack, int device, cudaStream_t stream, bool peer,
                               cuda::LaunchBatch *batch = nullptr);

}  // namespace ucxdt
