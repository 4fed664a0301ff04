// What the MPI oracle's test files share (test_oracle.cpp, oracle_decode.cpp): RAII for MPI
// types, the library's known deviations, and the differential check of one type against MPI.
#pragma once

#define OMPI_SKIP_MPICXX 1
#define MPICH_SKIP_MPICXX 1

#include <ucxdt/mpi.h>
#include "support/app_layouts.hpp"
#include "support/type_desc.hpp"
#include "support/edge_desc.hpp"
#include "support/mpi_desc.hpp"
#include "support/mpi_deviations.hpp"
#include "support/random_desc.hpp"
#include "support/seeds.hpp"
#include "support/typemap_walk.hpp"
#include <gtest/gtest.h>
#include <algorithm>
#include <chrono>
#include <cfloat>
#include <climits>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace oracle {


namespace L = ucxdt::layouts;

namespace T = ucxdt::support;

using Bytes = std::vector<std::byte>;


struct Handle {
    ucxdt_type_t t = UCXDT_TYPE_NULL;
    Handle() = default;
    Handle(const Handle &) = delete;
    Handle &operator=(const Handle &) = delete;
    ~Handle() {
        if (t != UCXDT_TYPE_NULL) ucxdt_type_free(&t);
    }
};


struct MpiType {
    MPI_Datatype t = MPI_DATATYPE_NULL;
    MpiType() = default;
    explicit MpiType(MPI_Datatype x) : t(x) {}
    MpiType(const MpiType &) = delete;
    MpiType &operator=(const MpiType &) = delete;
    ~MpiType() {
        if (t != MPI_DATATYPE_NULL) MPI_Type_free(&t);
    }
};


inline std::string err(ucxdt_status_t st) {
    return std::string(ucxdt_status_string(st)) + " (" + ucxdt_last_error() + ")";
}


using T::env_u64;

using T::mix;


struct Bounds {
    int64_t size = 0, lb = 0, extent = 0, true_lb = 0, true_extent = 0;
};


inline std::string str(const Bounds &b) {
    std::ostringstream os;
    os << "{size " << b.size << ", lb " << b.lb << ", extent " << b.extent << ", true_lb "
       << b.true_lb << ", true_extent " << b.true_extent << "}";
    return os.str();
}


inline Bounds mpi_bounds(MPI_Datatype t) {
    Bounds b;
    MPI_Count size = 0, lb = 0, ext = 0, tlb = 0, text = 0;
    MPI_Type_size_x(t, &size);
    MPI_Type_get_extent_x(t, &lb, &ext);
    MPI_Type_get_true_extent_x(t, &tlb, &text);
    b.size = size, b.lb = lb, b.extent = ext;
    // Open MPI reports garbage true bounds for some types without data; MPI-4.1 does not
    // define them, ucxdt reports 0, 0.
    if (size > 0) b.true_lb = tlb, b.true_extent = text;
    return b;
}


// "" if equal; true bounds compared only for types with data. `what` names where m is from.
inline std::string compare_bounds(const char *who, ucxdt_type_t t, const Bounds &m,
                           const char *what = "MPI") {
    Bounds u;
    ucxdt_status_t st = ucxdt_type_size(t, &u.size);
    if (st == UCXDT_OK) st = ucxdt_type_extent(t, &u.lb, &u.extent);
    if (st == UCXDT_OK) st = ucxdt_type_true_extent(t, &u.true_lb, &u.true_extent);
    if (st != UCXDT_OK) return std::string(who) + ": query failed: " + err(st);
    if (m.size == 0) u.true_lb = u.true_extent = 0;
    if (u.size != m.size || u.lb != m.lb || u.extent != m.extent || u.true_lb != m.true_lb ||
        u.true_extent != m.true_extent)
        return std::string(who) + ": bounds " + str(u) + " != " + what + " " + str(m);
    return "";
}


inline std::string compare_signature(ucxdt_type_t a, ucxdt_type_t b, int64_t count, const char *what) {
    ucxdt_signature_t sa{}, sb{};
    ucxdt_status_t st = ucxdt_type_signature(a, count, &sa);
    if (st == UCXDT_OK) st = ucxdt_type_signature(b, count, &sb);
    if (st != UCXDT_OK) return std::string(what) + ": signature failed: " + err(st);
    if (sa.hash != sb.hash || sa.length != sb.length)
        return std::string(what) + ": signatures differ (length " +
               std::to_string(sa.length) + " vs " + std::to_string(sb.length) + ")";
    return "";
}


inline std::string first_diff(const std::byte *got, const std::byte *want, int64_t n,
                       const char *what) {
    for (int64_t i = 0; i < n; ++i)
        if (got[i] != want[i]) {
            char buf[160];
            std::snprintf(buf, sizeof buf, "%s: byte %lld of %lld is 0x%02x, expected 0x%02x",
                          what, static_cast<long long>(i), static_cast<long long>(n),
                          static_cast<unsigned>(got[i]), static_cast<unsigned>(want[i]));
            return buf;
        }
    return "";
}


// `out` holds at least one byte, so that its pointer is never null.
inline int mpi_pack(const std::byte *in, int64_t count, MPI_Datatype t, Bytes &out) {
    int pos = 0;
    return MPI_Pack(in, static_cast<int>(count), t, out.data(), static_cast<int>(out.size()),
                    &pos, MPI_COMM_WORLD);
}


