// Integer and yes/no settings from the environment (UCXDT_*), read the same way everywhere.
#pragma once

#include <cctype>
#include <cstdint>
#include <cstdlib>
#include <string>

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

/// A yes/no setting in UCX's spelling (y/yes/1/on, n/no/0/off, any case); `fallback` when it
/// is unset or anything else.
inline bool env_flag(const char *name, bool fallback) {
    const char *s = std::getenv(name);
    if (!s) return fallback;
    std::string v(s);
    for (char &c : v) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if (v == "y" || v == "yes" || v == "1" || v == "on") return true;
    if (v == "n" || v == "no" || v == "0" || v == "off") return false;
    return fallback;
}

}  // namespace ucxdt
