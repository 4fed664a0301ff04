// The stream-ordered packing entry points of ucxdt_cuda.h.
#include "dt/api_util.hpp"
#include "pack/pack_ops.hpp"
#include "dt/plan.hpp"
#include "cuda/cuda_check.hpp"
#include "cuda/method.hpp"

#include <ucxdt/ucxdt_cuda.h>

using namespace ucxdt;

extern "C" {

ucxdt_status_t ucxdt_pack_async(const void *inbuf, int64_t incount, ucxdt_type_t type,
                                void *outbuf, int64_t outsize, int64_t *position,
                                cudaStream_t stream) {
    return ops::pack(inbuf, incount, type, outbuf, outsize, position, &stream);
}

ucxdt_status_t ucxdt_unpack_async(const void *inbuf, int64_t insize, int64_t *position,
                                  void *outbuf, int64_t outcount, ucxdt_type_t type,
                                  cudaStream_t stream) {
    return ops::unpack(inbuf, insize, position, outbuf, outcount, type, &stream);
}

ucxdt_status_t ucxdt_pack_range_async(const void *buf, int64_t count, ucxdt_type_t type,
                                      int64_t offset, void *packed, int64_t length,
                                      cudaStream_t stream) {
    return ops::pack_range(buf, count, type, offset, packed, length, &stream);
}

ucxdt_status_t ucxdt_unpack_range_async(const void *packed, int64_t offset, int64_t length,
                                        void *buf, int64_t count, ucxdt_type_t type,
                                        cudaStream_t stream) {
    return ops::unpack_range(packed, offset, length, buf, count, type, &stream);
}

ucxdt_status_t ucxdt_gpu_method(ucxdt_type_t type, int64_t count, ucxdt_gpu_method_t *method) {
    return guard([&]() -> ucxdt_status_t {
        std::shared_ptr<Type> t;
        PlanPtr plan;
        int device = 0;
        if (!method) return fail(UCXDT_ERR_INVALID_PARAM, "method must not be NULL");
        if (count < 0) return fail(UCXDT_ERR_INVALID_PARAM, "count must be >= 0");
        if (ucxdt_status_t st = resolve(type, "type", &t)) return st;
        if (ucxdt_status_t st = require_committed(*t, "type")) return st;
        if (ucxdt_status_t st = get_plan(*t, count, &plan)) return st;
        if (ucxdt_status_t st = cuda::check(cudaGetDevice(&device), "cudaGetDevice")) return st;
        return cuda::choose_method(*plan, device, cuda::Packed::device, method);
    });
}

}  // extern "C"
