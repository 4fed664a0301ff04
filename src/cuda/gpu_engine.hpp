// The GPU pack engine: moves any byte window of a plan's packed stream between a user buffer
// in the plan's layout and a packed buffer, enqueued on a stream, by the method that
// method.hpp picks (copy engine, 2-D copy engine, strided kernel, work-unit kernel).
#pragma once

#include "dt/plan.hpp"
#include "cuda/memory_type.hpp"
#include "cuda/method.hpp"

#include <ucxdt/ucxdt_cuda.h>

#include <cuda_runtime_api.h>

namespace ucxdt::cuda {

class LaunchBatch;

/// Enqueues on `stream` the copy of packed bytes [offset, offset + length) of (layout, p)
/// to or from `packed` (which holds exactly those bytes); pack: layout -> packed. Both
/// buffers must be accessible from `device`, which must be current; `peer`: `packed` is
/// another GPU's memory (the choice of method differs). With `batch`, strided and work-unit
/// kernels append their arguments to it instead of launching (LaunchBatch::launch runs them
/// later on this stream; the method model then counts the launch as paid); other methods
/// enqueue at once.
ucxdt_status_t transfer_async(const Plan &p, char *layout, char *packed, int64_t offset,
                              int64_t length, bool pack, int device, cudaStream_t stream,
                              bool peer = false, LaunchBatch *batch = nullptr);

/// Where `packed` lies as the method model sees it, given its memory type: Packed::peer when
/// `peer`; Packed::host for page-locked host memory where a 2-D copy could move the plan (one
/// strided level), which prices rows across the host link; else Packed::device.
Packed packed_side(const Plan &p, MemoryType packed, bool peer);

/// transfer_async for a caller that has classified `packed` already (packed_side): no pointer
/// query, which costs 0.1-0.25 us of host time a call on an H200 host.
ucxdt_status_t transfer_async(const Plan &p, char *layout, char *packed, int64_t offset,
                              int64_t length, bool pack, int device, cudaStream_t stream,
                              Packed where, LaunchBatch *batch = nullptr);

/// Whether copy_layouts_async takes (from, to): both STRIDED, with runs of equal length, equal
/// packed sizes, and at most kernels::kMaxDims dims each.
bool strided_pair(const Plan &from, const Plan &to);

/// Enqueues on `stream` the copy of every run of (from_buf, from) to the run of the same index
/// of (to_buf, to), without a packed stream in between: the same bytes as packing `from` and
/// unpacking into `to`. Requires strided_pair(from, to) (else UCXDT_ERR_INVALID_PARAM). Both
/// buffers must be accessible from `device`, which must be current; `peer`: `to_buf` is another
/// GPU's memory. Two plans of the same shape (same_shape) are copied in address order
/// (address_ordered), and as one cudaMemcpyAsync on `stream` where that order is one run, with
/// or without `batch`. Otherwise without `batch`, one 2-D copy where both plans have one level
/// and the method model picks the copy engine, else the strided kernel; with `batch`, always the
/// kernel, into the batch (as transfer_async). Writes only the bytes of `to`'s runs.
ucxdt_status_t copy_layouts_async(const Plan &from, char *from_buf, const Plan &to, char *to_buf, int device,
                                  cudaStream_t stream, bool peer, LaunchBatch *batch = nullptr);

/// Enqueues on `stream` the copy of every byte of (from_buf, p) to the same displacement from
/// `to_buf`: the same bytes as packing from `from_buf` and unpacking into `to_buf`, without a
/// packed stream in between. BLOCK_LIST plans: the work-unit kernel (into `batch` when given, as
/// transfer_async) or the point kernel, with the second buffer in place of the packed one;
/// STRIDED plans: copy_layouts_async of p into itself, in address order; others
/// UCXDT_ERR_INVALID_PARAM. Both buffers must be accessible from `device`, which must
/// be current. Writes only bytes of p's type map.
ucxdt_status_t copy_same_layout_async(const Plan &p, char *from_buf, char *to_buf, int device,
                                      cudaStream_t stream, LaunchBatch *batch = nullptr);

/// The kernel path alone, for STRIDED and CONTIGUOUS plans (calibration, tests). host_link: the
/// packed buffer is page-locked host memory, where the kernel is chosen as transfer_async chooses
/// it (the strided kernel, or the tile kernel for dense runs it would move 1-4 bytes at a time).
ucxdt_status_t launch_plan_kernel(const Plan &p, char *layout, char *packed, int64_t offset,
                                  int64_t length, bool pack, cudaStream_t stream, bool host_link = false);

}  // namespace ucxdt::cuda