inline int mpi_unpack(const Bytes &in, std::byte *out, int64_t count, MPI_Datatype t) {
    int pos = 0;
    const std::byte dummy{};
    return MPI_Unpack(in.empty() ? &dummy : in.data(), static_cast<int>(in.size()), &pos, out,
                      static_cast<int>(count), t, MPI_COMM_WORLD);
}


// Segment boundaries: `segs` ranges with random (possibly empty) lengths covering [0, total).
inline std::vector<std::pair<int64_t, int64_t>> segments(int64_t total, int segs, T::Rng &rng) {
    std::vector<int64_t> cuts{0, total};
    std::uniform_int_distribution<int64_t> pick(0, total);
    for (int i = 1; i < segs; ++i) cuts.push_back(pick(rng));
    std::sort(cuts.begin(), cuts.end());
    std::vector<std::pair<int64_t, int64_t>> out;
    for (size_t i = 1; i < cuts.size(); ++i) out.emplace_back(cuts[i - 1], cuts[i] - cuts[i - 1]);
    return out;
}


enum class Order { NORMAL, REVERSE, RANDOM };


inline void reorder(std::vector<std::pair<int64_t, int64_t>> &s, Order o, T::Rng &rng) {
    if (o == Order::REVERSE) std::reverse(s.begin(), s.end());
    if (o == Order::RANDOM) std::shuffle(s.begin(), s.end(), rng);
}


inline const char *order_name(Order o) {
    return o == Order::NORMAL ? "normal" : o == Order::REVERSE ? "reverse" : "random";
}


// The MPI library of this process and where it is known to deviate from MPI-4.1
// (support/mpi_deviations.hpp, support/deviations.hpp); MPI must be initialized.
inline const T::MpiIdentity &identity() {
    static const T::MpiIdentity id = T::mpi_identity();
    return id;
}


inline const std::vector<const T::Deviation *> &known() {
    static const std::vector<const T::Deviation *> k = T::known_deviations(identity());
    return k;
}


inline bool has_effect(const std::vector<const T::Deviation *> &devs, T::Deviation::Effect e) {
    return std::any_of(devs.begin(), devs.end(), [&](const T::Deviation *d) {
        return d->effect == e;
    });
}


// The known deviations that may show for `count` elements of `desc` (those of contiguous(count,
// desc), which is what packing them is) as a send type, or as a receive type (`receiving`:
// UNPACK_CRASH too); PADDING_BYTES apart, which are compared around.
struct Applicable {
    std::vector<const T::Deviation *> all;
    std::vector<const T::Deviation *> devs;  // checked against the standard where non-empty
    bool padding = false;                     // PADDING_BYTES applies
};


inline Applicable applicable(const L::TypeDesc &desc, int64_t count, bool receiving) {
    Applicable a;
    for (const T::Deviation *d : T::deviations_of(desc, count, known()))
        if (receiving || d->effect != T::Deviation::Effect::UNPACK_CRASH) a.all.push_back(d);
    for (const T::Deviation *d : a.all) {
        if (d->effect == T::Deviation::Effect::PADDING_BYTES) a.padding = true;
        else a.devs.push_back(d);
    }
    return a;
}


// Bytes of primitives that are no part of their values: x86-64's long double holds 10 bytes
// of an 80-bit value in 16.
constexpr int64_t kLongDoubleValue = LDBL_MANT_DIG == 64 ? 10 : int64_t{sizeof(long double)};


// 1 at the packed stream's bytes of count elements of desc that are padding of primitives.
inline Bytes padding_in_stream(const L::TypeDesc &desc, int64_t count) {
    Bytes mask;
    ucxdt::ref::walk_primitives(desc, count, [&](int64_t, ucxdt_primitive_t p) {
        const int64_t n = L::primitive_size(p), v = p == UCXDT_LONG_DOUBLE ? kLongDoubleValue : n;
        mask.insert(mask.end(), static_cast<size_t>(v), std::byte{0});
        mask.insert(mask.end(), static_cast<size_t>(n - v), std::byte{1});
    });
    return mask;
}


// 1 at the bytes of a buffer (type map at `origin`) that are padding of primitives.
inline Bytes padding_in_memory(const L::TypeDesc &desc, int64_t count, int64_t bytes, int64_t origin) {
    Bytes mask(static_cast<size_t>(bytes), std::byte{0});
    ucxdt::ref::walk_primitives(desc, count, [&](int64_t disp, ucxdt_primitive_t p) {
        if (p != UCXDT_LONG_DOUBLE) return;
        for (int64_t i = kLongDoubleValue; i < L::primitive_size(p); ++i)
            mask[static_cast<size_t>(origin + disp + i)] = std::byte{1};
    });
    return mask;
}


// Copies of a and b with the bytes `skip` marks set to 0 in both.
inline std::pair<Bytes, Bytes> without(const Bytes &a, const Bytes &b, const Bytes &skip) {
    Bytes x = a, y = b;
    for (size_t i = 0; i < skip.size() && i < x.size() && i < y.size(); ++i)
        if (skip[i] != std::byte{0}) x[i] = y[i] = std::byte{0};
    return {x, y};
}


// UCXDT_ORACLE_TRACE: print each type before it is checked.
const bool g_trace = env_u64("UCXDT_ORACLE_TRACE", 0) != 0;


// Buffers beyond this are not allocated: near-limit types whose data lies far apart are
// checked on their bounds alone.
constexpr int64_t kMaxBuffer = int64_t{16} << 20;


