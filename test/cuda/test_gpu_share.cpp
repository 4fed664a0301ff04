// How ucxdt's GPU work shares the GPU with the application's: the bound on the blocks (and so
// the multiprocessors) of its kernels, UCXDT_GPU_SMS, and its streams' priority,
// UCXDT_GPU_STREAM_PRIORITY. Both settings are read once per process: each case reads them in
// a process of its own (expect_settings).
#include "kernels/pack_kernels.hpp"
#include "harness/gpu_check.hpp"

#include <ucp/api/ucp.h>
#include <ucxdt/ucxdt_ucp.h>

#include <cstdio>
#include <cstdlib>
#include <string>

namespace {

using ucxdt::kernels::bounded_grid;
using ucxdt::kernels::run_grid;

TEST(GpuShareGrid, UnboundedFillsTwoWavesOfEveryMultiprocessor) {
    EXPECT_EQ(bounded_grid(uint64_t{1} << 40, 256, 132, 0), 132u * 8 * 2);
    EXPECT_EQ(bounded_grid(1000, 256, 132, 0), 4u) << "no more blocks than the threads need";
    EXPECT_EQ(bounded_grid(0, 256, 132, 0), 1u) << "at least one";
    EXPECT_EQ(bounded_grid(uint64_t{1} << 40, 1024, 0, 0), 4u) << "a device of unknown size counts as one";
}

TEST(GpuShareGrid, ABoundCapsTheBlocks) {
    EXPECT_EQ(bounded_grid(uint64_t{1} << 40, 256, 132, 8), 8u);
    EXPECT_EQ(bounded_grid(uint64_t{1} << 40, 256, 132, 1), 1u);
    EXPECT_EQ(bounded_grid(1000, 256, 132, 8), 4u) << "a bound above the need changes nothing";
    EXPECT_EQ(bounded_grid(uint64_t{1} << 40, 256, 132, 100000), 132u * 8 * 2) << "nor one above the cap";
}

TEST(GpuShareGrid, OneThreadPerRunTakesEveryBlockItNeeds) {
    EXPECT_EQ(run_grid(uint64_t{1} << 24, 256, 0), 65536u) << "no cap at two waves";
    EXPECT_EQ(run_grid(1000, 256, 0), 4u);
    EXPECT_EQ(run_grid(0, 256, 0), 1u) << "at least one";
    EXPECT_EQ(run_grid(uint64_t{1} << 50, 256, 0), 0x7fffffffu) << "gridDim.x's limit";
    EXPECT_EQ(run_grid(uint64_t{1} << 24, 256, 8), 8u) << "UCXDT_GPU_SMS still bounds it";
    EXPECT_EQ(run_grid(1000, 256, 8), 4u);
}

// The settings in force, as ucxdt_worker_print_config reports them.
std::string printed_config() {
    ucp_params_t p{};
    p.field_mask = UCP_PARAM_FIELD_FEATURES;
    p.features = UCP_FEATURE_TAG | UCP_FEATURE_AM;
    ucp_context_h ctx = nullptr;
    ucp_worker_h uw = nullptr;
    if (ucp_init(&p, nullptr, &ctx) != UCS_OK) return "ucp_init failed";
    ucp_worker_params_t wp{};
    if (ucp_worker_create(ctx, &wp, &uw) != UCS_OK) return ucp_cleanup(ctx), "ucp_worker_create failed";
    ucxdt_worker_params_t dp{};
    dp.field_mask = UCXDT_WORKER_PARAM_FIELD_UCP_WORKER | UCXDT_WORKER_PARAM_FIELD_UCP_CONTEXT;
    dp.ucp_worker = uw;
    dp.ucp_context = ctx;
    ucxdt_worker_h w = nullptr;
    std::string out = "ucxdt_worker_create failed";
    if (ucxdt_worker_create(&dp, &w) == UCXDT_OK) {
        char *buf = nullptr;
        size_t size = 0;
        FILE *f = open_memstream(&buf, &size);
        ucxdt_worker_print_config(w, f);
        std::fclose(f);
        out.assign(buf, size);
        std::free(buf);
        ucxdt_worker_destroy(w);
    }
    ucp_worker_destroy(uw);
    ucp_cleanup(ctx);
    return out;
}

// Runs in a process of its own (a death-test child, re-executed from main): sets the two
// variables (nullptr: unset), then exits 0 when the printed configuration holds both lines,
// else prints it and exits 1. Each setting is read once per process, so a process that read
// them already (another test of this binary) cannot tell.
void expect_settings(const char *sms, const char *priority, const std::string &want_sms, const std::string &want_priority) {
    EXPECT_EXIT(
        {
            sms ? setenv("UCXDT_GPU_SMS", sms, 1) : unsetenv("UCXDT_GPU_SMS");
            priority ? setenv("UCXDT_GPU_STREAM_PRIORITY", priority, 1) : unsetenv("UCXDT_GPU_STREAM_PRIORITY");
            const std::string c = printed_config();
            const bool ok = c.find("UCXDT_GPU_SMS=" + want_sms + "\n") != std::string::npos &&
                            c.find("UCXDT_GPU_STREAM_PRIORITY=" + want_priority + "\n") != std::string::npos;
            if (!ok) std::fprintf(stderr, "%s", c.c_str());
            std::exit(ok ? 0 : 1);
        },
        ::testing::ExitedWithCode(0), "");
}

const std::string kDefaultBound = std::to_string(ucxdt::kernels::kDefaultSmBound);

TEST(GpuShareSettings, DefaultsAreHighPriorityAndNoBound) {
    GTEST_FLAG_SET(death_test_style, "threadsafe");
    expect_settings(nullptr, nullptr, kDefaultBound, "high");
}

TEST(GpuShareSettings, TheEnvironmentIsRead) {
    GTEST_FLAG_SET(death_test_style, "threadsafe");
    expect_settings("12", "low", "12", "low");
    expect_settings("0", "normal", "0", "normal");
}

TEST(GpuShareSettings, AnInvalidValueIsTheDefault) {
    GTEST_FLAG_SET(death_test_style, "threadsafe");
    expect_settings("-3", "urgent", kDefaultBound, "high");
    expect_settings("12x", "", kDefaultBound, "high");
}

}  // namespace
