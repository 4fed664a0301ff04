// The ucxdt worker of include/ucxdt/ucxdt_ucp.h: requests, endpoints, the staging pools, and
// the event queue through which UCP's callbacks (which run inside ucp_worker_progress) hand
// their work to ucxdt_worker_progress, so that the protocol never re-enters UCP from a callback.
#pragma once

#include "plan.hpp"
#include "rndv_wire.hpp"
#include "staging_pool.hpp"

#include <ucxdt/ucxdt_ucp.h>

#include <algorithm>
#include <deque>
#include <memory>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace ucxdt::rndv {

struct Config {
    int64_t eager = 8192;
    int64_t frag = 1 << 20;
    int depth = 4;
    int slots = 16;
};

struct Worker;
struct Ep;

/// One send or receive. Owned by the worker until both completed and freed by the user.
struct Request {
    Worker *worker = nullptr;
    bool is_send = false;
    uint64_t id = 0;
    int status = UCXDT_INPROGRESS;
    bool user_freed = false, callback_due = false;
    int ucp_ops = 0;
    bool peer_lost = false;  // its peer failed: nothing more is sent to it  // UCP operations whose callbacks name this request: it lives until they end
    ucxdt_request_param_t param{};

    // The user's data.
    char *buffer = nullptr;
    int64_t count = 0;
    ucxdt_type_t type = UCXDT_TYPE_NULL;  // a dup, released at completion
    PlanPtr plan;
    bool contig = false;  // the buffer is the packed stream, and UCP may GET to or from it
    int64_t packed = 0;   // send: bytes sent; receive: capacity, then bytes received
    StagingPool *pool = nullptr;  // the worker's pool of this request's role, once slots are held
    std::vector<int> slots;       // staging slots held (send: filled or being refilled)
    int64_t nfrags = 0;           // fragments of the rendezvous (both sides)

    // Send.
    Ep *ep = nullptr;
    ucp_tag_t tag = 0;
    std::vector<char> msg;                 // the tagged message while UCP sends it
    ucp_mem_h memh = nullptr;              // contiguous rendezvous: the user's buffer
    int64_t next_pack = 0;                 // next fragment to pack
    uint64_t rreq_id = 0;                  // the receiver's request, from its first ACK

    // Receive.
    ucp_tag_t tag_mask = 0, sender_tag = 0;
    void *ucp_req = nullptr;               // the posted ucp_tag_recv_nbx, until it completes
    bool ucp_done = false;
    std::vector<char> bounce;              // where the tagged message lands
    TagHeader hdr{};                       // the matched RTS
    std::vector<int32_t> remote_slots;     // sender slot of each announced fragment (-1: not yet)
    ucp_ep_h peer = nullptr;
    ucp_rkey_h rkey = nullptr;
    std::vector<char> rkey_buf;            // the sender's packed rkey
    std::vector<int> free_slots;           // held slots not under a GET
    int64_t next_get = 0, gets_in_flight = 0, frags_done = 0;
    bool matched = false;
    ucxdt_status_t status_pending = UCXDT_OK;  // the end is decided; waiting for GETs in flight

    /// Bytes of fragment k (hdr.packed is the message size on both sides).
    int64_t frag_bytes(int64_t k) const { return std::min(hdr.frag, hdr.packed - k * hdr.frag); }
};

/// Events from UCP callbacks, handled in ucxdt_worker_progress.
struct Event {
    enum Kind { tag_recv_done, tag_send_done, get_done, am_message, peer_failed } kind;
    Request *req = nullptr;
    ucs_status_t status = UCS_OK;
    size_t length = 0;          // tag_recv_done: bytes received
    ucp_tag_t sender_tag = 0;
    int64_t frag = -1;          // get_done
    int slot = -1;              // get_done: local slot, -1 into the user buffer
    AmHeader am{};
    ucp_ep_h reply_ep = nullptr;  // am_message: the sender; peer_failed: the failed endpoint
};

struct Ep {
    Worker *worker = nullptr;
    ucp_ep_h ucp_ep = nullptr;
};

struct Worker {
    ucp_worker_h ucp_worker = nullptr;
    ucp_context_h ucp_context = nullptr;
    Config cfg;
    uint64_t uuid = 0;
    uint64_t next_id = 1;
    std::unordered_map<uint64_t, Request *> requests;     // every live request by id
    std::unordered_map<uint64_t, ucp_ep_h> peers;         // worker uuid -> endpoint back to it
    std::unordered_set<uint64_t> failed_peers;            // workers whose endpoint failed
    std::deque<Event> events;
    std::deque<Request *> waiting;                        // for staging or for a HELLO
    std::vector<Request *> completed;                     // callbacks to call
    // Host staging per role, made on first use: sends and receives apart, so that a receive
    // never waits for slots held by sends that themselves wait for receives.
    std::unique_ptr<StagingPool> pools[2];

    /// Takes up to `want` slots of the pool of r's role into r->slots; false when none is free.
    ucxdt_status_t take_slots(Request *r, int want);
    Request *new_request(bool is_send, const ucxdt_request_param_t *param);
    /// Final status: releases the request's resources; the callback runs from progress.
    void complete(Request *r, ucxdt_status_t status);
    /// Frees the object once it is complete, its callback has run, the user freed it and no UCP
    /// operation names it any more; otherwise the last of these events frees it.
    void release(Request *r);
    /// Ends a UCP operation of r (its callback event was handled).
    void op_done(Request *r) { --r->ucp_ops; }
    /// Every request that depends on `ep` completes with UCXDT_ERR_PEER_FAILURE (section "Peer
    /// failure" of ucxdt_ucp.h); nothing is sent on `ep` afterwards.
    void peer_failed(ucp_ep_h ep);
    /// The status of a request whose UCP operation `what` failed with `us`: a failure of the
    /// connection (UCP's peer error handling) is UCXDT_ERR_PEER_FAILURE.
    static ucxdt_status_t ucx_error(const char *what, ucs_status_t us);
    ucxdt_status_t send_am(ucp_ep_h ep, const AmHeader &h, bool reply);
    unsigned progress();

    // Protocol steps (rndv_send.cpp, rndv_recv.cpp).
    void send_start(Request *r);             // rendezvous: slots, first fragments, RTS
    void send_on_am(const AmHeader &h);      // ACK and ATS for a send
    bool recv_matched(Request *r, const Event &e);
    bool recv_advance(Request *r);           // GETs; false: still waiting for a resource
    void recv_on_get(Request *r, const Event &e);
    void recv_on_ready(const AmHeader &h);
    void recv_finish(Request *r, ucxdt_status_t st);
};

}  // namespace ucxdt::rndv
