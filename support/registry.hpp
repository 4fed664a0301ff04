// Layouts by name for the command-line tools: `-D` specs, `-s` sizes and `-L` listing.
//
// A spec is one of
//   <full name>               exactly as listed, e.g. "nas_mg_y(34,18,18)"
//   <base>                    the first (default-size) application layout of that base name,
//                             e.g. nas_mg_y, wrf_y_sa, fft2_scatter, milc_su3_zdown
//   <base>:<size>             that application layout at any size, written as in its name with
//                             'x' allowed for ',': nas_mg_y:100x60x60, nas_lu_y:500,
//                             milc_su3_zdown:12x12x12x12, specfem3d_mt_send:3x2x6400,
//                             fft2_scatter:N=512,P=4, comb_send:-x-y,32^3,g2; WRF only at the
//                             doc's process grids (wrf_y_sa:4x4). The pre-built entry is used
//                             where the size is one, so the doc's table numbers come with it.
//   vector:count=C,blocklength=B,stride=S[,type=T]    stride in elements of T (default double)
//   hvector:count=C,blocklength=B,stride=S[,type=T]   stride in bytes
//   contig:bytes=N  |  contig:count=C[,type=T]
//   indexed:blocklengths=a/b/..,displacements=x/y/..[,type=T]   displacements in elements
//   indexed_block:blocklength=B,displacements=x/y/..[,type=T]
//   subarray:sizes=a/b/..,subsizes=..,starts=..[,order=c|fortran][,type=T]
//   struct:count=C (= tpds14_struct:count=C)          TPDS'14 {double; int; int; char}, 24 B apart
//   submatrix:n=N  triangular:n=N  stair:n=N          HPDC'16 dense layouts, ld = N + 64
//   transpose:n=N (= hpdc16_transpose:N=N)            HPDC'16 transpose of an N x N matrix
// T is one of byte, char, int32, int64, float, double. Lists are '/'-separated because ','
// separates the keys. Unknown keys are errors, so that a misspelt one is not ignored.
#pragma once

#include "app_layouts.hpp"

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace ucxdt::layouts {

/// The layout a spec names; on failure returns false with the reason in *error.
bool resolve_layout(std::string_view spec, Layout *out, std::string *error);

/// perftest's `-s <size>`: rewrites *spec to the same layout with its main size set to `size`.
/// The size is
///   n=      of submatrix, triangular, stair, transpose (hpdc16_V, _T, _stairT, _transpose
///           become these)
///   count=  of vector, hvector, struct (tpds14_struct becomes struct)
///   count=  of contig when the spec gives count=, else bytes=
///   D1 = D2 = D3 of nas_mg_* (a cube), N of nas_lu_*, D2 = .. = D5 of milc_su3_zdown,
///   DIM3 of specfem3d_mt_* (DIM1, DIM2 kept), N of fft2_* (P kept), n of comb_* (direction
///   and ghost width kept).
/// indexed, indexed_block, subarray (their lists fix the size), WRF (its configs are process
/// grids) and the remaining pre-built layouts take no size: false with the reason in *error.
/// The result must resolve, or *spec is left alone and false returned (e.g. an odd milc size).
bool apply_size(std::string *spec, int64_t size, std::string *error);

/// The part of a layout name before '(' (the name itself when it has no size).
std::string base_name(std::string_view name);

/// One line per named layout (name, packed bytes, extent, buffer bytes) plus the
/// parameterized forms and the -s mapping; for `-L`.
std::string list_layouts();

}  // namespace ucxdt::layouts
