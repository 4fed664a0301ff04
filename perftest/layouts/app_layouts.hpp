// Datatype layouts of real applications and of the GPU-datatype papers, with the numbers the
// sources give for them. Definitions and numbers: /work/shared/reference/application-layouts.md.
#pragma once

#include "type_desc.hpp"

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

/// The layout called `name`, or nullptr.
const Layout *find_layout(const std::vector<Layout> &layouts, std::string_view name);

/// "contiguous", "strided" or "block_list": the plan class as the tables and CSVs print it.
const char *plan_name(ucxdt_plan_class_t c);

}  // namespace ucxdt::layouts