struct Stats {
    int64_t types = 0, packs = 0, ranges = 0, unpacks = 0, packed_bytes = 0;
    int64_t nodes = 0;  // subtypes checked on their own
    // Send, receive and sub-types where the natively built type differs from MPI (bounds,
    // packed or unpacked bytes), and where the reference walker does.
    int64_t native_vs_mpi = 0, reference_vs_mpi = 0;
    // Types whose import ucxdt_type_from_mpi had to resize to MPI's bounds (its net for an MPI
    // library's deviations) although no known deviation applies.
    int64_t import_resized = 0;
    // (Sub)types checked against the standard (the reference walker) instead of MPI, where a
    // known deviation of the library applies; and those where ucxdt's differs from it.
    int64_t vs_standard = 0, native_vs_standard = 0;
    int64_t metadata_only = 0;  // bounds only: data too far apart for a buffer
    int64_t failures = 0;
    std::map<std::string, int64_t> by_kind;  // failure kind -> count
    std::vector<std::string> reproducers;    // the first few, in full
    // Per known deviation: the types it applied to, and of those, the ones where the library's
    // bounds or packed bytes differed from the standard's in fact.
    struct Seen {
        int64_t types = 0, differed = 0;
    };
    std::map<std::string, Seen> deviations;
    // Per edge category (support/edge_desc.hpp): cases compared against MPI, and against the
    // standard for a known deviation.
    struct Compared {
        int64_t vs_mpi = 0, vs_standard = 0;
    };
    std::map<T::Edge, Compared> categories;
};


inline bool operator==(const Bounds &a, const Bounds &b) {
    return a.size == b.size && a.lb == b.lb && a.extent == b.extent && a.true_lb == b.true_lb &&
           a.true_extent == b.true_extent;
}


inline Bounds reference_bounds(const L::TypeDesc &d) {
    const ucxdt::ref::Bounds r = ucxdt::ref::type_bounds(d);
    return {r.size, r.lb, r.extent, r.size ? r.true_lb : 0, r.size ? r.true_extent : 0};
}


// p + off for an offset that may leave the buffer by far (near-limit types pass a pointer
// whose displacements bring it back): address arithmetic, not pointer arithmetic.
template <class B> B *displaced(B *p, int64_t off) {
    return reinterpret_cast<B *>(reinterpret_cast<uintptr_t>(p) + static_cast<uintptr_t>(off));
}


// Whether ucxdt_type_from_mpi resized `imp`, the import of `desc`, to MPI's bounds: only then
// is a node that is no resized type imported as one.
inline bool import_resized(ucxdt_type_t imp, const L::TypeDesc &desc) {
    ucxdt_combiner_t c = UCXDT_COMBINER_NAMED;
    return ucxdt_type_combiner(imp, &c) == UCXDT_OK && c == UCXDT_COMBINER_RESIZED &&
           desc.combiner != UCXDT_COMBINER_RESIZED;
}


// Checks the imported and the native type of one (sub)type against MPI and the reference
// walker: bounds, and that the import needed no resize to MPI's bounds. `who` names the type.
// Where a known deviation of the library applies (`devs`), the standard decides: the native
// type must have the reference walker's bounds, and the import MPI's size, lb and extent (its
// contract, whatever the library's deviation); `differed` is set if MPI's are not the
// standard's. Without an MPI type (`m` null: the library rejects it) only the native type.
inline std::string check_bounds(const std::string &who, const L::TypeDesc &desc, MPI_Datatype m,
                         ucxdt_type_t imp, ucxdt_type_t nat,
                         const std::vector<const T::Deviation *> &devs, Stats &stats,
                         bool *differed = nullptr) {
    const Bounds rb = reference_bounds(desc);
    if (!devs.empty()) {
        ++stats.vs_standard;
        if (auto d = compare_bounds((who + " (native)").c_str(), nat, rb, "the standard's");
            !d.empty()) {
            ++stats.native_vs_standard;
            return d;
        }
        if (m == MPI_DATATYPE_NULL) return "";
        const Bounds mb = mpi_bounds(m);
        if (differed && !(mb == rb)) *differed = true;
        Bounds ib = mb;
        ucxdt_status_t st = ucxdt_type_size(imp, &ib.size);
        if (st == UCXDT_OK) st = ucxdt_type_extent(imp, &ib.lb, &ib.extent);
        if (st != UCXDT_OK) return who + " (imported): query failed: " + err(st);
        if (ib.size != mb.size || ib.lb != mb.lb || ib.extent != mb.extent)
            return who + " (imported): size/lb/extent " + str(ib) + " != MPI " + str(mb);
        return "";
    }
    const Bounds mb = mpi_bounds(m);
    if (auto d = compare_bounds((who + " (imported)").c_str(), imp, mb); !d.empty()) return d;
    if (auto d = compare_bounds((who + " (native)").c_str(), nat, mb); !d.empty()) {
        ++stats.native_vs_mpi;
        return d + " (reference " + str(rb) + ")";
    }
    if (!(rb == mb)) {
        ++stats.reference_vs_mpi;
        return who + " (reference): bounds " + str(rb) + " != MPI " + str(mb);
    }
    if (import_resized(imp, desc)) {
        ++stats.import_resized;
        return who + " (imported): resized to MPI's bounds although ucxdt's agree";
    }
    return "";
}


