// Launch interface of the element-wise reduction kernel (inout[i] = in[i] op inout[i], as
// MPI_Reduce_local), shared by nvcc (kernels/reduce_kernel.cu) and its host entry point
// (src/cuda/reduce_api.cpp). Element types and ops are plain enums here: kernels/ sees nothing
// of ucxdt's public headers, and the host side maps its enums onto these.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

namespace ucxdt::kernels {

enum class ReduceElement { I8, I16, I32, I64, U8, U16, U32, U64, F32, F64, C32, C64 };
enum class ReduceOp { SUM, PROD, MIN, MAX, LAND, LOR, LXOR, BAND, BOR, BXOR };

/// Enqueues inout[i] = in[i] op inout[i], i < count, on stream. The caller has checked that op
/// is defined on the element type (MPI-4.1 §6.9.2): no MIN/MAX on complex, no logical or
/// bitwise op on floating point. Both arrays aligned to their element and GPU-accessible.
cudaError_t launch_reduce(const void *in, void *inout, int64_t count, ReduceElement element, ReduceOp op,
                          cudaStream_t stream);

}  // namespace ucxdt::kernels
