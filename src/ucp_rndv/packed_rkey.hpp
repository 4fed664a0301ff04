// A memory handle's packed remote key, by the call the UCX in use offers: ucp_memh_pack from
// UCX 1.14 on, ucp_rkey_pack (deprecated since 1.14) before it.
#pragma once

#include <ucp/api/ucp.h>

#include <vector>

namespace ucxdt::rndv {

/// Fills *out with the remote key of `memh`, registered in `ctx`, as ucp_ep_rkey_unpack takes
/// it; UCS_OK, or UCP's status with *out unchanged.
ucs_status_t packed_rkey(ucp_context_h ctx, ucp_mem_h memh, std::vector<char> *out);

}  // namespace ucxdt::rndv
