// Handles to types. A handle encodes (generation, slot) rather than a pointer, so a freed
// or made-up handle is detected instead of dereferenced, and freeing a handle never
// invalidates types built from it (they hold the type itself, not the handle).
#pragma once

#include "dt/type.hpp"

#include <ucxdt/ucxdt.h>

#include <memory>

namespace ucxdt::handles {

/// A new handle for `t`; UCXDT_TYPE_NULL if the table is full.
ucxdt_type_t insert(std::shared_ptr<Type> t);

/// The type behind a live handle, or nullptr for a null, freed or unknown handle.
std::shared_ptr<Type> lookup(ucxdt_type_t h);

/// Releases a live, not predefined handle; false otherwise.
bool erase(ucxdt_type_t h);

/// How many handles erase() has released so far: a lookup cached while this stays the same
/// still names a live handle.
uint64_t erasures();

/// The predefined handle of a primitive, or UCXDT_TYPE_NULL.
ucxdt_type_t predefined(ucxdt_primitive_t p);

bool is_predefined(ucxdt_type_t h);

}  // namespace ucxdt::handles
