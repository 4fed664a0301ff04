#include "dt/packed_prefix.hpp"

#include "dt/type.hpp"

namespace ucxdt {

namespace {

bool run_prefix(const Type &k, int64_t bytes, PackedPrefix *out);

// The first `bytes` (0 <= bytes <= t.size) bytes of one element of t.
bool element_prefix(const Type &t, int64_t bytes, PackedPrefix *out) {
    if (bytes == 0 || bytes == t.size) {
        *out = bytes == 0 ? PackedPrefix{} : PackedPrefix{t.signature, t.signature.length};
        return true;
    }
    switch (t.shape) {
    case Type::Shape::PRIMITIVE:
        return false;  // inside the primitive
    case Type::Shape::VECTOR:  // count x blocklength children, one after another when packed
        return run_prefix(*t.kid(0), bytes, out);
    case Type::Shape::INDEXED: {
        PackedPrefix acc;
        for (size_t i = 0; i < t.blocklengths.size(); ++i) {
            const Type &k = *t.kid(i);
            const int64_t block = t.blocklengths[i] * k.size;  // within t.size: no overflow
            if (bytes >= block) {
                acc.sig = Signature::concat(acc.sig, Signature::repeat(k.signature, t.blocklengths[i]));
                acc.primitives += t.blocklengths[i] * k.signature.length;
                bytes -= block;
                continue;
            }
            PackedPrefix tail;
            if (!run_prefix(k, bytes, &tail)) return false;
            out->sig = Signature::concat(acc.sig, tail.sig);
            out->primitives = acc.primitives + tail.primitives;
            return true;
        }
        return false;  // not reached: bytes < t.size
    }
    }
    return false;
}

// The first `bytes` bytes of elements of k, one after another.
bool run_prefix(const Type &k, int64_t bytes, PackedPrefix *out) {
    if (k.size == 0) {
        *out = PackedPrefix{};
        return bytes == 0;
    }
    const int64_t whole = bytes / k.size;
    PackedPrefix tail;
    if (!element_prefix(k, bytes - whole * k.size, &tail)) return false;
    // A primitive holds a byte at least, so the count stays below `bytes`.
    out->sig = Signature::concat(Signature::repeat(k.signature, whole), tail.sig);
    out->primitives = whole * k.signature.length + tail.primitives;
    return true;
}

}  // namespace

bool packed_prefix(const Type &t, int64_t bytes, PackedPrefix *out) {
    return bytes >= 0 && run_prefix(t, bytes, out);
}

}  // namespace ucxdt
