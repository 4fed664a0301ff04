// Differential test of ucxdt against an MPI library (the oracle; built once per MPI found:
// test_oracle_openmpi, test_oracle_mpich): random types built both in MPI (imported with
// ucxdt_type_from_mpi) and natively must agree with MPI on size, bounds and every packed byte,
// including range packing in any segment order, and must unpack into a relayouted type of the
// same signature exactly as MPI_Unpack does, leaving every other byte alone. The reference
// type-map walker, a second and independent reference, must agree with MPI too, and so must
// every subtype of a random type on its own. Also decoding tests of ucxdt_type_from_mpi
// (named, pair, darray, f90 types) and the application layouts against MPI_Pack.
//
// Half the random types avoid Open MPI 4.1's deviations from MPI-4.1 (support/random_desc.hpp);
// the other half are of the edge categories (support/edge_desc.hpp), any MPI-4.1 type. Where a
// known deviation of the running library applies (support/deviations.hpp, by
// MPI_Get_library_version), the type is checked against the standard's answer, the reference
// walker, instead, and counted; each category must have been compared at least once.
//
// UCXDT_TEST_SEED=<n> replays a run (the seed is printed); UCXDT_ORACLE_TYPES=<n> changes the
// number of random types of the default test; UCXDT_ORACLE_TRACE=1 prints each before its check;
// UCXDT_ORACLE_REPRODUCERS=<n> reports the first n failures in full (10).
// The decoding and application-layout cases: oracle_decode.cpp.
#include "oracle_check.hpp"

namespace {

using namespace oracle;

// ---- MPI lifetime -----------------------------------------------------------------------------

class MpiEnvironment : public ::testing::Environment {
public:
    void SetUp() override {
        int initialized = 0;
        MPI_Initialized(&initialized);
        if (!initialized) MPI_Init(nullptr, nullptr);
        // Datatype errors must come back as codes, so that to_mpi can name the bad type.
        MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
        MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);
    }
    void TearDown() override {
        int finalized = 0;
        MPI_Finalized(&finalized);
        if (!finalized) MPI_Finalize();
    }
};

[[maybe_unused]] ::testing::Environment *const mpi_env =
    ::testing::AddGlobalTestEnvironment(new MpiEnvironment);


TEST(Oracle, RandomTypes) {
    run_random(static_cast<int64_t>(env_u64("UCXDT_ORACLE_TYPES", 10000)),
               env_u64("UCXDT_TEST_SEED", 20240917), "RandomTypes");
}


// Label "soak" (test/CMakeLists.txt): a fresh seed each run unless UCXDT_TEST_SEED is set.
TEST(OracleSoak, RandomTypes) {
    const uint64_t fresh = static_cast<uint64_t>(
        std::chrono::system_clock::now().time_since_epoch().count());
    run_random(200000, env_u64("UCXDT_TEST_SEED", fresh), "Soak");
}

}  // namespace
