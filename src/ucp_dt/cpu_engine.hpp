// The CPU pack engine: copies any byte range of a plan's packed stream between host
// memory in the user's layout and a contiguous buffer.
#pragma once

#include "ucp_dt/plan.hpp"

#include <cstdint>

namespace ucxdt::cpu {

/// Copies packed bytes [offset, offset + length) of (buf, plan) into `packed`.
/// The range must lie within [0, plan.packed_size]; the caller checks.
void pack(const Plan &plan, const char *buf, int64_t offset, int64_t length, char *packed);

/// Copies `length` packed bytes, bytes [offset, offset + length) of the stream, into
/// (buf, plan). Only bytes of the type map are written.
void unpack(const Plan &plan, char *buf, int64_t offset, int64_t length, const char *packed);

}  // namespace ucxdt::cpu
