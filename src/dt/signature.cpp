#include "dt/signature.hpp"

namespace ucxdt {

namespace {

constexpr uint64_t kMod = (1ULL << 61) - 1;
constexpr uint64_t kBase = 0x1f3d5b79a2c4e687ULL % kMod;

uint64_t mulmod(uint64_t a, uint64_t b) {
    unsigned __int128 p = static_cast<unsigned __int128>(a) * b;
    uint64_t r = static_cast<uint64_t>(p & kMod) + static_cast<uint64_t>(p >> 61);
    return r >= kMod ? r - kMod : r;
}

uint64_t addmod(uint64_t a, uint64_t b) {
    uint64_t r = a + b;
    return r >= kMod ? r - kMod : r;
}

}  // namespace

Signature Signature::primitive(int code) {
    // Codes start at 1 so that no primitive hashes like the empty sequence.
    return Signature{static_cast<uint64_t>(code) + 1, kBase, 1};
}

Signature Signature::concat(const Signature &a, const Signature &b) {
    return Signature{addmod(mulmod(a.hash, b.power), b.hash), mulmod(a.power, b.power),
                     a.length + b.length};
}

Signature Signature::repeat(const Signature &a, int64_t n) {
    Signature result, base = a;
    // All operands are powers of `a`, so the order of concatenation does not matter.
    for (; n > 0; n >>= 1) {
        if (n & 1) result = concat(result, base);
        if (n > 1) base = concat(base, base);
    }
    return result;
}

}  // namespace ucxdt
