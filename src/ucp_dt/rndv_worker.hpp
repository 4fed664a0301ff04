// The ucxdt worker of include/ucxdt/ucxdt_ucp.h: requests, endpoints, the staging pools, and
// the event queue through which UCP's callbacks (which run inside ucp_worker_progress) hand
// their work to ucxdt_worker_progress, so that the protocol never re-enters UCP from a callback.
#pragma once

#include "plan.hpp"
#include "rndv_wire.hpp"
#include "staging_pool.hpp"

#include <ucxdt/ucxdt_ucp.h>

#include <deque>
#include <map>
#include <memory>
#include <unordered_map>
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
    ucxdt_request_param_t param{};

    // The user's data.
    char *buffer = nullptr;
    int64_t count = 0;
    ucxdt_type_t type = UCXDT_TYPE_NULL;  // a dup, released at completion
    PlanPtr plan;
    bool contig = false;  // the buffer is the packed stream, and UCP may GET to or from it
    int64_t packed = 0;   // send: bytes sent; receive: capacity, then bytes received
    int device = -1;      // GPU of the layout, -1 for host memory
    int stage_device = -1;  // memory of the staging slots: host (-1); see prepare()

    // Send.
    Ep *ep = nullptr;
    ucp_tag_t tag = 0;
    std::vector<char> msg;                 // the tagged message while UCP sends it
    ucp_mem_h memh = nullptr;              // contiguous rendezvous: the user's buffer
    std::vector<int> slots;                // non-contiguous rendezvous: staging slots held
    int64_t next_pack = 0;                 // next fragment to pack
    uint64_t rreq_id = 0;                  // the receiver's request, from its first ACK
    int64_t nfrags = 0;                    // fragments of the rendezvous (both sides)

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
    std::vector<int> local_slots;          // local staging slots held
    std::vector<int> free_local;           // those of them not under a GET
    int64_t next_get = 0, gets_in_flight = 0, frags_done = 0;
    bool matched = false;
    ucxdt_status_t status_pending = UCXDT_OK;  // the end is decided; waiting for GETs in flight
};

/// Events from UCP callbacks, handled in ucxdt_worker_progress.
struct Event {
    enum Kind { tag_recv_done, tag_send_done, get_done, am_message } kind;
    Request *req = nullptr;
    ucs_status_t status = UCS_OK;
    size_t length = 0;          // tag_recv_done: bytes received
    ucp_tag_t sender_tag = 0;
    int64_t frag = -1;          // get_done
    int slot = -1;              // get_done: local slot, -1 into the user buffer
    AmHeader am{};
    ucp_ep_h reply_ep = nullptr;
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
    std::deque<Event> events;
    std::deque<Request *> waiting;                        // for staging or for a HELLO
    std::vector<Request *> completed;                     // callbacks to call
    // Staging per (role, device); role 0 sends, 1 receives, so that a receive never waits
    // for slots held by sends that themselves wait for receives.
    std::map<std::pair<int, int>, std::unique_ptr<StagingPool>> pools;

    ucxdt_status_t pool(int role, int device, StagingPool **out);
    Request *new_request(bool is_send, const ucxdt_request_param_t *param);
    /// Final status: releases the request's resources; the callback runs from progress.
    void complete(Request *r, ucxdt_status_t status);
    void release(Request *r);  // frees the object (completed and user-freed)
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
