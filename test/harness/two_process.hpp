// Tests across two processes: a forked child with its own UCP context, worker addresses passed
// through pipes, and a bounded wait for the child's exit status.
#pragma once

#include "harness/rndv_support.hpp"
#include "support/worker_address.hpp"

#include <ucp/api/ucp.h>
#include <ucxdt/ucxdt_ucp.h>

#include <chrono>
#include <csignal>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

namespace ucxdt::testing {

using namespace ucxdt::support;  // the harness and its tests speak support/'s descriptions

/// One process's side: its own context, worker and endpoint to the peer.
struct ProcessSide {
    ucp_context_h ctx = nullptr;
    ucp_worker_h w = nullptr;
    ucp_ep_h ep = nullptr;
    std::vector<char> address;
    ucs_status_t ep_error = UCS_OK;  // set by the endpoint's error handler (peer error mode)
    void (*on_ep_error)(void *arg, ucp_ep_h ep, ucs_status_t status) = nullptr;
    void *on_ep_error_arg = nullptr;

    /// "" on success. `config`: UCP settings (name without UCX_, value).
    std::string init(uint64_t features, const std::vector<std::pair<const char *, const char *>> &config = {}) {
        ucp_config_t *cfg = nullptr;
        if (ucp_config_read(nullptr, nullptr, &cfg) != UCS_OK) return "ucp_config_read";
        for (const auto &[name, value] : config)
            if (ucp_config_modify(cfg, name, value) != UCS_OK) {
                ucp_config_release(cfg);
                return std::string("ucp_config_modify ") + name;
            }
        ucp_params_t p{};
        p.field_mask = UCP_PARAM_FIELD_FEATURES;
        p.features = features;
        const ucs_status_t st = ucp_init(&p, cfg, &ctx);
        ucp_config_release(cfg);
        if (st != UCS_OK) return std::string("ucp_init: ") + ucs_status_string(st);
        ucp_worker_params_t wp{};
        if (ucp_worker_create(ctx, &wp, &w) != UCS_OK) return "ucp_worker_create";
        std::string a;
        if (worker_address(w, &a) != UCS_OK) return "ucp_worker_query";
        address.assign(a.begin(), a.end());
        return "";
    }

    /// Connects to the peer's worker address; with `peer_errors`, in UCP's peer error handling
    /// mode, the failure landing in ep_error and on_ep_error.
    std::string connect(const std::vector<char> &peer, bool peer_errors = false) {
        return connect(peer, peer_errors, nullptr);
    }
    /// As connect(peer, true), with the handler of ucxdt_ep_params_set_err_handler: `worker`,
    /// a ucxdt worker on w, learns of the failure first. close_ep() before destroying it.
    std::string connect(const std::vector<char> &peer, ucxdt_worker_h worker) {
        return connect(peer, true, worker);
    }

    /// Force-closes the endpoint (the peer may be gone), waiting at most 10 s.
    void close_ep() {
        if (!ep) return;
        ucp_request_param_t p{};
        p.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
        p.flags = UCP_EP_CLOSE_FLAG_FORCE;
        wait(ucp_ep_close_nbx(ep, &p), std::chrono::seconds(10));
        ep = nullptr;
    }

    /// The final status of a UCP request, progressing the worker for at most `limit`; frees it.
    ucs_status_t wait(ucs_status_ptr_t request, std::chrono::seconds limit = std::chrono::seconds(60)) {
        if (request == nullptr) return UCS_OK;
        if (UCS_PTR_IS_ERR(request)) return UCS_PTR_STATUS(request);
        const auto deadline = std::chrono::steady_clock::now() + limit;
        ucs_status_t st;
        while ((st = ucp_request_check_status(request)) == UCS_INPROGRESS) {
            ucp_worker_progress(w);
            if (std::chrono::steady_clock::now() > deadline) return UCS_ERR_TIMED_OUT;
        }
        ucp_request_free(request);
        return st;
    }

    ~ProcessSide() {
        close_ep();
        if (w) ucp_worker_destroy(w);
        if (ctx) ucp_cleanup(ctx);
    }

private:
    static void record_ep_error(void *arg, ucp_ep_h ep, ucs_status_t status) {
        auto *s = static_cast<ProcessSide *>(arg);
        s->ep_error = status;
        if (s->on_ep_error) s->on_ep_error(s->on_ep_error_arg, ep, status);
    }

