#include "dt/cpu_engine.hpp"

#include "base/address.hpp"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <vector>

namespace ucxdt::cpu {

namespace {

// Every value a loop below needs lives in a local: the copies store through char pointers,
// which may alias anything, so a value read through the plan or through a captured reference
// would be loaded again after every run (what made 4-byte runs cost 4 ns each, issue 62).

// Copies n bytes without a call for n <= 32: two fixed-size moves that may overlap, loads
// before stores. Runs of a few bytes dominate real layouts (a primitive, a complex, a small
// struct member), and a library memcpy of a variable size costs more than the move itself.
inline void copy_run(char *dst, const char *src, int64_t n) {
    if (n <= 16) {
        if (n >= 8) {
            uint64_t a, b;
            std::memcpy(&a, src, 8), std::memcpy(&b, src + n - 8, 8);
            std::memcpy(dst, &a, 8), std::memcpy(dst + n - 8, &b, 8);
        } else if (n >= 4) {
            uint32_t a, b;
            std::memcpy(&a, src, 4), std::memcpy(&b, src + n - 4, 4);
            std::memcpy(dst, &a, 4), std::memcpy(dst + n - 4, &b, 4);
        } else if (n >= 2) {
            uint16_t a, b;
            std::memcpy(&a, src, 2), std::memcpy(&b, src + n - 2, 2);
            std::memcpy(dst, &a, 2), std::memcpy(dst + n - 2, &b, 2);
        } else if (n == 1) {
            *dst = *src;
        }
        return;
    }
    if (n <= 32) {
        char a[16], b[16];
        std::memcpy(a, src, 16), std::memcpy(b, src + n - 16, 16);
        std::memcpy(dst, a, 16), std::memcpy(dst + n - 16, b, 16);
        return;
    }
    std::memcpy(dst, src, static_cast<size_t>(n));
}

// n bytes between layout address `lay` and packed pointer `pk`, in the direction of Pack.
template <bool Pack>
inline void move(uintptr_t lay, char *pk, int64_t n) {
    if constexpr (Pack) copy_run(pk, reinterpret_cast<const char *>(lay), n);
    else copy_run(reinterpret_cast<char *>(lay), pk, n);
}

// `n` runs of `len` bytes (N when N > 0, a constant the compiler turns into one load and
// one store), `stride` bytes apart in the layout from `lay`, back to back in `pk`.
template <bool Pack, int64_t N>
inline void rows(uintptr_t lay, char *pk, int64_t stride, int64_t n, int64_t len) {
    if constexpr (N > 0) {
        for (int64_t i = 0; i < n; ++i, lay += static_cast<uintptr_t>(stride), pk += N) {
            if constexpr (Pack) std::memcpy(pk, reinterpret_cast<const char *>(lay), N);
            else std::memcpy(reinterpret_cast<char *>(lay), pk, N);
        }
    } else {
        for (int64_t i = 0; i < n; ++i, lay += static_cast<uintptr_t>(stride), pk += len)
            move<Pack>(lay, pk, len);
    }
}

// As rows with the stride a constant too, of every other run (the real parts of complex
// numbers, one of two interleaved fields): the compiler packs them with vector shuffles.
template <bool Pack, int64_t N, int64_t S>
inline void rows_fixed(uintptr_t lay, char *pk, int64_t n) {
    char *__restrict l = reinterpret_cast<char *>(lay);
    char *__restrict q = pk;
    for (int64_t i = 0; i < n; ++i) {
        if constexpr (Pack) std::memcpy(q + i * N, l + i * S, N);
        else std::memcpy(l + i * S, q + i * N, N);
    }
}

template <bool Pack>
void rows_of(uintptr_t lay, char *pk, int64_t stride, int64_t n, int64_t len) {
    if (stride == 2 * len) {
        switch (len) {
        case 1: rows_fixed<Pack, 1, 2>(lay, pk, n); return;
        case 2: rows_fixed<Pack, 2, 4>(lay, pk, n); return;
        case 4: rows_fixed<Pack, 4, 8>(lay, pk, n); return;
        case 8: rows_fixed<Pack, 8, 16>(lay, pk, n); return;
        default: break;
        }
    }
    switch (len) {
    case 1: rows<Pack, 1>(lay, pk, stride, n, len); break;
    case 2: rows<Pack, 2>(lay, pk, stride, n, len); break;
    case 4: rows<Pack, 4>(lay, pk, stride, n, len); break;
    case 8: rows<Pack, 8>(lay, pk, stride, n, len); break;
    case 12: rows<Pack, 12>(lay, pk, stride, n, len); break;
    case 16: rows<Pack, 16>(lay, pk, stride, n, len); break;
    case 24: rows<Pack, 24>(lay, pk, stride, n, len); break;
    case 32: rows<Pack, 32>(lay, pk, stride, n, len); break;
    default: rows<Pack, 0>(lay, pk, stride, n, len); break;
    }
}

// STRIDED: runs of the innermost dim go through one tight loop (rows_of); the odometer moves
// once per row of it.
template <bool Pack>
void strided(const Plan &p, uintptr_t buf, int64_t offset, int64_t length, char *pk) {
    const int64_t b = p.block_len;
    const size_t inner = p.dims.size() - 1;
    const int64_t count = p.dims[inner].count, stride = p.dims[inner].stride;
    Cursor c(p);
    const int64_t run = offset / b, in = offset - run * b;
    c.seek(run);
    int64_t left = length;
    if (in) {  // the tail of a run
        const int64_t n = std::min(b - in, left);
        move<Pack>(buf + static_cast<uintptr_t>(c.mem() + in), pk, n);
        pk += n, left -= n;
        c.next(inner + 1);
    }
    while (left >= b) {
        int64_t &i = c.ix(inner);
        const int64_t n = std::min(count - i, left / b);
        rows_of<Pack>(buf + static_cast<uintptr_t>(c.mem()), pk, stride, n, b);
        pk += n * b, left -= n * b;
        if ((i += n) < count) {
            c.mem() += n * stride;
        } else {  // the row is done: back to its start, one step on the outer dims
            c.mem() -= (count - n) * stride;
            i = 0;
            c.next(inner);
        }
    }
    if (left > 0) move<Pack>(buf + static_cast<uintptr_t>(c.mem()), pk, left);  // a run's head
}

// BLOCK_LIST: the unit's blocks from local pointers; the odometer moves once per unit.
template <bool Pack>
void block_list(const Plan &p, uintptr_t buf, int64_t offset, int64_t length, char *pk) {
    const int64_t *disp = p.disp.data(), *len = p.len.data();
    const int64_t nb = static_cast<int64_t>(p.len.size());
    const size_t nd = p.dims.size();
    Cursor c(p);
    const int64_t outer = offset / p.unit_size, in_unit = offset - outer * p.unit_size;
    c.seek(outer);
    int64_t j = std::upper_bound(p.prefix.begin(), p.prefix.end(), in_unit) - p.prefix.begin() - 1;
    const int64_t in_block = in_unit - p.prefix[j];
    int64_t left = length;
    uintptr_t unit = buf + static_cast<uintptr_t>(c.mem());
    if (in_block) {  // the tail of a block
        const int64_t n = std::min(len[j] - in_block, left);
        move<Pack>(unit + static_cast<uintptr_t>(disp[j] + in_block), pk, n);
        pk += n, left -= n;
        if (++j == nb && left > 0) {
            j = 0;
            c.next(nd);
            unit = buf + static_cast<uintptr_t>(c.mem());
        }
    }
    while (left > 0) {
        for (; j < nb; ++j) {
            const int64_t n = len[j];
            if (n >= left) {  // the last block: whole or its head
                move<Pack>(unit + static_cast<uintptr_t>(disp[j]), pk, left);
                return;
            }
            move<Pack>(unit + static_cast<uintptr_t>(disp[j]), pk, n);
            pk += n, left -= n;
        }
        j = 0;
        c.next(nd);
        unit = buf + static_cast<uintptr_t>(c.mem());
    }
}

template <bool Pack>
void transfer(const Plan &p, uintptr_t buf, int64_t offset, int64_t length, char *pk) {
    if (length <= 0) return;
    switch (p.cls) {
    case UCXDT_PLAN_CONTIGUOUS: move<Pack>(buf + static_cast<uintptr_t>(p.base + offset), pk, length); return;
    case UCXDT_PLAN_STRIDED: strided<Pack>(p, buf, offset, length, pk); return;
    case UCXDT_PLAN_BLOCK_LIST: block_list<Pack>(p, buf, offset, length, pk); return;
    }
}

}  // namespace

void pack(const Plan &plan, const char *buf, int64_t offset, int64_t length, char *packed) {
    transfer<true>(plan, reinterpret_cast<uintptr_t>(buf), offset, length, packed);
}

void unpack(const Plan &plan, char *buf, int64_t offset, int64_t length, const char *packed) {
    transfer<false>(plan, reinterpret_cast<uintptr_t>(buf), offset, length, const_cast<char *>(packed));
}

}  // namespace ucxdt::cpu
