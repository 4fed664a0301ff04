// ucxdt_type_from_mpi: rebuilds an MPI datatype in ucxdt by walking its constructor tree with
// MPI_Type_get_envelope / MPI_Type_get_contents (MPI-4.1 5.1.13). Only the int/MPI_Aint
// variants are used: Open MPI 4.1 (Debian 12) has no large-count (_c) decoding calls.
// Only the C API is used; Open MPI's and MPICH's deprecated C++ bindings stay out.
#define OMPI_SKIP_MPICXX 1
#define MPICH_SKIP_MPICXX 1

#include "base/error.hpp"

#include <ucxdt/mpi.h>

#include <algorithm>
#include <cwchar>
#include <cstddef>
#include <new>
#include <string>
#include <vector>

// The MPI-1 *_INTEGER combiners have the same contents layout as their MPI-2 successors
// (MPI-2.2 table for MPI_Type_get_envelope). Open MPI keeps their enum slots under another
// name unless built with MPI-1 compatibility; other MPIs define them as macros, or not at all.
#if defined(OPEN_MPI)
#if OMPI_ENABLE_MPI1_COMPAT
#define UCXDT_HVECTOR_INTEGER MPI_COMBINER_HVECTOR_INTEGER
#define UCXDT_HINDEXED_INTEGER MPI_COMBINER_HINDEXED_INTEGER
#define UCXDT_STRUCT_INTEGER MPI_COMBINER_STRUCT_INTEGER
#else
#define UCXDT_HVECTOR_INTEGER OMPI_WAS_MPI_COMBINER_HVECTOR_INTEGER
#define UCXDT_HINDEXED_INTEGER OMPI_WAS_MPI_COMBINER_HINDEXED_INTEGER
#define UCXDT_STRUCT_INTEGER OMPI_WAS_MPI_COMBINER_STRUCT_INTEGER
#endif
#elif defined(MPI_COMBINER_HVECTOR_INTEGER)
#define UCXDT_HVECTOR_INTEGER MPI_COMBINER_HVECTOR_INTEGER
#define UCXDT_HINDEXED_INTEGER MPI_COMBINER_HINDEXED_INTEGER
#define UCXDT_STRUCT_INTEGER MPI_COMBINER_STRUCT_INTEGER
#endif

