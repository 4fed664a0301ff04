// A memory handle's packed remote key. By ucp_rkey_pack on every UCX: UCX 1.14 and later mark
// it deprecated in favour of ucp_memh_pack, but that packs only exported handles
// (UCP_MEMH_PACK_FLAG_EXPORT) and stops the process (ucs_fatal: "packing rkey using
// ucp_memh_pack() is unsupported", ucp_rkey.c) when asked for an rkey, in 1.22.0 and in master
// of 2026-08-21 alike.
#pragma once

#include <ucp/api/ucp.h>

#include <vector>

namespace ucxdt::rndv {

/// Fills *out with the remote key of `memh`, registered in `ctx`, as ucp_ep_rkey_unpack takes
/// it; UCS_OK, or UCP's status with *out unchanged.
ucs_status_t packed_rkey(ucp_context_h ctx, ucp_mem_h memh, std::vector<char> *out);

}  // namespace ucxdt::rndv
