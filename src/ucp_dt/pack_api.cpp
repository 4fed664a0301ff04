// MPI_Pack / MPI_Unpack (MPI-4.1 5.2) and byte-range packing of the packed stream.
// Every check happens before the first byte is written.
#include "api_util.hpp"
#include "checked.hpp"
#include "cpu_engine.hpp"
#include "plan.hpp"
#include "uct_cuda/memory_type.hpp"

using namespace ucxdt;

namespace {

// The plan of (type, count) after validating both.
ucxdt_status_t plan_for(ucxdt_type_t type, int64_t count, const char *count_name, PlanPtr *plan) {
    std::shared_ptr<Type> t;
    if (count < 0)
        return fail(UCXDT_ERR_INVALID_PARAM, std::string(count_name) + " must be >= 0, got " +
                                                 std::to_string(count));
    if (ucxdt_status_t st = resolve(type, "type", &t)) return st;
    if (ucxdt_status_t st = require_committed(*t, "type")) return st;
    return get_plan(*t, count, plan);
}

// The CPU engine reads and writes through host pointers; device memory needs the GPU engine.
ucxdt_status_t require_host(const void *p, const char *arg) {
    if (cuda::is_host_accessible(p)) return UCXDT_OK;
    return fail(UCXDT_ERR_UNSUPPORTED,
                std::string(arg) + " is CUDA device memory, which this build's CPU engine "
                                   "cannot access");
}

ucxdt_status_t check_buffers(const void *layout_buf, const char *layout_name,
                             const void *packed_buf, const char *packed_name, int64_t bytes) {
    if (bytes == 0) return UCXDT_OK;
    if (!packed_buf)
        return fail(UCXDT_ERR_INVALID_PARAM, std::string(packed_name) + " must not be NULL");
    if (ucxdt_status_t st = require_host(packed_buf, packed_name)) return st;
    // layout_buf may be NULL: displacements are then absolute addresses (MPI_BOTTOM).
    return layout_buf ? require_host(layout_buf, layout_name) : UCXDT_OK;
}

}  // namespace

extern "C" {

ucxdt_status_t ucxdt_pack(const void *inbuf, int64_t incount, ucxdt_type_t type, void *outbuf,
                          int64_t outsize, int64_t *position) {
    return guard([&]() -> ucxdt_status_t {
        PlanPtr plan;
        if (!position) return fail(UCXDT_ERR_INVALID_PARAM, "position must not be NULL");
        if (outsize < 0) return fail(UCXDT_ERR_INVALID_PARAM, "outsize must be >= 0");
        if (*position < 0) return fail(UCXDT_ERR_INVALID_PARAM, "*position must be >= 0");
        if (ucxdt_status_t st = plan_for(type, incount, "incount", &plan)) return st;
        const int64_t n = plan->packed_size;
        if (*position > outsize || n > outsize - *position)
            return fail(UCXDT_ERR_TRUNCATED, "outsize " + std::to_string(outsize) +
                                                 " is too small for " + std::to_string(n) +
                                                 " packed bytes at position " +
                                                 std::to_string(*position));
        if (ucxdt_status_t st = check_buffers(inbuf, "inbuf", outbuf, "outbuf", n)) return st;
        cpu::pack(*plan, static_cast<const char *>(inbuf), 0, n,
                  static_cast<char *>(outbuf) + *position);
        *position += n;
        return UCXDT_OK;
    });
}

ucxdt_status_t ucxdt_unpack(const void *inbuf, int64_t insize, int64_t *position, void *outbuf,
                            int64_t outcount, ucxdt_type_t type) {
    return guard([&]() -> ucxdt_status_t {
        PlanPtr plan;
        if (!position) return fail(UCXDT_ERR_INVALID_PARAM, "position must not be NULL");
        if (insize < 0) return fail(UCXDT_ERR_INVALID_PARAM, "insize must be >= 0");
        if (*position < 0) return fail(UCXDT_ERR_INVALID_PARAM, "*position must be >= 0");
        if (ucxdt_status_t st = plan_for(type, outcount, "outcount", &plan)) return st;
        const int64_t n = plan->packed_size;
        if (*position > insize || n > insize - *position)
            return fail(UCXDT_ERR_TRUNCATED, "insize " + std::to_string(insize) +
                                                 " holds fewer than " + std::to_string(n) +
                                                 " packed bytes after position " +
                                                 std::to_string(*position));
        if (ucxdt_status_t st = check_buffers(outbuf, "outbuf", inbuf, "inbuf", n)) return st;
        cpu::unpack(*plan, static_cast<char *>(outbuf), 0, n,
                    static_cast<const char *>(inbuf) + *position);
        *position += n;
        return UCXDT_OK;
    });
}

ucxdt_status_t ucxdt_pack_size(int64_t incount, ucxdt_type_t type, int64_t *size) {
    return guard([&]() -> ucxdt_status_t {
        std::shared_ptr<Type> t;
        if (!size) return fail(UCXDT_ERR_INVALID_PARAM, "size must not be NULL");
        if (incount < 0) return fail(UCXDT_ERR_INVALID_PARAM, "incount must be >= 0");
        if (ucxdt_status_t st = resolve(type, "type", &t)) return st;
        if (!checked_mul(incount, t->size, size))
            return fail(UCXDT_ERR_OVERFLOW, "incount x type size overflows int64");
        return UCXDT_OK;
    });
}

ucxdt_status_t ucxdt_pack_range(const void *buf, int64_t count, ucxdt_type_t type, int64_t offset,
                                void *packed, int64_t length) {
    return guard([&]() -> ucxdt_status_t {
        PlanPtr plan;
        if (offset < 0 || length < 0)
            return fail(UCXDT_ERR_INVALID_PARAM, "offset and length must be >= 0");
        if (ucxdt_status_t st = plan_for(type, count, "count", &plan)) return st;
        if (offset > plan->packed_size || length > plan->packed_size - offset)
            return fail(UCXDT_ERR_INVALID_PARAM,
                        "range [offset, offset + length) = [" + std::to_string(offset) + ", +" +
                            std::to_string(length) + ") is outside the packed stream of " +
                            std::to_string(plan->packed_size) + " bytes");
        if (ucxdt_status_t st = check_buffers(buf, "buf", packed, "packed", length)) return st;
        cpu::pack(*plan, static_cast<const char *>(buf), offset, length,
                  static_cast<char *>(packed));
        return UCXDT_OK;
    });
}

ucxdt_status_t ucxdt_unpack_range(const void *packed, int64_t offset, int64_t length, void *buf,
                                  int64_t count, ucxdt_type_t type) {
    return guard([&]() -> ucxdt_status_t {
        PlanPtr plan;
        if (offset < 0 || length < 0)
            return fail(UCXDT_ERR_INVALID_PARAM, "offset and length must be >= 0");
        if (ucxdt_status_t st = plan_for(type, count, "count", &plan)) return st;
        if (offset > plan->packed_size || length > plan->packed_size - offset)
            return fail(UCXDT_ERR_TRUNCATED,
                        "range [offset, offset + length) = [" + std::to_string(offset) + ", +" +
                            std::to_string(length) + ") exceeds the " +
                            std::to_string(plan->packed_size) +
                            " packed bytes of the receive layout");
        if (ucxdt_status_t st = check_buffers(buf, "buf", packed, "packed", length)) return st;
        cpu::unpack(*plan, static_cast<char *>(buf), offset, length,
                    static_cast<const char *>(packed));
        return UCXDT_OK;
    });
}

}  // extern "C"
