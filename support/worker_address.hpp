// A UCP worker's address by ucp_worker_query, which UCX 1.13 has already and which replaces
// ucp_worker_get_address (deprecated since UCX 1.14). For the tests and the tools.
#pragma once

#include <ucp/api/ucp.h>

#include <string>

namespace ucxdt::support {

/// UCS_OK and the address of `w` in *out (ucp_ep_params_t::address takes its data), or UCP's status.
inline ucs_status_t worker_address(ucp_worker_h w, std::string *out) {
    ucp_worker_attr_t a{};
    a.field_mask = UCP_WORKER_ATTR_FIELD_ADDRESS;
    const ucs_status_t st = ucp_worker_query(w, &a);
    if (st != UCS_OK) return st;
    out->assign(reinterpret_cast<const char *>(a.address), a.address_length);
    ucp_worker_release_address(w, a.address);
    return UCS_OK;
}

}  // namespace ucxdt::support
