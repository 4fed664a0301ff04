// Every application layout through the CPU engine, checked against the source's numbers and
// against the reference type-map walker (support/typemap_walk), the same for layouts
// that the registry (support/registry) builds from parameters, plus known answers for
// the walker itself and the C++ wrappers.
#include "support/app_layouts.hpp"
#include "support/registry.hpp"
#include "support/typemap_walk.hpp"
#include "support/layout_names.hpp"

#include <ucxdt/ucxdt.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <cstring>
#include <random>
#include <tuple>
#include <vector>

namespace {

using ucxdt::layouts::Layout;
using ucxdt::layouts::TypeDesc;
using Blocks = std::vector<ucxdt::ref::Block>;
namespace L = ucxdt::layouts;

const std::vector<Layout> &all_layouts() {
    static const std::vector<Layout> v = L::application_layouts();
    return v;
}

// Specs that the registry builds from their parameters (none is a pre-built size), small enough
// for the walker: every constructor spec, and every application family at sizes of the doc's
// tables (Registry.AnySizeMatchesDocTables holds those to the doc's numbers) and at edge sizes
// where blocks merge.
const std::vector<std::string> kSpecs = {
    "hvector:count=5,blocklength=3,stride=40,type=int32",
    "hvector:count=4,blocklength=2,stride=16",  // blocks touch: one run
    "indexed:blocklengths=2/0/3,displacements=10/0/4,type=int64",
    "indexed_block:blocklength=2,displacements=6/0/3",
    "subarray:sizes=4/5/6,subsizes=2/3/4,starts=1/2/2,order=fortran,type=float",
    "subarray:sizes=6/7,subsizes=3/2,starts=3/5",
    "struct:count=7",
    "transpose:n=5",
    "transpose:n=1",
    "nas_mg_x:130x66x66",
    "nas_mg_y:130x66x66",
    "nas_mg_z:130x66x66",
    "nas_mg_x:5x3x4",
    "nas_lu_x:33",
    "nas_lu_y:33",
    "nas_lu_y:1",
    "milc_su3_zdown:8x16x16x16",
    "milc_su3_zdown:2x3x1x5",  // d4 = 1: the halves' blocks merge into one
    "wrf_x_vec:4x4",
    "wrf_x_sa:4x4",
    "wrf_y_vec:3x3",
    "wrf_y_sa:3x3",
    "wrf_y_sa:8x8",
    "specfem3d_mt_send:3x2x6400",
    "specfem3d_mt_recv:3x2x6400",
    "specfem3d_mt_send:4x1x10",  // DIM2 = 1: one run
    "fft2_gather:N=512",
    "fft2_scatter:N=512",
    "fft2_scatter:N=12,P=3",
    "fft2_gather:N=8,P=1",  // the whole matrix: one run
    "comb_send:-x-y,8^3,g2",
    "comb_recv:+z,6^3,g3",
    "comb_send:+x-y+z,5^3",
};

// The pre-built layouts, then the registry's for kSpecs (one that fails to resolve is left out
// here and fails Registry.SpecsResolve).
const std::vector<Layout> &checked_layouts() {
    static const std::vector<Layout> v = [] {
        std::vector<Layout> out = all_layouts();
        for (const auto &spec : kSpecs) {
            Layout l;
            std::string err;
            if (L::resolve_layout(spec, &l, &err)) out.push_back(std::move(l));
        }
        return out;
    }();
    return v;
}

ucxdt::type build(const TypeDesc &d) {
    ucxdt_type_t h = UCXDT_TYPE_NULL;
    const ucxdt_status_t st = L::build(d, &h, true);
    if (st != UCXDT_OK)
        throw ucxdt::error(st, "build " + L::to_string(d) + ": " + ucxdt_last_error());
    return ucxdt::type::adopt(h);
}

std::string short_desc(const TypeDesc &d) {
    std::string s = L::to_string(d);
    return s.size() > 300 ? s.substr(0, 300) + "..." : s;
}

// Splits [0, total) into pieces of mixed sizes (tiny ones land inside and across blocks) and
// shuffles them, as a fragmenting protocol would produce them.
std::vector<std::pair<int64_t, int64_t>> random_ranges(int64_t total, uint64_t seed) {
    std::mt19937_64 rng(seed);
    std::vector<std::pair<int64_t, int64_t>> out;
    const int64_t big = std::max<int64_t>(1, total / 8);
    for (int64_t pos = 0; pos < total;) {
        const int64_t hi = rng() % 2 ? std::min<int64_t>(64, big) : big;
        const int64_t len = std::min(total - pos, 1 + static_cast<int64_t>(rng() % hi));
        out.emplace_back(pos, len);
        pos += len;
    }
    std::shuffle(out.begin(), out.end(), rng);
    return out;
}

class LayoutTest : public ::testing::TestWithParam<size_t> {
protected:
    void SetUp() override {
        layout_ = &checked_layouts()[GetParam()];
        runs_ = ucxdt::ref::typemap_runs(*layout_->type, layout_->count);
        total_ = 0;
        for (const auto &r : runs_) total_ += r.second;
    }
    // Source buffer with a pattern, and a target poisoned with its complement.
    void make_buffers() {
        src_.assign(static_cast<size_t>(layout_->buffer_bytes), std::byte{0});
        dst_.assign(src_.size(), std::byte{0});
        ucxdt::ref::fill_pattern(src_.data(), ssize(src_), 0x5eed0000 + GetParam());
        ucxdt::ref::fill_complement(dst_.data(), src_.data(), ssize(dst_));
    }
    static int64_t ssize(const std::vector<std::byte> &v) { return static_cast<int64_t>(v.size()); }
    const std::byte *src_origin() const { return src_.data() + layout_->origin_bytes; }
    std::byte *dst_origin() { return dst_.data() + layout_->origin_bytes; }

