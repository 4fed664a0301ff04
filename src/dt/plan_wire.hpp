// A plan as bytes, for a peer to rebuild: the one-sided active-message path (ucp_rma) sends the
// target layout with the packed data, and the target unpacks it there. The encoding is the
// plan's layout tree (base, strided dims, and a block or the unit's tree), not its flattened
// runs, which may be many: a few dozen bytes for a vector, a subarray or a struct array.
#pragma once

#include "dt/plan.hpp"

#include <cstddef>
#include <vector>

namespace ucxdt {

/// Appends the encoding of p to *out. Peers must share the byte order and int64 (same build).
void encode_plan(const Plan &p, std::vector<char> *out);

/// Rebuilds the plan of `bytes` [size] from encode_plan, with a fresh id, checked before any
/// use: every count and length positive, every size, displacement and the span of the data
/// within int64, and the packed size equal to `packed` bytes (so the runs it flattens to are
/// bounded by the data that came with it). Errors: UCXDT_ERR_INVALID_PARAM (malformed),
/// UCXDT_ERR_OVERFLOW, UCXDT_ERR_NO_MEMORY. Thread safe.
ucxdt_status_t decode_plan(const char *bytes, size_t size, int64_t packed, PlanPtr *out);

}  // namespace ucxdt
