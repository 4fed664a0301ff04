// Type signatures (MPI-4.1 5.1.1): the sequence of primitives of a type map, hashed so that
// signatures compose by concatenation and repetition without expanding the sequence.
// hash(s) = sum_i code(s_i) * B^(n-1-i) mod 2^61-1, a polynomial rolling hash.
#pragma once

#include <cstdint>

namespace ucxdt {

struct Signature {
    uint64_t hash = 0;     // polynomial hash mod 2^61-1
    uint64_t power = 1;    // B^length mod 2^61-1, so that concatenation is O(1)
    int64_t length = 0;    // number of primitives

    static Signature primitive(int code);
    /// The sequence of `a` followed by `b`.
    static Signature concat(const Signature &a, const Signature &b);
    /// `a` repeated n times (n >= 0), in O(log n).
    static Signature repeat(const Signature &a, int64_t n);

    bool operator==(const Signature &o) const { return hash == o.hash && length == o.length; }
};

}  // namespace ucxdt
