// Numbers of randomized test runs: counts and seeds from the environment (UCXDT_TEST_SEED
// replays a run), and independent seeds for consecutive case numbers.
#pragma once

#include <cstdint>
#include <cstdlib>

namespace ucxdt::support {

/// The environment variable `name` as a number (any base strtoull reads), `dflt` when unset
/// or empty.
inline uint64_t env_u64(const char *name, uint64_t dflt) {
    const char *v = std::getenv(name);
    return v && *v ? std::strtoull(v, nullptr, 0) : dflt;
}

/// splitmix64: independent seeds for consecutive type numbers.
inline uint64_t mix(uint64_t z) {
    z += 0x9E3779B97F4A7C15ull;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

}  // namespace ucxdt::support