namespace {

using ucxdt::fail;

// How a predefined MPI type maps to ucxdt: by kind, with the size MPI reports.
enum class Kind { BYTE, CHAR, SIGNED, UNSIGNED, REAL, COMPLEX, PAIR };

struct Named {
    MPI_Datatype type;
    Kind kind;
    const char *name;
    // PAIR only: the two members and the second's byte offset (-1: right after the first,
    // as in the Fortran pair types, which are two consecutive elements).
    MPI_Datatype first = MPI_DATATYPE_NULL, second = MPI_DATATYPE_NULL;
    MPI_Aint second_offset = -1;
};

template <class A, class B> struct Pair { A a; B b; };
template <class A, class B> constexpr MPI_Aint pair_offset() {
    using P = Pair<A, B>;
    return static_cast<MPI_Aint>(offsetof(P, b));
}

// Kind by the language's signedness of wchar_t, which differs between ABIs.
constexpr Kind kWcharKind = WCHAR_MIN < 0 ? Kind::SIGNED : Kind::UNSIGNED;

const std::vector<Named> &named_table() {
    // Built on first use: Open MPI's handles are link-time addresses, valid before MPI_Init.
    static const std::vector<Named> table = {
        {MPI_BYTE, Kind::BYTE, "MPI_BYTE"},
        {MPI_PACKED, Kind::BYTE, "MPI_PACKED"},
        {MPI_CHAR, Kind::CHAR, "MPI_CHAR"},
        {MPI_CHARACTER, Kind::CHAR, "MPI_CHARACTER"},
        {MPI_SIGNED_CHAR, Kind::SIGNED, "MPI_SIGNED_CHAR"},
        {MPI_SHORT, Kind::SIGNED, "MPI_SHORT"},
        {MPI_INT, Kind::SIGNED, "MPI_INT"},
        {MPI_LONG, Kind::SIGNED, "MPI_LONG"},
        {MPI_LONG_LONG_INT, Kind::SIGNED, "MPI_LONG_LONG_INT"},
        {MPI_LONG_LONG, Kind::SIGNED, "MPI_LONG_LONG"},
        {MPI_INT8_T, Kind::SIGNED, "MPI_INT8_T"},
        {MPI_INT16_T, Kind::SIGNED, "MPI_INT16_T"},
        {MPI_INT32_T, Kind::SIGNED, "MPI_INT32_T"},
        {MPI_INT64_T, Kind::SIGNED, "MPI_INT64_T"},
        {MPI_AINT, Kind::SIGNED, "MPI_AINT"},
        {MPI_OFFSET, Kind::SIGNED, "MPI_OFFSET"},
        {MPI_COUNT, Kind::SIGNED, "MPI_COUNT"},
        {MPI_WCHAR, kWcharKind, "MPI_WCHAR"},
        {MPI_INTEGER, Kind::SIGNED, "MPI_INTEGER"},
#ifdef MPI_INTEGER1
        {MPI_INTEGER1, Kind::SIGNED, "MPI_INTEGER1"},
#endif
#ifdef MPI_INTEGER2
        {MPI_INTEGER2, Kind::SIGNED, "MPI_INTEGER2"},
#endif
#ifdef MPI_INTEGER4
        {MPI_INTEGER4, Kind::SIGNED, "MPI_INTEGER4"},
#endif
#ifdef MPI_INTEGER8
        {MPI_INTEGER8, Kind::SIGNED, "MPI_INTEGER8"},
#endif
#ifdef MPI_INTEGER16
        {MPI_INTEGER16, Kind::SIGNED, "MPI_INTEGER16"},
#endif
        {MPI_UNSIGNED_CHAR, Kind::UNSIGNED, "MPI_UNSIGNED_CHAR"},
        {MPI_UNSIGNED_SHORT, Kind::UNSIGNED, "MPI_UNSIGNED_SHORT"},
        {MPI_UNSIGNED, Kind::UNSIGNED, "MPI_UNSIGNED"},
        {MPI_UNSIGNED_LONG, Kind::UNSIGNED, "MPI_UNSIGNED_LONG"},
        {MPI_UNSIGNED_LONG_LONG, Kind::UNSIGNED, "MPI_UNSIGNED_LONG_LONG"},
        {MPI_UINT8_T, Kind::UNSIGNED, "MPI_UINT8_T"},
        {MPI_UINT16_T, Kind::UNSIGNED, "MPI_UINT16_T"},
        {MPI_UINT32_T, Kind::UNSIGNED, "MPI_UINT32_T"},
        {MPI_UINT64_T, Kind::UNSIGNED, "MPI_UINT64_T"},
        // Booleans and Fortran LOGICAL have no ucxdt kind; their bytes move as unsigned ints.
        {MPI_C_BOOL, Kind::UNSIGNED, "MPI_C_BOOL"},
#ifdef MPI_CXX_BOOL
        {MPI_CXX_BOOL, Kind::UNSIGNED, "MPI_CXX_BOOL"},
#endif
        {MPI_LOGICAL, Kind::UNSIGNED, "MPI_LOGICAL"},
#ifdef MPI_LOGICAL1
        {MPI_LOGICAL1, Kind::UNSIGNED, "MPI_LOGICAL1"},
#endif
#ifdef MPI_LOGICAL2
        {MPI_LOGICAL2, Kind::UNSIGNED, "MPI_LOGICAL2"},
#endif
#ifdef MPI_LOGICAL4
        {MPI_LOGICAL4, Kind::UNSIGNED, "MPI_LOGICAL4"},
#endif
#ifdef MPI_LOGICAL8
        {MPI_LOGICAL8, Kind::UNSIGNED, "MPI_LOGICAL8"},
#endif
        {MPI_FLOAT, Kind::REAL, "MPI_FLOAT"},
        {MPI_DOUBLE, Kind::REAL, "MPI_DOUBLE"},
        {MPI_LONG_DOUBLE, Kind::REAL, "MPI_LONG_DOUBLE"},
        {MPI_REAL, Kind::REAL, "MPI_REAL"},
        {MPI_DOUBLE_PRECISION, Kind::REAL, "MPI_DOUBLE_PRECISION"},
#ifdef MPI_REAL2
        {MPI_REAL2, Kind::REAL, "MPI_REAL2"},
#endif
#ifdef MPI_REAL4
        {MPI_REAL4, Kind::REAL, "MPI_REAL4"},
#endif
#ifdef MPI_REAL8
        {MPI_REAL8, Kind::REAL, "MPI_REAL8"},
#endif
#ifdef MPI_REAL16
        {MPI_REAL16, Kind::REAL, "MPI_REAL16"},
#endif
        {MPI_C_COMPLEX, Kind::COMPLEX, "MPI_C_COMPLEX"},
        {MPI_C_FLOAT_COMPLEX, Kind::COMPLEX, "MPI_C_FLOAT_COMPLEX"},
        {MPI_C_DOUBLE_COMPLEX, Kind::COMPLEX, "MPI_C_DOUBLE_COMPLEX"},
        {MPI_C_LONG_DOUBLE_COMPLEX, Kind::COMPLEX, "MPI_C_LONG_DOUBLE_COMPLEX"},
#ifdef MPI_CXX_FLOAT_COMPLEX
        {MPI_CXX_FLOAT_COMPLEX, Kind::COMPLEX, "MPI_CXX_FLOAT_COMPLEX"},
        {MPI_CXX_DOUBLE_COMPLEX, Kind::COMPLEX, "MPI_CXX_DOUBLE_COMPLEX"},
        {MPI_CXX_LONG_DOUBLE_COMPLEX, Kind::COMPLEX, "MPI_CXX_LONG_DOUBLE_COMPLEX"},
#endif
        {MPI_COMPLEX, Kind::COMPLEX, "MPI_COMPLEX"},
        {MPI_DOUBLE_COMPLEX, Kind::COMPLEX, "MPI_DOUBLE_COMPLEX"},
#ifdef MPI_COMPLEX8
        {MPI_COMPLEX8, Kind::COMPLEX, "MPI_COMPLEX8"},
#endif
#ifdef MPI_COMPLEX16
        {MPI_COMPLEX16, Kind::COMPLEX, "MPI_COMPLEX16"},
#endif
#ifdef MPI_COMPLEX32
        {MPI_COMPLEX32, Kind::COMPLEX, "MPI_COMPLEX32"},
#endif
        // Pair types for MINLOC/MAXLOC (MPI-4.1 6.9.4): the C ones are the C structs.
        {MPI_FLOAT_INT, Kind::PAIR, "MPI_FLOAT_INT", MPI_FLOAT, MPI_INT,
         pair_offset<float, int>()},
        {MPI_DOUBLE_INT, Kind::PAIR, "MPI_DOUBLE_INT", MPI_DOUBLE, MPI_INT,
         pair_offset<double, int>()},
        {MPI_LONG_DOUBLE_INT, Kind::PAIR, "MPI_LONG_DOUBLE_INT", MPI_LONG_DOUBLE, MPI_INT,
         pair_offset<long double, int>()},
        {MPI_LONG_INT, Kind::PAIR, "MPI_LONG_INT", MPI_LONG, MPI_INT,
         pair_offset<long, int>()},
        {MPI_SHORT_INT, Kind::PAIR, "MPI_SHORT_INT", MPI_SHORT, MPI_INT,
         pair_offset<short, int>()},
        {MPI_2INT, Kind::PAIR, "MPI_2INT", MPI_INT, MPI_INT, pair_offset<int, int>()},
        {MPI_2REAL, Kind::PAIR, "MPI_2REAL", MPI_REAL, MPI_REAL},
        {MPI_2DOUBLE_PRECISION, Kind::PAIR, "MPI_2DOUBLE_PRECISION", MPI_DOUBLE_PRECISION,
         MPI_DOUBLE_PRECISION},
        {MPI_2INTEGER, Kind::PAIR, "MPI_2INTEGER", MPI_INTEGER, MPI_INTEGER},
#ifdef MPI_2COMPLEX
        {MPI_2COMPLEX, Kind::PAIR, "MPI_2COMPLEX", MPI_COMPLEX, MPI_COMPLEX},
        {MPI_2DOUBLE_COMPLEX, Kind::PAIR, "MPI_2DOUBLE_COMPLEX", MPI_DOUBLE_COMPLEX,
         MPI_DOUBLE_COMPLEX},
#endif
    };
    return table;
}

const char *combiner_name(int c) {
    switch (c) {
    case MPI_COMBINER_NAMED: return "MPI_COMBINER_NAMED";
    case MPI_COMBINER_DUP: return "MPI_COMBINER_DUP";
    case MPI_COMBINER_CONTIGUOUS: return "MPI_COMBINER_CONTIGUOUS";
    case MPI_COMBINER_VECTOR: return "MPI_COMBINER_VECTOR";
    case MPI_COMBINER_HVECTOR: return "MPI_COMBINER_HVECTOR";
    case MPI_COMBINER_INDEXED: return "MPI_COMBINER_INDEXED";
    case MPI_COMBINER_HINDEXED: return "MPI_COMBINER_HINDEXED";
    case MPI_COMBINER_INDEXED_BLOCK: return "MPI_COMBINER_INDEXED_BLOCK";
    case MPI_COMBINER_HINDEXED_BLOCK: return "MPI_COMBINER_HINDEXED_BLOCK";
    case MPI_COMBINER_STRUCT: return "MPI_COMBINER_STRUCT";
    case MPI_COMBINER_SUBARRAY: return "MPI_COMBINER_SUBARRAY";
    case MPI_COMBINER_DARRAY: return "MPI_COMBINER_DARRAY";
    case MPI_COMBINER_F90_REAL: return "MPI_COMBINER_F90_REAL";
    case MPI_COMBINER_F90_COMPLEX: return "MPI_COMBINER_F90_COMPLEX";
    case MPI_COMBINER_F90_INTEGER: return "MPI_COMBINER_F90_INTEGER";
    case MPI_COMBINER_RESIZED: return "MPI_COMBINER_RESIZED";
#ifdef UCXDT_HVECTOR_INTEGER
    case UCXDT_HVECTOR_INTEGER: return "MPI_COMBINER_HVECTOR_INTEGER";
    case UCXDT_HINDEXED_INTEGER: return "MPI_COMBINER_HINDEXED_INTEGER";
    case UCXDT_STRUCT_INTEGER: return "MPI_COMBINER_STRUCT_INTEGER";
#endif
    default: return "unknown combiner";
    }
}

// The arrays of one MPI_Type_get_contents call; frees the derived datatypes it returned
// (MPI-4.1 5.1.13: those handles are new references the caller must free, except predefined
// ones, which include the f90 types of MPI_Type_create_f90_*).
struct Contents {
    std::vector<int> ints;
    std::vector<MPI_Aint> addrs;
    std::vector<MPI_Datatype> types;