    std::string connect(const std::vector<char> &peer, bool peer_errors, ucxdt_worker_h worker) {
        ucp_ep_params_t ep_params{};
        ep_params.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS;
        ep_params.address = reinterpret_cast<const ucp_address_t *>(peer.data());
        if (worker) {
            if (ucxdt_ep_params_set_err_handler(&ep_params, worker, record_ep_error, this) != UCXDT_OK)
                return std::string("ucxdt_ep_params_set_err_handler: ") + ucxdt_last_error();
        } else if (peer_errors) {
            ep_params.field_mask |= UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE | UCP_EP_PARAM_FIELD_ERR_HANDLER;
            ep_params.err_mode = UCP_ERR_HANDLING_MODE_PEER;
            ep_params.err_handler.cb = record_ep_error;
            ep_params.err_handler.arg = this;
        }
        const ucs_status_t st = ucp_ep_create(w, &ep_params, &ep);
        return st == UCS_OK ? "" : std::string("ucp_ep_create: ") + ucs_status_string(st);
    }
};

/// A ucxdt worker on a ProcessSide's UCP worker. Its destructor keeps ucxdt_ucp.h's order: the
/// ucxdt endpoint, then the side's UCP endpoint (whose error handler names the worker), then
/// the worker.
struct UcxdtSide {
    ProcessSide *s = nullptr;
    ucxdt_worker_h w = nullptr;
    ucxdt_ep_h ep = nullptr;
    std::string open(ProcessSide &side, const RndvConfig &c = RndvConfig{}) {
        s = &side;
        return create_rndv_worker(side.ctx, side.w, c, &w);
    }
    ~UcxdtSide() {
        if (ep) ucxdt_ep_destroy(ep);
        if (s) s->close_ep();
        if (w) ucxdt_worker_destroy(w);
    }
};

inline bool write_all(int fd, const void *p, size_t n) {
    const auto *c = static_cast<const char *>(p);
    while (n > 0) {
        const ssize_t r = write(fd, c, n);
        if (r <= 0) return false;
        c += r;
        n -= static_cast<size_t>(r);
    }
    return true;
}

inline bool read_all(int fd, void *p, size_t n) {
    auto *c = static_cast<char *>(p);
    while (n > 0) {
        const ssize_t r = read(fd, c, n);
        if (r <= 0) return false;
        c += r;
        n -= static_cast<size_t>(r);
    }
    return true;
}

/// A length-prefixed byte string through a pipe (worker addresses).
inline bool write_blob(int fd, const std::vector<char> &v) {
    const uint64_t n = v.size();
    return write_all(fd, &n, sizeof n) && write_all(fd, v.data(), n);
}

inline bool read_blob(int fd, std::vector<char> *v) {
    uint64_t n = 0;
    if (!read_all(fd, &n, sizeof n) || n > (1u << 20)) return false;
    v->resize(n);
    return read_all(fd, v->data(), n);
}

/// Whether `fd` has data (or end of file) within `limit`.
inline bool readable_within(int fd, std::chrono::seconds limit) {
    pollfd p{fd, POLLIN, 0};
    return poll(&p, 1, static_cast<int>(limit.count() * 1000)) == 1;
}

/// read_blob, bounded: false when nothing came within `limit` or the writer is gone.
inline bool read_blob_within(int fd, std::vector<char> *v, std::chrono::seconds limit) {
    return readable_within(fd, limit) && read_blob(fd, v);
}

/// The child's wait status, or -1 when it did not exit within `limit` (it is then killed).
inline int wait_child(pid_t pid, std::chrono::seconds limit) {
    int status = 0;
    const auto deadline = std::chrono::steady_clock::now() + limit;
    pid_t done = 0;
    while ((done = waitpid(pid, &status, WNOHANG)) == 0 && std::chrono::steady_clock::now() < deadline)
        usleep(10000);
    if (done == pid) return status;
    kill(pid, SIGKILL);
    waitpid(pid, &status, 0);
    return -1;
}

}  // namespace ucxdt::testing
