// MPI_Pack / MPI_Unpack (MPI-4.1 5.2) and byte-range packing of the packed stream.
// Every check happens before the first byte is written or the first work is enqueued.
#include "pack/pack_ops.hpp"

#include "dt/api_util.hpp"
#include "base/checked.hpp"
#include "dt/plan.hpp"
#include "pack/transfer.hpp"

namespace ucxdt::ops {

namespace {

// The committed type behind `type`, and the packed size of `count` of it, without building
// the plan: a call that must fail (truncation) fails before any plan work.
ucxdt_status_t size_for(ucxdt_type_t type, int64_t count, const char *count_name,
                        std::shared_ptr<Type> *t, int64_t *bytes) {
    if (count < 0)
        return fail(UCXDT_ERR_INVALID_PARAM, std::string(count_name) + " must be >= 0, got " +
                                                 std::to_string(count));
    if (ucxdt_status_t st = resolve(type, "type", t)) return st;
    if (ucxdt_status_t st = require_committed(**t, "type")) return st;
    if (!checked_mul(count, (*t)->size, bytes))
        return fail(UCXDT_ERR_OVERFLOW, std::string(count_name) + " x size of type overflows int64");
    return UCXDT_OK;
}

ucxdt_status_t plan_for(const Type &t, int64_t count, const char *count_name, PlanPtr *plan) {
    const ucxdt_status_t st = get_plan(t, count, plan);
    if (st == UCXDT_ERR_OVERFLOW)  // name the caller's argument, not the plan's
        return fail(st, std::string(count_name) + " x extent of type overflows int64");
    return st;
}

// The packed side must exist whenever there are bytes to move; the layout side may be NULL
// (MPI_BOTTOM: displacements are then absolute addresses).
ucxdt_status_t check_packed(const void *packed, const char *name, int64_t bytes) {
    if (bytes > 0 && !packed)
        return fail(UCXDT_ERR_INVALID_PARAM, std::string(name) + " must not be NULL");
    return UCXDT_OK;
}

ucxdt_status_t check_position(const int64_t *position, int64_t size, const char *size_name) {
    if (!position) return fail(UCXDT_ERR_INVALID_PARAM, "position must not be NULL");
    if (size < 0) return fail(UCXDT_ERR_INVALID_PARAM, std::string(size_name) + " must be >= 0");
    if (*position < 0) return fail(UCXDT_ERR_INVALID_PARAM, "*position must be >= 0");
    return UCXDT_OK;
}

ucxdt_status_t check_range(int64_t offset, int64_t length) {
    if (offset < 0 || length < 0)
        return fail(UCXDT_ERR_INVALID_PARAM, "offset and length must be >= 0");
    return UCXDT_OK;
}

std::string range_text(int64_t offset, int64_t length, int64_t total) {
    return "range [offset, offset + length) = [" + std::to_string(offset) + ", +" +
           std::to_string(length) + ") is outside the " + std::to_string(total) +
           " bytes of the packed stream";
}

char *mut(const void *p) { return static_cast<char *>(const_cast<void *>(p)); }

}  // namespace

ucxdt_status_t pack(const void *inbuf, int64_t incount, ucxdt_type_t type, void *outbuf,
                    int64_t outsize, int64_t *position, const cudaStream_t *stream) {
    return guard([&]() -> ucxdt_status_t {
        PlanPtr plan;
        std::shared_ptr<Type> t;
        int64_t n;
        if (ucxdt_status_t st = check_position(position, outsize, "outsize")) return st;
        if (ucxdt_status_t st = size_for(type, incount, "incount", &t, &n)) return st;
        if (*position > outsize || n > outsize - *position)
            return fail(UCXDT_ERR_TRUNCATED, "outsize " + std::to_string(outsize) +
                                                 " is too small for " + std::to_string(n) +
                                                 " packed bytes at position " +
                                                 std::to_string(*position));
        if (ucxdt_status_t st = check_packed(outbuf, "outbuf", n)) return st;
        if (ucxdt_status_t st = plan_for(*t, incount, "incount", &plan)) return st;
        if (ucxdt_status_t st = transfer(*plan, mut(inbuf), static_cast<char *>(outbuf) + *position,
                                         0, n, true, stream))
            return st;
        *position += n;
        return UCXDT_OK;
    });
}

ucxdt_status_t unpack(const void *inbuf, int64_t insize, int64_t *position, void *outbuf,
                      int64_t outcount, ucxdt_type_t type, const cudaStream_t *stream) {
    return guard([&]() -> ucxdt_status_t {
        PlanPtr plan;
        std::shared_ptr<Type> t;
        int64_t n;
        if (ucxdt_status_t st = check_position(position, insize, "insize")) return st;
        if (ucxdt_status_t st = size_for(type, outcount, "outcount", &t, &n)) return st;
        if (*position > insize || n > insize - *position)
            return fail(UCXDT_ERR_TRUNCATED, "insize " + std::to_string(insize) +
                                                 " holds fewer than " + std::to_string(n) +
                                                 " packed bytes after position " +
                                                 std::to_string(*position));
        if (ucxdt_status_t st = check_packed(inbuf, "inbuf", n)) return st;
        if (ucxdt_status_t st = plan_for(*t, outcount, "outcount", &plan)) return st;
        if (ucxdt_status_t st = transfer(*plan, static_cast<char *>(outbuf),
                                         mut(inbuf) + *position, 0, n, false, stream))
            return st;
        *position += n;
        return UCXDT_OK;
    });
}

ucxdt_status_t pack_range(const void *buf, int64_t count, ucxdt_type_t type, int64_t offset,
                          void *packed, int64_t length, const cudaStream_t *stream) {
    return guard([&]() -> ucxdt_status_t {
        PlanPtr plan;
        std::shared_ptr<Type> t;
        int64_t n;
        if (ucxdt_status_t st = check_range(offset, length)) return st;
        if (ucxdt_status_t st = size_for(type, count, "count", &t, &n)) return st;
        if (offset > n || length > n - offset)
            return fail(UCXDT_ERR_INVALID_PARAM, range_text(offset, length, n));
        if (ucxdt_status_t st = check_packed(packed, "packed", length)) return st;
        if (ucxdt_status_t st = plan_for(*t, count, "count", &plan)) return st;
        return transfer(*plan, mut(buf), static_cast<char *>(packed), offset, length, true, stream);
    });
}

ucxdt_status_t unpack_range(const void *packed, int64_t offset, int64_t length, void *buf,
                            int64_t count, ucxdt_type_t type, const cudaStream_t *stream) {
    return guard([&]() -> ucxdt_status_t {
        PlanPtr plan;
        std::shared_ptr<Type> t;
        int64_t n;
        if (ucxdt_status_t st = check_range(offset, length)) return st;
        if (ucxdt_status_t st = size_for(type, count, "count", &t, &n)) return st;
        if (offset > n || length > n - offset)
            return fail(UCXDT_ERR_TRUNCATED, range_text(offset, length, n) + " of the receive layout");
        if (ucxdt_status_t st = check_packed(packed, "packed", length)) return st;
        if (ucxdt_status_t st = plan_for(*t, count, "count", &plan)) return st;
        return transfer(*plan, static_cast<char *>(buf), mut(packed), offset, length, false, stream);
    });
}

}  // namespace ucxdt::ops