    Contents() = default;
    Contents(const Contents &) = delete;
    Contents &operator=(const Contents &) = delete;
    ~Contents() {
        for (MPI_Datatype &t : types) {
            int ni, na, nd, comb;
            if (MPI_Type_get_envelope(t, &ni, &na, &nd, &comb) == MPI_SUCCESS &&
                comb != MPI_COMBINER_NAMED && comb != MPI_COMBINER_F90_REAL &&
                comb != MPI_COMBINER_F90_COMPLEX && comb != MPI_COMBINER_F90_INTEGER)
                MPI_Type_free(&t);
        }
    }
};

std::vector<int64_t> widen(const int *v, size_t n) { return std::vector<int64_t>(v, v + n); }
std::vector<int64_t> widen(const MPI_Aint *v, size_t n) {
    return std::vector<int64_t>(v, v + n);
}

// One import: owns every intermediate ucxdt handle until the end. Decoded handles are not
// memoized: Open MPI's MPI_Type_get_contents returns a new copy of each child on every call, and
// a freed copy's address is reused by the next one, so handles do not identify types.
class Importer {
public:
    ~Importer() {
        for (ucxdt_type_t &t : owned_) ucxdt_type_free(&t);
    }

    // *out is borrowed: a primitive, or a handle owned by this importer.
    ucxdt_status_t decode(MPI_Datatype dt, ucxdt_type_t *out);

