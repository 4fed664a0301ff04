#include "typemap_walk.hpp"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <sstream>
#include <unordered_map>

namespace ucxdt::ref {

namespace {

// 128-bit bytes: displacements near the int64 limits, and intermediate sums and products of
// them (an origin beyond int64 whose data is not), stay exact; only results must fit int64.
using Wide = __int128;

bool fits64(Wide v) { return v >= INT64_MIN && v <= INT64_MAX; }

// Bounds of a (partial) type map with its lb/ub markers kept apart from its data, because
// markers win over data when both are present (MPI-4.1 5.1.7).
struct Span {
    int64_t size = 0;
    bool has_data = false;
    Wide lo = 0, hi = 0;    // data bytes [lo, hi)
    Wide ilo = 0, ihi = 0;  // bounds without markers: data, ub rounded up to `align`
    int64_t align = 1;      // largest alignment of the primitives
    bool has_lb = false, has_ub = false;
    Wide lb_marker = 0, ub_marker = 0;

    Wide lb() const { return has_lb ? lb_marker : has_data ? ilo : 0; }
    Wide ub() const { return has_ub ? ub_marker : has_data ? ihi : 0; }
    Wide extent() const { return ub() - lb(); }

    // Adds copies of `c` displaced by every shift in [smin, smax] (the set's extremes suffice
    // because each bound is a min or max over the copies).
    void add(const Span &c, int64_t copies, Wide smin, Wide smax) {
        if (copies <= 0) return;
        size += copies * c.size;
        align = std::max(align, c.align);
        if (c.has_data) {
            lo = has_data ? std::min(lo, c.lo + smin) : c.lo + smin;
            hi = has_data ? std::max(hi, c.hi + smax) : c.hi + smax;
            ilo = has_data ? std::min(ilo, c.ilo + smin) : c.ilo + smin;
            ihi = has_data ? std::max(ihi, c.ihi + smax) : c.ihi + smax;
            has_data = true;
        }
        if (c.has_lb) {
            lb_marker = has_lb ? std::min(lb_marker, c.lb_marker + smin) : c.lb_marker + smin;
            has_lb = true;
        }
        if (c.has_ub) {
            ub_marker = has_ub ? std::max(ub_marker, c.ub_marker + smax) : c.ub_marker + smax;
            has_ub = true;
        }
    }
    // MPI-4.1 5.1.6's epsilon: without markers, ub rounds up to a multiple of the alignment.
    void pad() {
        if (!has_ub && has_data) ihi += (align - (ihi - ilo) % align) % align;
    }
    // Copies at a + i*s for i in [0, n).
    void add_run(const Span &c, int64_t n, Wide a, Wide s) {
        if (n > 0) add(c, n, a + std::min<Wide>(0, (n - 1) * s), a + std::max<Wide>(0, (n - 1) * s));
    }
    // Copies at i*s1 + j*s2, i < n1, j < n2.
    void add_grid(const Span &c, int64_t n1, Wide s1, int64_t n2, Wide s2) {
        if (n1 <= 0 || n2 <= 0) return;
        const Wide a = (n1 - 1) * s1, b = (n2 - 1) * s2;
        add(c, n1 * n2, std::min<Wide>(0, a) + std::min<Wide>(0, b),
            std::max<Wide>(0, a) + std::max<Wide>(0, b));
    }
    // Whether size, bounds, extent and true bounds and extent fit int64, as MPI_Count does.
    bool fits() const {
        return fits64(lb()) && fits64(ub()) && fits64(extent()) &&
               (!has_data || (fits64(lo) && fits64(hi) && fits64(hi - lo)));
    }
};

// The C alignment of a primitive: its size, but for long double and the complex types.
int64_t primitive_alignment(ucxdt_primitive_t p) {
    switch (p) {
    case UCXDT_LONG_DOUBLE: return alignof(long double);
    case UCXDT_FLOAT_COMPLEX: return alignof(float);
    case UCXDT_DOUBLE_COMPLEX: return alignof(double);
    default: return layouts::primitive_size(p);
    }
}

// Strides (in elements) of each dimension of a subarray's full array, in its storage order.
std::vector<int64_t> array_strides(const TypeDesc &d) {
    const size_t nd = d.sizes.size();
    std::vector<int64_t> st(nd);
    int64_t s = 1;
    for (size_t k = 0; k < nd; ++k) {
        const size_t dim = d.order == UCXDT_ORDER_C ? nd - 1 - k : k;
        st[dim] = s;
        s *= d.sizes[dim];
    }
    return st;
}

class Walker {
public:
    const Span &span(const TypeDesc &d) {
        auto it = cache_.find(&d);
        if (it != cache_.end()) return it->second;
        Span s = compute(d);
        return cache_.emplace(&d, s).first->second;
    }

