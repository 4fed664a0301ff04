// ucxdt_perftest (ucxdt_perftest.cpp): UCP: context, worker, endpoint, and the posted operations.
// One translation unit includes these headers, in order; their names stay in an anonymous namespace, as
// when they were one file.
#pragma once

#include "perftest/memory.hpp"
#include "perftest/oob.hpp"

namespace {

// ---- UCP -----------------------------------------------------------------------------------

// A message in flight: its ucxdt or UCP request (nullptr: complete).
struct Pending {
    void *req = nullptr;
    bool ucxdt = false;
    const char *what = "";
    Side *unpack = nullptr;  // packsend receive: the layout to unpack the staged bytes into
    long iter = -1;          // tag_bw: its iteration (timed when >= 0)
    double posted = 0;
};

// UCP's statuses of a failed connection (with the peer error handling mode).
bool connection_error(ucs_status_t s) {
    return s == UCS_ERR_CONNECTION_RESET || s == UCS_ERR_ENDPOINT_TIMEOUT || s == UCS_ERR_UNREACHABLE ||
           s == UCS_ERR_REJECTED;
}

struct Ucp {
    ucp_context_h ctx = nullptr;
    ucp_worker_h worker = nullptr;
    ucp_ep_h ep = nullptr;
    ucs_status_t ep_status = UCS_OK;  // what UCP's error handler reported for ep
    ucp_datatype_t send_dt = 0, recv_dt = 0;
    bool have_dt = false;
    ucxdt_worker_h dw = nullptr;  // -x pipeline
    ucxdt_ep_h dep = nullptr;

    static void on_ep_error(void *arg, ucp_ep_h, ucs_status_t status) {
        auto *u = static_cast<Ucp *>(arg);
        if (u->ep_status == UCS_OK) u->ep_status = status;
    }

