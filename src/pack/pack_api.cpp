// The synchronous packing entry points of ucxdt.h: complete when they return, whatever
// memory the buffers are in (host, pinned, device of any GPU, managed).
#include "dt/api_util.hpp"
#include "base/checked.hpp"
#include "pack/pack_ops.hpp"

using namespace ucxdt;

extern "C" {

ucxdt_status_t ucxdt_pack(const void *inbuf, int64_t incount, ucxdt_type_t type, void *outbuf,
                          int64_t outsize, int64_t *position) {
    return ops::pack(inbuf, incount, type, outbuf, outsize, position, nullptr);
}

ucxdt_status_t ucxdt_unpack(const void *inbuf, int64_t insize, int64_t *position, void *outbuf,
                            int64_t outcount, ucxdt_type_t type) {
    return ops::unpack(inbuf, insize, position, outbuf, outcount, type, nullptr);
}

ucxdt_status_t ucxdt_pack_range(const void *buf, int64_t count, ucxdt_type_t type, int64_t offset,
                                void *packed, int64_t length) {
    return ops::pack_range(buf, count, type, offset, packed, length, nullptr);
}

ucxdt_status_t ucxdt_unpack_range(const void *packed, int64_t offset, int64_t length, void *buf,
                                  int64_t count, ucxdt_type_t type) {
    return ops::unpack_range(packed, offset, length, buf, count, type, nullptr);
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

}  // extern "C"