    // Hands over `t` (decoded by this importer) committed, as a handle of the caller's.
    ucxdt_status_t release(ucxdt_type_t t, ucxdt_type_t *out) {
        ucxdt_type_t mine = UCXDT_TYPE_NULL;
        for (auto it = owned_.begin(); it != owned_.end(); ++it) {
            if (*it == t) {
                mine = t;
                owned_.erase(it);
                break;
            }
        }
        ucxdt_status_t st = UCXDT_OK;
        // A predefined handle cannot be freed by the caller: give a duplicate instead.
        if (mine == UCXDT_TYPE_NULL) st = ucxdt_type_dup(t, &mine);
        if (st != UCXDT_OK) return st;
        st = ucxdt_type_commit(mine);
        if (st != UCXDT_OK) {
            ucxdt_type_free(&mine);
            return st;
        }
        *out = mine;
        return UCXDT_OK;
    }

private:
    // Takes ownership of *t, which the constructor call `st` came from has just set (read
    // through the pointer, so that argument evaluation order does not matter).
    ucxdt_status_t keep(ucxdt_status_t st, const ucxdt_type_t *t, const char *what) {
        if (st != UCXDT_OK)
            return fail(st, std::string(what) + ": " + ucxdt_last_error());
        owned_.push_back(*t);
        return UCXDT_OK;
    }
    ucxdt_status_t match_mpi_bounds(MPI_Datatype dt, ucxdt_type_t *t);
    ucxdt_status_t named(MPI_Datatype dt, ucxdt_type_t *out);
    ucxdt_status_t by_size(Kind kind, int size, const char *name, ucxdt_type_t *out);
    ucxdt_status_t darray(const Contents &c, ucxdt_type_t old, ucxdt_type_t *out);

