// Strided plans on the GPU (element widths, short blocks, resized extents, misalignment) and
// the method the engine picks for each class of plan. The harness is harness/gpu_check.hpp;
// without a GPU every test skips.
//
// test/CMakeLists.txt runs this binary again with UCXDT_GPU_METHOD=kernel and =copy, which the
// engine reads once per process.
#include "harness/gpu_check.hpp"

#include <cstdlib>
#include <stdexcept>
#include <string>

namespace {

using namespace ucxdt::testing::gpu;

// ---- Strided plans: element widths, short blocks, misalignment -----------------------------
// These run in the default process (the cost model picks) and in the ctest entries that force
// UCXDT_GPU_METHOD=kernel and =copy.

class GpuStrided : public GpuTest {};

// Elements of 1, 2, 4, 8, 12 and 16 bytes (contiguous(k, byte)) in runs shorter and longer
// than a warp's width, with odd and negative strides, one and two strided levels.
TEST_F(GpuStrided, ElementWidthsAndMisalignment) {
    for (int64_t k : {1, 2, 4, 8, 12, 16}) {
        const auto e = L::contiguous(k, L::named(UCXDT_BYTE));
        const Typed types = {
            {L::vector(33, 1, 2, e), 1},                       // k-byte runs
            {L::vector(17, 3, 5, e), 2},                       // 3k-byte runs, count 2
            {L::vector(9, 2, -3, e), 1},                       // negative stride
            {L::hvector(12, 1, 3 * k + 5, e), 3},              // runs at odd byte distances
            {L::vector(6, 40, 41, e), 1},                      // runs longer than a warp's width
            {L::vector(3, 70, 100, e), 2},
            {L::vector(4, 1, 3, L::vector(5, 2, 4, e)), 2},    // two strided levels
            {L::hvector(7, 1, -(5 * k + 3), L::vector(3, 1, 2, e)), 1},
        };
        for (const auto &[d, count] : types) expect_case(make_case(d, count), misalignments(), 7 + k);
    }
}

// count > 1 with resized extents, positive and negative, so that elements step up, down,
// touch, or leave odd gaps.
TEST_F(GpuStrided, ResizedExtents) {
    const auto i16 = L::named(UCXDT_INT16), i32 = L::named(UCXDT_INT32), d = L::named(UCXDT_DOUBLE);
    const Typed types = {
        {L::resized(L::vector(4, 2, 3, i32), 0, 52), 5},
        {L::resized(L::vector(4, 2, 3, i32), -8, -60), 4},       // elements step downwards
        {L::resized(L::contiguous(3, d), 0, -24), 6},             // touching, downwards
        {L::resized(L::contiguous(3, d), 0, 25), 6},              // odd gaps
        {L::resized(L::named(UCXDT_LONG_DOUBLE), 0, 19), 9},
        {L::resized(L::vector(3, 1, 2, i16), 2, 13), 7},
        {L::hvector(3, 2, -24, L::resized(i16, 2, 6)), 2},
        {L::resized(L::hvector(5, 3, -40, L::contiguous(12, L::named(UCXDT_BYTE))), 4, -200), 3},
    };
    for (const auto &[t, count] : types) expect_case(make_case(t, count), misalignments(), 11);
}

// ---- Method classes -------------------------------------------------------------------------

class GpuMethod : public GpuTest {};

ucxdt_gpu_method_t method_of(const L::TypeDescPtr &d, int64_t count, ucxdt_plan_class_t want_cls) {
    const Type t(*d);
    ucxdt_plan_class_t cls{};
    int64_t blocks = 0;
    if (ucxdt_type_plan_info(t.get(), count, &cls, &blocks) != UCXDT_OK)
        throw std::runtime_error("ucxdt_type_plan_info failed");
    // The premise: the type lowers to the plan class the expectation is about.
    EXPECT_EQ(cls, want_cls) << short_desc(*d);
    ucxdt_gpu_method_t m{};
    const int before = current_device();
    EXPECT_EQ(ucxdt_gpu_method(t.get(), count, &m), UCXDT_OK) << ucxdt_last_error();
    EXPECT_EQ(current_device(), before);
    return m;
}

TEST_F(GpuMethod, ClassesOfPlans) {
    const auto dbl = L::named(UCXDT_DOUBLE), i32 = L::named(UCXDT_INT32);
    EXPECT_EQ(method_of(L::contiguous(1000, dbl), 3, UCXDT_PLAN_CONTIGUOUS),
              UCXDT_GPU_METHOD_COPY_ENGINE);

    // One strided level of rows that do not overlap: the copy engine may take it; the
    // environment forces one or the other.
    const char *force = std::getenv("UCXDT_GPU_METHOD");
    const std::string f = force ? force : "";
    const Typed copyable = {{L::vector(64, 3, 8, dbl), 1},
                            {L::vector(4096, 1, 2, i32), 1},
                            {L::resized(L::contiguous(1000, dbl), 0, 16000), 16}};
    for (const auto &[d, count] : copyable) {
        const ucxdt_gpu_method_t m = method_of(d, count, UCXDT_PLAN_STRIDED);
        if (f == "kernel") {
            EXPECT_EQ(m, UCXDT_GPU_METHOD_STRIDED_KERNEL) << short_desc(*d);
        } else if (f == "copy") {
            EXPECT_EQ(m, UCXDT_GPU_METHOD_COPY_ENGINE_2D) << short_desc(*d);
        } else {
            EXPECT_TRUE(m == UCXDT_GPU_METHOD_STRIDED_KERNEL || m == UCXDT_GPU_METHOD_COPY_ENGINE_2D)
                << short_desc(*d) << ": " << m;
        }
    }
    // Strided plans the 2-D copy engine cannot take: negative stride, overlapping rows. The
    // strided kernel, whatever the environment says.
    for (const auto &d : {L::vector(64, 3, -8, dbl), L::hvector(64, 3, 4, i32)})
        EXPECT_EQ(method_of(d, 1, UCXDT_PLAN_STRIDED), UCXDT_GPU_METHOD_STRIDED_KERNEL)
            << short_desc(*d);
    // Two levels: the copy engine would take one call per outer index, which the local model
    // does not price, so the strided kernel unless the copy is forced.
    const auto two_levels = L::subarray({6, 7, 8}, {3, 4, 5}, {1, 2, 3}, UCXDT_ORDER_C, dbl);
    EXPECT_EQ(method_of(two_levels, 1, UCXDT_PLAN_STRIDED),
              f == "copy" ? UCXDT_GPU_METHOD_COPY_ENGINE_2D : UCXDT_GPU_METHOD_STRIDED_KERNEL);
    // Block lists: a list kernel (work units, or the point-based one for tiny runs), never a
    // copy engine or the strided kernel.
    for (const auto &d : {L::indexed({5, 100, 37, 1, 64}, {0, 7, 200, 150, 400}, dbl),
                          L::hindexed({1, 2, 1}, {0, 3, 9}, L::named(UCXDT_BYTE))}) {
        const ucxdt_gpu_method_t m = method_of(d, 5, UCXDT_PLAN_BLOCK_LIST);
        EXPECT_NE(m, UCXDT_GPU_METHOD_COPY_ENGINE) << short_desc(*d);
        EXPECT_NE(m, UCXDT_GPU_METHOD_COPY_ENGINE_2D) << short_desc(*d);
        EXPECT_NE(m, UCXDT_GPU_METHOD_STRIDED_KERNEL) << short_desc(*d);
    }
    EXPECT_EQ(method_of(L::indexed({5, 100, 37, 1, 64}, {0, 7, 200, 150, 400}, dbl), 5,
                        UCXDT_PLAN_BLOCK_LIST),
              UCXDT_GPU_METHOD_UNIT_KERNEL);  // runs of 8 to 800 bytes: a unit list is cheap
}

}  // namespace
