#include "ucp_rndv/packed_rkey.hpp"

namespace ucxdt::rndv {

ucs_status_t packed_rkey(ucp_context_h ctx, ucp_mem_h memh, std::vector<char> *out) {
    void *buf = nullptr;
    size_t len = 0;
#if UCP_API_VERSION >= UCP_VERSION(1, 14)
    (void)ctx;  // the handle knows its context
    ucp_memh_pack_params_t p{};  // no flags: a key for RMA, not an exported handle
    const ucs_status_t us = ucp_memh_pack(memh, &p, &buf, &len);
#else
    const ucs_status_t us = ucp_rkey_pack(ctx, memh, &buf, &len);
#endif
    if (us != UCS_OK) return us;
    out->assign(static_cast<char *>(buf), static_cast<char *>(buf) + len);
#if UCP_API_VERSION >= UCP_VERSION(1, 14)
    ucp_memh_buffer_release_params_t rp{};
    ucp_memh_buffer_release(buf, &rp);
#else
    ucp_rkey_buffer_release(buf);
#endif
    return UCS_OK;
}

}  // namespace ucxdt::rndv
