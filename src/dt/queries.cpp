// Type queries (MPI-4.1 5.1.5 - 5.1.8); allowed on uncommitted types except plan_info.
#include "dt/api_util.hpp"
#include "base/checked.hpp"
#include "dt/packed_prefix.hpp"
#include "dt/plan.hpp"

using namespace ucxdt;

namespace {

template <typename Out>
ucxdt_status_t query(ucxdt_type_t type, Out *out, const char *out_name,
                     std::shared_ptr<Type> *t) {
    if (!out) return fail(UCXDT_ERR_INVALID_PARAM, std::string(out_name) + " must not be NULL");
    return resolve(type, "type", t);
}

}  // namespace

extern "C" {

ucxdt_status_t ucxdt_type_size(ucxdt_type_t type, int64_t *size) {
    return guard([&]() -> ucxdt_status_t {
        std::shared_ptr<Type> t;
        if (ucxdt_status_t st = query(type, size, "size", &t)) return st;
        *size = t->size;
        return UCXDT_OK;
    });
}

ucxdt_status_t ucxdt_type_extent(ucxdt_type_t type, int64_t *lb, int64_t *extent) {
    return guard([&]() -> ucxdt_status_t {
        std::shared_ptr<Type> t;
        if (!lb) return fail(UCXDT_ERR_INVALID_PARAM, "lb must not be NULL");
        if (ucxdt_status_t st = query(type, extent, "extent", &t)) return st;
        *lb = t->lb;
        *extent = t->extent();
        return UCXDT_OK;
    });
}

ucxdt_status_t ucxdt_type_true_extent(ucxdt_type_t type, int64_t *true_lb, int64_t *true_extent) {
    return guard([&]() -> ucxdt_status_t {
        std::shared_ptr<Type> t;
        if (!true_lb) return fail(UCXDT_ERR_INVALID_PARAM, "true_lb must not be NULL");
        if (ucxdt_status_t st = query(type, true_extent, "true_extent", &t)) return st;
        *true_lb = t->true_lb;
        *true_extent = t->true_ub - t->true_lb;
        return UCXDT_OK;
    });
}

ucxdt_status_t ucxdt_type_signature(ucxdt_type_t type, int64_t count,
                                    ucxdt_signature_t *signature) {
    return guard([&]() -> ucxdt_status_t {
        std::shared_ptr<Type> t;
        if (ucxdt_status_t st = query(type, signature, "signature", &t)) return st;
        int64_t total;
        if (count < 0) return fail(UCXDT_ERR_INVALID_PARAM, "count must be >= 0");
        if (!checked_mul(count, t->size, &total))
            return fail(UCXDT_ERR_OVERFLOW, "count x type size overflows int64");
        const Signature s = Signature::repeat(t->signature, count);
        signature->hash = s.hash;
        signature->length = s.length;
        return UCXDT_OK;
    });
}

ucxdt_status_t ucxdt_type_get_elements(ucxdt_type_t type, int64_t bytes, int64_t *elements) {
    return guard([&]() -> ucxdt_status_t {
        std::shared_ptr<Type> t;
        if (ucxdt_status_t st = query(type, elements, "elements", &t)) return st;
        if (bytes < 0) return fail(UCXDT_ERR_INVALID_PARAM, "bytes must be >= 0");
        PackedPrefix p;
        if (!packed_prefix(*t, bytes, &p))
            return fail(UCXDT_ERR_TYPE_MISMATCH, std::to_string(bytes) + " packed bytes end inside a primitive of the type");
        *elements = p.primitives;
        return UCXDT_OK;
    });
}

ucxdt_status_t ucxdt_type_combiner(ucxdt_type_t type, ucxdt_combiner_t *combiner) {
    return guard([&]() -> ucxdt_status_t {
        std::shared_ptr<Type> t;
        if (ucxdt_status_t st = query(type, combiner, "combiner", &t)) return st;
        *combiner = t->combiner;
        return UCXDT_OK;
    });
}

ucxdt_status_t ucxdt_type_plan_info(ucxdt_type_t type, int64_t count,
                                    ucxdt_plan_class_t *plan_class, int64_t *num_blocks) {
    return guard([&]() -> ucxdt_status_t {
        std::shared_ptr<Type> t;
        PlanPtr plan;
        if (!num_blocks) return fail(UCXDT_ERR_INVALID_PARAM, "num_blocks must not be NULL");
        if (ucxdt_status_t st = query(type, plan_class, "plan_class", &t)) return st;
        if (count < 0) return fail(UCXDT_ERR_INVALID_PARAM, "count must be >= 0");
        if (ucxdt_status_t st = require_committed(*t, "type")) return st;
        if (ucxdt_status_t st = get_plan(*t, count, &plan)) return st;
        *plan_class = plan->cls;
        *num_blocks = plan->packed_size ? plan->num_blocks : 0;
        return UCXDT_OK;
    });
}

}  // extern "C"
