// Datatypes imported into ucxdt when the application commits them (MPI_Type_commit, and
// MPI_Type_dup of a committed type, which MPI-4.1 5.1.10 makes committed too), released at
// MPI_Type_free. A type ucxdt cannot import keeps the MPI's own path, with one warning.
#include "pmpi.hpp"

#include <ucxdt/mpi.h>

#include <cstdio>
#include <mutex>
#include <unordered_map>

namespace ucxdt::pmpi {

namespace {

std::mutex types_mutex;
std::unordered_map<MPI_Datatype, TypeRef> &types() {
    static auto *m = new std::unordered_map<MPI_Datatype, TypeRef>;  // outlives static dtors
    return *m;
}

void import_type(MPI_Datatype dt) {
    int ni, na, nd, combiner;
    if (PMPI_Type_get_envelope(dt, &ni, &na, &nd, &combiner) != MPI_SUCCESS ||
        combiner == MPI_COMBINER_NAMED)
        return;  // predefined types are contiguous: the MPI's path is the fast one
    auto e = std::make_shared<TypeEntry>();
    int64_t true_extent = 0;
    if (ucxdt_type_from_mpi(dt, &e->type) != UCXDT_OK || ucxdt_type_size(e->type, &e->size) != UCXDT_OK ||
        ucxdt_type_true_extent(e->type, &e->true_lb, &true_extent) != UCXDT_OK) {
        count_op(kFallbacks);
        static std::once_flag warned;
        std::call_once(warned, [] {
            std::fprintf(stderr, "ucxdt_pmpi: a committed datatype cannot be imported (%s); it and any "
                                 "like it use the MPI's own path\n", ucxdt_last_error());
        });
        return;
    }
    std::lock_guard<std::mutex> lock(types_mutex);
    types()[dt] = std::move(e);
}

}  // namespace

TypeEntry::~TypeEntry() {
    if (type) ucxdt_type_free(&type);
}

TypeRef find_type(MPI_Datatype dt) {
    std::lock_guard<std::mutex> lock(types_mutex);
    auto it = types().find(dt);
    return it == types().end() ? nullptr : it->second;
}

void forget_all_types() {
    std::lock_guard<std::mutex> lock(types_mutex);
    types().clear();
}

}  // namespace ucxdt::pmpi

using namespace ucxdt::pmpi;

UCXDT_PMPI_EXPORT int MPI_Type_commit(MPI_Datatype *datatype) {
    const int rc = PMPI_Type_commit(datatype);
    if (rc == MPI_SUCCESS && !find_type(*datatype)) import_type(*datatype);
    return rc;
}

UCXDT_PMPI_EXPORT int MPI_Type_dup(MPI_Datatype oldtype, MPI_Datatype *newtype) {
    const int rc = PMPI_Type_dup(oldtype, newtype);
    if (rc == MPI_SUCCESS && find_type(oldtype)) import_type(*newtype);
    return rc;
}

UCXDT_PMPI_EXPORT int MPI_Type_free(MPI_Datatype *datatype) {
    {
        // Operations still pending hold their own reference (TypeRef).
        std::lock_guard<std::mutex> lock(types_mutex);
        types().erase(*datatype);
    }
    return PMPI_Type_free(datatype);
}