// Every derived subtype of `desc` (not desc itself) on its own, as check_bounds does, children
// before parents so that a failure names the smallest subtype: the bounds of a parent may hide
// a child's (resized, subarray), and the import's resize to MPI's bounds may fire at any level.
inline std::string check_subtypes(const L::TypeDesc &desc, Stats &stats,
                           std::vector<const L::TypeDesc *> &seen) {
    for (const L::TypeDescPtr &c : desc.children) {
        if (c->combiner == UCXDT_COMBINER_NAMED ||
            std::find(seen.begin(), seen.end(), c.get()) != seen.end())
            continue;
        seen.push_back(c.get());
        if (auto d = check_subtypes(*c, stats, seen); !d.empty()) return d;
        const auto devs = T::deviations_of(*c, known());
        const bool rejects = has_effect(devs, T::Deviation::Effect::REJECTS);
        MpiType m(rejects ? MPI_DATATYPE_NULL : T::to_mpi(*c));
        Handle imp, nat;
        ucxdt_status_t st = rejects ? UCXDT_OK : ucxdt_type_from_mpi(m.t, &imp.t);
        if (st != UCXDT_OK) return "ucxdt_type_from_mpi(subtype) failed: " + err(st);
        st = L::build(*c, &nat.t);
        if (st != UCXDT_OK) return "build(subtype) failed: " + err(st);
        ++stats.nodes;
        if (auto d = check_bounds("subtype", *c, m.t, imp.t, nat.t, devs, stats); !d.empty())
            return d + "\n      subtype: " + L::to_string(*c);
    }
    return "";
}


// Packs `count` elements both ways and checks ucxdt, the imported (unless null) and the native
// handle, against `want` (MPI_Pack's output, or the standard's); whole packs, then ranges.
inline std::string check_pack(const std::byte *origin, int64_t count, ucxdt_type_t imp,
                       ucxdt_type_t nat, const Bytes &want, T::Rng &rng, Stats &stats) {
    const int64_t total = static_cast<int64_t>(want.size());
    // A nonzero starting position must be honored and advanced by exactly the packed size.
    const int64_t at = std::uniform_int_distribution<int64_t>(0, 9)(rng);
    for (ucxdt_type_t h : {imp, nat}) {
        if (h == UCXDT_TYPE_NULL) continue;
        const char *who = h == imp ? "ucxdt_pack (imported)" : "ucxdt_pack (native)";
        Bytes got(static_cast<size_t>(total + at + 1), std::byte{0xA5});
        int64_t pos = at;
        const ucxdt_status_t st = ucxdt_pack(origin, count, h, got.data(), total + at, &pos);
        if (st != UCXDT_OK) return std::string(who) + " failed: " + err(st);
        std::string d;
        if (pos != total + at)
            d = std::string(who) + ": position " + std::to_string(pos) + ", expected " +
                std::to_string(total + at);
        else
            d = first_diff(got.data() + at, want.data(), total, who);
        if (!d.empty()) {
            if (h == nat) ++stats.native_vs_mpi;
            return d;
        }
        ++stats.packs;
    }
    int pass = 0;
    for (int segs : {1, 7, 64}) {
        for (Order o : {Order::NORMAL, Order::REVERSE, Order::RANDOM}) {
            const ucxdt_type_t h = pass++ % 2 && imp != UCXDT_TYPE_NULL ? imp : nat;
            auto s = segments(total, segs, rng);
            reorder(s, o, rng);
            Bytes got(static_cast<size_t>(total + 1), std::byte{0xA5});
            for (auto [off, len] : s) {
                const ucxdt_status_t st =
                    ucxdt_pack_range(origin, count, h, off, got.data() + off, len);
                if (st != UCXDT_OK)
                    return "ucxdt_pack_range(" + std::to_string(off) + ", " +
                           std::to_string(len) + ") failed: " + err(st);
            }
            const std::string what = std::string("pack_range ") + std::to_string(segs) +
                                     " segments, " + order_name(o) + " order" +
                                     (h == imp ? " (imported)" : " (native)");
            std::string d = first_diff(got.data(), want.data(), total, what.c_str());
            if (!d.empty()) {
                if (h == nat) ++stats.native_vs_mpi;
                return d;
            }
            ++stats.ranges;
        }
    }
    return "";
}


// Compares a received buffer with the expected one; `mask` marks the type map's bytes.
inline std::string compare_received(const Bytes &got, const Bytes &want, const Bytes &mask,
                             int64_t origin, const char *what) {
    for (size_t i = 0; i < got.size(); ++i) {
        if (got[i] == want[i]) continue;
        std::ostringstream os;
        os << what << ": byte " << static_cast<int64_t>(i) - origin
           << " (relative to the buffer origin) "
           << (mask[i] != std::byte{0} ? "of the type map differs from the expected"
                                       : "outside the type map was written (poison lost)");
        return os.str();
    }
    return "";
}


