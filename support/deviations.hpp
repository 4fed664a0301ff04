// Where the MPI libraries that serve as oracles are known to disagree with MPI-4.1 (and so
// with each other): per library, by its identity, and for each a predicate on a TypeDesc that
// holds wherever the deviation may show (it may hold more widely). The oracle compares such a
// type with the standard's answer (the reference walker) instead of the library, and counts it.
// docs/design.md, "Where the MPI libraries disagree", describes each. No MPI here: the running
// library's identity is support/mpi_deviations.hpp's.
#pragma once

#include "support/type_desc.hpp"

#include <string>
#include <vector>

namespace ucxdt::support {

struct MpiIdentity {
    enum class Flavor { open_mpi, mpich, other };  // OPEN_MPI and MPICH are mpi.h macros
    Flavor flavor = Flavor::other;
    int major = 0, minor = 0, patch = 0;
    std::string text;  // the first line of MPI_Get_library_version
};

struct Deviation {
    // What the library gets wrong where the predicate holds:
    enum class Effect {
        REJECTS,       // the constructor fails: the type is not built in MPI at all
        BOUNDS,        // lb, extent or true bounds differ; and with them packing of count > 1
        PACKING,       // the packed bytes (and bounds) differ
        UNPACK_CRASH,  // MPI_Unpack into the type kills the process: never called
        // No deviation from MPI-4.1, which leaves them unspecified: bytes of the primitives
        // that are no part of their values differ (compared everywhere else).
        PADDING_BYTES,
    };
    const char *id;       // short name, e.g. "openmpi-minus-one-step"
    const char *library;  // where it was seen, e.g. "Open MPI 4.1.4"
    const char *summary;  // one line
    Effect effect;
    // Whether it may show for a type (a receive type, for UNPACK_CRASH); null for deviations
    // outside the random types (darray), which their tests look up by id.
    bool (*applies)(const layouts::TypeDesc &);
};

/// The known deviations of the library `who` (none for others).
std::vector<const Deviation *> known_deviations(const MpiIdentity &who);

/// Those of `known` whose predicate holds for `desc`.
std::vector<const Deviation *> deviations_of(const layouts::TypeDesc &desc,
                                             const std::vector<const Deviation *> &known);
/// Those that may show for `count` elements of `desc`: those of contiguous(count, desc), since
/// the copies of an element are where several deviations show.
std::vector<const Deviation *> deviations_of(const layouts::TypeDesc &desc, int64_t count,
                                             const std::vector<const Deviation *> &known);

/// The deviation of `known` with this id, or null.
const Deviation *find_deviation(const std::vector<const Deviation *> &known, const char *id);

}  // namespace ucxdt::support
