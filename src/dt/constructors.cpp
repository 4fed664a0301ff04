// Datatype constructors, commit and free (MPI-4.1 5.1.2 - 5.1.9). Each validates every
// argument before building anything, so a failed call creates nothing.
#include "dt/api_util.hpp"
#include "base/checked.hpp"

#include <vector>

using namespace ucxdt;

namespace {

ucxdt_status_t publish(std::shared_ptr<Type> t, bool has_explicit, int64_t lb, int64_t ub,
                       ucxdt_type_t *newtype) {
    ucxdt_status_t st = finish_type(*t, has_explicit, lb, ub);
    if (st != UCXDT_OK) return st;
    ucxdt_type_t h = handles::insert(std::move(t));
    if (h == UCXDT_TYPE_NULL) return fail(UCXDT_ERR_NO_MEMORY, "datatype handle table is full");
    *newtype = h;
    return UCXDT_OK;
}

ucxdt_status_t check_out(ucxdt_type_t *newtype) {
    return newtype ? UCXDT_OK : fail(UCXDT_ERR_INVALID_PARAM, "newtype must not be NULL");
}

ucxdt_status_t check_count(int64_t v, const char *arg) {
    return v >= 0 ? UCXDT_OK
                  : fail(UCXDT_ERR_INVALID_PARAM, std::string(arg) + " must be >= 0, got " +
                                                      std::to_string(v));
}

ucxdt_status_t check_array(const void *a, int64_t count, const char *arg) {
    return (a || count == 0) ? UCXDT_OK
                             : fail(UCXDT_ERR_INVALID_PARAM,
                                    std::string(arg) + " is NULL with count " +
                                        std::to_string(count));
}

std::shared_ptr<Type> vector_type(ucxdt_combiner_t comb, int64_t count, int64_t blocklength,
                                  int64_t stride_bytes, TypePtr kid) {
    auto t = std::make_shared<Type>();
    t->combiner = comb;
    t->shape = Type::Shape::VECTOR;
    t->count = count, t->blocklength = blocklength, t->stride_bytes = stride_bytes;
    t->kids = {std::move(kid)};
    return t;
}

// One child at displacement 0: the shape of resized, dup and the outer level of subarray.
std::shared_ptr<Type> wrap_type(ucxdt_combiner_t comb, int64_t disp, TypePtr kid) {
    auto t = std::make_shared<Type>();
    t->combiner = comb;
    t->shape = Type::Shape::INDEXED;
    t->blocklengths = {1};
    t->disps = {disp};
    t->kids = {std::move(kid)};
    return t;
}

// Indexed family: displacements scaled by `unit` bytes (the old extent, or 1), exactly:
// finish_type checks the bounds of the blocks, not the products. The *_block variants pass
// uniform = true and one blocklength; the others an array `bl`.
ucxdt_status_t indexed_common(ucxdt_combiner_t comb, int64_t count, const int64_t *bl,
                              bool uniform, int64_t uniform_bl, const int64_t *disp, bool bytes,
                              ucxdt_type_t oldtype, ucxdt_type_t *newtype) {
    ucxdt_status_t st;
    std::shared_ptr<Type> old;
    if ((st = check_out(newtype)) || (st = check_count(count, "count"))) return st;
    if (uniform && (st = check_count(uniform_bl, "blocklength"))) return st;
    if ((!uniform && (st = check_array(bl, count, "blocklengths"))) ||
        (st = check_array(disp, count, "displacements")) ||
        (st = resolve(oldtype, "oldtype", &old)))
        return st;
    auto t = std::make_shared<Type>();
    t->combiner = comb;
    t->shape = Type::Shape::INDEXED;
    t->disp_unit = bytes ? 1 : old->extent();
    t->blocklengths.resize(static_cast<size_t>(count));
    t->disps.assign(disp, disp + count);
    for (int64_t i = 0; i < count; ++i) {
        const int64_t b = uniform ? uniform_bl : bl[i];
        if (b < 0)
            return fail(UCXDT_ERR_INVALID_PARAM, "blocklengths[" + std::to_string(i) +
                                                     "] must be >= 0, got " + std::to_string(b));
        t->blocklengths[i] = b;
    }
    t->kids = {std::move(old)};
    return publish(std::move(t), false, 0, 0, newtype);
}

}  // namespace