    std::vector<ucxdt_type_t> owned_;
};

ucxdt_status_t Importer::by_size(Kind kind, int size, const char *name, ucxdt_type_t *out) {
    ucxdt_primitive_t p = UCXDT_PRIMITIVE_LAST;
    switch (kind) {
    case Kind::BYTE: p = size == 1 ? UCXDT_BYTE : p; break;
    case Kind::CHAR: p = size == 1 ? UCXDT_CHAR : p; break;
    case Kind::SIGNED:
    case Kind::UNSIGNED: {
        const bool s = kind == Kind::SIGNED;
        switch (size) {
        case 1: p = s ? UCXDT_INT8 : UCXDT_UINT8; break;
        case 2: p = s ? UCXDT_INT16 : UCXDT_UINT16; break;
        case 4: p = s ? UCXDT_INT32 : UCXDT_UINT32; break;
        case 8: p = s ? UCXDT_INT64 : UCXDT_UINT64; break;
        default: break;
        }
        break;
    }
    case Kind::REAL:
        // By size only: a 16-byte REAL (binary128) moves the same bytes as long double.
        if (size == 4) p = UCXDT_FLOAT;
        else if (size == 8) p = UCXDT_DOUBLE;
        else if (size == static_cast<int>(sizeof(long double))) p = UCXDT_LONG_DOUBLE;
        break;
    case Kind::COMPLEX:
        if (size == 8) p = UCXDT_FLOAT_COMPLEX;
        else if (size == 16) p = UCXDT_DOUBLE_COMPLEX;
        else if (size == 2 * static_cast<int>(sizeof(long double))) {
            // No long double complex primitive: its (real, imaginary) pair, which packs to
            // the same bytes.
            ucxdt_status_t st =
                ucxdt_type_contiguous(2, ucxdt_type_primitive(UCXDT_LONG_DOUBLE), out);
            return keep(st, out, name);
        }
        break;
    case Kind::PAIR: break;
    }
    if (p == UCXDT_PRIMITIVE_LAST)
        return fail(UCXDT_ERR_UNSUPPORTED, std::string(name) + " (" + std::to_string(size) +
                                               " bytes) has no ucxdt primitive of that size");
    *out = ucxdt_type_primitive(p);
    return UCXDT_OK;
}

ucxdt_status_t Importer::named(MPI_Datatype dt, ucxdt_type_t *out) {
    int size = 0;
    if (MPI_Type_size(dt, &size) != MPI_SUCCESS)
        return fail(UCXDT_ERR_INVALID_PARAM, "MPI_Type_size failed on a predefined datatype");
    for (const Named &n : named_table()) {
        if (n.type != dt) continue;
        if (n.kind != Kind::PAIR) return by_size(n.kind, size, n.name, out);
        // A pair: struct {first; second} at the members' offsets, with the lb and extent the
        // MPI library gives the pair (it may pad, as MPI_DOUBLE_INT's 16-byte extent does).
        ucxdt_type_t members[2];
        ucxdt_status_t st = named(n.first, &members[0]);
        if (st == UCXDT_OK) st = named(n.second, &members[1]);
        if (st != UCXDT_OK) return st;
        int first_size = 0;
        MPI_Aint lb = 0, extent = 0;
        if (MPI_Type_size(n.first, &first_size) != MPI_SUCCESS ||
            MPI_Type_get_extent(dt, &lb, &extent) != MPI_SUCCESS)
            return fail(UCXDT_ERR_INVALID_PARAM, std::string("cannot query ") + n.name);
        const int64_t blocklengths[2] = {1, 1};
        const int64_t disps[2] = {0, n.second_offset >= 0 ? n.second_offset : first_size};
        ucxdt_type_t s = UCXDT_TYPE_NULL, r = UCXDT_TYPE_NULL;
        st = keep(ucxdt_type_struct(2, blocklengths, disps, members, &s), &s, n.name);
        if (st != UCXDT_OK) return st;
        st = keep(ucxdt_type_resized(s, lb, extent, &r), &r, n.name);
        if (st == UCXDT_OK) *out = r;
        return st;
    }
    char name[MPI_MAX_OBJECT_NAME] = "";
    int len = 0;
    if (MPI_Type_get_name(dt, name, &len) != MPI_SUCCESS) name[0] = '\0';
    return fail(UCXDT_ERR_UNSUPPORTED, std::string("predefined datatype '") + name +
                                           "' has no ucxdt equivalent");
}

// The type map is MPI's by construction, and ucxdt derives bounds from it as Open MPI does
// (including the alignment epsilon of MPI-4.1 5.1.6), so normally this changes nothing. It is a
// safety net for an MPI library's own deviations, such as Open MPI 4.1 letting a struct entry
// without data move the bounds: where the bounds differ, the node is resized to MPI's lb and
// extent, so that copies of it step as they do in MPI and the import packs the same bytes at
// every level.
ucxdt_status_t Importer::match_mpi_bounds(MPI_Datatype dt, ucxdt_type_t *t) {
    MPI_Aint mlb = 0, mext = 0;
    if (MPI_Type_get_extent(dt, &mlb, &mext) != MPI_SUCCESS)
        return fail(UCXDT_ERR_INVALID_PARAM, "MPI_Type_get_extent failed");
    int64_t lb = 0, extent = 0;
    ucxdt_status_t st = ucxdt_type_extent(*t, &lb, &extent);
    if (st != UCXDT_OK || (lb == mlb && extent == mext)) return st;
    ucxdt_type_t r = UCXDT_TYPE_NULL;
    st = keep(ucxdt_type_resized(*t, mlb, mext, &r), &r, "matching MPI's bounds");
    if (st == UCXDT_OK) *t = r;
    return st;
}

// MPI_Type_create_darray lowered as MPI-4.1 5.1.4 defines it: per dimension (last first in C
// order, first first in Fortran order) a cyclic(darg) selection of the blocks that this
// process's grid coordinate owns, resized to lb 0 and the whole dimension's extent; block is
// cyclic with one block per process.
ucxdt_status_t Importer::darray(const Contents &c, ucxdt_type_t old, ucxdt_type_t *out) {
    // ints: size, rank, ndims, gsizes[ndims], distribs[ndims], dargs[ndims], psizes[ndims],
    // order.
    if (c.ints.size() < 3) return fail(UCXDT_ERR_INVALID_PARAM, "darray: short contents");
    const int size = c.ints[0], rank = c.ints[1], ndims = c.ints[2];
    if (ndims < 1 || c.ints.size() != 4 + 4 * static_cast<size_t>(ndims))
        return fail(UCXDT_ERR_INVALID_PARAM, "darray: contents do not match ndims");
    const int *gsizes = &c.ints[3], *distribs = gsizes + ndims, *dargs = distribs + ndims,
              *psizes = dargs + ndims;
    const int order = c.ints[3 + 4 * ndims];
    if (order != MPI_ORDER_C && order != MPI_ORDER_FORTRAN)
        return fail(UCXDT_ERR_INVALID_PARAM, "darray: unknown order " + std::to_string(order));

    // Process coordinates: row-major in the psizes grid whatever the array order (as
    // MPI_Cart_create numbers processes).
    std::vector<int64_t> coord(ndims);
    int64_t grid = 1;
    for (int i = 0; i < ndims; ++i) {
        if (psizes[i] < 1) return fail(UCXDT_ERR_INVALID_PARAM, "darray: psize < 1");
        grid *= psizes[i];
    }
    if (grid != size || rank < 0 || rank >= size)
        return fail(UCXDT_ERR_INVALID_PARAM, "darray: rank/size do not match the grid");
    int64_t t_rank = rank, t_size = size;
    for (int i = 0; i < ndims; ++i) {
        t_size /= psizes[i];
        coord[i] = t_rank / t_size;
        t_rank -= coord[i] * t_size;
    }

    ucxdt_type_t cur = old;
    int64_t lb = 0, extent = 0;
    ucxdt_status_t st = ucxdt_type_extent(cur, &lb, &extent);
    if (st != UCXDT_OK) return st;
    for (int k = 0; k < ndims; ++k) {
        const int i = order == MPI_ORDER_C ? ndims - 1 - k : k;
        const int64_t g = gsizes[i], p = psizes[i], r = coord[i];
        if (g < 1) return fail(UCXDT_ERR_INVALID_PARAM, "darray: gsize < 1");
        int64_t darg = 0;
        switch (distribs[i]) {
        case MPI_DISTRIBUTE_NONE:
            // Not distributed: one block of the whole dimension. MPI-4.1 requires psize 1;
            // Open MPI 4.1 accepts more and then distributes by blocks in C order but not at
            // all in Fortran order. Refused rather than guessed.
            if (p != 1)
                return fail(UCXDT_ERR_UNSUPPORTED,
                            "darray: MPI_DISTRIBUTE_NONE with psize " + std::to_string(p) +
                                " in dimension " + std::to_string(i) +
                                " (MPI-4.1 requires 1)");
            darg = g;
            break;
        case MPI_DISTRIBUTE_BLOCK:
            darg = dargs[i] == MPI_DISTRIBUTE_DFLT_DARG ? (g + p - 1) / p : dargs[i];
            if (darg < 1 || darg * p < g)
                return fail(UCXDT_ERR_INVALID_PARAM,
                            "darray: block darg * psize < gsize in dimension " +
                                std::to_string(i));
            break;
        case MPI_DISTRIBUTE_CYCLIC:
            darg = dargs[i] == MPI_DISTRIBUTE_DFLT_DARG ? 1 : dargs[i];
            if (darg < 1)
                return fail(UCXDT_ERR_INVALID_PARAM,
                            "darray: cyclic darg < 1 in dimension " + std::to_string(i));
            break;
        default:
            return fail(UCXDT_ERR_INVALID_PARAM,
                        "darray: unknown distribution " + std::to_string(distribs[i]));
        }
        // Blocks b = r, r + p, r + 2p, ... of darg elements; the last one of the dimension
        // may be shorter.
        const int64_t nblocks = (g + darg - 1) / darg;
        std::vector<int64_t> bl, disp;
        for (int64_t b = r; b < nblocks; b += p) {
            bl.push_back(std::min(darg, g - b * darg));
            disp.push_back(b * darg * extent);
        }
        ucxdt_type_t sel = UCXDT_TYPE_NULL, dim = UCXDT_TYPE_NULL;
        st = keep(ucxdt_type_hindexed(static_cast<int64_t>(bl.size()), bl.data(), disp.data(),
                                      cur, &sel),
                  &sel, "darray");
        if (st != UCXDT_OK) return st;
        st = keep(ucxdt_type_resized(sel, 0, g * extent, &dim), &dim, "darray");
        if (st != UCXDT_OK) return st;
        cur = dim;
        extent *= g;
    }
    *out = cur;
    return UCXDT_OK;
}

ucxdt_status_t Importer::decode(MPI_Datatype dt, ucxdt_type_t *out) {
    if (dt == MPI_DATATYPE_NULL)
        return fail(UCXDT_ERR_INVALID_PARAM, "datatype is MPI_DATATYPE_NULL");
    int ni = 0, na = 0, nd = 0, comb = 0;
    if (MPI_Type_get_envelope(dt, &ni, &na, &nd, &comb) != MPI_SUCCESS)
        return fail(UCXDT_ERR_INVALID_PARAM, "MPI_Type_get_envelope failed");
    if (comb == MPI_COMBINER_NAMED) return named(dt, out);

    if (comb == MPI_COMBINER_F90_REAL || comb == MPI_COMBINER_F90_COMPLEX ||
        comb == MPI_COMBINER_F90_INTEGER) {
        // Contents are only (p, r) or (r): the representation MPI chose is known by its size.
        int size = 0;
        if (MPI_Type_size(dt, &size) != MPI_SUCCESS)
            return fail(UCXDT_ERR_INVALID_PARAM, "MPI_Type_size failed");
        const Kind k = comb == MPI_COMBINER_F90_REAL      ? Kind::REAL
                       : comb == MPI_COMBINER_F90_COMPLEX ? Kind::COMPLEX
                                                          : Kind::SIGNED;
        return by_size(k, size, combiner_name(comb), out);
    }

    Contents c;
    c.ints.resize(ni), c.addrs.resize(na), c.types.resize(nd);
    // Handles not yet returned are MPI_DATATYPE_NULL, which ~Contents skips.
    std::fill(c.types.begin(), c.types.end(), MPI_DATATYPE_NULL);
    if (MPI_Type_get_contents(dt, ni, na, nd, c.ints.data(), c.addrs.data(), c.types.data()) !=
        MPI_SUCCESS) {
        c.types.clear();
        return fail(UCXDT_ERR_INVALID_PARAM, "MPI_Type_get_contents failed");
    }
    std::vector<ucxdt_type_t> kids(nd, UCXDT_TYPE_NULL);
    for (int i = 0; i < nd; ++i) {
        ucxdt_status_t st = decode(c.types[i], &kids[i]);
        if (st != UCXDT_OK) return st;
    }

    const char *what = combiner_name(comb);
    // Guards against a contents layout other than the standard's.
    auto expect = [&](bool ok) {
        return ok ? UCXDT_OK
                  : fail(UCXDT_ERR_INVALID_PARAM,
                         std::string(what) + ": unexpected MPI_Type_get_contents layout");
    };
    const int *I = c.ints.data();
    const MPI_Aint *A = c.addrs.data();
    ucxdt_type_t t = UCXDT_TYPE_NULL;
    ucxdt_status_t st = UCXDT_OK;
    switch (comb) {
    case MPI_COMBINER_DUP:
        if ((st = expect(nd == 1)) != UCXDT_OK) return st;
        st = ucxdt_type_dup(kids[0], &t);
        break;
    case MPI_COMBINER_CONTIGUOUS:
        if ((st = expect(ni == 1 && nd == 1)) != UCXDT_OK) return st;
        st = ucxdt_type_contiguous(I[0], kids[0], &t);
        break;
    case MPI_COMBINER_VECTOR:
        if ((st = expect(ni == 3 && nd == 1)) != UCXDT_OK) return st;
        st = ucxdt_type_vector(I[0], I[1], I[2], kids[0], &t);
        break;
#ifdef UCXDT_HVECTOR_INTEGER
    case UCXDT_HVECTOR_INTEGER:
#endif
    case MPI_COMBINER_HVECTOR:
        if ((st = expect(ni == 2 && na == 1 && nd == 1)) != UCXDT_OK) return st;
        st = ucxdt_type_hvector(I[0], I[1], A[0], kids[0], &t);
        break;
    case MPI_COMBINER_INDEXED: {
        if ((st = expect(ni >= 1 && ni == 1 + 2 * I[0] && nd == 1)) != UCXDT_OK) return st;
        const auto bl = widen(I + 1, I[0]), disp = widen(I + 1 + I[0], I[0]);
        st = ucxdt_type_indexed(I[0], bl.data(), disp.data(), kids[0], &t);
        break;
    }
#ifdef UCXDT_HINDEXED_INTEGER
    case UCXDT_HINDEXED_INTEGER:
#endif
    case MPI_COMBINER_HINDEXED: {
        if ((st = expect(ni >= 1 && ni == 1 + I[0] && na == I[0] && nd == 1)) != UCXDT_OK)
            return st;
        const auto bl = widen(I + 1, I[0]), disp = widen(A, I[0]);
        st = ucxdt_type_hindexed(I[0], bl.data(), disp.data(), kids[0], &t);
        break;
    }
    case MPI_COMBINER_INDEXED_BLOCK: {
        if ((st = expect(ni >= 2 && ni == 2 + I[0] && nd == 1)) != UCXDT_OK) return st;
        const auto disp = widen(I + 2, I[0]);
        st = ucxdt_type_indexed_block(I[0], I[1], disp.data(), kids[0], &t);
        break;
    }
    case MPI_COMBINER_HINDEXED_BLOCK: {
        if ((st = expect(ni == 2 && na == I[0] && nd == 1)) != UCXDT_OK) return st;
        const auto disp = widen(A, I[0]);
        st = ucxdt_type_hindexed_block(I[0], I[1], disp.data(), kids[0], &t);
        break;
    }
#ifdef UCXDT_STRUCT_INTEGER
    case UCXDT_STRUCT_INTEGER:
#endif
    case MPI_COMBINER_STRUCT: {
        if ((st = expect(ni >= 1 && ni == 1 + I[0] && na == I[0] && nd == I[0])) != UCXDT_OK)
            return st;
        const auto bl = widen(I + 1, I[0]), disp = widen(A, I[0]);
        st = ucxdt_type_struct(I[0], bl.data(), disp.data(), kids.data(), &t);
        break;
    }
    case MPI_COMBINER_SUBARRAY: {
        if ((st = expect(ni >= 1 && ni == 2 + 3 * I[0] && nd == 1)) != UCXDT_OK) return st;
        const int n = I[0];
        const auto sizes = widen(I + 1, n), subsizes = widen(I + 1 + n, n),
                   starts = widen(I + 1 + 2 * n, n);
        const int order = I[1 + 3 * n];
        if (order != MPI_ORDER_C && order != MPI_ORDER_FORTRAN)
            return fail(UCXDT_ERR_INVALID_PARAM,
                        "subarray: unknown order " + std::to_string(order));
        st = ucxdt_type_subarray(n, sizes.data(), subsizes.data(), starts.data(),
                                 order == MPI_ORDER_C ? UCXDT_ORDER_C : UCXDT_ORDER_FORTRAN,
                                 kids[0], &t);
        break;
    }
    case MPI_COMBINER_DARRAY: {
        if ((st = expect(nd == 1)) != UCXDT_OK) return st;
        st = darray(c, kids[0], &t);
        if (st == UCXDT_OK) st = match_mpi_bounds(dt, &t);
        if (st == UCXDT_OK) *out = t;
        return st;
    }
    case MPI_COMBINER_RESIZED:
        if ((st = expect(na == 2 && nd == 1)) != UCXDT_OK) return st;
        st = ucxdt_type_resized(kids[0], A[0], A[1], &t);
        break;
    default:
        return fail(UCXDT_ERR_UNSUPPORTED, std::string("combiner ") + std::to_string(comb) +
                                               " (" + what + ") is not supported");
    }
    st = keep(st, &t, what);
    if (st == UCXDT_OK) st = match_mpi_bounds(dt, &t);
    if (st == UCXDT_OK) *out = t;
    return st;
}

}  // namespace

