#include "app_layouts.hpp"

#include <array>
#include <string>

namespace ucxdt::layouts {

namespace {

constexpr int64_t kDouble = 8, kFloat = 4;

const char *const kDoc = "docs/application-layouts.md";

TypeDescPtr D() { return named(UCXDT_DOUBLE); }
TypeDescPtr F() { return named(UCXDT_FLOAT); }

std::string dims(std::initializer_list<int64_t> v) {
    std::string s = "(";
    for (int64_t x : v) {
        if (s.size() > 1) s += ',';
        s += std::to_string(x);
    }
    return s + ")";
}

// ---- 2.1 NAS_MG: faces of double a[DIM3][DIM2][DIM1], send side ------------------------------

struct MgRow { int64_t d1, d2, d3, x_packed, x_extent, x_blocks, y_packed, y_extent, y_blocks,
               z_packed, z_extent, z_blocks; };

void add_nas_mg(std::vector<Layout> &out, const MgRow &r) {
    auto idx = [&](int64_t x, int64_t y, int64_t z) {
        return (x + r.d1 * (y + r.d2 * z)) * kDouble;
    };
    const int64_t buf = r.d1 * r.d2 * r.d3 * kDouble;
    const std::string sz = dims({r.d1, r.d2, r.d3});
    const std::string src = std::string(kDoc) + " 2.1, DDTBench timing_nas.c";
    auto x = hvector(r.d3 - 2, 1, r.d1 * r.d2 * kDouble, vector(r.d2 - 2, 1, r.d1, D()));
    auto y = vector(r.d3 - 2, r.d1 - 2, r.d1 * r.d2, D());
    auto z = vector(r.d2 - 2, r.d1 - 2, r.d1, D());
    // The doc states lb = 0 and extent = true extent for every NAS_MG face.
    out.push_back({"nas_mg_x" + sz, x, 1, buf, idx(r.d1 - 2, 1, 1), r.x_packed, r.x_extent,
                   r.x_extent, r.x_blocks, src});
    out.push_back({"nas_mg_y" + sz, y, 1, buf, idx(1, r.d2 - 2, 1), r.y_packed, r.y_extent,
                   r.y_extent, r.y_blocks, src});
    out.push_back({"nas_mg_z" + sz, z, 1, buf, idx(1, 1, 1), r.z_packed, r.z_extent, r.z_extent,
                   r.z_blocks, src});
}

// ---- 2.2 NAS_LU: double u[N+2][N+2][5], DIM2 = DIM3 = N, send side ---------------------------

void add_nas_lu(std::vector<Layout> &out, int64_t n, int64_t x_packed, int64_t y_packed,
                int64_t y_extent, int64_t y_blocks) {
    const int64_t d2 = n, d3 = n, buf = (d3 + 2) * (d2 + 2) * 5 * kDouble;
    const std::string src = std::string(kDoc) + " 2.2, DDTBench timing_nas.c";
    auto cell = contiguous(5, D());
    out.push_back({"nas_lu_x(" + std::to_string(n) + ")", contiguous(5 * d2, D()), 1, buf,
                   5 * (1 + (d2 + 2) * d3) * kDouble, x_packed, x_packed, x_packed, 1, src});
    out.push_back({"nas_lu_y(" + std::to_string(n) + ")", vector(d3, 1, d2 + 2, cell), 1, buf,
                   5 * (d2 + (d2 + 2)) * kDouble, y_packed, y_extent, -1, y_blocks, src});
}

// ---- 2.3 MILC su3_zdown: float a[D5][D4][D3][D2][6] -----------------------------------------

Layout milc(int64_t d2, int64_t d3, int64_t d4, int64_t d5, int64_t packed, int64_t extent,
            int64_t blocks) {
    const int64_t site = 6 * kFloat;
    auto su3 = contiguous(6, F());
    auto tmp = vector(d5, d2 * d3 / 2, d2 * d3 * d4 / 2, su3);
    auto zdn = hvector(2, 1, site * d2 * d3 * d4 * d5 / 2, tmp);
    return {"milc_su3_zdown" + dims({d2, d3, d4, d5}), zdn, 1, d2 * d3 * d4 * d5 * site, 0,
            packed, extent, -1, blocks, std::string(kDoc) + " 2.3, DDTBench timing_milc.c"};
}

// ---- 2.4 WRF: 4 2D, 3 3D and 2 4D float arrays back to back in one arena -------------------

struct WrfConfig {
    char axis;
    const char *name;  // the process grid
    int64_t ims, ime, jms, jme, is, ie, js, je;
    int64_t arena, packed, true_extent, blocks;  // true_extent -1 where the doc gives none
};

// Every config of the doc's table, in its order.
const WrfConfig kWrf[] = {
    {'y', "2x2", -4, 27, 34, 85, 1, 23, 41, 43, 3055104, 90804, 2704732, 987},
    {'y', "3x3", 8, 34, 21, 61, 12, 30, 28, 30, 2032452, 75012, -1, 987},
    {'y', "4x4", 4, 27, 14, 47, 8, 23, 21, 23, 1498176, 63168, -1, 987},
    {'y', "5x5", 10, 31, 10, 39, 14, 27, 17, 19, 1211760, 55272, -1, 987},
    {'y', "8x8", 4, 22, 4, 27, 8, 18, 11, 13, 837216, 43428, -1, 987},
    {'x', "2x2", -4, 27, 34, 85, 18, 20, 38, 81, 3055104, 173712, -1, 14476},
    {'x', "4x4", 4, 27, 14, 47, 18, 20, 18, 43, 1498176, 102648, -1, 8554},
    {'x', "8x8", 4, 22, 4, 27, 13, 15, 8, 23, 837216, 63168, 817088, 5264},
};

void add_wrf(std::vector<Layout> &out, const WrfConfig &c) {
    const int64_t dim1 = c.ime - c.ims + 1, dim2 = 65, dim3 = c.jme - c.jms + 1;
    const int64_t sub1 = c.ie - c.is + 1, sub2 = 65, sub3 = c.je - c.js + 1;
    const int64_t i0 = c.is - c.ims, k0 = 0, j0 = c.js - c.jms, p0 = 1, limit = 2;
    const int64_t a2 = dim3 * dim1 * kFloat, a3 = dim3 * dim2 * dim1 * kFloat, a4 = limit * a3;
    const int64_t arena = 4 * a2 + 3 * a3 + 2 * a4;
    // Array bases relative to the arena: these stand in for the absolute addresses that WRF
    // passes with MPI_BOTTOM, so pack gets the arena base.
    std::array<int64_t, 9> base{};
    for (int i = 0; i < 4; ++i) base[i] = i * a2;
    for (int i = 0; i < 3; ++i) base[4 + i] = 4 * a2 + i * a3;
    for (int i = 0; i < 2; ++i) base[7 + i] = 4 * a2 + 3 * a3 + i * a4;

    auto t2 = vector(sub3, sub1, dim1, F());
    auto t3 = hvector(sub3, 1, dim1 * dim2 * kFloat, vector(sub2, sub1, dim1, F()));
    auto t4 = hvector(limit - p0, 1, dim1 * dim2 * dim3 * kFloat, t3);
    const int64_t off2 = (i0 + j0 * dim1) * kFloat;
    const int64_t off3 = (i0 + dim1 * (k0 + dim2 * j0)) * kFloat;
    const int64_t off4 = (i0 + dim1 * (k0 + dim2 * (j0 + dim3 * p0))) * kFloat;
    std::vector<int64_t> vdisp(9);
    for (int i = 0; i < 9; ++i) vdisp[i] = base[i] + (i < 4 ? off2 : i < 7 ? off3 : off4);
    auto vec = structure(std::vector<int64_t>(9, 1), vdisp,
                         {t2, t2, t2, t2, t3, t3, t3, t4, t4});

    auto s2 = subarray({dim3, dim1}, {sub3, sub1}, {j0, i0}, UCXDT_ORDER_C, F());
    auto s3 = subarray({dim3, dim2, dim1}, {sub3, sub2, sub1}, {j0, k0, i0}, UCXDT_ORDER_C, F());
    auto s4 = subarray({limit, dim3, dim2, dim1}, {limit - p0, sub3, sub2, sub1}, {p0, j0, k0, i0},
                       UCXDT_ORDER_C, F());
    auto sa = structure(std::vector<int64_t>(9, 1), std::vector<int64_t>(base.begin(), base.end()),
                        {s2, s2, s2, s2, s3, s3, s3, s4, s4});

    const std::string src = std::string(kDoc) + " 2.4, DDTBench timing_wrf.c";
    const std::string sfx = std::string("(") + c.name + ")";
    // Both are resized to the arena, as in the OMPI corpus, so count > 1 would step arenas.
    out.push_back({std::string("wrf_") + c.axis + "_vec" + sfx, resized(vec, 0, arena), 1, arena, 0,
                   c.packed, c.arena, c.true_extent, c.blocks, src});
    out.push_back({std::string("wrf_") + c.axis + "_sa" + sfx, resized(sa, 0, arena), 1, arena, 0,
                   c.packed, c.arena, c.true_extent, c.blocks, src});
}

// ---- 2.5 SPECFEM3D mt: float send[DIM3][DIM2][DIM1], recv[DIM3*DIM1] ----------------------

void add_specfem(std::vector<Layout> &out, int64_t d1, int64_t d2, int64_t d3, int64_t packed,
                 int64_t true_extent, int64_t blocks) {
    const std::string sz = dims({d1, d2, d3});
    const std::string src = std::string(kDoc) + " 2.5, DDTBench timing_specfem3d.c";
    out.push_back({"specfem3d_mt_send" + sz, vector(d3, 1, d2, contiguous(d1, F())), 1,
                   d3 * d2 * d1 * kFloat, 0, packed, -1, true_extent, blocks, src});
    // The receive side is one contiguous run with the same signature.
    out.push_back({"specfem3d_mt_recv" + sz, contiguous(d3 * d1, F()), 1, d3 * d1 * kFloat, 0,
                   packed, -1, -1, 1, src});
}

// ---- 2.6 FFT2: double _Complex m[n][N], n = N/P; count P as in the MPI_Alltoall -------------

void add_fft2(std::vector<Layout> &out, int64_t big_n, int64_t p, int64_t packed, int64_t extent,
              int64_t true_extent, int64_t gather_blocks, int64_t scatter_blocks) {
    const int64_t n = big_n / p, cplx_bytes = 16, buf = cplx_bytes * n * big_n;
    auto cplx = contiguous(2, D());
    auto gather = resized(vector(n, n, big_n, cplx), 0, n * cplx_bytes);
    auto scatter = contiguous(n, resized(vector(n, 1, big_n, cplx), 0, cplx_bytes));
    const std::string sz = "(N=" + std::to_string(big_n) + ",P=" + std::to_string(p) + ")";
    const std::string src = std::string(kDoc) + " 2.6, DDTBench timing_fft2d.c";
    // The doc's block counts are per peer; neighbouring peers' tiles never touch in memory,
    // so count P moves P times as many blocks.
    out.push_back({"fft2_gather" + sz, gather, p, buf, 0, packed, extent, true_extent,
                   p * gather_blocks, src});
    out.push_back({"fft2_scatter" + sz, scatter, p, buf, 0, packed, extent, true_extent,
                   p * scatter_blocks, src});
}

// ---- 2.7 LLNL Comb: one subarray per neighbour message, Fortran order ---------------------

void add_comb(std::vector<Layout> &out, int64_t n, int64_t g) {
    const auto add = [&](bool send, std::array<int, 3> dir) {
        out.push_back(comb_layout(send, dir, n, g));
    };
    add(true, {-1, 0, 0}), add(true, {0, -1, 0}), add(true, {0, 0, -1});  // faces
    add(false, {+1, 0, 0});
    add(true, {-1, -1, 0}), add(true, {-1, 0, -1}), add(true, {0, -1, -1});  // edges
    add(true, {-1, -1, -1}), add(false, {+1, +1, +1});                      // corners
}

// ---- Section 1: layouts measured in the papers ----------------------------------------------

const char *const kWu = "Wu et al. HPDC'16 (docs/application-layouts.md 1); numbers derived";
const char *const kJenkins =
    "Jenkins et al. TPDS'14 (docs/application-layouts.md 1); numbers derived";

void add_dense(std::vector<Layout> &out, int64_t n) {
    const int64_t ld = n + 64, nb = 64, buf = ld * n * kDouble;
    const int64_t span = ((n - 1) * ld + n) * kDouble;  // first to last touched byte, all three
    const std::string sz = "(N=" + std::to_string(n) + ",ld=" + std::to_string(ld) + ")";
    out.push_back({"hpdc16_V" + sz, vector(n, n, ld, D()), 1, buf, 0, n * n * kDouble, span, span,
                   n, kWu});
    std::vector<int64_t> bl(n), disp(n), sbl(n), sdisp(n);
    int64_t stair_packed = 0;
    for (int64_t j = 0; j < n; ++j) {
        bl[j] = n - j, disp[j] = j * ld + j;
        const int64_t top = j / nb * nb;  // the stair's first row: heights rounded up to nb steps
        sbl[j] = n - top, sdisp[j] = j * ld + top;
        stair_packed += sbl[j] * kDouble;
    }
    // ld > N, so no column's run reaches the next one: one block per column.
    out.push_back({"hpdc16_T" + sz, indexed(bl, disp, D()), 1, buf, 0, n * (n + 1) / 2 * kDouble,
                   span, span, n, kWu});
    const std::string stair_sz = sz.substr(0, sz.size() - 1) + ",nb=" + std::to_string(nb) + ")";
    out.push_back({"hpdc16_stairT" + stair_sz, indexed(sbl, sdisp, D()), 1, buf, 0, stair_packed,
                   span, span, n, kWu});
}

void add_papers(std::vector<Layout> &out) {
    add_dense(out, 1000);
    {   // The contiguous side of "vector <-> contiguous": V's signature received as one run.
        const int64_t n = 1000;
        out.push_back({"hpdc16_V_contig(N=1000)", contiguous(n * n, D()), 1, n * n * kDouble, 0,
                       n * n * kDouble, n * n * kDouble, n * n * kDouble, 1, kWu});
    }
    out.push_back(transpose_layout(256));
    for (int64_t bl : {8, 16, 32, 64, 128}) {  // fixed 512 B stride, blocklength in bytes
        const int64_t count = 2048, stride = 512, span = (count - 1) * stride + bl;
        out.push_back({"tpds14_vector(" + std::to_string(bl) + "B,stride=512B)",
                       hvector(count, bl, stride, named(UCXDT_BYTE)), 1, count * stride, 0,
                       count * bl, span, span, count, kJenkins});
    }
    {   // 4-D hypercube of edge 32, centred in a 64^4 double array.
        const int64_t e = 64, s = 32, st = 16, lin1 = e * e * e + e * e + e + 1;
        out.push_back({"tpds14_subarray4d(32^4_of_64^4)",
                       subarray({e, e, e, e}, {s, s, s, s}, {st, st, st, st}, UCXDT_ORDER_C, D()),
                       1, e * e * e * e * kDouble, 0, s * s * s * s * kDouble,
                       e * e * e * e * kDouble, ((s - 1) * lin1 + 1) * kDouble, s * s * s,
                       kJenkins});
    }
    out.push_back(struct_layout(1024));
    {   // The contention experiment's vector: 8 B blocks every 64 B over 16 MB.
        const int64_t count = 262144, span = (count - 1) * 64 + kDouble;
        out.push_back({"tpds14_vector(8B,stride=64B,count=262144)", vector(count, 1, 8, D()), 1,
                       count * 64, 0, count * kDouble, span, span, count, kJenkins});
    }
}

}  // namespace

std::vector<Layout> application_layouts() {
    std::vector<Layout> out;
    add_nas_mg(out, {34, 18, 18, 2048, 77528, 256, 4096, 73696, 16, 4096, 4336, 16});
    add_nas_mg(out, {514, 258, 258, 524288, 271577048, 65536, 1048576, 270532576, 256, 1048576,
                     1052656, 256});
    add_nas_lu(out, 12, 480, 480, 6200, 12);
    add_nas_lu(out, 1020, 40800, 40800, 41656760, 1020);
    out.push_back(milc(8, 8, 8, 8, 12288, 92928, 16));
    out.push_back(milc(16, 16, 16, 16, 98304, 1526784, 32));
    const std::pair<char, const char *> wrf[] = {{'x', "8x8"}, {'x', "2x2"}, {'y', "2x2"}};
    for (const auto &[axis, grid] : wrf)
        for (auto &l : wrf_layouts(axis, grid)) out.push_back(std::move(l));
    // The doc bolds no SPECFEM3D size; 7600 is its largest.
    add_specfem(out, 3, 2, 7600, 91200, 182388, 7600);
    add_fft2(out, 256, 2, 262144, 2048, 522240, 128, 16384);
    add_fft2(out, 1536, 2, 9437184, 12288, 18862080, 768, 589824);
    add_comb(out, 16, 1);
    add_papers(out);
    return out;
}

std::vector<Layout> paper_layouts(int64_t n) {
    std::vector<Layout> out;
    add_dense(out, n);
    return out;
}

// ---- Any size ------------------------------------------------------------------------------

std::vector<Layout> nas_mg_layouts(int64_t d1, int64_t d2, int64_t d3) {
    // With every d >= 3 each stride exceeds its block, so no two blocks touch.
    const int64_t plane = d1 * d2;
    std::vector<Layout> out;
    add_nas_mg(out, {d1, d2, d3,
                     (d2 - 2) * (d3 - 2) * kDouble, ((d3 - 3) * plane + (d2 - 3) * d1 + 1) * kDouble,
                     (d2 - 2) * (d3 - 2),
                     (d1 - 2) * (d3 - 2) * kDouble, ((d3 - 3) * plane + d1 - 2) * kDouble, d3 - 2,
                     (d1 - 2) * (d2 - 2) * kDouble, ((d2 - 3) * d1 + d1 - 2) * kDouble, d2 - 2});
    return out;
}

std::vector<Layout> nas_lu_layouts(int64_t n) {
    const int64_t cell = 5 * kDouble;
    std::vector<Layout> out;
    add_nas_lu(out, n, cell * n, cell * n, ((n - 1) * (n + 2) + 1) * cell, n);
    return out;
}

Layout milc_layout(int64_t d2, int64_t d3, int64_t d4, int64_t d5) {
    const int64_t site = 6 * kFloat, half = d2 * d3 / 2;
    // The second half starts half the array on; the last block of the first ends one z-stride
    // (half * d4 sites) short of it, so the blocks merge only when d4 == 1.
    const int64_t extent = (half * d4 * d5 + (d5 - 1) * half * d4 + half) * site;
    return milc(d2, d3, d4, d5, 2 * d5 * half * site, extent, d4 == 1 ? 1 : 2 * d5);
}

std::vector<Layout> wrf_layouts(char axis, std::string_view grid) {
    std::vector<Layout> out;
    for (const auto &c : kWrf)
        if (c.axis == axis && grid == c.name) add_wrf(out, c);
    return out;
}

std::vector<std::string> wrf_grids(char axis) {
    std::vector<std::string> out;
    for (const auto &c : kWrf)
        if (c.axis == axis) out.emplace_back(c.name);
    return out;
}

std::vector<Layout> specfem_layouts(int64_t d1, int64_t d2, int64_t d3) {
    // Runs of d1 floats every d1 * d2 floats: one run in all when d2 == 1.
    std::vector<Layout> out;
    add_specfem(out, d1, d2, d3, d1 * d3 * kFloat, ((d3 - 1) * d2 * d1 + d1) * kFloat,
                d2 == 1 ? 1 : d3);
    return out;
}

std::vector<Layout> fft2_layouts(int64_t big_n, int64_t p) {
    // Per peer: gather's n rows of n complex are one run when p == 1 (the whole matrix);
    // scatter moves n * n single complex numbers, none adjacent in pack order for n >= 2.
    const int64_t n = big_n / p, cplx = 16;
    std::vector<Layout> out;
    add_fft2(out, big_n, p, n * n * cplx, n * cplx, ((n - 1) * big_n + n) * cplx, p == 1 ? 1 : n,
             n * n);
    return out;
}

Layout comb_layout(bool send, std::array<int, 3> dir, int64_t n, int64_t g) {
    const int64_t len = n + 2 * g;
    const std::string src = std::string(kDoc) + " 2.7, Comb Box3d::get_type_subarray;"
                                                " numbers derived from the definition";
    std::vector<int64_t> sizes(3, len), sub(3), start(3);
    std::string tag;
    for (int d = 0; d < 3; ++d) {
        sub[d] = dir[d] == 0 ? n : g;
        // Sends take the interior cells next to the neighbour, receives fill its ghost cells.
        if (dir[d] == 0) start[d] = g;
        else if (dir[d] < 0) start[d] = send ? g : 0;
        else start[d] = send ? n : n + g;
        if (dir[d] != 0) tag += std::string(dir[d] < 0 ? "-" : "+") + "xyz"[d];
    }
    auto lin = [&](int64_t x, int64_t y, int64_t z) { return x + len * (y + len * z); };
    const int64_t first = lin(start[0], start[1], start[2]);
    const int64_t last = lin(start[0] + sub[0] - 1, start[1] + sub[1] - 1, start[2] + sub[2] - 1);
    // Rows along x never reach the full x length, so each (y, z) row is its own block.
    return {std::string("comb_") + (send ? "send" : "recv") + "(" + tag + "," +
                std::to_string(n) + "^3,g" + std::to_string(g) + ")",
            subarray(sizes, sub, start, UCXDT_ORDER_FORTRAN, D()), 1, len * len * len * kDouble, 0,
            sub[0] * sub[1] * sub[2] * kDouble, len * len * len * kDouble,
            (last - first + 1) * kDouble, sub[1] * sub[2], src};
}

Layout transpose_layout(int64_t n) {
    // Column c of the result is vector(N,1,N) starting at element c: every element is a block
    // of its own.
    const int64_t bytes = n * n * kDouble;
    return {"hpdc16_transpose(N=" + std::to_string(n) + ")",
            hvector(n, 1, kDouble, vector(n, 1, n, D())), 1, bytes, 0, bytes, bytes, bytes, n * n,
            kWu};
}

Layout struct_layout(int64_t count) {
    // 17 data bytes, sizeof 24; resized so that count steps 24 B, as an array of structs does.
    auto st = structure({1, 1, 1, 1}, {0, 8, 12, 16},
                        {D(), named(UCXDT_INT32), named(UCXDT_INT32), named(UCXDT_CHAR)});
    return {"tpds14_struct(count=" + std::to_string(count) + ")", resized(st, 0, 24), count,
            24 * count, 0, 17, 24, 17, count, kJenkins};
}

const Layout *find_layout(const std::vector<Layout> &layouts, std::string_view name) {
    for (const auto &l : layouts)
        if (l.name == name) return &l;
    return nullptr;
}

const char *plan_name(ucxdt_plan_class_t c) {
    switch (c) {
    case UCXDT_PLAN_CONTIGUOUS: return "contiguous";
    case UCXDT_PLAN_STRIDED: return "strided";
    case UCXDT_PLAN_BLOCK_LIST: return "block_list";
    }
    return "?";
}

}  // namespace ucxdt::layouts