    const Layout *layout_ = nullptr;
    Blocks runs_;
    int64_t total_ = 0;
    std::vector<std::byte> src_, dst_;
};

// The layout's definition reproduces the source's numbers (checked with the walker, so this
// also pins the walker) and stays inside the application's buffer.
TEST_P(LayoutTest, DefinitionMatchesSource) {
    const Layout &l = *layout_;
    SCOPED_TRACE(short_desc(*l.type));
    const auto b = ucxdt::ref::type_bounds(*l.type);
    if (l.expect_packed >= 0) {
        EXPECT_EQ(b.size, l.expect_packed);
    }
    if (l.expect_extent >= 0) {
        EXPECT_EQ(b.extent, l.expect_extent);
    }
    if (l.expect_true_extent >= 0) {
        EXPECT_EQ(b.true_extent, l.expect_true_extent);
    }
    if (l.expect_blocks >= 0) {
        EXPECT_EQ(static_cast<int64_t>(runs_.size()), l.expect_blocks);
    }
    EXPECT_EQ(total_, l.count * b.size);
    for (const auto &[disp, len] : runs_) {
        ASSERT_GE(l.origin_bytes + disp, 0) << "run at " << disp;
        ASSERT_LE(l.origin_bytes + disp + len, l.buffer_bytes) << "run at " << disp;
    }
}

TEST_P(LayoutTest, QueriesMatchReference) {
    const Layout &l = *layout_;
    SCOPED_TRACE(short_desc(*l.type));
    const auto ref = ucxdt::ref::type_bounds(*l.type);
    const ucxdt::type t = build(*l.type);
    EXPECT_EQ(t.size(), ref.size);
    EXPECT_EQ(t.lb(), ref.lb);
    EXPECT_EQ(t.extent(), ref.extent);
    EXPECT_EQ(t.true_lb(), ref.true_lb);
    EXPECT_EQ(t.true_extent(), ref.true_extent);
    EXPECT_EQ(t.plan(l.count).num_blocks, static_cast<int64_t>(runs_.size()));
    EXPECT_GE(t.pack_size(l.count), l.count * ref.size);
    const ucxdt_signature_t sig = t.signature(l.count);
    int64_t primitives = 0;
    ucxdt::ref::walk_typemap(*l.type, l.count, [&](int64_t, int64_t) { ++primitives; });
    EXPECT_EQ(sig.length, primitives);
}

TEST_P(LayoutTest, PackAndUnpackFollowTypeMap) {
    const Layout &l = *layout_;
    SCOPED_TRACE(short_desc(*l.type));
    const ucxdt::type t = build(*l.type);
    make_buffers();
    std::vector<std::byte> packed(static_cast<size_t>(total_) + 16, std::byte{0x77});
    int64_t pos = 0;
    t.pack(src_origin(), l.count, packed, pos);
    ASSERT_EQ(pos, total_);
    EXPECT_EQ(ucxdt::ref::check_packed(runs_, src_origin(), packed.data()), "");
    for (size_t i = static_cast<size_t>(total_); i < packed.size(); ++i)
        ASSERT_EQ(packed[i], std::byte{0x77}) << "pack wrote past the packed size";

    pos = 0;
    t.unpack(std::span<const std::byte>(packed.data(), static_cast<size_t>(total_)), pos,
             dst_origin(), l.count);
    ASSERT_EQ(pos, total_);
    EXPECT_EQ(ucxdt::ref::check_scattered(runs_, l.origin_bytes, dst_.data(), src_.data(),
                                          ssize(dst_)),
              "");
}

TEST_P(LayoutTest, RangesInRandomOrder) {
    const Layout &l = *layout_;
    SCOPED_TRACE(short_desc(*l.type));
    const ucxdt::type t = build(*l.type);
    make_buffers();
    const auto ranges = random_ranges(total_, 0xa11ce + GetParam());
    std::vector<std::byte> packed(static_cast<size_t>(total_));
    for (const auto &[off, len] : ranges)
        t.pack_range(src_origin(), l.count, off,
                     std::span<std::byte>(packed.data() + off, static_cast<size_t>(len)));
    EXPECT_EQ(ucxdt::ref::check_packed(runs_, src_origin(), packed.data()), "");

    for (const auto &[off, len] : ranges)
        t.unpack_range(std::span<const std::byte>(packed.data() + off, static_cast<size_t>(len)),
                       off, dst_origin(), l.count);
    EXPECT_EQ(ucxdt::ref::check_scattered(runs_, l.origin_bytes, dst_.data(), src_.data(),
                                          ssize(dst_)),
              "");
}

std::string layout_test_name(const ::testing::TestParamInfo<size_t> &info) {
    return ucxdt::support::param_name(info.param, checked_layouts()[info.param].name);
}

INSTANTIATE_TEST_SUITE_P(App, LayoutTest, ::testing::Range<size_t>(0, all_layouts().size()),
                         layout_test_name);
INSTANTIATE_TEST_SUITE_P(Spec, LayoutTest,
                         ::testing::Range<size_t>(all_layouts().size(), checked_layouts().size()),
                         layout_test_name);

TEST(AppLayouts, NamesAreUniqueAndFindable) {
    const auto &v = all_layouts();
    for (const auto &l : v) {
        EXPECT_EQ(L::find_layout(v, l.name), &l) << l.name;
        EXPECT_GT(l.count, 0) << l.name;
    }
    EXPECT_EQ(L::find_layout(v, "no such layout"), nullptr);
    // The largest sizes are present next to the defaults.
    EXPECT_NE(L::find_layout(v, "nas_mg_y(514,258,258)"), nullptr);
    EXPECT_NE(L::find_layout(v, "fft2_scatter(N=1536,P=2)"), nullptr);
}

TEST(AppLayouts, PaperLayoutsScaleWithN) {
    const auto v = L::paper_layouts(4000);
    ASSERT_EQ(v.size(), 3u);
    const auto bv = ucxdt::ref::type_bounds(*v[0].type), bt = ucxdt::ref::type_bounds(*v[1].type);
    EXPECT_EQ(bv.size, 4000 * 4000 * 8);
    EXPECT_EQ(bt.size, 4000LL * 4001 / 2 * 8);
    EXPECT_EQ(bv.extent, (3999LL * 4064 + 4000) * 8);
}

// ---- The registry: -D specs and -s sizes ---------------------------------------------------

Layout resolve_ok(const std::string &spec) {
    Layout l;
    std::string err;
    EXPECT_TRUE(L::resolve_layout(spec, &l, &err)) << spec << ": " << err;
    return l;
}

TEST(Registry, SpecsResolve) {
    for (const auto &spec : kSpecs) resolve_ok(spec);
    EXPECT_EQ(checked_layouts().size(), all_layouts().size() + kSpecs.size());
}

// Packed bytes of all `count` elements and the buffer, worked out by hand from the parameters.
TEST(Registry, PackedSizeFollowsTheParameters) {
    struct Case {
        std::string spec;
        int64_t count, packed, buffer;
    };
    const Case cases[] = {
        {"hvector:count=5,blocklength=3,stride=40,type=int32", 1, 5 * 3 * 4, 4 * 40 + 3 * 4},
        {"vector:count=5,blocklength=3,stride=10,type=int32", 1, 5 * 3 * 4, (4 * 10 + 3) * 4},
        {"indexed:blocklengths=2/0/3,displacements=10/0/4,type=int64", 1, 5 * 8, 12 * 8},
        {"indexed_block:blocklength=2,displacements=6/0/3", 1, 3 * 2 * 8, 8 * 8},
        // Fortran order: the last element is (2,4,5) of (4,5,6), at 2 + 4*4 + 5*4*5 = 118.
        {"subarray:sizes=4/5/6,subsizes=2/3/4,starts=1/2/2,order=fortran,type=float", 1,
         2 * 3 * 4 * 4, 119 * 4},
        {"subarray:sizes=4/5/6,subsizes=2/3/4,starts=1/2/2,type=char", 1, 2 * 3 * 4,
         (2 * 30 + 4 * 6 + 5) + 1},
        {"contig:count=3,type=int64", 1, 24, 24},
        {"struct:count=7", 7, 7 * 17, 7 * 24},
        {"tpds14_struct:count=3", 3, 3 * 17, 3 * 24},
        {"transpose:n=5", 1, 5 * 5 * 8, 5 * 5 * 8},
        {"hpdc16_transpose:N=6", 1, 6 * 6 * 8, 6 * 6 * 8},
        {"submatrix:n=10", 1, 10 * 10 * 8, 74 * 10 * 8},
        {"nas_mg_y:100x60x60", 1, 98 * 58 * 8, 100 * 60 * 60 * 8},
        {"nas_mg_x:100x60x60", 1, 58 * 58 * 8, 100 * 60 * 60 * 8},
        {"nas_lu_y:500", 1, 500 * 40, 502 * 502 * 40},
        {"milc_su3_zdown:12x12x12x12", 1, 2 * 12 * (12 * 12 / 2) * 24, 12 * 12 * 12 * 12 * 24},
        {"fft2_scatter:N=512,P=4", 4, 4 * 128 * 128 * 16, 16 * 128 * 512},
        {"specfem3d_mt_send:3x2x6400", 1, 3 * 6400 * 4, 3 * 2 * 6400 * 4},
        {"comb_send:-x-y,32^3,g2", 1, 2 * 2 * 32 * 8, 36 * 36 * 36 * 8},
        {"comb_recv:+x+y+z,20^3", 1, 8, 22 * 22 * 22 * 8},
        {"wrf_y_sa:4x4", 1, 63168, 1498176},
    };
    for (const auto &c : cases) {
        SCOPED_TRACE(c.spec);
        const Layout l = resolve_ok(c.spec);
        ASSERT_TRUE(l.type);
        EXPECT_EQ(l.count, c.count);
        EXPECT_EQ(l.count * l.expect_packed, c.packed);
        EXPECT_EQ(l.count * build(*l.type).size(), c.packed);
        EXPECT_EQ(l.count * ucxdt::ref::type_bounds(*l.type).size, c.packed);
        EXPECT_EQ(l.buffer_bytes, c.buffer);
    }
}

// Sizes that the doc's tables list but that are not pre-built: the formulas give its numbers
// (and LayoutTest/Spec holds the definitions to these numbers with the walker).
TEST(Registry, AnySizeMatchesDocTables) {
    struct Case {
        std::string spec;
        int64_t packed, extent, true_extent, blocks;  // -1: the doc gives none
    };
    const Case cases[] = {
        {"nas_mg_x:130x66x66", 32768, 4389848, 4389848, 4096},
        {"nas_mg_y:130,66,66", 65536, 4325344, 4325344, 64},
        {"nas_mg_z:130x66x66", 65536, 66544, 66544, 64},
        {"nas_lu_x:33", 1320, 1320, 1320, 1},
        {"nas_lu_y:33", 1320, 44840, -1, 33},
        {"milc_su3_zdown:8x16x16x16", 49152, 763392, -1, 32},
        {"specfem3d_mt_send:3x2x6400", 76800, -1, 153588, 6400},
        // Per-peer blocks times P = 2.
        {"fft2_gather:N=512", 1048576, 4096, 2093056, 2 * 256},
        {"fft2_scatter:N=512,P=2", 1048576, 4096, 2093056, 2 * 65536},
        {"wrf_y_vec:3x3", 75012, 2032452, -1, 987},
        {"wrf_x_sa:4x4", 102648, 1498176, -1, 8554},
    };
    for (const auto &c : cases) {
        SCOPED_TRACE(c.spec);
        const Layout l = resolve_ok(c.spec);
        EXPECT_EQ(l.expect_packed, c.packed);
        if (c.extent >= 0) {
            EXPECT_EQ(l.expect_extent, c.extent);
        }
        if (c.true_extent >= 0) {
            EXPECT_EQ(l.expect_true_extent, c.true_extent);
        }
        EXPECT_EQ(l.expect_blocks, c.blocks);
    }
}

// The builders at the pre-built sizes give the pre-built types, and their formulas give the
// numbers that the pre-built entries take from the doc's tables.
TEST(Registry, FormulasReproducePrebuiltNumbers) {
    std::vector<Layout> fresh;
    const auto add = [&](std::vector<Layout> v) { fresh.insert(fresh.end(), v.begin(), v.end()); };
    add(L::nas_mg_layouts(34, 18, 18));
    add(L::nas_mg_layouts(514, 258, 258));
    add(L::nas_lu_layouts(12));
    add(L::nas_lu_layouts(1020));
    add({L::milc_layout(8, 8, 8, 8), L::milc_layout(16, 16, 16, 16)});
    add(L::specfem_layouts(3, 2, 7600));
    add(L::fft2_layouts(256, 2));
    add(L::fft2_layouts(1536, 2));
    ASSERT_EQ(fresh.size(), 18u);
    for (const Layout &f : fresh) {
        SCOPED_TRACE(f.name);
        const Layout *pre = L::find_layout(all_layouts(), f.name);
        ASSERT_NE(pre, nullptr);
        EXPECT_EQ(L::to_string(*f.type), L::to_string(*pre->type));
        EXPECT_EQ(f.count, pre->count);
        EXPECT_EQ(f.buffer_bytes, pre->buffer_bytes);
        EXPECT_EQ(f.origin_bytes, pre->origin_bytes);
        const std::pair<int64_t, int64_t> numbers[] = {
            {f.expect_packed, pre->expect_packed},
            {f.expect_extent, pre->expect_extent},
            {f.expect_true_extent, pre->expect_true_extent},
            {f.expect_blocks, pre->expect_blocks}};
        for (const auto &[formula, table] : numbers) {
            if (table >= 0) {
                EXPECT_EQ(formula, table);
            }
        }
    }
}

// Full names, bare bases and pre-built sizes resolve to the pre-built entries, as before.
TEST(Registry, PrebuiltLayoutsResolveByName) {
    for (const Layout &l : all_layouts()) {
        const Layout r = resolve_ok(l.name);
        EXPECT_EQ(r.name, l.name);
        EXPECT_EQ(r.expect_packed, l.expect_packed);
    }
    EXPECT_EQ(resolve_ok("nas_mg_y").name, "nas_mg_y(34,18,18)");
    EXPECT_EQ(resolve_ok("comb_recv").name, "comb_recv(+x,16^3,g1)");
    EXPECT_EQ(resolve_ok("nas_mg_y:514x258x258").expect_extent, 270532576);
    EXPECT_EQ(resolve_ok("fft2_scatter:N=1536,P=2").expect_blocks, 2 * 589824);
}

TEST(Registry, BadSpecsFailWithTheReason) {
    const std::pair<std::string, std::string> cases[] = {
        {"hvector:count=0,blocklength=1,stride=8", "count >= 1"},
        {"hvector:count=2,blocklength=1", "missing stride="},
        {"vector:count=2,blocklen=1,stride=3", "unknown key \"blocklen\""},
        {"indexed:blocklengths=1/2,displacements=0", "as many blocklengths as displacements"},
        {"indexed:blocklengths=1/2,displacements=0/-4", "displacements must be >= 0"},
        {"indexed:blocklengths=1/-2,displacements=0/4", "blocklengths must be >= 0"},
        {"indexed:blocklengths=0/0,displacements=0/4", "a blocklength >= 1"},
        {"indexed:blocklengths=1/x,displacements=0/1", "bad number in blocklengths"},
        {"indexed_block:blocklength=0,displacements=0", "blocklength >= 1"},
        {"indexed_block:blocklength=2,displacements=", "bad number in displacements"},
        {"subarray:sizes=4/4,subsizes=2/3,starts=0/2", "starts + subsizes = 5 exceeds sizes = 4"},
        {"subarray:sizes=4,subsizes=2/2,starts=0/0", "as many subsizes and starts as sizes"},
        {"subarray:sizes=4/4,subsizes=0/2,starts=0/0", "subsizes must be >= 1"},
        {"subarray:sizes=4/4,subsizes=2/2,starts=0/-1", "starts must be >= 0"},
        {"subarray:sizes=4/4,subsizes=2/2,starts=0/0,order=z", "order must be c or fortran"},
        {"subarray:sizes=4/4,subsizes=2/2,starts=0/0,type=quad", "unknown type"},
        {"struct:count=0", "count >= 1"},
        {"transpose:n=0", "n must be in"},
        {"transpose:N=4", "unknown key \"N\""},
        {"nas_mg_y:2x5x5", "must be >= 3"},
        {"nas_mg_y:10x10", "needs 3 numbers"},
        {"nas_mg_y:99999999x99999x9999", "over 1 TiB"},
        {"nas_lu_x:0", "must be >= 1"},
        {"milc_su3_zdown:3x3x4x4", "D2 * D3 even"},
        {"fft2_scatter:N=10,P=4", "multiple of P"},
        {"fft2_scatter:N=4,P=4", "N / P >= 2"},
        {"fft2_scatter:P=4", "missing N="},
        {"wrf_y_sa:7x7", "has 2x2 3x3 4x4 5x5 8x8"},
        {"comb_send:-q,8^3,g1", "comb needs <dir>"},
        {"comb_send:-x-x,8^3", "each axis once"},
        {"comb_send:-x,8", "comb needs <dir>"},
        {"comb_send:-x,1^3,g2", "n >= g >= 1"},
        {"nas_mg_w:4x4x4", "unknown layout"},
        {"nosuch", "unknown layout"},
    };
    for (const auto &[spec, reason] : cases) {
        SCOPED_TRACE(spec);
        Layout l;
        std::string err;
        EXPECT_FALSE(L::resolve_layout(spec, &l, &err));
        EXPECT_NE(err.find(reason), std::string::npos) << "error: " << err;
    }
}

TEST(Registry, ApplySizeSetsTheMainSize) {
    struct Case {
        std::string spec;
        int64_t size;
        std::string sized;
        int64_t packed;  // of all `count` elements
    };
    const Case cases[] = {
        {"submatrix:n=100", 64, "submatrix:n=64", 64 * 64 * 8},
        {"hpdc16_T(N=1000,ld=1064)", 64, "triangular:n=64", 64 * 65 / 2 * 8},
        {"stair", 64, "stair:n=64", 64 * 64 * 8},  // one stair step of nb = 64
        {"hpdc16_transpose", 9, "transpose:n=9", 9 * 9 * 8},
        {"contig:bytes=10", 64, "contig:bytes=64", 64},
        {"contig:count=3,type=int32", 64, "contig:count=64,type=int32", 64 * 4},
        {"contig", 64, "contig:bytes=64", 64},
        {"vector:count=2,blocklength=1,stride=3", 64, "vector:count=64,blocklength=1,stride=3",
         64 * 8},
        {"hvector:blocklength=1,stride=24,count=2,type=int64", 5,
         "hvector:blocklength=1,stride=24,count=5,type=int64", 5 * 8},
        {"tpds14_struct(count=1024)", 10, "struct:count=10", 10 * 17},
        {"nas_mg_y", 20, "nas_mg_y:20x20x20", 18 * 18 * 8},
        {"nas_mg_x(514,258,258)", 20, "nas_mg_x:20x20x20", 18 * 18 * 8},
        {"nas_lu_x:12", 64, "nas_lu_x:64", 64 * 40},
        {"milc_su3_zdown", 10, "milc_su3_zdown:10x10x10x10", 2 * 10 * 50 * 24},
        {"specfem3d_mt_recv", 64, "specfem3d_mt_recv:3x2x64", 3 * 64 * 4},
        {"specfem3d_mt_send:4x1x10", 64, "specfem3d_mt_send:4x1x64", 4 * 64 * 4},
        {"fft2_scatter(N=256,P=2)", 64, "fft2_scatter:N=64,P=2", 2 * 32 * 32 * 16},
        {"fft2_gather", 64, "fft2_gather:N=64,P=2", 2 * 32 * 32 * 16},
        {"comb_send(-x-y,16^3,g1)", 32, "comb_send:-x-y,32^3,g1", 32 * 8},
        {"comb_recv", 8, "comb_recv:+x,8^3,g1", 8 * 8 * 8},
    };
    for (const auto &c : cases) {
        SCOPED_TRACE(c.spec + " -s " + std::to_string(c.size));
        std::string spec = c.spec, err;
        ASSERT_TRUE(L::apply_size(&spec, c.size, &err)) << err;
        EXPECT_EQ(spec, c.sized);
        const Layout l = resolve_ok(spec);
        EXPECT_EQ(l.count * ucxdt::ref::type_bounds(*l.type).size, c.packed);
    }
}

TEST(Registry, ApplySizeFailsWithTheReason) {
    const std::tuple<std::string, int64_t, std::string> cases[] = {
        {"wrf_y_sa:4x4", 8, "takes no size"},
        {"indexed:blocklengths=1,displacements=0", 8, "takes no size"},
        {"indexed_block:blocklength=1,displacements=0", 8, "takes no size"},
        {"subarray:sizes=4,subsizes=2,starts=0", 8, "takes no size"},
        {"tpds14_subarray4d(32^4_of_64^4)", 8, "takes no size"},
        {"nosuch", 8, "takes no size"},
        {"milc_su3_zdown", 7, "D2 * D3 even"},
        {"nas_mg_y", 2, ">= 3"},
        {"fft2_scatter:N=512,P=4", 6, "multiple of P"},
        {"comb_send:-x,16^3,g4", 2, "n >= g"},
        {"vector:count=2,blocklength=1", 8, "missing stride="},
        {"submatrix", 0, "size must be >= 1"},
    };
    for (const auto &[spec, size, reason] : cases) {
        SCOPED_TRACE(spec + " -s " + std::to_string(size));
        std::string sized = spec, err;
        EXPECT_FALSE(L::apply_size(&sized, size, &err));
        EXPECT_EQ(sized, spec);
        EXPECT_NE(err.find(reason), std::string::npos) << "error: " << err;
    }
}

TEST(Registry, ListingShowsEveryForm) {
    const std::string list = L::list_layouts();
    for (const char *form :
         {"hvector:count=", "indexed:blocklengths=", "indexed_block:blocklength=", "subarray:sizes=",
          "struct:count=", "transpose:n=", "nas_mg_{x,y,z}:D1xD2xD3", "milc_su3_zdown:D2xD3xD4xD5",
          "fft2_{gather,scatter}:N=N[,P=P]", "comb_{send,recv}:<dir>", "y: 2x2 3x3 4x4 5x5 8x8",
          "-s <size> sets"})
        EXPECT_NE(list.find(form), std::string::npos) << form;
}

// ---- Known answers for the walker, worked out by hand from MPI-4.1 5.1 -------------------

Blocks blocks_of(const L::TypeDescPtr &d, int64_t count = 1) {
    return ucxdt::ref::typemap_blocks(*d, count);
}

TEST(TypemapWalk, VectorOrderAndMerging) {
    auto d = L::vector(2, 2, 3, L::named(UCXDT_INT32));
    EXPECT_EQ(blocks_of(d), (Blocks{{0, 4}, {4, 4}, {12, 4}, {16, 4}}));
    // Element 1 starts at the extent, 20, right where element 0's last block ends.
    EXPECT_EQ(ucxdt::ref::typemap_runs(*d, 2), (Blocks{{0, 8}, {12, 16}, {32, 8}}));
    const auto b = ucxdt::ref::type_bounds(*d);
    EXPECT_EQ(b.size, 16);
    EXPECT_EQ(b.extent, 20);
    EXPECT_EQ(b.true_extent, 20);
}

TEST(TypemapWalk, NegativeStrideKeepsPackOrder) {
    auto d = L::vector(3, 1, -2, L::named(UCXDT_DOUBLE));
    EXPECT_EQ(blocks_of(d), (Blocks{{0, 8}, {-16, 8}, {-32, 8}}));
    const auto b = ucxdt::ref::type_bounds(*d);
    EXPECT_EQ(b.lb, -32);
    EXPECT_EQ(b.extent, 40);
    EXPECT_EQ(b.true_lb, -32);
}

TEST(TypemapWalk, StructExtentIsPaddedToAlignment) {
    auto s = L::structure({1, 1, 1, 1}, {0, 8, 12, 16},
                          {L::named(UCXDT_DOUBLE), L::named(UCXDT_INT32), L::named(UCXDT_INT32),
                           L::named(UCXDT_CHAR)});
    EXPECT_EQ(ucxdt::ref::type_bounds(*s).extent, 24);  // MPI-4.1 5.1.6 epsilon: sizeof() in C
    EXPECT_EQ(ucxdt::ref::type_bounds(*s).true_extent, 17);
    EXPECT_EQ(ucxdt::ref::typemap_runs(*s, 2), (Blocks{{0, 17}, {24, 17}}));
    EXPECT_EQ(ucxdt::ref::typemap_runs(*L::resized(s, 0, 17), 2), (Blocks{{0, 34}}));
    // A parent takes the child's padded bounds and pads again to its own alignment.
    auto ic = L::structure({1, 1}, {0, 4}, {L::named(UCXDT_INT32), L::named(UCXDT_CHAR)});
    EXPECT_EQ(ucxdt::ref::type_bounds(*ic).extent, 8);
    EXPECT_EQ(ucxdt::ref::type_bounds(*L::hvector(2, 1, 5, ic)).extent, 16);
    EXPECT_EQ(ucxdt::ref::type_bounds(*L::hindexed({1, 1}, {0, 5}, L::named(UCXDT_INT32))).extent,
              12);
    // The epsilon each constructor adds itself: none where the children's extents add up.
    EXPECT_EQ(ucxdt::ref::epsilon(*s), 7);
    EXPECT_EQ(ucxdt::ref::epsilon(*L::contiguous(2, s)), 0);
    EXPECT_EQ(ucxdt::ref::epsilon(*L::hindexed({1, 1}, {0, 5}, L::named(UCXDT_INT32))), 3);
    EXPECT_EQ(ucxdt::ref::epsilon(*L::resized(s, 0, 17)), 0);
}

TEST(TypemapWalk, ResizedMarkersAreSticky) {
    auto r = L::resized(L::named(UCXDT_INT32), -4, 16);
    const auto c = ucxdt::ref::type_bounds(*L::contiguous(2, r));
    EXPECT_EQ(c.lb, -4);
    EXPECT_EQ(c.extent, 32);
    EXPECT_EQ(c.true_lb, 0);
    EXPECT_EQ(c.true_extent, 20);
    // ub comes from the only ub marker, not from the unmarked int at 100.
    auto s = L::structure({1, 1}, {0, 100}, {L::resized(L::named(UCXDT_INT32), 0, 8),
                                             L::named(UCXDT_INT32)});
    const auto b = ucxdt::ref::type_bounds(*s);
    EXPECT_EQ(b.lb, 0);
    EXPECT_EQ(b.extent, 8);
    EXPECT_EQ(b.true_extent, 104);
}

TEST(TypemapWalk, SubarrayOrders) {
    auto i8 = L::named(UCXDT_INT8);
    auto c = L::subarray({3, 4}, {2, 2}, {1, 1}, UCXDT_ORDER_C, i8);
    auto f = L::subarray({3, 4}, {2, 2}, {1, 1}, UCXDT_ORDER_FORTRAN, i8);
    EXPECT_EQ(ucxdt::ref::typemap_runs(*c, 1), (Blocks{{5, 2}, {9, 2}}));
    EXPECT_EQ(ucxdt::ref::typemap_runs(*f, 1), (Blocks{{4, 2}, {7, 2}}));
    EXPECT_EQ(ucxdt::ref::type_bounds(*f).extent, 12);
    EXPECT_EQ(ucxdt::ref::type_bounds(*f).lb, 0);
}

TEST(TypemapWalk, EmptyBlocksAndTypes) {
    auto d = L::indexed({0, 2}, {10, 0}, L::named(UCXDT_INT16));
    EXPECT_EQ(blocks_of(d), (Blocks{{0, 2}, {2, 2}}));
    EXPECT_EQ(ucxdt::ref::type_bounds(*d).extent, 4);
    const auto e = ucxdt::ref::type_bounds(*L::contiguous(0, L::named(UCXDT_DOUBLE)));
    EXPECT_EQ(e.size, 0);
    EXPECT_EQ(e.extent, 0);
    EXPECT_TRUE(blocks_of(L::contiguous(0, L::named(UCXDT_DOUBLE)), 3).empty());
}

TEST(TypemapWalk, ExactNearTheInt64Limits) {
    constexpr int64_t k62 = int64_t{1} << 62, k61 = int64_t{1} << 61;
    // A byte 2^62 below its type's origin, that type 2^61 wide: at displacement 4 extents its
    // origin lies at 2^63, beyond int64, but its byte and bounds do not.
    auto far = L::resized(L::hindexed({1}, {-k62}, L::named(UCXDT_CHAR)), -k62, k61);
    const auto b = ucxdt::ref::type_bounds(*L::indexed({1}, {4}, far));
    EXPECT_TRUE(b.fits);
    EXPECT_EQ(b.lb, k62);
    EXPECT_EQ(b.extent, k61);
    EXPECT_EQ(b.true_lb, k62);
    EXPECT_EQ(b.true_extent, 1);
    EXPECT_EQ(blocks_of(L::indexed({1}, {4}, far)), (Blocks{{k62, 1}}));
    EXPECT_TRUE(ucxdt::ref::representable(*L::indexed({1}, {4}, far)));
    // Bytes INT64_MIN and INT64_MAX - 1 apart by more than INT64_MAX: the extent does not fit.
    auto wide = L::hindexed({1, 1}, {INT64_MIN, INT64_MAX - 1}, L::named(UCXDT_CHAR));
    EXPECT_FALSE(ucxdt::ref::type_bounds(*wide).fits);
    EXPECT_FALSE(ucxdt::ref::representable(*L::contiguous(1, wide)));
    // ub = lb + extent past INT64_MAX.
    EXPECT_FALSE(ucxdt::ref::type_bounds(*L::resized(L::named(UCXDT_CHAR), INT64_MAX, 1)).fits);
}

TEST(TypemapWalk, ChecksCatchCorruption) {
    const Blocks runs{{2, 3}, {8, 2}};
    std::vector<std::byte> src(16), buf(16), packed(5);
    ucxdt::ref::fill_pattern(src.data(), 16, 7);
    ucxdt::ref::fill_complement(buf.data(), src.data(), 16);
    EXPECT_NE(ucxdt::ref::check_scattered(runs, 0, buf.data(), src.data(), 16), "");  // unwritten
    for (const auto &[d, n] : runs) std::memcpy(buf.data() + d, src.data() + d, n);
    EXPECT_EQ(ucxdt::ref::check_scattered(runs, 0, buf.data(), src.data(), 16), "");
    buf[12] = src[12];  // a gap byte overwritten
    EXPECT_NE(ucxdt::ref::check_scattered(runs, 0, buf.data(), src.data(), 16), "");
    EXPECT_NE(ucxdt::ref::check_scattered({{14, 4}}, 0, buf.data(), src.data(), 16), "");

    std::memcpy(packed.data(), src.data() + 2, 3);
    std::memcpy(packed.data() + 3, src.data() + 8, 2);
    EXPECT_EQ(ucxdt::ref::check_packed(runs, src.data(), packed.data()), "");
    packed[4] = ~packed[4];
    EXPECT_NE(ucxdt::ref::check_packed(runs, src.data(), packed.data()), "");
}

// ---- The engine against the walker on types that stress the bounds rules -----------------

// Types whose bounds follow the less common MPI-4.1 rules: negative strides and extents,
// sticky resized bounds, unpadded struct extents, zero-length blocks, subarray bounds.
std::vector<L::TypeDescPtr> corner_types() {
    auto i16 = L::named(UCXDT_INT16), i32 = L::named(UCXDT_INT32), d = L::named(UCXDT_DOUBLE);
    // Resized to its data so that copies touch: runs merge across elements.
    auto dii_c = L::resized(
        L::structure({1, 1, 1, 1}, {0, 8, 12, 16}, {d, i32, i32, L::named(UCXDT_CHAR)}), 0, 17);
    return {
        L::vector(3, 1, -2, d),
        L::contiguous(2, L::resized(i32, -4, 16)),
        L::structure({1, 1}, {0, 100}, {L::resized(i32, 0, 8), i32}),  // ub from the marker
        L::subarray({3, 4}, {2, 2}, {1, 1}, UCXDT_ORDER_FORTRAN, L::named(UCXDT_INT8)),
        L::subarray({4, 3}, {2, 3}, {1, 0}, UCXDT_ORDER_C, L::resized(i32, -2, 8)),
        L::indexed({0, 2}, {10, 0}, i16),
        dii_c,  // extent 17: element 1's double starts at byte 17
        L::hvector(3, 2, -24, L::resized(i16, 2, 6)),
        L::resized(L::contiguous(3, L::resized(d, 0, -8)), -16, 32),  // copies run downwards
        L::dup(L::vector(2, 3, 4, i16)),  // element 1 starts where element 0's last block ends
        L::indexed_block(2, {3, 0, 7}, i32),
        L::hindexed_block(1, {40, 0, 20}, L::contiguous(2, i16)),
        L::hindexed({2, 1}, {-8, 30}, dii_c),
    };
}

constexpr int64_t kCornerCount = 2;

TEST(EngineVsWalker, BoundsAndDataOfCornerTypes) {
    for (const auto &desc : corner_types()) {
        SCOPED_TRACE(L::to_string(*desc));
        const auto ref = ucxdt::ref::type_bounds(*desc);
        const ucxdt::type t = build(*desc);
        EXPECT_EQ(t.size(), ref.size);
        EXPECT_EQ(t.lb(), ref.lb);
        EXPECT_EQ(t.extent(), ref.extent);
        EXPECT_EQ(t.true_lb(), ref.true_lb);
        EXPECT_EQ(t.true_extent(), ref.true_extent);
        const Blocks runs = ucxdt::ref::typemap_runs(*desc, kCornerCount);
        // A buffer that covers every run, whatever the signs of the displacements.
        int64_t lo = 0, hi = 0;
        for (const auto &[b, n] : runs) lo = std::min(lo, b), hi = std::max(hi, b + n);
        std::vector<std::byte> src(static_cast<size_t>(hi - lo)), dst(src.size());
        ucxdt::ref::fill_pattern(src.data(), hi - lo, 99);
        ucxdt::ref::fill_complement(dst.data(), src.data(), hi - lo);
        std::vector<std::byte> packed(static_cast<size_t>(kCornerCount * ref.size));
        int64_t pos = 0;
        t.pack(src.data() - lo, kCornerCount, packed, pos);
        EXPECT_EQ(ucxdt::ref::check_packed(runs, src.data() - lo, packed.data()), "");
        pos = 0;
        t.unpack(packed, pos, dst.data() - lo, kCornerCount);
        EXPECT_EQ(ucxdt::ref::check_scattered(runs, -lo, dst.data(), src.data(), hi - lo), "");
    }
}

// num_blocks (ucxdt.h): runs merge within one element, so one element has exactly the maximal
// runs; across elements, runs that only touch are counted apart, so count elements have at
// least the maximal runs and at most count times one element's.
TEST(EngineVsWalker, BlockCountsOfCornerTypes) {
    for (const auto &desc : corner_types()) {
        SCOPED_TRACE(L::to_string(*desc));
        const ucxdt::type t = build(*desc);
        const auto one = static_cast<int64_t>(ucxdt::ref::typemap_runs(*desc, 1).size());
        const auto all = static_cast<int64_t>(ucxdt::ref::typemap_runs(*desc, kCornerCount).size());
        EXPECT_EQ(t.plan(1).num_blocks, one);
        EXPECT_GE(t.plan(kCornerCount).num_blocks, all);
        EXPECT_LE(t.plan(kCornerCount).num_blocks, kCornerCount * one);
    }
}

// ---- C++ wrappers ------------------------------------------------------------------------

TEST(CxxWrapper, QueriesAndMove) {
    auto t = ucxdt::type::vector(4, 2, 8, ucxdt::type::primitive(UCXDT_DOUBLE)).commit();
    EXPECT_EQ(t.size(), 64);
    EXPECT_EQ(t.extent(), 208);
    EXPECT_EQ(t.true_extent(), 208);
    EXPECT_EQ(t.plan(1).num_blocks, 4);
    ucxdt::type u = std::move(t);
    EXPECT_FALSE(t);
    EXPECT_TRUE(u);
    EXPECT_EQ(u.combiner(), UCXDT_COMBINER_VECTOR);
}

TEST(CxxWrapper, FailuresThrowWithStatus) {
    const auto d = ucxdt::type::primitive(UCXDT_DOUBLE);
    try {
        ucxdt::type::vector(-1, 1, 1, d);
        FAIL() << "negative count accepted";
    } catch (const ucxdt::error &e) {
        EXPECT_EQ(e.status(), UCXDT_ERR_INVALID_PARAM);
        EXPECT_NE(std::string(e.what()).find("ucxdt_type_vector"), std::string::npos);
    }
    const std::vector<int64_t> two{1, 1}, one{0};
    try {
        ucxdt::type::indexed(two, one, d);
        FAIL() << "mismatched arrays accepted";
    } catch (const ucxdt::error &e) {
        EXPECT_EQ(e.status(), UCXDT_ERR_INVALID_PARAM);
    }
    const auto v = ucxdt::type::contiguous(4, d).commit();
    std::vector<double> in(4, 1.0);
    std::vector<std::byte> small(16);
    int64_t pos = 0;
    try {
        v.pack(in.data(), 1, small, pos);
        FAIL() << "pack into 16 bytes of 32 accepted";
    } catch (const ucxdt::error &e) {
        EXPECT_EQ(e.status(), UCXDT_ERR_TRUNCATED);
        EXPECT_EQ(pos, 0);
    }
}

TEST(CxxWrapper, PrimitivesOutliveWrappers) {
    { auto p = ucxdt::type::primitive(UCXDT_INT32); }
    const auto q = ucxdt::type::primitive(UCXDT_INT32);
    EXPECT_EQ(q.size(), 4);
    std::vector<ucxdt::type> kids;
    kids.push_back(ucxdt::type::primitive(UCXDT_DOUBLE));
    kids.push_back(ucxdt::type::primitive(UCXDT_CHAR));
    const std::vector<int64_t> bl{1, 1}, disp{0, 8};
    auto s = ucxdt::type::structure(bl, disp, kids).commit();
    EXPECT_EQ(s.size(), 9);
    EXPECT_EQ(s.extent(), 16);  // padded to the double's alignment
    auto r = ucxdt::type::resized(s, 0, 16).dup().commit();
    EXPECT_EQ(r.extent(), 16);
}

}  // namespace