extern "C" ucxdt_status_t ucxdt_type_from_mpi(MPI_Datatype datatype, ucxdt_type_t *type) {
    ucxdt::clear_error();
    if (type == nullptr) return fail(UCXDT_ERR_INVALID_PARAM, "type is NULL");
    int initialized = 0, finalized = 0;
    MPI_Initialized(&initialized);
    MPI_Finalized(&finalized);
    if (!initialized || finalized)
        return fail(UCXDT_ERR_INVALID_PARAM, "MPI is not initialized or already finalized");
    try {
        ucxdt_type_t t = UCXDT_TYPE_NULL;
        ucxdt_status_t st;
        std::string message;
        {
            Importer importer;
            st = importer.decode(datatype, &t);
            if (st == UCXDT_OK) st = importer.release(t, &t);
            message = ucxdt_last_error();
        }
        // The importer's frees clear the message of a failure; it is the caller's to read.
        if (st != UCXDT_OK) {
            const std::string prefix = std::string(ucxdt_status_string(st)) + ": ";
            if (message.compare(0, prefix.size(), prefix) == 0) message.erase(0, prefix.size());
            return fail(st, message);
        }
        *type = t;
        return st;
    } catch (const std::bad_alloc &) {  // no exception crosses the C API
        return fail(UCXDT_ERR_NO_MEMORY, "allocation failed while decoding the MPI datatype");
    }
}