// Unpacks `stream` (count elements of the sender's type) into `rel`, a type of the same
// signature: the imported and the native handle against MPI_Unpack, which the reference walker
// must match too; into buffers poisoned alike, every byte compared. Then packs the received
// data back. Where a known deviation of the library applies to `rel`, against the reference
// walker's unpack (the standard's) instead.
inline std::string check_unpack(const L::TypeDesc &rel, int64_t count, ucxdt_type_t nat,
                         const Bytes &stream, uint64_t seed, T::Rng &rng, Stats &stats) {
    const int64_t total = static_cast<int64_t>(stream.size());
    const Applicable app = applicable(rel, count, true);
    const auto &devs = app.devs;
    for (const T::Deviation *d : devs)
        if (d->effect == T::Deviation::Effect::UNPACK_CRASH) ++stats.deviations[d->id].types;
    const bool by_mpi = devs.empty();
    MpiType mrel(has_effect(devs, T::Deviation::Effect::REJECTS) ? MPI_DATATYPE_NULL
                                                                 : T::to_mpi(rel));
    Handle nrel, irel;
    ucxdt_status_t st = L::build(rel, &nrel.t);
    if (st != UCXDT_OK) return "build(relayout) failed: " + err(st);
    if (mrel.t != MPI_DATATYPE_NULL) {
        st = ucxdt_type_from_mpi(mrel.t, &irel.t);
        if (st != UCXDT_OK) return "ucxdt_type_from_mpi(relayout) failed: " + err(st);
    }
    if (reference_bounds(rel).size * count != total) return "support: relayout changed the size";
    std::vector<const L::TypeDesc *> seen;
    if (auto d = check_subtypes(rel, stats, seen); !d.empty()) return d;
    if (auto d = check_bounds("relayout", rel, mrel.t, irel.t, nrel.t, devs, stats); !d.empty())
        return d;
    if (auto d = compare_signature(nrel.t, nat, count, "relayout vs original"); !d.empty())
        return d;
    if (irel.t != UCXDT_TYPE_NULL)
        if (auto d = compare_signature(irel.t, nat, count, "imported relayout vs original");
            !d.empty())
            return d;

    {
        // By construction, the relayout touches no byte twice (MPI-4.1 semantics).
        auto blocks = ucxdt::ref::typemap_blocks(rel, count);
        std::sort(blocks.begin(), blocks.end());
        for (size_t i = 1; i < blocks.size(); ++i)
            if (blocks[i].first < blocks[i - 1].first + blocks[i - 1].second)
                return "support: relayout overlaps at byte " + std::to_string(blocks[i].first);
    }
    const T::BufferSpan sp = by_mpi ? T::joint_span(rel, mrel.t, count, 64)
                                    : T::buffer_span(rel, count, 64);
    Bytes poison(static_cast<size_t>(sp.bytes));
    ucxdt::ref::fill_pattern(poison.data(), sp.bytes, seed ^ 0x5A5A5A5Aull);

    // The expected result, and the set of bytes the type map covers (all-ones data into
    // zeros): MPI's, which the reference walker's must match, or the standard's alone.
    Bytes want = poison, mask(poison.size(), std::byte{0});
    const Bytes ones(std::max<size_t>(stream.size(), 1), std::byte{0xFF});
    Bytes want_ref = poison, mask_ref(poison.size(), std::byte{0});
    ucxdt::ref::unpack(rel, count, stream.data(), total, want_ref.data() + sp.origin);
    ucxdt::ref::unpack(rel, count, ones.data(), total, mask_ref.data() + sp.origin);
    if (!by_mpi) {
        want = want_ref, mask = mask_ref;
    } else {
        if (mpi_unpack(stream, want.data() + sp.origin, count, mrel.t) != MPI_SUCCESS ||
            mpi_unpack(ones, mask.data() + sp.origin, count, mrel.t) != MPI_SUCCESS)
            return "MPI_Unpack(relayout) failed";
        // Where the library leaves padding of primitives out, everywhere else; then ucxdt is
        // held to the standard's bytes, which include it.
        const Bytes pad = app.padding ? padding_in_memory(rel, count, sp.bytes, sp.origin)
                                      : Bytes(poison.size(), std::byte{0});
        const auto [w_ref, w_mpi] = without(want_ref, want, pad);
        const auto [m_ref, m_mpi] = without(mask_ref, mask, pad);
        std::string d = compare_received(w_ref, w_mpi, mask, sp.origin,
                                         "reference unpack of the relayout vs MPI_Unpack");
        if (d.empty() && m_ref != m_mpi)
            d = "reference unpack of the relayout covers other bytes than MPI_Unpack";
        if (!d.empty()) {
            ++stats.reference_vs_mpi;
            return d;
        }
        // MPI packs back what it received, or the relayout is no valid receive type.
        Bytes back(std::max<size_t>(stream.size(), 1));
        if (mpi_pack(want.data() + sp.origin, count, mrel.t, back) != MPI_SUCCESS)
            return "MPI_Pack(relayout) failed";
        const Bytes sp_pad = app.padding ? padding_in_stream(rel, count) : Bytes();
        const auto [b_mpi, b_want] = without(back, stream, sp_pad);
        if (auto d2 = first_diff(b_mpi.data(), b_want.data(), total,
                                 "support: relayout overlaps (MPI round trip)");
            !d2.empty())
            return d2;
        if (app.padding) want = want_ref, mask = mask_ref;
    }

    // Native: ranges in random order, 7 or 64 segments.
    Bytes got = poison;
    auto s = segments(total, std::uniform_int_distribution<int>(0, 1)(rng) ? 7 : 64, rng);
    reorder(s, Order::RANDOM, rng);
    for (auto [off, len] : s) {
        st = ucxdt_unpack_range(stream.data() + off, off, len, got.data() + sp.origin, count,
                                nrel.t);
        if (st != UCXDT_OK)
            return "ucxdt_unpack_range(" + std::to_string(off) + ", " + std::to_string(len) +
                   ") failed: " + err(st);
    }
    if (auto d = compare_received(got, want, mask, sp.origin, "unpack_range (native relayout)");
        !d.empty()) {
        ++(by_mpi ? stats.native_vs_mpi : stats.native_vs_standard);
        return d;
    }

    // A whole unpack: by the import where the library's bounds are the standard's.
    int64_t pos = 0;
    {
        Bytes got2 = poison;
        const ucxdt_type_t h = by_mpi ? irel.t : nrel.t;
        st = ucxdt_unpack(stream.data(), total, &pos, got2.data() + sp.origin, count, h);
        if (st != UCXDT_OK) return "ucxdt_unpack failed: " + err(st);
        if (pos != total) return "ucxdt_unpack: position " + std::to_string(pos);
        if (auto d = compare_received(got2, want, mask, sp.origin,
                                      by_mpi ? "ucxdt_unpack (imported relayout)"
                                             : "ucxdt_unpack (native relayout)");
            !d.empty())
            return d;
    }
    ++stats.unpacks;

    // Pack back what ucxdt received: the original stream.
    Bytes back(std::max<size_t>(stream.size(), 1), std::byte{0xA5});
    pos = 0;
    st = ucxdt_pack(got.data() + sp.origin, count, nrel.t, back.data(), total, &pos);
    if (st != UCXDT_OK) return "ucxdt_pack(relayout) failed: " + err(st);
    return first_diff(back.data(), stream.data(), total, "pack back of the relayout");
}


