// Layouts by name for the command-line tools: `-D` specs and `-L` listing.
//
// A spec is one of
//   <base>                    the first (default-size) application layout of that base name,
//                             e.g. nas_mg_y, wrf_y_sa, fft2_scatter, milc_su3_zdown
//   <base>:<size>             the one whose parenthesized size is <size>, with 'x' standing for
//                             ',' (nas_mg_y:514x258x258, wrf_x_vec:8x8, fft2_scatter:N=1536,P=2)
//   <full name>               exactly as listed, e.g. "nas_mg_y(34,18,18)"
//   vector:count=C,blocklength=B,stride=S[,type=T]   elements of T (default double)
//   contig:bytes=N  |  contig:count=C[,type=T]
//   submatrix:n=N  triangular:n=N  stair:n=N          HPDC'16 dense layouts, ld = N + 64
// T is one of byte, char, int32, int64, float, double.
#pragma once

#include "app_layouts.hpp"

#include <string>
#include <string_view>
#include <vector>

namespace ucxdt::layouts {

/// The layout a spec names; on failure returns false with the reason in *error.
bool resolve_layout(std::string_view spec, Layout *out, std::string *error);

/// The part of a layout name before '(' (the name itself when it has no size).
std::string base_name(std::string_view name);

/// One line per named layout (name, packed bytes, extent, buffer bytes) plus the
/// parameterized forms; for `-L`.
std::string list_layouts();

}  // namespace ucxdt::layouts
