#include "ucp_rndv/packed_rkey.hpp"

namespace ucxdt::rndv {

ucs_status_t packed_rkey(ucp_context_h ctx, ucp_mem_h memh, std::vector<char> *out) {
    void *buf = nullptr;
    size_t len = 0;
    if (const ucs_status_t us = ucp_rkey_pack(ctx, memh, &buf, &len); us != UCS_OK) return us;
    out->assign(static_cast<char *>(buf), static_cast<char *>(buf) + len);
    ucp_rkey_buffer_release(buf);
    return UCS_OK;
}

}  // namespace ucxdt::rndv