extern "C" {

ucxdt_type_t ucxdt_type_primitive(ucxdt_primitive_t primitive) {
    const int p = enum_value(primitive);
    if (p < 0 || p >= UCXDT_PRIMITIVE_LAST) return UCXDT_TYPE_NULL;
    return handles::predefined(static_cast<ucxdt_primitive_t>(p));
}

ucxdt_status_t ucxdt_type_contiguous(int64_t count, ucxdt_type_t oldtype, ucxdt_type_t *newtype) {
    return guard([&]() -> ucxdt_status_t {
        ucxdt_status_t st;
        std::shared_ptr<Type> old;
        if ((st = check_out(newtype)) || (st = check_count(count, "count")) ||
            (st = resolve(oldtype, "oldtype", &old)))
            return st;
        const int64_t ext = old->extent();
        return publish(vector_type(UCXDT_COMBINER_CONTIGUOUS, count, 1, ext, std::move(old)),
                       false, 0, 0, newtype);
    });
}

static ucxdt_status_t vector_common(ucxdt_combiner_t comb, int64_t count, int64_t blocklength,
                                    int64_t stride, bool bytes, ucxdt_type_t oldtype,
                                    ucxdt_type_t *newtype) {
    return guard([&]() -> ucxdt_status_t {
        ucxdt_status_t st;
        std::shared_ptr<Type> old;
        if ((st = check_out(newtype)) || (st = check_count(count, "count")) ||
            (st = check_count(blocklength, "blocklength")) ||
            (st = resolve(oldtype, "oldtype", &old)))
            return st;
        // The stride places a second block only: a product that overflows then spreads the
        // blocks' data or bounds further apart than int64 reaches. Otherwise it is unused.
        int64_t stride_bytes = stride;
        if (count < 2 || blocklength == 0) stride_bytes = 0;
        else if (!bytes && !checked_mul(stride, old->extent(), &stride_bytes))
            return fail(UCXDT_ERR_OVERFLOW, "stride x extent of oldtype overflows int64");
        return publish(vector_type(comb, count, blocklength, stride_bytes, std::move(old)),
                       false, 0, 0, newtype);
    });
}

ucxdt_status_t ucxdt_type_vector(int64_t count, int64_t blocklength, int64_t stride,
                                 ucxdt_type_t oldtype, ucxdt_type_t *newtype) {
    return vector_common(UCXDT_COMBINER_VECTOR, count, blocklength, stride, false, oldtype,
                         newtype);
}

ucxdt_status_t ucxdt_type_hvector(int64_t count, int64_t blocklength, int64_t stride_bytes,
                                  ucxdt_type_t oldtype, ucxdt_type_t *newtype) {
    return vector_common(UCXDT_COMBINER_HVECTOR, count, blocklength, stride_bytes, true,
                         oldtype, newtype);
}

ucxdt_status_t ucxdt_type_indexed(int64_t count, const int64_t blocklengths[],
                                  const int64_t displacements[], ucxdt_type_t oldtype,
                                  ucxdt_type_t *newtype) {
    return guard([&] {
        return indexed_common(UCXDT_COMBINER_INDEXED, count, blocklengths, false, 0,
                              displacements, false, oldtype, newtype);
    });
}

ucxdt_status_t ucxdt_type_hindexed(int64_t count, const int64_t blocklengths[],
                                   const int64_t displacements_bytes[], ucxdt_type_t oldtype,
                                   ucxdt_type_t *newtype) {
    return guard([&] {
        return indexed_common(UCXDT_COMBINER_HINDEXED, count, blocklengths, false, 0,
                              displacements_bytes, true, oldtype, newtype);
    });
}

ucxdt_status_t ucxdt_type_indexed_block(int64_t count, int64_t blocklength,
                                        const int64_t displacements[], ucxdt_type_t oldtype,
                                        ucxdt_type_t *newtype) {
    return guard([&] {
        return indexed_common(UCXDT_COMBINER_INDEXED_BLOCK, count, nullptr, true, blocklength,
                              displacements, false, oldtype, newtype);
    });
}

ucxdt_status_t ucxdt_type_hindexed_block(int64_t count, int64_t blocklength,
                                         const int64_t displacements_bytes[],
                                         ucxdt_type_t oldtype, ucxdt_type_t *newtype) {
    return guard([&] {
        return indexed_common(UCXDT_COMBINER_HINDEXED_BLOCK, count, nullptr, true, blocklength,
                              displacements_bytes, true, oldtype, newtype);
    });
}

ucxdt_status_t ucxdt_type_struct(int64_t count, const int64_t blocklengths[],
                                 const int64_t displacements_bytes[], const ucxdt_type_t types[],
                                 ucxdt_type_t *newtype) {
    return guard([&]() -> ucxdt_status_t {
        ucxdt_status_t st;
        if ((st = check_out(newtype)) || (st = check_count(count, "count")) ||
            (st = check_array(blocklengths, count, "blocklengths")) ||
            (st = check_array(displacements_bytes, count, "displacements")) ||
            (st = check_array(types, count, "types")))
            return st;
        auto t = std::make_shared<Type>();
        t->combiner = UCXDT_COMBINER_STRUCT;
        t->shape = Type::Shape::INDEXED;
        for (int64_t i = 0; i < count; ++i) {
            std::shared_ptr<Type> kid;
            const std::string arg = "types[" + std::to_string(i) + "]";
            if ((st = resolve(types[i], arg.c_str(), &kid))) return st;
            if (blocklengths[i] < 0)
                return fail(UCXDT_ERR_INVALID_PARAM, "blocklengths[" + std::to_string(i) +
                                                         "] must be >= 0");
            t->blocklengths.push_back(blocklengths[i]);
            t->disps.push_back(displacements_bytes[i]);
            t->kids.push_back(std::move(kid));
        }
        // A one-entry struct must still index kids per entry: keep kids.size() == count.
        return publish(std::move(t), false, 0, 0, newtype);
    });
}

ucxdt_status_t ucxdt_type_subarray(int ndims, const int64_t sizes[], const int64_t subsizes[],
                                   const int64_t starts[], ucxdt_order_t order,
                                   ucxdt_type_t oldtype, ucxdt_type_t *newtype) {
    return guard([&]() -> ucxdt_status_t {
        ucxdt_status_t st;
        std::shared_ptr<Type> old;
        if ((st = check_out(newtype))) return st;
        if (ndims < 1 || ndims > 32)
            return fail(UCXDT_ERR_INVALID_PARAM,
                        "ndims must be in [1, 32], got " + std::to_string(ndims));
        if ((st = check_array(sizes, ndims, "sizes")) ||
            (st = check_array(subsizes, ndims, "subsizes")) ||
            (st = check_array(starts, ndims, "starts")))
            return st;
        const int order_value = enum_value(order);
        if (order_value != UCXDT_ORDER_C && order_value != UCXDT_ORDER_FORTRAN)
            return fail(UCXDT_ERR_INVALID_PARAM, "order must be UCXDT_ORDER_C or _FORTRAN");
        if ((st = resolve(oldtype, "oldtype", &old))) return st;
        for (int d = 0; d < ndims; ++d) {
            const std::string i = "[" + std::to_string(d) + "]";
            if (sizes[d] < 1) return fail(UCXDT_ERR_INVALID_PARAM, "sizes" + i + " must be >= 1");
            if (subsizes[d] < 0 || subsizes[d] > sizes[d])
                return fail(UCXDT_ERR_INVALID_PARAM, "subsizes" + i + " must be in [0, sizes" +
                                                         i + "]");
            if (starts[d] < 0 || starts[d] > sizes[d] - subsizes[d])
                return fail(UCXDT_ERR_INVALID_PARAM,
                            "starts" + i + " must be in [0, sizes" + i + " - subsizes" + i + "]");
        }
        // Dimension d's stride is the product of the faster dimensions' sizes, in extents.
        std::vector<int64_t> stride(static_cast<size_t>(ndims));
        int64_t span = old->extent(), offset = 0;
        for (int k = 0; k < ndims; ++k) {
            const int d = order_value == UCXDT_ORDER_C ? ndims - 1 - k : k;
            stride[d] = span;
            if (!checked_mul(span, sizes[d], &span))
                return fail(UCXDT_ERR_OVERFLOW, "product of sizes x extent overflows int64");
        }
        TypePtr inner = old;
        for (int k = 0; k < ndims; ++k) {
            const int d = order_value == UCXDT_ORDER_C ? ndims - 1 - k : k;
            auto level = vector_type(UCXDT_COMBINER_HVECTOR, subsizes[d], 1, stride[d], inner);
            if ((st = finish_type(*level, false, 0, 0))) return st;
            inner = std::move(level);
            int64_t part;
            if (!checked_mul(starts[d], stride[d], &part) || !checked_add(offset, part, &offset))
                return fail(UCXDT_ERR_OVERFLOW, "starts x strides overflow int64");
        }
        auto t = wrap_type(UCXDT_COMBINER_SUBARRAY, offset, std::move(inner));
        return publish(std::move(t), true, 0, span, newtype);
    });
}

ucxdt_status_t ucxdt_type_resized(ucxdt_type_t oldtype, int64_t lb, int64_t extent,
                                  ucxdt_type_t *newtype) {
    return guard([&]() -> ucxdt_status_t {
        ucxdt_status_t st;
        std::shared_ptr<Type> old;
        if ((st = check_out(newtype)) || (st = resolve(oldtype, "oldtype", &old))) return st;
        int64_t ub;
        if (!checked_add(lb, extent, &ub))
            return fail(UCXDT_ERR_OVERFLOW, "lb + extent overflows int64");
        return publish(wrap_type(UCXDT_COMBINER_RESIZED, 0, std::move(old)), true, lb, ub,
                       newtype);
    });
}

ucxdt_status_t ucxdt_type_dup(ucxdt_type_t oldtype, ucxdt_type_t *newtype) {
    return guard([&]() -> ucxdt_status_t {
        ucxdt_status_t st;
        std::shared_ptr<Type> old;
        if ((st = check_out(newtype)) || (st = resolve(oldtype, "oldtype", &old))) return st;
        const bool committed = old->committed.load(std::memory_order_acquire);
        // One entry at displacement 0 inherits bounds, explicit or not, and the type map.
        auto t = wrap_type(UCXDT_COMBINER_DUP, 0, std::move(old));
        t->committed = committed;  // MPI-4.1 5.1.9: the duplicate keeps the committed state
        if (committed) t->layout();
        return publish(std::move(t), false, 0, 0, newtype);
    });
}

ucxdt_status_t ucxdt_type_commit(ucxdt_type_t type) {
    return guard([&]() -> ucxdt_status_t {
        std::shared_ptr<Type> t;
        if (ucxdt_status_t st = resolve(type, "type", &t)) return st;
        t->layout();  // normalization happens once, here
        t->committed.store(true, std::memory_order_release);
        return UCXDT_OK;
    });
}

ucxdt_status_t ucxdt_type_free(ucxdt_type_t *type) {
    return guard([&]() -> ucxdt_status_t {
        if (!type) return fail(UCXDT_ERR_INVALID_PARAM, "type must not be NULL");
        if (handles::is_predefined(*type))
            return fail(UCXDT_ERR_INVALID_PARAM, "type is predefined and cannot be freed");
        if (!handles::erase(*type))
            return fail(UCXDT_ERR_INVALID_PARAM,
                        "type is not a valid datatype (null, freed or never created)");
        *type = UCXDT_TYPE_NULL;
        return UCXDT_OK;
    });
}

}  // extern "C"
