#include "deviations.hpp"

#include "desc_traits.hpp"
#include "support/typemap_walk.hpp"

#include <algorithm>
#include <cstdio>
#include <cstring>

namespace ucxdt::support {

using namespace layouts;

namespace {

using Effect = Deviation::Effect;


// ---- Open MPI 4.1 ----------------------------------------------------------------------------

// A step of -1 byte between copies: (h)vector strides of -1 byte, or copies of a type whose
// extent is -1 (any node, since a parent or the count may repeat it).
bool minus_one_step(const TypeDesc &d) {
    return any_node(d, [](const TypeDesc &n) {
        if (ref::type_bounds(n).extent == -1) return true;
        if (n.combiner != UCXDT_COMBINER_VECTOR && n.combiner != UCXDT_COMBINER_HVECTOR)
            return false;
        const int64_t e = ref::type_bounds(*n.children[0]).extent;
        const int64_t step = n.combiner == UCXDT_COMBINER_VECTOR ? n.stride * e : n.stride;
        return n.count >= 2 && n.blocklength >= 1 && step == -1;
    });
}

// In hindexed, hindexed_block and struct, a block of a child without explicit bounds whose lb
// is no multiple of the constructor's alignment: Open MPI pads the extent after each block,
// relative to the lb so far, so a later block that lowers the lb pads it again.
bool padded_per_block(const TypeDesc &d) {
    return any_node(d, [](const TypeDesc &n) {
        const bool is_struct = n.combiner == UCXDT_COMBINER_STRUCT;
        if (!is_struct && n.combiner != UCXDT_COMBINER_HINDEXED &&
            n.combiner != UCXDT_COMBINER_HINDEXED_BLOCK)
            return false;
        const int64_t a = alignment(n);
        for (int64_t i = 0; i < n.count; ++i) {
            const int64_t bl = n.combiner == UCXDT_COMBINER_HINDEXED_BLOCK ? n.blocklength
                                                                           : n.blocklengths[i];
            const TypeDesc &c = *n.children[is_struct ? i : 0];
            if (bl == 0 || marked(c)) continue;
            const ref::Bounds b = ref::type_bounds(c);
            const int64_t lb = n.displacements[i] + b.lb + std::min<int64_t>(0, (bl - 1) * b.extent);
            if (lb % a != 0) return true;
        }
        return false;
    });
}

// A struct entry of copies of a type without data: it moves the bounds.
bool struct_entry_without_data(const TypeDesc &d) {
    return any_node(d, [](const TypeDesc &n) {
        if (n.combiner != UCXDT_COMBINER_STRUCT) return false;
        for (int64_t i = 0; i < n.count; ++i)
            if (n.blocklengths[i] > 0 && !has_data(*n.children[i])) return true;
        return false;
    });
}

// contiguous, indexed or hindexed of a type without data but with explicit bounds: Open MPI
// returns an empty type without them.
bool copies_of_empty_marked(const TypeDesc &d) {
    return any_node(d, [](const TypeDesc &n) {
        return (n.combiner == UCXDT_COMBINER_CONTIGUOUS || n.combiner == UCXDT_COMBINER_INDEXED ||
                n.combiner == UCXDT_COMBINER_HINDEXED) &&
               !has_data(*n.children[0]) && marked(*n.children[0]);
    });
}

// hvector or hindexed_block of a type without data or explicit bounds: its copies at byte
// offsets move the bounds.
bool byte_copies_of_empty(const TypeDesc &d) {
    return any_node(d, [](const TypeDesc &n) {
        return (n.combiner == UCXDT_COMBINER_HVECTOR ||
                n.combiner == UCXDT_COMBINER_HINDEXED_BLOCK) &&
               !has_data(*n.children[0]) && !marked(*n.children[0]);
    });
}

bool subarray_of_nothing(const TypeDesc &d) {
    return any_node(d, [](const TypeDesc &n) {
        if (n.combiner != UCXDT_COMBINER_SUBARRAY) return false;
        for (int64_t s : n.subsizes)
            if (s == 0) return true;
        return false;
    });
}

// ---- MPICH 4.0 -------------------------------------------------------------------------------

// A type without data and of extent 0: MPI_Unpack divides by zero when input bytes remain.
bool unpack_divides_by_zero(const TypeDesc &d) {
    const ref::Bounds b = ref::type_bounds(d);
    return b.size == 0 && b.extent == 0;
}

// A struct with explicit bounds: MPICH takes lb and ub over all of its entries, with explicit
// bounds or not, and pads the extent by epsilon, where MPI-4.1 5.1.7 takes the explicit ones
// alone and does not pad.
bool struct_bounds(const TypeDesc &d) {
    return any_node(d, [](const TypeDesc &n) {
        if (n.combiner != UCXDT_COMBINER_STRUCT) return false;
        bool with = false, without = false;
        for (int64_t i = 0; i < n.count; ++i) {
            if (n.blocklengths[i] == 0) continue;
            (marked(*n.children[i]) ? with : without) = true;
        }
        return with && (without || ref::type_bounds(n).extent % alignment(n) != 0);
    });
}

// The one primitive of d's type map; UCXDT_PRIMITIVE_LAST for none or several.
ucxdt_primitive_t only_primitive(const TypeDesc &d) {
    ucxdt_primitive_t p = UCXDT_PRIMITIVE_LAST;
    bool several = false;
    any_node(d, [&](const TypeDesc &n) {
        if (n.combiner != UCXDT_COMBINER_NAMED) return false;
        several |= p != UCXDT_PRIMITIVE_LAST && p != n.primitive;
        p = n.primitive;
        return false;
    });
    return several ? UCXDT_PRIMITIVE_LAST : p;
}

// A node whose extent the standard pads (epsilon > 0), but a struct of types of different
// primitives: MPICH pads structs alone, and takes a struct of one primitive (or, it seems, of
// one size: int64 and uint64) for an hindexed.
bool unpadded_but_struct(const TypeDesc &d) {
    return any_node(d, [](const TypeDesc &n) {
        if (ref::epsilon(n) == 0) return false;
        if (n.combiner != UCXDT_COMBINER_STRUCT) return true;
        const ucxdt_primitive_t p0 = only_primitive(*n.children[0]);
        for (const TypeDescPtr &c : n.children) {
            const ucxdt_primitive_t p = only_primitive(*c);
            if (p == UCXDT_PRIMITIVE_LAST || p0 == UCXDT_PRIMITIVE_LAST ||
                primitive_size(p) != primitive_size(p0))
                return false;
        }
        return true;
    });
}

// The longest run of consecutive copies (one extent apart) of child i that n places.
int64_t longest_run(const TypeDesc &n, size_t i) {
    switch (n.combiner) {
    case UCXDT_COMBINER_CONTIGUOUS: return n.count;
    case UCXDT_COMBINER_VECTOR:
    case UCXDT_COMBINER_HVECTOR:
    case UCXDT_COMBINER_INDEXED_BLOCK:
    case UCXDT_COMBINER_HINDEXED_BLOCK: return n.count > 0 ? n.blocklength : 0;
    case UCXDT_COMBINER_INDEXED:
    case UCXDT_COMBINER_HINDEXED:
        return n.blocklengths.empty()
                   ? 0
                   : *std::max_element(n.blocklengths.begin(), n.blocklengths.end());
    case UCXDT_COMBINER_STRUCT: return n.blocklengths[i];
    case UCXDT_COMBINER_SUBARRAY: return copies(n);  // the fastest dimension's, or fewer
    default: return 0;
    }
}

// A run of two or more copies of a type of negative extent in n, or in the child of a
// constructor that places one copy of it: MPICH gives such a constructor its child's extent,
// so repeating it steps as wrongly (vector(1,1,3,contiguous(13,resized(..,-36))), twice).
bool negative_run(const TypeDesc &n) {
    const TypeDesc &m = n.combiner == UCXDT_COMBINER_DUP ? *n.children[0] : n;
    for (size_t i = 0; i < m.children.size(); ++i)
        if (longest_run(m, i) >= 2 && ref::type_bounds(*m.children[i]).extent < 0) return true;
    switch (m.combiner) {
    case UCXDT_COMBINER_CONTIGUOUS:
    case UCXDT_COMBINER_VECTOR:
    case UCXDT_COMBINER_HVECTOR:
    case UCXDT_COMBINER_INDEXED_BLOCK:
    case UCXDT_COMBINER_HINDEXED_BLOCK:
    case UCXDT_COMBINER_INDEXED:
    case UCXDT_COMBINER_HINDEXED:
        return copies(m) == 1 && negative_run(*m.children[0]);
    default: return false;
    }
}

bool repeated_negative_runs(const TypeDesc &d) {
    return any_node(d, [&](const TypeDesc &n) {
        for (size_t i = 0; i < n.children.size(); ++i) {
            const int64_t placed =
                n.combiner == UCXDT_COMBINER_STRUCT ? n.blocklengths[i] : copies(n);
            if (placed >= 2 && negative_run(*n.children[i])) return true;
        }
        return false;
    });
}

// Copies of a type without data but with explicit bounds, by any constructor but subarray,
// resized and dup: MPICH's result has lb = ub = 0.
bool empty_drops_markers(const TypeDesc &d) {
    return any_node(d, [](const TypeDesc &n) {
        return n.combiner != UCXDT_COMBINER_NAMED && n.combiner != UCXDT_COMBINER_SUBARRAY &&
               n.combiner != UCXDT_COMBINER_RESIZED && n.combiner != UCXDT_COMBINER_DUP &&
               !has_data(n) && marked(n);
    });
}

// Blocks of length 0 in vector, hvector, indexed_block or hindexed_block: MPICH spans its
// bounds (and true bounds) over their displacements, vector(3,0,5,int32) having extent 40.
bool zero_blocks_with_bounds(const TypeDesc &d) {
    return any_node(d, [](const TypeDesc &n) {
        return (n.combiner == UCXDT_COMBINER_VECTOR || n.combiner == UCXDT_COMBINER_HVECTOR ||
                n.combiner == UCXDT_COMBINER_INDEXED_BLOCK ||
                n.combiner == UCXDT_COMBINER_HINDEXED_BLOCK) &&
               n.count > 0 && n.blocklength == 0;
    });
}

bool has_long_double(const TypeDesc &d) {
    return any_node(d, [](const TypeDesc &n) {
        return n.combiner == UCXDT_COMBINER_NAMED && n.primitive == UCXDT_LONG_DOUBLE;
    });
}

const Deviation kOpenMpi[] = {
    {"openmpi-minus-one-step", "Open MPI 4.1.4",
     "steps of -1 byte between copies: lb and pack order as for +1 (hvector(2,1,-1,char) has lb "
     "0 and packs p[0], p[1])",
     Effect::PACKING, minus_one_step},
    {"openmpi-padded-per-block", "Open MPI 4.1.4",
     "hindexed/hindexed_block/struct pad the extent after each block, not once over the type "
     "map (hindexed_block(1,[2,1,0],int32) has extent 12, not 8)",
     Effect::BOUNDS, padded_per_block},
    {"openmpi-struct-entry-without-data", "Open MPI 4.1.4",
     "a struct entry of copies of a type without data moves the bounds", Effect::PACKING,
     struct_entry_without_data},
    {"openmpi-copies-of-empty-marked", "Open MPI 4.1.4",
     "contiguous/indexed/hindexed of a type without data drop its explicit bounds",
     Effect::BOUNDS, copies_of_empty_marked},
    {"openmpi-byte-copies-of-empty", "Open MPI 4.1.4",
     "hvector/hindexed_block of a type without data or explicit bounds move the bounds",
     Effect::BOUNDS, byte_copies_of_empty},
    {"openmpi-subarray-of-nothing", "Open MPI 4.1.4",
     "MPI_Type_create_subarray rejects subsizes of 0", Effect::REJECTS, subarray_of_nothing},
};

// Open MPI 5 on top of 4.1's (the 4.1 entries still show there).
const Deviation kOpenMpi5[] = {
    {"openmpi5-long-double-by-value", "Open MPI 5.0.7",
     "MPI_LONG_DOUBLE moves by value in its own copies (ob1, and the local blocks of "
     "collectives): its padding bytes (6 of 16 on x86-64, bytes 10-15) are not written",
     Effect::PADDING_BYTES, has_long_double},
};

const Deviation kMpich[] = {
    {"mpich-unpack-divides-by-zero", "MPICH 4.0.2",
     "MPI_Unpack into a type without data of extent 0 with input left: SIGFPE",
     Effect::UNPACK_CRASH, unpack_divides_by_zero},
    {"mpich-struct-bounds", "MPICH 4.0.2",
     "a struct's explicit bounds do not override its other entries' bounds, and are padded "
     "(struct{double@0, resized(char,0,1)@0} has extent 8, not 1)",
     Effect::BOUNDS, struct_bounds},
    {"mpich-struct-entry-without-data", "MPICH 4.0.2",
     "a struct entry of copies of a type without data moves the true bounds",
     Effect::BOUNDS, struct_entry_without_data},
    {"mpich-unpadded-but-struct", "MPICH 4.0.2",
     "only a struct of different types is padded (epsilon); hvector(2,1,5,int32) has extent "
     "9, not 12",
     Effect::BOUNDS, unpadded_but_struct},
    {"mpich-repeated-negative-runs", "MPICH 4.0.2",
     "repetitions of a run of copies of a type of negative extent (or of a constructor of one "
     "copy of such a run) step by the run's length, not by its extent",
     Effect::PACKING, repeated_negative_runs},
    {"mpich-empty-drops-markers", "MPICH 4.0.2",
     "copies of a type without data but with explicit bounds have lb = ub = 0 (but in "
     "subarray)",
     Effect::BOUNDS, empty_drops_markers},
    {"mpich-zero-blocks-with-bounds", "MPICH 4.0.2",
     "vector, hvector, indexed_block and hindexed_block of blocklength 0 span bounds and true "
     "bounds over the blocks' displacements (vector(3,0,5,int32) has extent 40, not 0)",
     Effect::BOUNDS, zero_blocks_with_bounds},
    {"mpich-long-double-by-value", "MPICH 4.0.2",
     "MPI_LONG_DOUBLE moves by value: its padding bytes (6 of 16 on x86-64) pack as 0 and are "
     "not written by MPI_Unpack",
     Effect::PADDING_BYTES, has_long_double},
    {"mpich-darray-true-bounds", "MPICH 4.0.2",
     "darray's true lb and true extent are those of its whole array, not of its data",
     Effect::BOUNDS, nullptr},
};

template <size_t N> std::vector<const Deviation *> all(const Deviation (&list)[N]) {
    std::vector<const Deviation *> out;
    for (const Deviation &d : list) out.push_back(&d);
    return out;
}

}  // namespace

std::vector<const Deviation *> known_deviations(const MpiIdentity &who) {
    switch (who.flavor) {
    case MpiIdentity::Flavor::open_mpi: {
        std::vector<const Deviation *> out = all(kOpenMpi);
        if (who.major >= 5)
            for (const Deviation *d : all(kOpenMpi5)) out.push_back(d);
        return out;
    }
    case MpiIdentity::Flavor::mpich: return all(kMpich);
    default: return {};
    }
}

std::vector<const Deviation *> deviations_of(const TypeDesc &desc,
                                             const std::vector<const Deviation *> &known) {
    std::vector<const Deviation *> out;
    for (const Deviation *d : known)
        if (d->applies && d->applies(desc)) out.push_back(d);
    return out;
}

std::vector<const Deviation *> deviations_of(const TypeDesc &desc, int64_t count,
                                             const std::vector<const Deviation *> &known) {
    if (count <= 1) return deviations_of(desc, known);
    return deviations_of(*layouts::contiguous(count, layouts::TypeDescPtr(&desc, [](auto *) {})),
                         known);
}

const Deviation *find_deviation(const std::vector<const Deviation *> &known, const char *id) {
    for (const Deviation *d : known)
        if (std::strcmp(d->id, id) == 0) return d;
    return nullptr;
}

}  // namespace ucxdt::support