// Everything for one random (desc, count); "" when ucxdt, natively built and imported, and the
// reference walker all agree with MPI, or where the library is known to deviate, ucxdt with the
// standard. Sets *vs_standard in that case.
inline std::string check_desc(const L::TypeDesc &desc, int64_t count, uint64_t seed, T::Rng &rng,
                       Stats &stats, bool *vs_standard) {
    const Applicable app = applicable(desc, count, false);
    const auto &devs = app.devs;
    const bool by_mpi = devs.empty(), rejects = has_effect(devs, T::Deviation::Effect::REJECTS);
    *vs_standard = !by_mpi;
    MpiType mt(rejects ? MPI_DATATYPE_NULL : T::to_mpi(desc));
    Handle imp, nat;
    ucxdt_status_t st = rejects ? UCXDT_OK : ucxdt_type_from_mpi(mt.t, &imp.t);
    if (st != UCXDT_OK) return "ucxdt_type_from_mpi failed: " + err(st);
    st = L::build(desc, &nat.t);
    if (st != UCXDT_OK) return "build failed: " + err(st);

    bool differed = false;  // the library's answer is not the standard's, but in padding
    bool padding_differed = false;  // the library's packed padding bytes are not the source's
    if (rejects) {  // in fact?
        try {
            MpiType accepted(T::to_mpi(desc));
        } catch (const std::runtime_error &) {
            differed = true;
        }
    }
    auto note = [&] {
        for (const T::Deviation *d : app.all) {
            ++stats.deviations[d->id].types;
            const bool padding = d->effect == T::Deviation::Effect::PADDING_BYTES;
            if (padding ? padding_differed : differed) ++stats.deviations[d->id].differed;
        }
    };
    std::vector<const L::TypeDesc *> seen;
    if (auto d = check_subtypes(desc, stats, seen); !d.empty()) return d;
    if (auto d = check_bounds("type", desc, mt.t, imp.t, nat.t, devs, stats, &differed);
        !d.empty())
        return d;
    if (imp.t != UCXDT_TYPE_NULL)
        if (auto d = compare_signature(imp.t, nat.t, count, "imported vs native"); !d.empty())
            return d;

    // A buffer for what the type map touches; where the library deviates, with room for it
    // to read elsewhere.
    const T::BufferSpan sp = by_mpi ? T::joint_span(desc, mt.t, count, 0)
                                    : T::buffer_span(desc, count, 4096);
    if (sp.bytes > kMaxBuffer) {
        ++stats.metadata_only;
        note();
        return "";
    }
    const int64_t total = reference_bounds(desc).size * count;
    if (total > INT_MAX) return "support: packed size exceeds MPI's int";
    Bytes src(static_cast<size_t>(sp.bytes));
    ucxdt::ref::fill_pattern(src.data(), sp.bytes, seed);
    const std::byte *origin = displaced(src.data(), sp.origin);
    const Bytes want_ref = ucxdt::ref::pack(desc, count, origin);
    // Where the library deviates, it is asked to pack only to see a deviation of its packing
    // show (MPICH 4.0's MPI_Pack divides by zero on some types of its bounds deviations), and
    // only if what its own bounds say it touches lies in the buffer (MPICH's struct bounds
    // may step elements by far more than the standard's).
    bool ask_mpi = std::all_of(devs.begin(), devs.end(), [](const T::Deviation *d) {
        return d->effect == T::Deviation::Effect::PACKING;
    });
    if (ask_mpi && !by_mpi) {
        const T::BufferSpan m = T::mpi_span(mt.t, count, 0);
        ask_mpi = m.bytes != INT64_MAX && -m.origin >= -sp.origin &&
                  m.bytes - m.origin <= sp.bytes - sp.origin;
    }
    Bytes expected(static_cast<size_t>(std::max<int64_t>(total, 1)));
    if (ask_mpi && mpi_pack(origin, count, mt.t, expected) != MPI_SUCCESS)
        return "MPI_Pack failed";
    expected.resize(static_cast<size_t>(total));
    if (by_mpi) {
        stats.packed_bytes += total;
        // Where the library leaves padding of primitives out, everywhere else; then ucxdt is
        // held to the standard's bytes, which include it.
        const auto [r, e] = without(want_ref, expected,
                                    app.padding ? padding_in_stream(desc, count) : Bytes());
        if (auto d = want_ref.size() != expected.size()
                         ? "reference pack: " + std::to_string(want_ref.size()) + " bytes"
                         : first_diff(r.data(), e.data(), total, "reference pack vs MPI_Pack");
            !d.empty()) {
            ++stats.reference_vs_mpi;
            return d;
        }
        if (app.padding) padding_differed = expected != want_ref, expected = want_ref;
    } else {
        if (ask_mpi && expected != want_ref) differed = true;
        expected = want_ref;
    }
    note();
    if (auto d = check_pack(origin, count, by_mpi ? imp.t : UCXDT_TYPE_NULL, nat.t, expected,
                            rng, stats);
        !d.empty()) {
        if (!by_mpi) ++stats.native_vs_standard;
        return d;
    }
    const L::TypeDescPtr rel = T::relayout(desc, rng);
    if (g_trace) {
        std::printf("[ oracle   ]   receive type: %s\n", L::to_string(*rel).c_str());
        std::fflush(stdout);
    }
    if (auto d = check_unpack(*rel, count, nat.t, expected, seed, rng, stats); !d.empty())
        return d + "\n      receive type: " + L::to_string(*rel);
    return "";
}