    // With -e peer, the endpoint in UCP's peer error handling mode, so that a dead peer fails
    // its requests and is reported; with -x pipeline the ucxdt worker is told too (and made
    // first for that).
    void init(int fd, bool pipeline, bool peer_mode, bool multi) {
        ucp_config_t *cfg = nullptr;
        if (ucs_status_t s = ucp_config_read(nullptr, nullptr, &cfg); s != UCS_OK)
            die("ucp_config_read: %s", ucs_status_string(s));
        // UCX 1.13's posix and sysv serve the peer mode only when told to (off by default);
        // without them two processes of one node talk over TCP, several times slower. A
        // setting of the user's stays; a UCX without this setting ignores it.
        if (peer_mode && !std::getenv("UCX_MM_ERROR_HANDLING") && !std::getenv("UCX_POSIX_ERROR_HANDLING") &&
            !std::getenv("UCX_SYSV_ERROR_HANDLING"))
            ucp_config_modify(cfg, "MM_ERROR_HANDLING", "y");
        ucp_params_t p{};
        p.field_mask = UCP_PARAM_FIELD_FEATURES;
        p.features = UCP_FEATURE_TAG | UCP_FEATURE_AM | UCP_FEATURE_RMA;
        const ucs_status_t is = ucp_init(&p, cfg, &ctx);
        ucp_config_release(cfg);
        if (is != UCS_OK) die("ucp_init: %s", ucs_status_string(is));
        ucp_worker_params_t wp{};
        wp.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
        wp.thread_mode = multi ? UCS_THREAD_MODE_MULTI : UCS_THREAD_MODE_SINGLE;
        if (ucs_status_t s = ucp_worker_create(ctx, &wp, &worker); s != UCS_OK)
            die("ucp_worker_create: %s", ucs_status_string(s));
        if (pipeline) {
            ucxdt_worker_params_t dp{};
            dp.field_mask = UCXDT_WORKER_PARAM_FIELD_UCP_WORKER | UCXDT_WORKER_PARAM_FIELD_UCP_CONTEXT;
            dp.ucp_worker = worker;
            dp.ucp_context = ctx;
            if (ucxdt_worker_create(&dp, &dw) != UCXDT_OK) die("ucxdt_worker_create: %s", ucxdt_last_error());
        }
        std::string addr;
        if (ucs_status_t s = ucxdt::support::worker_address(worker, &addr); s != UCS_OK)
            die("ucp_worker_query: %s", ucs_status_string(s));
        send_blob(fd, addr, "while sending the worker address");
        const std::string peer = recv_blob(fd, "while waiting for its worker address");
        ucp_ep_params_t ep{};
        ep.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS;
        ep.address = reinterpret_cast<const ucp_address_t *>(peer.data());
        if (peer_mode && dw) {
            if (ucxdt_ep_params_set_err_handler(&ep, dw, on_ep_error, this) != UCXDT_OK)
                die("ucxdt_ep_params_set_err_handler: %s", ucxdt_last_error());
        } else if (peer_mode) {
            ep.field_mask |= UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE | UCP_EP_PARAM_FIELD_ERR_HANDLER;
            ep.err_mode = UCP_ERR_HANDLING_MODE_PEER;
            ep.err_handler.cb = on_ep_error;
            ep.err_handler.arg = this;
        }
        if (ucs_status_t s = ucp_ep_create(worker, &ep, &this->ep); s != UCS_OK)
            die("ucp_ep_create: %s", ucs_status_string(s));
        if (dw) {
            ucxdt_ep_params_t epp{};
            epp.field_mask = UCXDT_EP_PARAM_FIELD_UCP_EP;
            epp.ucp_ep = this->ep;
            if (ucxdt_ep_create(dw, &epp, &dep) != UCXDT_OK) die("ucxdt_ep_create: %s", ucxdt_last_error());
        }
    }
    void make_dts(ucxdt_type_t s, ucxdt_type_t r) {
        if (ucxdt_ucp_dt_create(s, &send_dt) != UCS_OK || ucxdt_ucp_dt_create(r, &recv_dt) != UCS_OK)
            die("ucxdt_ucp_dt_create: %s", ucxdt_last_error());
        have_dt = true;
    }
    // Whether message m completed (its request is then freed); dies when it failed.
    bool done(Pending &m) {
        if (m.req == nullptr) return true;
        if (m.ucxdt) {
            if (UCXDT_PTR_IS_ERR(m.req)) fail(m, UCXDT_PTR_STATUS(m.req));
            const int s = ucxdt_request_check_status(m.req);
            if (s == UCXDT_INPROGRESS) return false;
            ucxdt_request_free(m.req);
            if (s != UCXDT_OK) fail(m, static_cast<ucxdt_status_t>(s));
        } else {
            if (UCS_PTR_IS_ERR(m.req)) fail(m, UCS_PTR_STATUS(m.req));
            const ucs_status_t s = ucp_request_check_status(m.req);
            if (s == UCS_INPROGRESS) return false;
            ucp_request_free(m.req);
            if (s != UCS_OK) fail(m, s);
        }
        m.req = nullptr;
        ++g_peer.events;
        return true;
    }
    [[noreturn]] void fail(const Pending &m, ucxdt_status_t s) {
        if (s == UCXDT_ERR_PEER_FAILURE || ep_status != UCS_OK)
            die_peer("failed: %s: %s", m.what, ucxdt_status_string(s));
        die("%s: %s", m.what, ucxdt_status_string(s));
    }
    [[noreturn]] void fail(const Pending &m, ucs_status_t s) {
        if (connection_error(s) || ep_status != UCS_OK) die_peer("failed: %s: %s", m.what, ucs_status_string(s));
        die("%s: %s", m.what, ucs_status_string(s));
    }
    void wait(Pending m) {
        while (!done(m)) progress();
    }
    // Between checks of a request: dies when UCP reported the endpoint failed, and every 64
    // calls watches the peer (a clock read costs about as much as a call that finds no work).
    // The pipeline's worker progresses UCP too.
    void progress() {
        if (ep_status != UCS_OK) die_peer("failed: UCP reports %s on the endpoint", ucs_status_string(ep_status));
        if ((++spins & 63) == 0) watch();
        drive();
    }
    // UCP's progress alone: what the out-of-band waits call (g_peer.drive), bounded by -T there.
    void drive() {
        if (dw) ucxdt_worker_progress(dw);
        else ucp_worker_progress(worker);
    }
    unsigned spins = 0;
    Pending send(const void *buf, size_t count, ucp_datatype_t dt, ucp_tag_t tag) {
        ucp_request_param_t rp{};
        rp.op_attr_mask = UCP_OP_ATTR_FIELD_DATATYPE;
        rp.datatype = dt;
        ++g_peer.events;
        return Pending{ucp_tag_send_nbx(ep, buf, count, tag, &rp), false, "ucp_tag_send_nbx"};
    }
    Pending recv(void *buf, size_t count, ucp_datatype_t dt, ucp_tag_t tag) {
        ucp_request_param_t rp{};
        rp.op_attr_mask = UCP_OP_ATTR_FIELD_DATATYPE;
        rp.datatype = dt;
        ++g_peer.events;
        return Pending{ucp_tag_recv_nbx(worker, buf, count, tag, ~ucp_tag_t(0), &rp), false, "ucp_tag_recv_nbx"};
    }
    // Force: the peer closes its own at the same time, or is gone. Waits at most -T.
    void close_ep() {
        if (ep == nullptr) return;
        ucp_request_param_t rp{};
        rp.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
        rp.flags = UCP_EP_CLOSE_FLAG_FORCE;
        void *r = ucp_ep_close_nbx(ep, &rp);
        ep = nullptr;
        if (r == nullptr || UCS_PTR_IS_ERR(r)) return;
        const double deadline = now_s() + g_peer.timeout_s;
        while (ucp_request_check_status(r) == UCS_INPROGRESS && now_s() < deadline) ucp_worker_progress(worker);
        if (ucp_request_check_status(r) != UCS_INPROGRESS) ucp_request_free(r);
    }
    // In ucxdt_ucp.h's order: the ucxdt endpoint, the UCP endpoint, the ucxdt worker.
    void close() {
        if (dep) ucxdt_ep_destroy(dep), dep = nullptr;
        close_ep();
        if (have_dt) ucxdt_ucp_dt_destroy(send_dt), ucxdt_ucp_dt_destroy(recv_dt), have_dt = false;
        if (dw) ucxdt_worker_destroy(dw), dw = nullptr;
        if (worker != nullptr) ucp_worker_destroy(worker), worker = nullptr;
        if (ctx != nullptr) ucp_cleanup(ctx), ctx = nullptr;
    }
    // The peer failed: its endpoint is released as UCP asks; the process exits next, with
    // requests still posted, so the workers are left to the exit.
    void abandon() {
        if (dep) ucxdt_ep_destroy(dep), dep = nullptr;
        // UCX 1.13 faults when it force-closes an endpoint whose dead peer's emulated GETs left
        // replies pending (ucp_request_memory_dereg from ucp_ep_close_nbx, seen with a
        // get_bw target): a one-sided target leaves the endpoint to the exit instead.
        if (!serving_rma) close_ep();
    }
    bool serving_rma = false;  // a put_bw/get_bw target
};

Ucp *g_ucp = nullptr;
void abort_ucp() {
    Ucp *u = g_ucp;
    g_ucp = nullptr;  // once, even if closing fails again
    if (u) u->abandon();
}

// One message of side `s` in either direction, on the chosen path, posted. `stage` is the
// contiguous buffer of the packsend path (messages in flight share it: they carry equal bytes).
Pending post_send(Ucp &u, const Params &p, Side &s, ucp_datatype_t dt, const Mem &stage) {
    ++g_peer.events;
    if (p.path == "pipeline")
        return Pending{ucxdt_tag_send_nbx(u.dep, s.origin(), s.lay.count, s.type, kDataTag, nullptr), true,
                       "ucxdt_tag_send_nbx"};
    if (p.path == "generic") return u.send(s.origin(), static_cast<size_t>(s.lay.count), dt, kDataTag);
    int64_t pos = 0;
    if (ucxdt_pack(s.origin(), s.lay.count, s.type, stage.p, stage.n, &pos) != UCXDT_OK)
        die("ucxdt_pack: %s", ucxdt_last_error());
    return u.send(stage.p, static_cast<size_t>(s.packed), ucp_dt_make_contig(1), kDataTag);
}
Pending post_recv(Ucp &u, const Params &p, Side &s, ucp_datatype_t dt, const Mem &stage) {
    ++g_peer.events;
    if (p.path == "pipeline")
        return Pending{ucxdt_tag_recv_nbx(u.dw, s.origin(), s.lay.count, s.type, kDataTag, ~ucp_tag_t(0), nullptr),
                       true, "ucxdt_tag_recv_nbx"};
    if (p.path == "generic") return u.recv(s.origin(), static_cast<size_t>(s.lay.count), dt, kDataTag);
    Pending m = u.recv(stage.p, static_cast<size_t>(s.packed), ucp_dt_make_contig(1), kDataTag);
    m.unpack = &s;
    return m;
}
// Whether m completed, then (packsend) unpacked.
bool reap(Ucp &u, Pending &m, const Mem &stage) {
    if (!u.done(m)) return false;
    int64_t pos = 0;
    if (m.unpack && ucxdt_unpack(stage.p, stage.n, &pos, m.unpack->origin(), m.unpack->lay.count,
                                 m.unpack->type) != UCXDT_OK)
        die("ucxdt_unpack: %s", ucxdt_last_error());
    m.unpack = nullptr;
    return true;
}
void finish(Ucp &u, Pending m, const Mem &stage) {
    g_peer.in_flight = 1;
    while (!reap(u, m, stage)) u.progress();
    g_peer.in_flight = 0;
}
void send_side(Ucp &u, const Params &p, Side &s, ucp_datatype_t dt, const Mem &stage) {
    finish(u, post_send(u, p, s, dt, stage), stage);
}
void recv_side(Ucp &u, const Params &p, Side &s, ucp_datatype_t dt, const Mem &stage) {
    finish(u, post_recv(u, p, s, dt, stage), stage);
}

}  // namespace
