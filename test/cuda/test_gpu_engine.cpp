// The GPU engine against the CPU engine and the reference type-map walker on device memory:
// random types, application layouts, and corner types (negative displacements, block lists of
// many chunks, nothing to move). The harness is harness/gpu_check.hpp; without a GPU every test
// skips.
//
// Environment: UCXDT_GPU_TEST_TYPES (random types, default 10000; lower it under
// compute-sanitizer), UCXDT_TEST_SEED (replays a run), UCXDT_GPU_TEST_TRACE=1 (names each
// random type before its check: finds one that crashes). test/CMakeLists.txt runs the
// application layouts again with UCXDT_GPU_METHOD=kernel and =copy.
#include "harness/gpu_check.hpp"
#include "support/layout_names.hpp"

#include <chrono>
#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <iterator>
#include <map>
#include <string>
#include <vector>

namespace {

using namespace ucxdt::testing::gpu;

const char *method_name(ucxdt_gpu_method_t m) {
    switch (m) {
    case UCXDT_GPU_METHOD_COPY_ENGINE: return "copy engine";
    case UCXDT_GPU_METHOD_COPY_ENGINE_2D: return "2-D copy engine";
    case UCXDT_GPU_METHOD_STRIDED_KERNEL: return "strided kernel";
    case UCXDT_GPU_METHOD_UNIT_KERNEL: return "work-unit kernel";
    default: return "other list kernel";
    }
}

// ---- Random types -------------------------------------------------------------------------

constexpr int kShards = 4;

// The random types with number i = shard (mod kShards), each packed and unpacked (into a
// relayout of the same signature) on device memory at random misalignments; every fourth also
// through the stream-ordered calls on a user stream.
class GpuRandom : public OnGpu<::testing::TestWithParam<int>> {};

TEST_P(GpuRandom, TypesAgainstCpuEngine) {
    const uint64_t ntypes = env_u64("UCXDT_GPU_TEST_TYPES", 10000);
    const uint64_t seed = env_u64("UCXDT_TEST_SEED", 20250611);
    const bool trace = env_u64("UCXDT_GPU_TEST_TRACE", 0) != 0;  // names a type that crashes
    const Stream stream;
    std::map<std::string, int64_t> methods;
    int64_t failures = 0, checked = 0;
    const auto t0 = std::chrono::steady_clock::now();
    for (uint64_t i = static_cast<uint64_t>(GetParam()); i < ntypes; i += kShards) {
        const uint64_t s = mix(seed ^ mix(i));
        Rng rng(s);
        Case c;
        c.send = T::random_desc(rng);
        c.recv = T::relayout(*c.send, rng);
        c.count = uni(rng, 1, 3);
        Placement st;
        st.mis_layout = uni(rng, 0, 15);
        st.mis_packed = uni(rng, 0, 15);
        if (trace) {
            std::fprintf(stderr, "[ gpu      ] type #%" PRIu64 " x %" PRId64 ": %s\n", i, c.count,
                         short_desc(*c.send).c_str());
            std::fflush(stderr);
        }
        ucxdt_gpu_method_t m{};
        bool have_method = false;
        std::string r;
        try {
            r = check_case(c, st, s, &m);
            have_method = true;
            if (r.empty() && i / kShards % 4 == 3) {
                st.stream = stream.get();
                r = check_case(c, st, s);
            }
        } catch (const std::exception &e) {
            r = std::string("exception: ") + e.what();
        }
        ++checked;
        ++methods[have_method ? method_name(m) : "unknown"];
        if (r.empty()) continue;
        if (++failures <= 10)
            ADD_FAILURE() << "type #" << i << " (UCXDT_TEST_SEED=" << seed << "): " << context(c, st)
                          << "\n  " << r;
    }
    const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::printf("[ gpu      ] shard %d: %" PRId64 " random types in %.1f s, seed %" PRIu64 ";",
                GetParam(), checked, secs, seed);
    for (const auto &[name, n] : methods) std::printf(" %s: %" PRId64 ";", name.c_str(), n);
    std::printf(" %" PRId64 " failures\n", failures);
    EXPECT_EQ(failures, 0);
}

INSTANTIATE_TEST_SUITE_P(Shard, GpuRandom, ::testing::Range(0, kShards));

// ---- Application layouts ------------------------------------------------------------------

using ucxdt::testing::app_layouts;

class GpuLayouts : public OnGpu<::testing::TestWithParam<size_t>> {};

// Each layout on its application-sized device buffer: aligned as the application has it,
// misaligned on both sides, and through the stream-ordered calls.
TEST_P(GpuLayouts, PackUnpackRangesOnDevice) {
    const L::Layout &l = app_layouts()[GetParam()];
    Case c;
    c.send = c.recv = l.type;
    c.count = l.count;
    c.app_bytes = l.buffer_bytes;
    c.app_origin = l.origin_bytes;
    const Stream stream;
    Placement aligned, misaligned, async;
    misaligned.mis_layout = 3;
    misaligned.mis_packed = 13;
    async.stream = stream.get();
    async.mis_packed = 8;
    for (const Placement &s : {aligned, misaligned, async}) {
        ucxdt_gpu_method_t m{};
        const std::string r = check_case(c, s, 0x1a70 + GetParam(), &m);
        EXPECT_EQ(r, "") << l.name << " (" << method_name(m) << "), " << context(c, s);
    }
}

std::string layout_name(const ::testing::TestParamInfo<size_t> &info) {
    return ucxdt::testing::param_name(info.param, app_layouts()[info.param].name);
}

INSTANTIATE_TEST_SUITE_P(App, GpuLayouts, ::testing::Range<size_t>(0, app_layouts().size()),
                         layout_name);

// ---- Corner types -------------------------------------------------------------------------

class GpuCorners : public GpuTest {};

TEST_F(GpuCorners, NegativeDisplacements) {
    const auto ch = L::named(UCXDT_CHAR), i16 = L::named(UCXDT_INT16),
               i32 = L::named(UCXDT_INT32), dbl = L::named(UCXDT_DOUBLE);
    const Typed types = {
        {L::hindexed({2, 1, 3}, {-40, 8, -17}, i32), 2},
        {L::indexed({1, 2}, {-5, 3}, dbl), 3},
        {L::structure({1, 2, 1}, {-24, 0, -9}, {dbl, i16, ch}), 2},
        {L::indexed_block(2, {-4, 2, -9}, i32), 2},
        {L::vector(5, 1, -7, L::hindexed({1, 1, 1}, {-3, 0, 5}, ch)), 3},
        {L::subarray({4, 5}, {2, 3}, {1, 1}, UCXDT_ORDER_FORTRAN, L::resized(i32, -2, 8)), 2},
        {L::hindexed({3, 1}, {-1000, 4000}, L::vector(3, 2, -5, i16)), 2},
        {L::resized(L::structure({1, 1}, {-17, 5}, {dbl, ch}), -20, 40), 4},
    };
    for (const auto &[t, count] : types) expect_case(make_case(t, count), misalignments(), 13);
}

// Transposed pairs of dims (kernels/transpose_kernel.cu): a packed row is a layout column, of
// 4-, 8- and 16-byte elements, with sides that leave partial 32 x 32 tiles, leading dims
// (count > 1), a negative column stride, and windows cut at elements (the kernel) and at any
// byte (the strided kernel's fallback), aligned and misaligned.
TEST_F(GpuCorners, TransposedPairs) {
    const auto i32 = L::named(UCXDT_INT32), dbl = L::named(UCXDT_DOUBLE);
    const auto cplx = L::contiguous(2, dbl);
    struct Pair {
        L::TypeDescPtr type;
        int64_t count, elem;
    };
    const std::vector<Pair> pairs = {
        {L::hvector(37, 1, 8, L::vector(45, 1, 37, dbl)), 1, 8},
        {L::hvector(37, 1, 8, L::vector(45, 1, 37, dbl)), 2, 8},
        {L::contiguous(33, L::resized(L::vector(40, 1, 50, cplx), 0, 16)), 1, 16},
        {L::hvector(64, 1, 4, L::vector(20, 1, 70, i32)), 3, 4},
        {L::hvector(20, 1, 8, L::vector(18, 1, -25, dbl)), 1, 8},
    };
    const Stream stream;
    for (const Pair &p : pairs) {
        Placement elements, async;
        elements.cut_align = async.cut_align = p.elem;
        async.stream = stream.get();
        std::vector<Placement> setups = misalignments();
        setups.push_back(elements);
        setups.push_back(async);
        expect_case(make_case(p.type, p.count), setups, 29);
    }
}

// A block list of more work units than one upload chunk (32768): its first use is cut,
// uploaded and packed chunk by chunk, and windows must find their units among those cut so far.
TEST_F(GpuCorners, BlockListFirstUseOverSeveralChunks) {
    std::vector<int64_t> bl, disp;
    int64_t at = 0;
    for (int64_t i = 0; i < 80000; ++i) {
        bl.push_back(4 + i % 7);  // 32 to 80 bytes: a unit list, not the point kernel
        disp.push_back(at);
        at += bl.back() + 1 + i % 3;
    }
    // Twice: whole, and first uses that start with a window in a later chunk (shuffled ranges).
    expect_case(make_case(L::indexed(bl, disp, L::named(UCXDT_DOUBLE)), 1), {Placement{}}, 5);
    Placement ranged;
    ranged.pieces = 3;
    expect_case(make_case(L::indexed(bl, disp, L::named(UCXDT_DOUBLE)), 2), {ranged}, 6);
}

// Empty types, count 0 and ranges of 0 bytes: OK, and not a byte written.
TEST_F(GpuCorners, NothingToMove) {
    const auto dbl = L::named(UCXDT_DOUBLE);
    const Stream stream;
    Placement sync, async;
    async.stream = stream.get();
    const Typed empty = {{L::contiguous(0, dbl), 3},
                         {L::vector(4, 2, 3, dbl), 0},
                         {L::indexed({0, 0}, {5, 1}, dbl), 2}};
    for (const auto &[t, count] : empty)
        expect_case(make_case(t, count), {sync, async}, 17);

    // Ranges of 0 bytes anywhere in a non-empty stream, from and into device memory.
    const Type t(*L::indexed({3, 1, 2}, {0, 5, 9}, dbl));
    const int64_t total = 6 * 8 * 2;
    Buffer lay(Mem::Device, 11 * 8 * 2 + 64), pk(Mem::Device, total);
    Bytes lay_img(static_cast<size_t>(11 * 8 * 2 + 64)), pk_img(static_cast<size_t>(total));
    ucxdt::ref::fill_pattern(lay_img.data(), ssize(lay_img), 5);
    ucxdt::ref::fill_pattern(pk_img.data(), ssize(pk_img), 6);
    lay.upload(lay_img);
    pk.upload(pk_img);
    for (int64_t off : {int64_t{0}, int64_t{1}, total / 2, total - 1, total}) {
        EXPECT_EQ(ucxdt_pack_range(lay.data(), 2, t.get(), off, pk.data() + off % total, 0), UCXDT_OK);
        EXPECT_EQ(ucxdt_unpack_range(pk.data(), off, 0, lay.data(), 2, t.get()), UCXDT_OK);
        EXPECT_EQ(ucxdt_pack_range_async(lay.data(), 2, t.get(), off, pk.data(), 0, stream.get()),
                  UCXDT_OK);
        EXPECT_EQ(ucxdt_unpack_range_async(pk.data(), off, 0, lay.data(), 2, t.get(), stream.get()),
                  UCXDT_OK);
    }
    ASSERT_EQ(cudaStreamSynchronize(stream.get()), cudaSuccess);
    EXPECT_EQ(compare(lay.download(), lay_img, "layout", 0), "");
    EXPECT_EQ(compare(pk.download(), pk_img, "packed", 0), "");
}
}  // namespace
