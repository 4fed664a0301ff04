// Datatype layouts of real applications and of the GPU-datatype papers, with the numbers the
// sources give for them. Definitions and numbers: docs/application-layouts.md ("the doc").
#pragma once

#include "type_desc.hpp"

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace ucxdt::layouts {

/// One (type, count) pair as an application uses it on its buffer.
/// Every expect_* is -1 where the source gives no number; all are in bytes except blocks.
struct Layout {
    std::string name;          // the size is in the name, e.g. "nas_mg_y(514,258,258)"
    TypeDescPtr type;
    int64_t count = 1;         // elements passed to pack/unpack
    int64_t buffer_bytes = 0;  // the application's whole array (or arena)
    int64_t origin_bytes = 0;  // pack/unpack get buffer + origin_bytes
    int64_t expect_packed = -1;       // type size (one element)
    int64_t expect_extent = -1;       // extent of one element
    int64_t expect_true_extent = -1;  // true extent of one element
    int64_t expect_blocks = -1;       // maximal contiguous byte runs of `count` elements, merged
                                      // in pack order (ucxdt_type_plan_info's num_blocks)
    std::string source;        // where the definition and the numbers come from
};

/// Every layout of application-layouts.md at its default size and at its largest size, the
/// COMB halo faces/edges/corners, and the papers' layouts (see app_layouts.cpp for the list).
std::vector<Layout> application_layouts();

/// The HPDC'16 dense linear algebra layouts for an N x N matrix with ld = N + 64: "V" (sub-matrix),
/// "T" (lower triangular) and stair triangular with nb = 64; names carry N.
std::vector<Layout> paper_layouts(int64_t n);

// ---- The same layouts at any size: the registry's `<base>:<size>` specs -------------------
// Sizes follow the names' parenthesized parameters. The expect_* numbers come from the doc's
// formulas (the pre-built entries above carry the doc's table numbers instead, so a test can
// hold the two against each other). The parameters must satisfy the conditions given; the
// registry checks them and says why not.

/// nas_mg_x, _y, _z for a[d3][d2][d1]; every d >= 3.
std::vector<Layout> nas_mg_layouts(int64_t d1, int64_t d2, int64_t d3);
/// nas_lu_x, _y for DIM2 = DIM3 = n >= 1.
std::vector<Layout> nas_lu_layouts(int64_t n);
/// milc_su3_zdown; every d >= 1 and d2 * d3 even (the halves split z-planes of d2 * d3 sites).
Layout milc_layout(int64_t d2, int64_t d3, int64_t d4, int64_t d5);
/// wrf_<axis>_vec, wrf_<axis>_sa of one of the doc's configs (axis 'x' or 'y'), or empty when
/// the doc has no config of that process grid; wrf_grids lists the grids it has, e.g. "4x4".
std::vector<Layout> wrf_layouts(char axis, std::string_view grid);
std::vector<std::string> wrf_grids(char axis);
/// specfem3d_mt_send, _recv; every d >= 1.
std::vector<Layout> specfem_layouts(int64_t d1, int64_t d2, int64_t d3);
/// fft2_gather, fft2_scatter with count p; p >= 1, N % p == 0 and n = N / p >= 2 (a 1 x 1
/// tile is one element, where the tiles of neighbouring peers would merge).
std::vector<Layout> fft2_layouts(int64_t big_n, int64_t p);
/// One Comb message of an n^3 interior with ghost width g: dir[d] = -1, 0, +1 selects the low
/// side, the interior or the high side of dimension d (not all 0); n >= g >= 1.
Layout comb_layout(bool send, std::array<int, 3> dir, int64_t n, int64_t g);
/// HPDC'16 transpose of an n x n double matrix, n >= 1.
Layout transpose_layout(int64_t n);
/// TPDS'14 struct {double; int; int; char} (17 data bytes, resized to sizeof = 24), `count`
/// of them back to back; count >= 1.
Layout struct_layout(int64_t count);

/// The layout called `name`, or nullptr.
const Layout *find_layout(const std::vector<Layout> &layouts, std::string_view name);

/// "contiguous", "strided" or "block_list": the plan class as the tables and CSVs print it.
const char *plan_name(ucxdt_plan_class_t c);

}  // namespace ucxdt::layouts