inline void run_random(int64_t ntypes, uint64_t seed, const char *name) {
    const T::MpiIdentity &who = identity();
    std::printf("[ oracle   ] %s: %lld random types, seed %llu (UCXDT_TEST_SEED=%llu replays), "
                "against %s\n",
                name, static_cast<long long>(ntypes), static_cast<unsigned long long>(seed),
                static_cast<unsigned long long>(seed), who.text.c_str());
    // This run's library must be one whose deviations are listed: else a deviation would
    // read as ucxdt's failure, or an unlisted library pass for a listed one.
    EXPECT_NE(who.flavor, T::MpiIdentity::Flavor::other) << "unknown MPI library: " << who.text;
    Stats stats;
    const auto t0 = std::chrono::steady_clock::now();
    constexpr int kEdges = static_cast<int>(T::Edge::COUNT);
    for (int64_t i = 0; i < ntypes; ++i) {
        const uint64_t s = mix(seed ^ mix(static_cast<uint64_t>(i)));
        T::Rng rng(s);
        // Every other type is of an edge category in turn; the rest avoid Open MPI's
        // deviations, so that most of them are checked against either library.
        L::TypeDescPtr desc;
        int64_t count = 1;
        if (i % 2) {
            const T::EdgeCase c = T::edge_desc(static_cast<T::Edge>((i / 2) % kEdges), rng);
            desc = c.desc, count = c.count;
        } else {
            desc = T::random_desc(rng);
            count = std::uniform_int_distribution<int64_t>(1, 3)(rng);
        }
        if (g_trace) {  // before the check: the last one printed names a type MPI crashes on
            std::printf("[ oracle   ] type #%lld count %lld: %s\n", static_cast<long long>(i),
                        static_cast<long long>(count), L::to_string(*desc).c_str());
            std::fflush(stdout);
        }
        std::string failure;
        bool vs_standard = false;
        try {
            failure = check_desc(*desc, count, s, rng, stats, &vs_standard);
        } catch (const std::exception &e) {
            failure = std::string("exception: ") + e.what();
        }
        ++stats.types;
        if (failure.empty()) {
            for (int e = 0; e < kEdges; ++e)
                if (T::in_category(static_cast<T::Edge>(e), *desc, count)) {
                    auto &c = stats.categories[static_cast<T::Edge>(e)];
                    ++(vs_standard ? c.vs_standard : c.vs_mpi);
                }
            continue;
        }
        ++stats.failures;
        ++stats.by_kind[failure.substr(0, failure.find(':'))];
        if (stats.reproducers.size() < env_u64("UCXDT_ORACLE_REPRODUCERS", 10))
            stats.reproducers.push_back("type #" + std::to_string(i) + " count " +
                                        std::to_string(count) + ": " + L::to_string(*desc) +
                                        "\n      " + failure);
    }
    const double secs =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::printf("[ oracle   ] %lld types (and %lld subtypes) in %.1f s: %lld whole packs, "
                "%lld range packs, %lld unpacks, %lld bytes packed by MPI; native vs MPI differ "
                "in %lld, reference walker vs MPI in %lld, imports resized to MPI's bounds: "
                "%lld; %lld (sub)types against the standard for a known deviation (native "
                "differs in %lld); %lld on bounds alone; %lld failures\n",
                static_cast<long long>(stats.types), static_cast<long long>(stats.nodes), secs,
                static_cast<long long>(stats.packs), static_cast<long long>(stats.ranges),
                static_cast<long long>(stats.unpacks),
                static_cast<long long>(stats.packed_bytes),
                static_cast<long long>(stats.native_vs_mpi),
                static_cast<long long>(stats.reference_vs_mpi),
                static_cast<long long>(stats.import_resized),
                static_cast<long long>(stats.vs_standard),
                static_cast<long long>(stats.native_vs_standard),
                static_cast<long long>(stats.metadata_only),
                static_cast<long long>(stats.failures));
    for (const T::Deviation *d : known()) {
        const Stats::Seen &n = stats.deviations[d->id];
        if (!d->applies)
            std::printf("[ oracle   ]   known deviation %s: outside the random types\n", d->id);
        else if (d->effect == T::Deviation::Effect::UNPACK_CRASH)
            std::printf("[ oracle   ]   known deviation %s: applied to %lld receive types, "
                        "MPI_Unpack not called\n",
                        d->id, static_cast<long long>(n.types));
        else
            std::printf("[ oracle   ]   known deviation %s: applied to %lld types, the library "
                        "differed from MPI-4.1 on %lld\n",
                        d->id, static_cast<long long>(n.types),
                        static_cast<long long>(n.differed));
    }
    for (int e = 0; e < kEdges; ++e) {
        const Stats::Compared &c = stats.categories[static_cast<T::Edge>(e)];
        std::printf("[ oracle   ]   category %s: %lld compared against MPI, %lld against the "
                    "standard\n",
                    T::edge_name(static_cast<T::Edge>(e)), static_cast<long long>(c.vs_mpi),
                    static_cast<long long>(c.vs_standard));
        // Each category must have been checked, or the test would pass without testing it.
        EXPECT_GT(c.vs_mpi + c.vs_standard, 0) << T::edge_name(static_cast<T::Edge>(e));
    }
    for (const auto &[kind, n] : stats.by_kind)
        std::printf("[ oracle   ]   %lld x %s\n", static_cast<long long>(n), kind.c_str());
    for (const auto &r : stats.reproducers) ADD_FAILURE() << r;
    EXPECT_EQ(stats.failures, 0);
    // ucxdt pads extents by MPI-4.1 5.1.6, which the library matches wherever no known
    // deviation applies: the native type is MPI's, and the standard's where one does.
    EXPECT_EQ(stats.native_vs_mpi, 0);
    EXPECT_EQ(stats.native_vs_standard, 0);
    EXPECT_EQ(stats.reference_vs_mpi, 0);
    // Types of no known deviation never need the import's net.
    EXPECT_EQ(stats.import_resized, 0);
    EXPECT_EQ(stats.types, ntypes);
}


