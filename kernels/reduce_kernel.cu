// The element-wise reduction of MPI's predefined ops on GPU arrays: one grid-stride loop per
// (element type, op), inout[i] = in[i] op inout[i], as MPI_Reduce_local (MPI-4.1 §6.9.7).
// Memory-bound: each element is read twice and written once.
#include "launch.cuh"
#include "reduce_kernels.hpp"

#include <algorithm>

namespace ucxdt::kernels {

namespace {

template <typename T>
struct Complex {
    T re, im;
};

template <ReduceOp Op, typename T>
__device__ __forceinline__ T apply(T a, T b) {
    if constexpr (Op == ReduceOp::SUM) return T(a + b);
    else if constexpr (Op == ReduceOp::PROD) return T(a * b);
    else if constexpr (Op == ReduceOp::MIN) return b < a ? b : a;
    else if constexpr (Op == ReduceOp::MAX) return b > a ? b : a;
    else if constexpr (Op == ReduceOp::LAND) return T((a != 0) && (b != 0));
    else if constexpr (Op == ReduceOp::LOR) return T((a != 0) || (b != 0));
    else if constexpr (Op == ReduceOp::LXOR) return T((a != 0) != (b != 0));
    else if constexpr (Op == ReduceOp::BAND) return T(a & b);
    else if constexpr (Op == ReduceOp::BOR) return T(a | b);
    else return T(a ^ b);
}

template <ReduceOp Op, typename T>
__device__ __forceinline__ Complex<T> apply(Complex<T> a, Complex<T> b) {
    if constexpr (Op == ReduceOp::SUM) return {a.re + b.re, a.im + b.im};
    else return {a.re * b.re - a.im * b.im, a.re * b.im + a.im * b.re};  // PROD
}

template <typename T>
struct Args {
    const T *in;
    T *inout;
    int64_t count;
};

template <ReduceOp Op, typename T>
__global__ void reduce_kernel(Args<T> a) {
    const int64_t stride = int64_t{gridDim.x} * blockDim.x;
    for (int64_t i = int64_t{blockIdx.x} * blockDim.x + threadIdx.x; i < a.count; i += stride)
        a.inout[i] = apply<Op>(a.in[i], a.inout[i]);
}

template <ReduceOp Op, typename T>
cudaError_t launch(const void *in, void *inout, int64_t count, cudaStream_t stream) {
    constexpr int kThreads = 256;
    // Enough blocks to fill an H200 several times over; the loop covers the rest.
    const int64_t blocks = std::min<int64_t>((count + kThreads - 1) / kThreads, 4096);
    const Args<T> a{static_cast<const T *>(in), static_cast<T *>(inout), count};
    return launch_kernel(reduce_kernel<Op, T>, dim3(unsigned(blocks)), dim3(kThreads), 0, stream, a);
}

template <typename T>
cudaError_t integer(const void *in, void *inout, int64_t count, ReduceOp op, cudaStream_t s) {
    switch (op) {
    case ReduceOp::SUM: return launch<ReduceOp::SUM, T>(in, inout, count, s);
    case ReduceOp::PROD: return launch<ReduceOp::PROD, T>(in, inout, count, s);
    case ReduceOp::MIN: return launch<ReduceOp::MIN, T>(in, inout, count, s);
    case ReduceOp::MAX: return launch<ReduceOp::MAX, T>(in, inout, count, s);
    case ReduceOp::LAND: return launch<ReduceOp::LAND, T>(in, inout, count, s);
    case ReduceOp::LOR: return launch<ReduceOp::LOR, T>(in, inout, count, s);
    case ReduceOp::LXOR: return launch<ReduceOp::LXOR, T>(in, inout, count, s);
    case ReduceOp::BAND: return launch<ReduceOp::BAND, T>(in, inout, count, s);
    case ReduceOp::BOR: return launch<ReduceOp::BOR, T>(in, inout, count, s);
    case ReduceOp::BXOR: return launch<ReduceOp::BXOR, T>(in, inout, count, s);
    }
    return cudaErrorInvalidValue;
}

template <typename T>
cudaError_t floating(const void *in, void *inout, int64_t count, ReduceOp op, cudaStream_t s) {
    switch (op) {
    case ReduceOp::SUM: return launch<ReduceOp::SUM, T>(in, inout, count, s);
    case ReduceOp::PROD: return launch<ReduceOp::PROD, T>(in, inout, count, s);
    case ReduceOp::MIN: return launch<ReduceOp::MIN, T>(in, inout, count, s);
    case ReduceOp::MAX: return launch<ReduceOp::MAX, T>(in, inout, count, s);
    default: return cudaErrorInvalidValue;
    }
}

template <typename T>
cudaError_t complex(const void *in, void *inout, int64_t count, ReduceOp op, cudaStream_t s) {
    switch (op) {
    case ReduceOp::SUM: return launch<ReduceOp::SUM, Complex<T>>(in, inout, count, s);
    case ReduceOp::PROD: return launch<ReduceOp::PROD, Complex<T>>(in, inout, count, s);
    default: return cudaErrorInvalidValue;
    }
}

}  // namespace

cudaError_t launch_reduce(const void *in, void *inout, int64_t count, ReduceElement element, ReduceOp op,
                          cudaStream_t stream) {
    if (count <= 0) return cudaSuccess;
    switch (element) {
    case ReduceElement::I8: return integer<int8_t>(in, inout, count, op, stream);
    case ReduceElement::I16: return integer<int16_t>(in, inout, count, op, stream);
    case ReduceElement::I32: return integer<int32_t>(in, inout, count, op, stream);
    case ReduceElement::I64: return integer<int64_t>(in, inout, count, op, stream);
    case ReduceElement::U8: return integer<uint8_t>(in, inout, count, op, stream);
    case ReduceElement::U16: return integer<uint16_t>(in, inout, count, op, stream);
    case ReduceElement::U32: return integer<uint32_t>(in, inout, count, op, stream);
    case ReduceElement::U64: return integer<uint64_t>(in, inout, count, op, stream);
    case ReduceElement::F32: return floating<float>(in, inout, count, op, stream);
    case ReduceElement::F64: return floating<double>(in, inout, count, op, stream);
    case ReduceElement::C32: return complex<float>(in, inout, count, op, stream);
    case ReduceElement::C64: return complex<double>(in, inout, count, op, stream);
    }
    return cudaErrorInvalidValue;
}

}  // namespace ucxdt::kernels
