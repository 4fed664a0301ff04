// int64 arithmetic that reports overflow instead of wrapping: every size, extent and
// displacement the user can influence goes through these.
#pragma once

#include <cstdint>

namespace ucxdt {

[[nodiscard]] inline bool checked_mul(int64_t a, int64_t b, int64_t *r) {
    return !__builtin_mul_overflow(a, b, r);
}
[[nodiscard]] inline bool checked_add(int64_t a, int64_t b, int64_t *r) {
    return !__builtin_add_overflow(a, b, r);
}
[[nodiscard]] inline bool checked_sub(int64_t a, int64_t b, int64_t *r) {
    return !__builtin_sub_overflow(a, b, r);
}

}  // namespace ucxdt