// The true lb and true extent of one element of `t` by MPI-4.1 5.1.8: the span of the bytes
// its type map touches, as MPI_Unpack writes them (not as the library reports them).
inline std::pair<int64_t, int64_t> touched_bounds(MPI_Datatype t) {
    const T::BufferSpan sp = T::mpi_span(t, 1, 4096);
    Bytes buf(static_cast<size_t>(sp.bytes), std::byte{0});
    const Bytes ones(static_cast<size_t>(std::max<int64_t>(mpi_bounds(t).size, 1)), std::byte{0xFF});
    if (mpi_unpack(ones, buf.data() + sp.origin, 1, t) != MPI_SUCCESS) return {0, -1};
    int64_t lo = sp.bytes, hi = 0;
    for (int64_t i = 0; i < sp.bytes; ++i)
        if (buf[static_cast<size_t>(i)] != std::byte{0}) lo = std::min(lo, i), hi = i + 1;
    return lo < hi ? std::pair<int64_t, int64_t>{lo - sp.origin, hi - lo}
                   : std::pair<int64_t, int64_t>{0, 0};
}


// Imports `t` and checks it against MPI: bounds, and packing of 1..3 elements. Where the
// library's true bounds are a known deviation (`deviation`), those of the data it touches
// instead; `*differed` tells whether they were another's.
inline std::string check_import(MPI_Datatype t, ucxdt_type_t *keep = nullptr,
                         const T::Deviation *deviation = nullptr, bool *differed = nullptr) {
    Handle h;
    ucxdt_status_t st = ucxdt_type_from_mpi(t, &h.t);
    if (st != UCXDT_OK) return "ucxdt_type_from_mpi failed: " + err(st);
    Bounds mb = mpi_bounds(t);
    if (deviation && mb.size > 0) {
        MpiType committed;
        MPI_Type_dup(t, &committed.t);
        MPI_Type_commit(&committed.t);
        const auto [tlb, text] = touched_bounds(committed.t);
        if (differed) *differed = tlb != mb.true_lb || text != mb.true_extent;
        mb.true_lb = tlb, mb.true_extent = text;
    }
    if (auto d = compare_bounds("imported", h.t, mb, deviation ? "MPI (true bounds: its data's)"
                                                               : "MPI");
        !d.empty())
        return d;
    MPI_Datatype c = t;
    MpiType committed;
    int ni, na, nd, comb;
    MPI_Type_get_envelope(t, &ni, &na, &nd, &comb);
    if (comb != MPI_COMBINER_NAMED) {  // pack needs a committed type; commit a duplicate
        MPI_Type_dup(t, &committed.t);
        MPI_Type_commit(&committed.t);
        c = committed.t;
    }
    for (int64_t count = 1; count <= 3; ++count) {
        const T::BufferSpan sp = T::mpi_span(t, count, 0);
        Bytes src(static_cast<size_t>(sp.bytes));
        ucxdt::ref::fill_pattern(src.data(), sp.bytes, 77 + count);
        Bytes want(static_cast<size_t>(std::max<int64_t>(mb.size * count, 1))), got(want.size());
        if (mpi_pack(src.data() + sp.origin, count, c, want) != MPI_SUCCESS)
            return "MPI_Pack failed";
        int64_t pos = 0;
        st = ucxdt_pack(src.data() + sp.origin, count, h.t, got.data(),
                        static_cast<int64_t>(got.size()), &pos);
        if (st != UCXDT_OK) return "ucxdt_pack failed: " + err(st);
        if (auto d = first_diff(got.data(), want.data(), static_cast<int64_t>(want.size()),
                                ("count " + std::to_string(count)).c_str());
            !d.empty())
            return d;
    }
    if (keep) std::swap(*keep, h.t);
    return "";
}


// Signature of `count` elements of a ucxdt type built from primitives by `make`.
inline bool same_signature(ucxdt_type_t t, ucxdt_type_t ref) {
    return compare_signature(t, ref, 3, "").empty();
}


inline ucxdt_type_t P(ucxdt_primitive_t p) { return ucxdt_type_primitive(p); }


struct NamedCase {
    MPI_Datatype type;
    const char *name;
    ucxdt_primitive_t expect;
};

}  // namespace oracle
