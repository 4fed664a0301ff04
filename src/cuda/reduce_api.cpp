// ucxdt_reduce_local_async (ucxdt_cuda.h): MPI's predefined ops on GPU arrays. The host side
// checks what MPI defines on each primitive (MPI-4.1 §6.9.2) and maps it onto the kernel's
// element types (kernels/reduce_kernels.hpp).
#include "dt/api_util.hpp"
#include "kernels/reduce_kernels.hpp"

#include <ucxdt/ucxdt_cuda.h>

#include <string>

using namespace ucxdt;
using kernels::ReduceElement;
using kernels::ReduceOp;

namespace {

enum class Class { INTEGER, BYTE, FLOATING, COMPLEX, NONE };

Class class_of(int primitive, ReduceElement *e) {
    switch (primitive) {
    case UCXDT_INT8: *e = ReduceElement::I8; return Class::INTEGER;
    case UCXDT_INT16: *e = ReduceElement::I16; return Class::INTEGER;
    case UCXDT_INT32: *e = ReduceElement::I32; return Class::INTEGER;
    case UCXDT_INT64: *e = ReduceElement::I64; return Class::INTEGER;
    case UCXDT_UINT8: *e = ReduceElement::U8; return Class::INTEGER;
    case UCXDT_UINT16: *e = ReduceElement::U16; return Class::INTEGER;
    case UCXDT_UINT32: *e = ReduceElement::U32; return Class::INTEGER;
    case UCXDT_UINT64: *e = ReduceElement::U64; return Class::INTEGER;
    case UCXDT_BYTE: *e = ReduceElement::U8; return Class::BYTE;
    case UCXDT_FLOAT: *e = ReduceElement::F32; return Class::FLOATING;
    case UCXDT_DOUBLE: *e = ReduceElement::F64; return Class::FLOATING;
    case UCXDT_FLOAT_COMPLEX: *e = ReduceElement::C32; return Class::COMPLEX;
    case UCXDT_DOUBLE_COMPLEX: *e = ReduceElement::C64; return Class::COMPLEX;
    default: return Class::NONE;
    }
}

bool defined(Class c, ReduceOp op) {
    const bool arithmetic = op == ReduceOp::SUM || op == ReduceOp::PROD;
    const bool order = op == ReduceOp::MIN || op == ReduceOp::MAX;
    const bool bitwise = op == ReduceOp::BAND || op == ReduceOp::BOR || op == ReduceOp::BXOR;
    switch (c) {
    case Class::INTEGER: return true;
    case Class::BYTE: return bitwise;
    case Class::FLOATING: return arithmetic || order;
    case Class::COMPLEX: return arithmetic;
    case Class::NONE: return false;
    }
    return false;
}

}  // namespace

extern "C" ucxdt_status_t ucxdt_reduce_local_async(const void *inbuf, void *inoutbuf, int64_t count,
                                                   ucxdt_primitive_t primitive, ucxdt_op_t op, cudaStream_t stream) {
    return guard([&]() -> ucxdt_status_t {
        const int p = enum_value(primitive), o = enum_value(op);
        if (count < 0) return fail(UCXDT_ERR_INVALID_PARAM, "count must be >= 0");
        if (count > 0 && (!inbuf || !inoutbuf)) return fail(UCXDT_ERR_INVALID_PARAM, "inbuf and inoutbuf must not be NULL");
        if (p < 0 || p >= UCXDT_PRIMITIVE_LAST) return fail(UCXDT_ERR_INVALID_PARAM, "primitive is out of range");
        if (o < 0 || o >= UCXDT_OP_LAST) return fail(UCXDT_ERR_INVALID_PARAM, "op is out of range");
        ReduceElement e{};
        const ReduceOp kop = static_cast<ReduceOp>(o);  // the two enums list the ops in one order
        const Class c = class_of(p, &e);
        if (!defined(c, kop))
            return fail(UCXDT_ERR_UNSUPPORTED, "op " + std::to_string(o) + " is not reduced on primitive " +
                                                   std::to_string(p) + " here (MPI-4.1 6.9.2)");
        const cudaError_t err = kernels::launch_reduce(inbuf, inoutbuf, count, e, kop, stream);
        if (err != cudaSuccess)
            return fail(UCXDT_ERR_CUDA, std::string("reduction kernel: ") + cudaGetErrorString(err));
        return UCXDT_OK;
    });
}
