// Shared plumbing of the C entry points: handle resolution with a message naming the
// argument, publication of new types, and a guard that turns C++ exceptions into statuses
// (no exception crosses the C API).
#pragma once

#include "base/error.hpp"
#include "dt/handle_table.hpp"

#include <cstring>
#include <new>
#include <string>

namespace ucxdt {

inline ucxdt_status_t resolve(ucxdt_type_t h, const char *arg, std::shared_ptr<Type> *out) {
    *out = handles::lookup(h);
    if (!*out)
        return fail(UCXDT_ERR_INVALID_PARAM,
                    std::string(arg) + " is not a valid datatype (null, freed or never created)");
    return UCXDT_OK;
}

inline ucxdt_status_t require_committed(const Type &t, const char *arg) {
    if (!t.committed.load(std::memory_order_acquire))
        return fail(UCXDT_ERR_NOT_COMMITTED, std::string(arg) + " has not been committed");
    return UCXDT_OK;
}

/// The integer a C caller passed for an enum parameter. C allows any int there; loading an
/// out-of-range value through the C++ enum type would be undefined, so copy the bytes.
template <typename Enum>
inline int enum_value(const Enum &e) {
    static_assert(sizeof(Enum) == sizeof(int));
    int v;
    std::memcpy(&v, &e, sizeof v);
    return v;
}

template <typename Body>
ucxdt_status_t guard(Body &&body) {
    clear_error();
    try {
        return body();
    } catch (const std::bad_alloc &) {
        return fail(UCXDT_ERR_NO_MEMORY, "allocation failed");
    } catch (const std::exception &e) {
        return fail(UCXDT_ERR_INVALID_PARAM, std::string("internal error: ") + e.what());
    }
}

}  // namespace ucxdt
