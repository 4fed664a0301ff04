// Integer settings from the environment (UCXDT_*), read the same way everywhere.
#pragma once

#include <cstdint>
#include <cstdlib>

namespace ucxdt {

/// The value of environment variable `name`, or `fallback` when it is unset, empty, not an
/// integer in full, or outside [lo, hi].
inline int64_t env_integer(const char *name, int64_t fallback, int64_t lo = INT64_MIN,
                           int64_t hi = INT64_MAX) {
    const char *s = std::getenv(name);
    if (!s || !*s) return fallback;
    char *end = nullptr;
    const long long v = std::strtoll(s, &end, 10);
    return (*end || v < lo || v > hi) ? fallback : static_cast<int64_t>(v);
}

}  // namespace ucxdt