    // `base` is the displacement of d's origin, which may lie beyond int64 where its data
    // does not: primitives are emitted at int64 displacements.
    void walk(const TypeDesc &d, Wide base,
              const std::function<void(int64_t, ucxdt_primitive_t)> &emit) {
        if (d.combiner == UCXDT_COMBINER_NAMED) {
            emit(static_cast<int64_t>(base), d.primitive);
            return;
        }
        if (d.combiner == UCXDT_COMBINER_STRUCT) {
            for (int64_t i = 0; i < d.count; ++i) {
                const TypeDesc &ci = *d.children.at(i);
                const Wide ei = span(ci).extent();
                for (int64_t j = 0; j < d.blocklengths[i]; ++j)
                    walk(ci, base + d.displacements[i] + j * ei, emit);
            }
            return;
        }
        const TypeDesc &c = *d.children.at(0);
        const Wide e = span(c).extent();
        switch (d.combiner) {
        case UCXDT_COMBINER_CONTIGUOUS:
            for (int64_t k = 0; k < d.count; ++k) walk(c, base + k * e, emit);
            break;
        case UCXDT_COMBINER_VECTOR:
        case UCXDT_COMBINER_HVECTOR: {
            const Wide stride = d.combiner == UCXDT_COMBINER_VECTOR ? d.stride * e : d.stride;
            for (int64_t i = 0; i < d.count; ++i)
                for (int64_t j = 0; j < d.blocklength; ++j)
                    walk(c, base + i * stride + j * e, emit);
            break;
        }
        case UCXDT_COMBINER_INDEXED:
        case UCXDT_COMBINER_HINDEXED:
        case UCXDT_COMBINER_INDEXED_BLOCK:
        case UCXDT_COMBINER_HINDEXED_BLOCK: {
            const bool bytes = d.combiner == UCXDT_COMBINER_HINDEXED ||
                               d.combiner == UCXDT_COMBINER_HINDEXED_BLOCK;
            const bool uniform = d.combiner == UCXDT_COMBINER_INDEXED_BLOCK ||
                                 d.combiner == UCXDT_COMBINER_HINDEXED_BLOCK;
            for (int64_t i = 0; i < d.count; ++i) {
                const Wide at = bytes ? d.displacements[i] : d.displacements[i] * e;
                const int64_t bl = uniform ? d.blocklength : d.blocklengths[i];
                for (int64_t j = 0; j < bl; ++j) walk(c, base + at + j * e, emit);
            }
            break;
        }
        case UCXDT_COMBINER_SUBARRAY: {
            const size_t nd = d.sizes.size();
            for (int64_t s : d.subsizes)
                if (s == 0) return;
            const auto st = array_strides(d);
            // Odometer over the sub-box; the fastest dimension is the last for C order.
            std::vector<int64_t> idx(nd, 0);
            for (;;) {
                Wide lin = 0;
                for (size_t k = 0; k < nd; ++k) lin += (d.starts[k] + idx[k]) * Wide{st[k]};
                walk(c, base + lin * e, emit);
                size_t k = 0;
                for (; k < nd; ++k) {
                    const size_t dim = d.order == UCXDT_ORDER_C ? nd - 1 - k : k;
                    if (++idx[dim] < d.subsizes[dim]) break;
                    idx[dim] = 0;
                }
                if (k == nd) break;
            }
            break;
        }
        case UCXDT_COMBINER_RESIZED:
        case UCXDT_COMBINER_DUP: walk(c, base, emit); break;
        default: break;
        }
    }

