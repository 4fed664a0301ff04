// Every memory kind on either side of the calls (zero copy, managed, staged pageable memory),
// two GPUs, and layouts whose data is on the GPU though the buffer pointer is not. The harness
// is harness/gpu_check.hpp; without a GPU every test skips.
//
// UCXDT_STAGING_MB: the engine's staging buffer (32 MiB by default), read once per process;
// test/CMakeLists.txt runs GpuStaging again with 1.
#include "harness/gpu_check.hpp"

#include <cstdint>
#include <iterator>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

namespace {

using namespace ucxdt::testing::gpu;

// ---- Memory kinds -------------------------------------------------------------------------

bool gpu_accessible(Mem m) { return m != Mem::Pageable; }

struct KindPair {
    Mem layout, packed;
};

void PrintTo(const KindPair &k, std::ostream *os) {
    *os << mem_name(k.layout) << " layout, " << mem_name(k.packed) << " packed";
}

class GpuMemory : public OnGpu<::testing::TestWithParam<KindPair>> {};

// Each kind of plan between the two memory kinds, aligned and not; through the stream-ordered
// calls too where both kinds are GPU-accessible.
TEST_P(GpuMemory, PackUnpackRanges) {
    const KindPair k = GetParam();
    const auto dbl = L::named(UCXDT_DOUBLE), flt = L::named(UCXDT_FLOAT);
    const Typed types = {
        {L::contiguous(300, L::named(UCXDT_INT32)), 2},                          // contiguous
        {L::vector(50, 3, 7, dbl), 2},                                           // 1 strided level
        {L::vector(6000, 1, 2, dbl), 1},  // rows too many for a 2-D copy across the host link
        // Runs of several vectors, which a group of lanes shares across the host link: 64 B
        // every 512, 100 B (4-byte accesses), 67 B (no common alignment), 1 KiB.
        {L::vector(300, 8, 64, dbl), 1},
        {L::vector(70, 25, 33, flt), 2},
        {L::vector(90, 67, 80, L::named(UCXDT_BYTE)), 1},
        {L::vector(20, 128, 130, dbl), 1},
        {L::subarray({6, 7, 8}, {3, 4, 5}, {1, 2, 3}, UCXDT_ORDER_C, flt), 2},   // 2 levels
        {L::indexed({5, 100, 37, 1, 64}, {0, 7, 200, 150, 400}, dbl), 3},        // block list
        {L::indexed({3, 17, 40, 9}, {0, 5, 30, 80}, dbl), 40},  // a block list, an outer index per element
        {L::vector(40, 1, 3, L::hindexed({1, 2, 1}, {0, 3, 9}, L::named(UCXDT_BYTE))), 2},  // tiny runs
    };
    const Stream stream;
    std::vector<Placement> setups;
    for (auto [ml, mp] : {Pair{0, 0}, Pair{5, 11}}) {
        Placement s;
        s.layout = k.layout;
        s.packed = k.packed;
        s.mis_layout = ml;
        s.mis_packed = mp;
        setups.push_back(s);
        if (gpu_accessible(k.layout) && gpu_accessible(k.packed)) {
            s.stream = stream.get();
            setups.push_back(s);
        }
    }
    for (const auto &[t, count] : types) expect_case(make_case(t, count), setups, 19);
}

std::string kind_pair_name(const ::testing::TestParamInfo<KindPair> &info) {
    return std::string(mem_name(info.param.layout)) + "_" + mem_name(info.param.packed);
}

INSTANTIATE_TEST_SUITE_P(
    Kinds, GpuMemory,
    ::testing::Values(KindPair{Mem::Device, Mem::Device}, KindPair{Mem::Device, Mem::Pinned},
                      KindPair{Mem::Pinned, Mem::Device}, KindPair{Mem::Device, Mem::Registered},
                      KindPair{Mem::Registered, Mem::Device}, KindPair{Mem::Managed, Mem::Managed},
                      KindPair{Mem::Managed, Mem::Device}, KindPair{Mem::Device, Mem::Managed},
                      KindPair{Mem::Pinned, Mem::Managed}, KindPair{Mem::Device, Mem::Pageable},
                      KindPair{Mem::Pageable, Mem::Device}, KindPair{Mem::Managed, Mem::Pageable},
                      KindPair{Mem::Pageable, Mem::Managed}, KindPair{Mem::Pinned, Mem::Pinned},
                      KindPair{Mem::Pinned, Mem::Pageable}, KindPair{Mem::Pageable, Mem::Pageable}),
    kind_pair_name);

// ---- Staging of pageable memory -----------------------------------------------------------

// ucxdt_memory_type: what each kind of allocation is, and its GPU where it has one.
class GpuMemoryType : public GpuTest {};

TEST_F(GpuMemoryType, EachKindOfMemory) {
    struct Case {
        Mem kind;
        ucxdt_memory_type_t want;
    };
    for (const Case c : {Case{Mem::Device, UCXDT_MEMORY_DEVICE}, Case{Mem::Managed, UCXDT_MEMORY_MANAGED},
                         Case{Mem::Pinned, UCXDT_MEMORY_HOST_PINNED}, Case{Mem::Registered, UCXDT_MEMORY_HOST_PINNED},
                         Case{Mem::Pageable, UCXDT_MEMORY_HOST}}) {
        SCOPED_TRACE(mem_name(c.kind));
        const Buffer b(c.kind, 4096);
        int device = 99;
        EXPECT_EQ(ucxdt_memory_type(b.data() + 100, &device), c.want);
        const bool on_gpu = c.want == UCXDT_MEMORY_DEVICE || c.want == UCXDT_MEMORY_MANAGED;
        EXPECT_EQ(device, on_gpu ? current_device() : -1);
    }
}

// Without a GPU, and for memory CUDA does not know, every pointer is host memory.
TEST(MemoryType, HostMemoryAndNull) {
    int on_stack = 0, device = 99;
    std::vector<char> heap(64);
    EXPECT_EQ(ucxdt_memory_type(&on_stack, &device), UCXDT_MEMORY_HOST);
    EXPECT_EQ(device, -1);
    EXPECT_EQ(ucxdt_memory_type(heap.data(), nullptr), UCXDT_MEMORY_HOST);
    EXPECT_EQ(ucxdt_memory_type(nullptr, &device), UCXDT_MEMORY_HOST);
}

class GpuStaging : public GpuTest {};

// Pageable memory against a GPU-side buffer, with more data than one staging buffer holds
// (env UCXDT_STAGING_MB, 32 MiB by default; a ctest entry runs this with 1): whole transfers
// and ranges both cross chunk boundaries.
TEST_F(GpuStaging, PageableLargerThanStaging) {
    const int64_t staging = static_cast<int64_t>(env_u64("UCXDT_STAGING_MB", 32)) << 20;
    const int64_t want = staging * 3 / 2;
    // Long runs of wide primitives keep the host-side reference cheap at this size.
    const auto z = L::named(UCXDT_DOUBLE_COMPLEX);
    const std::vector<Case> cases = {
        make_case(L::hvector(want / 992 + 7, 1, 1000, L::contiguous(62, z)), 1),  // strided
        make_case(L::resized(L::hindexed({20, 7, 33}, {0, 400, 600}, z), 0, 1200),
                  want / 960 + 3),  // block list
    };
    using MemPair = std::pair<Mem, Mem>;
    std::vector<Placement> setups;
    for (auto [l, p] : {MemPair{Mem::Device, Mem::Pageable}, MemPair{Mem::Pageable, Mem::Device},
                        MemPair{Mem::Managed, Mem::Pageable}}) {
        Placement s;
        s.layout = l;
        s.packed = p;
        s.mis_layout = 1;
        s.mis_packed = 2;
        s.pieces = 5;
        setups.push_back(s);
    }
    for (const Case &c : cases) {
        const Type t(*c.send);
        ASSERT_GT(t.size() * c.count, staging + staging / 4) << short_desc(*c.send);
        expect_case(c, setups, 23);
    }
}

// ---- Two GPUs -------------------------------------------------------------------------------

class GpuMultiDevice : public GpuTest {};

// Buffers on GPU 1 while GPU 0 is current: the calls serve them on GPU 1 (with its own work
// units and internal stream) and leave GPU 0 current (check_case checks after every call).
TEST_F(GpuMultiDevice, BuffersOnSecondGpu) {
    if (devices().count < 2)
        GTEST_SKIP() << "needs 2 GPUs, cudaGetDeviceCount reports " << devices().count;
    const auto dbl = L::named(UCXDT_DOUBLE);
    const Typed types = {
        {L::contiguous(300, dbl), 2},
        {L::vector(50, 3, 7, dbl), 2},
        {L::vector(50, 3, -7, dbl), 2},
        {L::indexed({5, 100, 37, 1, 64}, {0, 7, 200, 150, 400}, dbl), 3},
        {L::vector(40, 1, 3, L::hindexed({1, 2, 1}, {0, 3, 9}, L::named(UCXDT_BYTE))), 2},
    };
    const Stream stream1(1);
    std::vector<Placement> setups;
    using MemPair = std::pair<Mem, Mem>;
    for (auto [l, p] : {MemPair{Mem::Device, Mem::Device}, MemPair{Mem::Device, Mem::Pinned},
                        MemPair{Mem::Managed, Mem::Device}, MemPair{Mem::Device, Mem::Pageable},
                        MemPair{Mem::Pageable, Mem::Device}}) {
        Placement s;
        s.layout = l;
        s.packed = p;
        s.device = 1;
        s.mis_layout = 3;
        s.mis_packed = 1;
        setups.push_back(s);
    }
    Placement async = setups[0];
    async.stream = stream1.get();  // a stream of the buffers' GPU
    setups.push_back(async);
    Placement on0;  // the same types on GPU 0 afterwards: units are cached per device
    setups.push_back(on0);
    ASSERT_EQ(current_device(), 0);
    for (const auto &[t, count] : types) expect_case(make_case(t, count), setups, 29);
    EXPECT_EQ(current_device(), 0);
}

// ---- Where the layout pointer points ----------------------------------------------------

// MPI_BOTTOM: a NULL buffer and displacements that are device addresses, so the layout's data
// is on the GPU though the buffer pointer is not. Shape 0 lowers to a strided plan, shape 1 to
// a block list. "" when pack and unpack move exactly the pieces.
std::string check_bottom(int shape_index) {
    const auto b = L::named(UCXDT_BYTE);
    Buffer a(Mem::Device, 256), c(Mem::Device, 256), pk(Mem::Device, 64);
    Bytes img_a(256), img_c(256);
    ucxdt::ref::fill_pattern(img_a.data(), 256, 41);
    ucxdt::ref::fill_pattern(img_c.data(), 256, 42);
    const auto addr = [](const Buffer &buf, int64_t off) {
        return static_cast<int64_t>(reinterpret_cast<intptr_t>(buf.data())) + off;
    };
    struct Piece {  // bytes [off, off + len) of a or c, in pack order
        bool in_a;
        int64_t off, len;
    };
    const std::vector<std::vector<Piece>> shapes = {
        {{true, 0, 6}, {true, 16, 6}, {true, 32, 6}},
        {{true, 8, 4}, {false, 16, 8}, {true, 40, 3}},
    };
    const auto &shape = shapes.at(static_cast<size_t>(shape_index));
    std::vector<int64_t> lens, disps;
    Bytes want;
    for (const Piece &p : shape) {
        lens.push_back(p.len);
        disps.push_back(addr(p.in_a ? a : c, p.off));
        const Bytes &img = p.in_a ? img_a : img_c;
        want.insert(want.end(), img.begin() + p.off, img.begin() + p.off + p.len);
    }
    const Type t(*L::hindexed(lens, disps, b));
    const int64_t total = ssize(want);
    a.upload(img_a);
    c.upload(img_c);
    pk.upload(Bytes(64, std::byte{0x5a}));
    int64_t pos = 0;
    CHECK_OK(call("pack", [&] { return ucxdt_pack(nullptr, 1, t.get(), pk.data(), 64, &pos); }));
    if (pos != total) return "pack left *position at " + std::to_string(pos);
    Bytes got = pk.download();
    CHECK_OK(compare(Bytes(got.begin(), got.begin() + total), want, "pack", 0));

    // Unpack the complement back: exactly the pieces change.
    Bytes flipped(64);
    for (int64_t i = 0; i < total; ++i)
        flipped[static_cast<size_t>(i)] = ~want[static_cast<size_t>(i)];
    pk.upload(flipped);
    pos = 0;
    CHECK_OK(call("unpack", [&] { return ucxdt_unpack(pk.data(), total, &pos, nullptr, 1, t.get()); }));
    Bytes want_a = img_a, want_c = img_c;
    for (const Piece &p : shape)
        for (int64_t i = 0; i < p.len; ++i) {
            Bytes &w = p.in_a ? want_a : want_c;
            w[static_cast<size_t>(p.off + i)] = ~w[static_cast<size_t>(p.off + i)];
        }
    CHECK_OK(compare(a.download(), want_a, "unpack: a", 0));
    CHECK_OK(compare(c.download(), want_c, "unpack: c", 0));
    return "";
}

// A block list of data from the buffer pointer on (lb = true lb = 0), whose plan keeps a
// displacement of -2^36 apart from the +2^36 of its blocks: the data starts at the pointer,
// the plan's base is far below it. (The relayouts of random types hit the same with a few KB.)
std::string check_base_outside() {
    const int64_t d = int64_t{1} << 36;
    const auto inner = L::hindexed({1, 2, 1}, {d, d + 8, d + 40}, L::named(UCXDT_INT32));
    const auto t = L::resized(L::hindexed({1}, {-d}, L::hvector(3, 1, 200, inner)), 0, 600);
    Case c;
    c.send = c.recv = t;
    c.count = 2;
    c.app_bytes = 1044;  // exactly the data: true extent 444 after one extent of 600
    return check_case(c, Placement{}, 43);
}

// The last suite registered in this file, so it runs last: an engine that tells the memory
// kind by another address than a byte of data takes device memory for host memory here and
// crashes on it, after every other result of this binary is out. (A death test would contain the crash, but hangs under
// compute-sanitizer.)
class GpuPointers : public OnGpu<::testing::TestWithParam<int>> {};

TEST_P(GpuPointers, LayoutDataOnDevice) {
    EXPECT_EQ(GetParam() < 2 ? check_bottom(GetParam()) : check_base_outside(), "");
}

INSTANTIATE_TEST_SUITE_P(Kind, GpuPointers, ::testing::Values(0, 1, 2),
                         [](const ::testing::TestParamInfo<int> &info) -> std::string {
                             switch (info.param) {
                             case 0: return "bottom_strided";
                             case 1: return "bottom_block_list";
                             default: return "plan_base_outside_buffer";
                             }
                         });

}  // namespace
