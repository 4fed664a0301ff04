#include "ucp_dt/cpu_engine.hpp"

#include "base/address.hpp"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <vector>

namespace ucxdt::cpu {

namespace {

// Runs of these widths dominate real layouts (one element of a primitive or complex);
// a fixed-size memcpy compiles to one load and one store.
inline void copy_run(char *dst, const char *src, int64_t n) {
    switch (n) {
    case 4: std::memcpy(dst, src, 4); break;
    case 8: std::memcpy(dst, src, 8); break;
    case 16: std::memcpy(dst, src, 16); break;
    default: std::memcpy(dst, src, static_cast<size_t>(n)); break;
    }
}

}  // namespace

void pack(const Plan &plan, const char *buf, int64_t offset, int64_t length, char *packed) {
    for_each_piece(plan, offset, length, [&](int64_t mem, int64_t pos, int64_t n) {
        copy_run(packed + (pos - offset), at(buf, mem), n);
    });
}

void unpack(const Plan &plan, char *buf, int64_t offset, int64_t length, const char *packed) {
    for_each_piece(plan, offset, length, [&](int64_t mem, int64_t pos, int64_t n) {
        copy_run(at(buf, mem), packed + (pos - offset), n);
    });
}

}  // namespace ucxdt::cpu