    // MPI-4.1 5.1.6's epsilon added by d's own constructor (not by its children's).
    int64_t epsilon(const TypeDesc &d) {
        const Span unpadded = compute(d, false);
        return static_cast<int64_t>(span(d).ub() - unpadded.ub());
    }

private:
    Span compute(const TypeDesc &d, bool padded = true) {
        Span s;
        if (d.combiner == UCXDT_COMBINER_NAMED) {
            s.size = layouts::primitive_size(d.primitive);
            s.has_data = s.size > 0, s.lo = s.ilo = 0, s.hi = s.ihi = s.size;
            s.align = primitive_alignment(d.primitive);
            return s;
        }
        if (d.combiner == UCXDT_COMBINER_STRUCT) {
            for (int64_t i = 0; i < d.count; ++i) {
                const Span &c = span(*d.children.at(i));
                s.add_run(c, d.blocklengths[i], d.displacements[i], c.extent());
            }
            if (padded) s.pad();
            return s;
        }
        const Span c = span(*d.children.at(0));
        const Wide e = c.extent();
        switch (d.combiner) {
        case UCXDT_COMBINER_CONTIGUOUS: s.add_run(c, d.count, 0, e); break;
        case UCXDT_COMBINER_VECTOR: s.add_grid(c, d.count, d.stride * e, d.blocklength, e); break;
        case UCXDT_COMBINER_HVECTOR: s.add_grid(c, d.count, d.stride, d.blocklength, e); break;
        case UCXDT_COMBINER_INDEXED:
            for (int64_t i = 0; i < d.count; ++i)
                s.add_run(c, d.blocklengths[i], d.displacements[i] * e, e);
            break;
        case UCXDT_COMBINER_HINDEXED:
            for (int64_t i = 0; i < d.count; ++i)
                s.add_run(c, d.blocklengths[i], d.displacements[i], e);
            break;
        case UCXDT_COMBINER_INDEXED_BLOCK:
            for (int64_t i = 0; i < d.count; ++i)
                s.add_run(c, d.blocklength, d.displacements[i] * e, e);
            break;
        case UCXDT_COMBINER_HINDEXED_BLOCK:
            for (int64_t i = 0; i < d.count; ++i)
                s.add_run(c, d.blocklength, d.displacements[i], e);
            break;
        case UCXDT_COMBINER_SUBARRAY: {
            const auto st = array_strides(d);
            Wide first = 0, last = 0, full = 1;
            int64_t n = 1;
            for (size_t k = 0; k < d.sizes.size(); ++k) {
                first += d.starts[k] * Wide{st[k]};
                last += (d.starts[k] + d.subsizes[k] - 1) * Wide{st[k]};
                n *= d.subsizes[k], full *= d.sizes[k];
            }
            Span data = c;
            data.has_lb = data.has_ub = false;  // replaced by the subarray's own bounds below
            if (n > 0) s.add(data, n, std::min(first * e, last * e), std::max(first * e, last * e));
            s.has_lb = s.has_ub = true, s.lb_marker = 0, s.ub_marker = full * e;
            break;
        }
        case UCXDT_COMBINER_RESIZED:
            s = c;
            s.has_lb = s.has_ub = true, s.lb_marker = d.lb, s.ub_marker = Wide{d.lb} + d.extent;
            break;
        case UCXDT_COMBINER_DUP: s = c; break;
        default: break;
        }
        if (padded && d.combiner != UCXDT_COMBINER_DUP) s.pad();
        return s;
    }

