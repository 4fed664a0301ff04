// Two UCP workers of one context in this process, connected both ways by worker address: the
// setup of the tests that move data through UCP.
#pragma once

#include "support/worker_address.hpp"

#include <ucp/api/ucp.h>

#include <string>
#include <utility>
#include <vector>

namespace ucxdt::testing {

using namespace ucxdt::support;  // the harness and its tests speak support/'s descriptions

struct UcpPair {
    ucp_context_h ctx = nullptr;
    ucp_worker_h w[2] = {nullptr, nullptr};
    ucp_ep_h ep[2] = {nullptr, nullptr};  // ep[i] on w[i], connected to the other worker

    UcpPair() = default;
    UcpPair(const UcpPair &) = delete;
    UcpPair &operator=(const UcpPair &) = delete;

    /// "" on success, else what failed. `config`: UCP settings (name without UCX_, value);
    /// `mode`: the workers' thread mode.
    std::string open(uint64_t features, const std::vector<std::pair<const char *, const char *>> &config = {},
                     ucs_thread_mode_t mode = UCS_THREAD_MODE_SINGLE) {
        ucp_config_t *cfg = nullptr;
        if (ucp_config_read(nullptr, nullptr, &cfg) != UCS_OK) return "ucp_config_read";
        for (const auto &[name, value] : config) ucp_config_modify(cfg, name, value);
        ucp_params_t p{};
        p.field_mask = UCP_PARAM_FIELD_FEATURES;
        p.features = features;
        ucs_status_t st = ucp_init(&p, cfg, &ctx);
        ucp_config_release(cfg);
        if (st != UCS_OK) return std::string("ucp_init: ") + ucs_status_string(st);
        for (auto &worker : w) {
            ucp_worker_params_t wp{};
            wp.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
            wp.thread_mode = mode;
            if ((st = ucp_worker_create(ctx, &wp, &worker)) != UCS_OK)
                return std::string("ucp_worker_create: ") + ucs_status_string(st);
        }
        for (int i = 0; i < 2; ++i) {
            std::string addr;
            if ((st = worker_address(w[1 - i], &addr)) != UCS_OK)
                return std::string("ucp_worker_query: ") + ucs_status_string(st);
            ucp_ep_params_t ep_params{};
            ep_params.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS;
            ep_params.address = reinterpret_cast<const ucp_address_t *>(addr.data());
            st = ucp_ep_create(w[i], &ep_params, &ep[i]);
            if (st != UCS_OK) return std::string("ucp_ep_create: ") + ucs_status_string(st);
        }
        return "";
    }

    ~UcpPair() {
        for (int i = 0; i < 2; ++i) {
            if (!ep[i]) continue;
            ucp_request_param_t p{};
            p.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
            p.flags = UCP_EP_CLOSE_FLAG_FORCE;
            void *r = ucp_ep_close_nbx(ep[i], &p);
            if (r == nullptr || UCS_PTR_IS_ERR(r)) continue;
            while (ucp_request_check_status(r) == UCS_INPROGRESS) {
                ucp_worker_progress(w[0]);
                ucp_worker_progress(w[1]);
            }
            ucp_request_free(r);
        }
        for (auto worker : w)
            if (worker) ucp_worker_destroy(worker);
        if (ctx) ucp_cleanup(ctx);
    }
};

}  // namespace ucxdt::testing
