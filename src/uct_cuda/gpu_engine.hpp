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

/// Whether copy_layouts_async takes (from, to): both STRIDED, with runs of equal length, equal
/// packed sizes, and at most kernels::kMaxDims dims each.
bool strided_pair(const Plan &from, const Plan &to);

/// Enqueues on `stream` the copy of every run of (from_buf, from) to the run of the same index
/// of (to_buf, to), without a packed stream in between: the same bytes as packing `from` and
/// unpacking into `to`. Requires strided_pair(from, to) (else UCXDT_ERR_INVALID_PARAM). Both
/// buffers must be accessible from `device`, which must be current; `peer`: `to_buf` is another
/// GPU's memory. One 2-D copy where both plans have one level and the method model picks the
/// copy engine, else the strided kernel. Writes only the bytes of `to`'s runs.
ucxdt_status_t copy_layouts_async(const Plan &from, char *from_buf, const Plan &to, char *to_buf, int device,
                                  cudaStream_t stream, bool peer);

/// One copy of copy_layouts_batch_async: (from_buf, *from) into (to_buf, *to).
struct LayoutCopy {
    const Plan *from = nullptr;
    char *from_buf = nullptr;
    const Plan *to = nullptr;
    char *to_buf = nullptr;
};

/// Enqueues on `stream` the `n` copies of copy_layouts_async as strided kernels of
/// kernels::kMaxBatch copies a launch, never 2-D copies: several small messages share a
/// launch (and the caller's event) where each would pay its own. Every pair must be
/// strided_pair (else UCXDT_ERR_INVALID_PARAM, nothing enqueued); buffers as for
/// copy_layouts_async, on the current device.
ucxdt_status_t copy_layouts_batch_async(const LayoutCopy *copies, int n, cudaStream_t stream);

/// Enqueues on `stream` the copy of every byte of (from_buf, p) to the same displacement from
/// `to_buf`: the same bytes as packing from `from_buf` and unpacking into `to_buf`, without a
/// packed stream in between. For BLOCK_LIST plans (UCXDT_ERR_INVALID_PARAM otherwise): the work-
/// unit or point kernel with the second buffer in place of the packed one. Both buffers must be
/// accessible from `device`, which must be current. Writes only bytes of p's type map.
ucxdt_status_t copy_same_layout_async(const Plan &p, char *from_buf, char *to_buf, int device,
                                      cudaStream_t stream);

/// One copy of copy_same_layout_batch_async: (from_buf, *plan) into (to_buf, *plan).
struct SameLayoutCopy {
    const Plan *plan = nullptr;
    char *from_buf = nullptr;
    char *to_buf = nullptr;
};

/// Enqueues on `stream` the `n` copies of copy_same_layout_async, those of the work-unit kernel
/// kernels::kMaxBatch to a launch (the point kernel's each their own). Every plan must be a
/// BLOCK_LIST (else UCXDT_ERR_INVALID_PARAM, nothing enqueued); buffers as for
/// copy_same_layout_async, on the current device `device`.
ucxdt_status_t copy_same_layout_batch_async(const SameLayoutCopy *copies, int n, int device, cudaStream_t stream);

/// Enqueues on `stream` the `ns` layout-to-layout copies and the `nb` same-layout copies of a
/// window of small transfers, each kind batched as above; a strided copy alone keeps
/// copy_layouts_async's choice of a 2-D copy (`peer`: its to_buf is another GPU's memory), a
/// block list alone copy_same_layout_async's. Errors as those calls give; on the current device
/// `device`.
ucxdt_status_t copy_window_async(const LayoutCopy *strided, int ns, const SameLayoutCopy *same, int nb, int device,
                                 cudaStream_t stream, bool peer);

/// The kernel path alone, for STRIDED and CONTIGUOUS plans (calibration, tests).
ucxdt_status_t launch_plan_kernel(const Plan &p, char *layout, char *packed, int64_t offset,
                                  int64_t length, bool pack, cudaStream_t stream);

}  // namespace ucxdt::cuda