    std::unordered_map<const TypeDesc *, Span> cache_;
};

}  // namespace

Bounds type_bounds(const TypeDesc &desc) {
    Walker w;
    const Span &s = w.span(desc);
    Bounds b;
    b.fits = s.fits();
    if (!b.fits) return b;
    b.size = s.size;
    b.lb = static_cast<int64_t>(s.lb()), b.extent = static_cast<int64_t>(s.extent());
    if (s.has_data)
        b.true_lb = static_cast<int64_t>(s.lo), b.true_extent = static_cast<int64_t>(s.hi - s.lo);
    return b;
}

int64_t epsilon(const TypeDesc &desc) {
    Walker w;
    return w.epsilon(desc);
}

bool representable(const TypeDesc &desc) {
    Walker w;
    std::function<bool(const TypeDesc &)> all = [&](const TypeDesc &d) {
        if (!w.span(d).fits()) return false;
        for (const auto &c : d.children)
            if (!all(*c)) return false;
        return true;
    };
    return all(desc);
}

void walk_primitives(const TypeDesc &desc, int64_t count,
                     const std::function<void(int64_t, ucxdt_primitive_t)> &emit) {
    Walker w;
    const Wide e = w.span(desc).extent();
    for (int64_t i = 0; i < count; ++i) w.walk(desc, i * e, emit);
}

void walk_typemap(const TypeDesc &desc, int64_t count,
                  const std::function<void(int64_t, int64_t)> &emit) {
    walk_primitives(desc, count, [&](int64_t disp, ucxdt_primitive_t p) {
        emit(disp, layouts::primitive_size(p));
    });
}

std::vector<Block> typemap_blocks(const TypeDesc &desc, int64_t count) {
    std::vector<Block> out;
    walk_typemap(desc, count, [&](int64_t d, int64_t n) { out.emplace_back(d, n); });
    return out;
}

std::vector<Block> typemap_runs(const TypeDesc &desc, int64_t count) {
    std::vector<Block> out;
    walk_typemap(desc, count, [&](int64_t d, int64_t n) {
        if (n == 0) return;
        if (!out.empty() && out.back().first + out.back().second == d) out.back().second += n;
        else out.emplace_back(d, n);
    });
    return out;
}

std::vector<std::byte> pack(const TypeDesc &desc, int64_t count, const std::byte *origin) {
    std::vector<std::byte> out;
    walk_typemap(desc, count, [&](int64_t disp, int64_t len) {
        // By integers: origin + disp may lie outside any object for near-limit types.
        const auto *p = reinterpret_cast<const std::byte *>(reinterpret_cast<uintptr_t>(origin) +
                                                            static_cast<uintptr_t>(disp));
        out.insert(out.end(), p, p + len);
    });
    return out;
}

void unpack(const TypeDesc &desc, int64_t count, const std::byte *stream, int64_t n,
            std::byte *origin) {
    int64_t pos = 0;
    walk_typemap(desc, count, [&](int64_t disp, int64_t len) {
        const int64_t take = std::min(len, n - pos);
        if (take <= 0) return;
        std::memcpy(origin + disp, stream + pos, static_cast<size_t>(take));
        pos += take;
    });
}

void fill_pattern(std::byte *p, int64_t n, uint64_t seed) {
    // splitmix64 of the 8-byte word index: cheap, and no two nearby words look alike.
    for (int64_t w = 0; w * 8 < n; ++w) {
        uint64_t z = seed + static_cast<uint64_t>(w) * 0x9E3779B97F4A7C15ull;
        z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
        z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
        z ^= z >> 31;
        std::memcpy(p + w * 8, &z, static_cast<size_t>(std::min<int64_t>(8, n - w * 8)));
    }
}

void fill_complement(std::byte *dst, const std::byte *src, int64_t n) {
    for (int64_t i = 0; i < n; ++i) dst[i] = ~src[i];
}

std::string check_packed(const std::vector<Block> &runs, const std::byte *origin,
                         const std::byte *packed) {
    int64_t pos = 0;
    for (size_t r = 0; r < runs.size(); ++r) {
        const auto [disp, len] = runs[r];
        if (std::memcmp(packed + pos, origin + disp, static_cast<size_t>(len)) != 0) {
            int64_t k = 0;
            while (packed[pos + k] == origin[disp + k]) ++k;
            std::ostringstream os;
            os << "packed byte " << pos + k << " (run " << r << " at displacement " << disp
               << ", length " << len << ", byte " << k << " of it) differs from the source";
            return os.str();
        }
        pos += len;
    }
    return "";
}

std::string check_scattered(const std::vector<Block> &runs, int64_t origin_bytes,
                            const std::byte *buffer, const std::byte *src, int64_t buffer_bytes) {
    std::vector<Block> sorted(runs);
    for (auto &r : sorted) r.first += origin_bytes;
    std::sort(sorted.begin(), sorted.end());
    std::ostringstream os;
    int64_t at = 0;  // every byte below `at` has been checked
    auto gap_ok = [&](int64_t end) {
        int64_t i = at;
        // Word-wise first (a poisoned word is the complement of the source word), then bytes.
        for (; i + 8 <= end; i += 8) {
            uint64_t a, b;
            std::memcpy(&a, buffer + i, 8), std::memcpy(&b, src + i, 8);
            if ((a ^ b) != ~uint64_t{0}) break;
        }
        for (; i < end; ++i)
            if (buffer[i] != ~src[i]) {
                os << "gap byte " << i - origin_bytes << " (relative to the origin) was written";
                return false;
            }
        return true;
    };
    for (const auto &[b, len] : sorted) {
        if (b < 0 || b + len > buffer_bytes) {
            os << "type map run [" << b - origin_bytes << ", +" << len
               << ") lies outside the buffer of " << buffer_bytes << " bytes";
            return os.str();
        }
        if (b < at) {
            os << "type map run at " << b - origin_bytes << " overlaps an earlier one";
            return os.str();
        }
        if (!gap_ok(b)) return os.str();
        if (std::memcmp(buffer + b, src + b, static_cast<size_t>(len)) != 0) {
            int64_t k = 0;
            while (buffer[b + k] == src[b + k]) ++k;
            os << "type map byte " << b + k - origin_bytes << " (relative to the origin) is "
               << (buffer[b + k] == ~src[b + k] ? "unwritten" : "wrong");
            return os.str();
        }
        at = b + len;
    }
    if (!gap_ok(buffer_bytes)) return os.str();
    return "";
}

}  // namespace ucxdt::ref
