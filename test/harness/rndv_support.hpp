// What the rendezvous tests share: ucxdt workers and endpoints on given UCP objects, and the
// wait for a request's final status with a bound.
#pragma once

#include "harness/ucp_pair.hpp"

#include <ucxdt/ucxdt_ucp.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

namespace ucxdt::testing {

using namespace ucxdt::support;  // the harness and its tests speak support/'s descriptions

/// Worker settings of a test (small, so that transfers cycle their fragments and slots).
/// eager < 0: the worker's own thresholds (none given).
struct RndvConfig {
    int64_t eager = 1024, frag = 16384;
    int depth = 2, slots = 8;
    int plain_bit = -1;  // >= 0: plain messages with this bit of the tag (plain_tag_bit)
};

/// "" on success, else what failed.
inline std::string create_rndv_worker(ucp_context_h ctx, ucp_worker_h worker, const RndvConfig &c,
                                      ucxdt_worker_h *out) {
    ucxdt_worker_params_t wp{};
    wp.field_mask = UCXDT_WORKER_PARAM_FIELD_UCP_WORKER | UCXDT_WORKER_PARAM_FIELD_UCP_CONTEXT |
                    UCXDT_WORKER_PARAM_FIELD_EAGER_THRESHOLD | UCXDT_WORKER_PARAM_FIELD_FRAG_SIZE |
                    UCXDT_WORKER_PARAM_FIELD_PIPELINE_DEPTH | UCXDT_WORKER_PARAM_FIELD_STAGING_SLOTS;
    wp.ucp_worker = worker;
    wp.ucp_context = ctx;
    wp.eager_threshold = c.eager;
    if (c.eager < 0) wp.field_mask &= ~uint64_t{UCXDT_WORKER_PARAM_FIELD_EAGER_THRESHOLD};
    wp.frag_size = c.frag;
    wp.depth = c.depth;
    wp.staging_slots = c.slots;
    // A variant's setting (test/CMakeLists.txt): the tests again with plain messages and the
    // worker's matching in arrival order.
    const char *variant = std::getenv("UCXDT_TEST_PLAIN_TAG_BIT");
    const int bit = c.plain_bit >= 0 ? c.plain_bit : variant ? std::atoi(variant) : -1;
    if (bit >= 0) {
        wp.field_mask |= UCXDT_WORKER_PARAM_FIELD_PLAIN_TAG_BIT;
        wp.plain_tag_bit = ucp_tag_t{1} << bit;
    }
    return ucxdt_worker_create(&wp, out) == UCXDT_OK ? "" : std::string("ucxdt_worker_create: ") + ucxdt_last_error();
}

/// The printed configuration (ucxdt_worker_print_config) of a worker made with `c` on a new
/// UCP context, under the environment as it is; or what failed.
inline std::string worker_config(const RndvConfig &c) {
    UcpPair ucp;
    if (std::string e = ucp.open(UCP_FEATURE_TAG | UCP_FEATURE_AM); !e.empty()) return e;
    ucxdt_worker_h w = nullptr;
    if (std::string e = create_rndv_worker(ucp.ctx, ucp.w[0], c, &w); !e.empty()) return e;
    char *buf = nullptr;
    size_t size = 0;
    FILE *f = open_memstream(&buf, &size);
    ucxdt_worker_print_config(w, f);
    std::fclose(f);
    std::string out(buf, size);
    std::free(buf);
    ucxdt_worker_destroy(w);
    return out;
}

inline std::string create_rndv_ep(ucxdt_worker_h w, ucp_ep_h ucp_ep, ucxdt_ep_h *out) {
    ucxdt_ep_params_t p{};
    p.field_mask = UCXDT_EP_PARAM_FIELD_UCP_EP;
    p.ucp_ep = ucp_ep;
    return ucxdt_ep_create(w, &p, out) == UCXDT_OK ? "" : std::string("ucxdt_ep_create: ") + ucxdt_last_error();
}

/// What wait_request returns for a request still running at its deadline.
constexpr int kStillRunning = 1000;

/// The request's final status, calling `progress()` until then; frees it. kStillRunning after
/// `limit` (the request is then left to its worker).
template <class Progress>
int wait_request(ucxdt_status_ptr_t req, Progress progress, std::chrono::seconds limit) {
    if (req == nullptr) return UCXDT_OK;
    if (UCXDT_PTR_IS_ERR(req)) return UCXDT_PTR_STATUS(req);
    const auto deadline = std::chrono::steady_clock::now() + limit;
    int st;
    while ((st = ucxdt_request_check_status(req)) == UCXDT_INPROGRESS) {
        progress();
        if (std::chrono::steady_clock::now() > deadline) return kStillRunning;
    }
    ucxdt_request_free(req);
    return st;
}

// Two connected UCP workers of one process (harness/ucp_pair.hpp) with a ucxdt worker and
// endpoint on each.
class RndvPair {
public:
    UcpPair ucp;
    ucxdt_worker_h w[2] = {};
    ucxdt_ep_h ep[2] = {};  // ep[i]: from w[i] to the other worker
    std::string error;

    explicit RndvPair(const RndvConfig &c, std::chrono::seconds limit = std::chrono::seconds(60))
        : limit_(limit) {
        error = setup(c);
    }
    std::string setup(const RndvConfig &c) {
        if (std::string e = ucp.open(UCP_FEATURE_TAG | UCP_FEATURE_AM | UCP_FEATURE_RMA); !e.empty()) return e;
        for (int i = 0; i < 2; ++i)
            if (std::string e = create_rndv_worker(ucp.ctx, ucp.w[i], c, &w[i]); !e.empty()) return e;
        for (int i = 0; i < 2; ++i)
            if (std::string e = create_rndv_ep(w[i], ucp.ep[i], &ep[i]); !e.empty()) return e;
        return "";
    }
    ~RndvPair() {  // before ucp's own destructor closes the UCP endpoints
        for (auto e : ep)
            if (e) ucxdt_ep_destroy(e);
        for (auto x : w)
            if (x) ucxdt_worker_destroy(x);
    }
    RndvPair(const RndvPair &) = delete;
    RndvPair &operator=(const RndvPair &) = delete;
    void progress() {
        ucxdt_worker_progress(w[0]);
        ucxdt_worker_progress(w[1]);
    }
    // The request's final status, progressing both workers; frees it. A hang fails as
    // kStillRunning after the pair's limit (with the request left to the worker).
    int wait(ucxdt_status_ptr_t req) {
        return wait_request(req, [this] { progress(); }, limit_);
    }

private:
    std::chrono::seconds limit_;
};

inline std::string status_name(int st) {
    return st == kStillRunning ? "still running" : ucxdt_status_string(static_cast<ucxdt_status_t>(st));
}

}  // namespace ucxdt::testing
