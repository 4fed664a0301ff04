// The target-unpack path of put and get (include/ucxdt/ucxdt_rma.h): the origin sends the packed
// stream with the target plan's encoding as one active message, and the target's worker unpacks
// it into its registered region (the CPU for host memory, its GPU for device memory), then
// acknowledges; a get asks, and the target packs and replies with the stream. It serves targets
// of many small runs, which the UCP path would move one ucp_put_nbx at a time, and device
// regions beyond CUDA IPC's reach, which UCX 1.13 cannot access one-sidedly.
#include "ucp_rma/rma.hpp"

#include "base/address.hpp"
#include "base/error.hpp"
#include "dt/plan_wire.hpp"
#include "pack/transfer.hpp"

#include <cstring>
#include <string>

namespace ucxdt::rma {

using rndv::Request;

namespace {

Op *op_of(Request *r) { return static_cast<Op *>(r->ext.get()); }

double seconds_since(std::chrono::steady_clock::time_point t) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

void on_sent(void *request, ucs_status_t status, void *user_data) {
    auto *r = static_cast<Request *>(user_data);
    if (rndv::ucp_callback(r, request)) return;
    op_of(r)->rma->ucp_done(r, status);
    if (request) ucp_request_free(request);
}

// A reply the target sends: its header and data live until UCP completes the send.
struct Reply {
    AmOp h;
    Bytes data;
};
void reply_sent(void *request, ucs_status_t, void *user_data) {
    delete static_cast<Reply *>(user_data);
    if (request) ucp_request_free(request);
}

}  // namespace

// A message of the path that came by rendezvous, received into `data` before it is served.
struct Receiving {
    Rma *rma;  // null once the worker is gone (Rma::detach_receiving): the callback frees it
    Rma::Incoming in;
    Bytes data;  // written in full by UCP
    ucs_status_t status = UCS_OK;
    // A get's reply landing in its origin's staging when the worker went: kept until UCP is done.
    Bytes keep_host;
    char *keep_pinned = nullptr;
};

// ---- The origin ----------------------------------------------------------------------------

Path Rma::choose(const Request &r) {
    const Op &op = *static_cast<const Op *>(r.ext.get());
    const Plan &t = *op.target;
    // A device region out of CUDA IPC's reach is the target's to unpack, unless UCP's own RMA
    // reaches device memory on this endpoint; then as a host region, by its own measured costs.
    if (op.device_target) {
        if (r.ep->rma_device < 0) r.ep->rma_device = rndv::ucp_rma_reaches_device(r.ep->ucp_ep) ? 1 : 0;
        if (r.ep->rma_device == 0) return Path::AM;
    }
    if (t.cls == UCXDT_PLAN_CONTIGUOUS) return Path::RUNS;
    return next_path(costs_[op.device_target], path_, t.num_blocks);
}

ucxdt_status_t Rma::start_am(Request *r, uint64_t remote) {
    Op *op = op_of(r);
    const auto t0 = std::chrono::steady_clock::now();
    op->am = true;
    ++counters.am;
    char *packed = nullptr;
    if (ucxdt_status_t st = stage(r, false, &packed)) return st;
    op->plan_wire = encoding_of(*op->target);
    op->target_runs = op->target->num_blocks;
    AmOp &h = op->am_header;
    h.kind = op->put ? AmOp::PUT : AmOp::GET;
    h.origin_req = r->id;
    h.address = remote;
    h.packed = r->packed;
    h.plan_bytes = op->plan_wire->size();
    op->iov[0] = {const_cast<char *>(op->plan_wire->data()), op->plan_wire->size()};
    op->iov[1] = {packed, static_cast<size_t>(r->packed)};
    ucp_request_param_t p{};
    p.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA | UCP_OP_ATTR_FIELD_DATATYPE |
                     UCP_OP_ATTR_FIELD_FLAGS;
    p.cb.send = on_sent;
    p.user_data = r;
    p.datatype = ucp_dt_make_iov();
    p.flags = UCP_AM_SEND_FLAG_REPLY;
    // The reply (ACK or data) is one more operation the request waits for.
    ++r->ucp_ops;
    awaiting_.insert(r->id);
    ucs_status_ptr_t s = ucp_am_send_nbx(r->ep->ucp_ep, UCXDT_UCP_AM_ID_RMA, &h, sizeof h, op->iov,
                                         op->put ? 2 : 1, &p);
    if (UCS_PTR_IS_ERR(s)) {
        --r->ucp_ops;
        awaiting_.erase(r->id);
        return w_->ucx_error("ucp_am_send_nbx", UCS_PTR_STATUS(s));
    }
    if (s != nullptr) ++r->ucp_ops, ++r->ucp_pending;
    op->started = t0;
    return UCXDT_OK;
}

void Rma::on_reply(const Incoming &in, bool landed) {
    auto it = w_->requests.find(in.h.origin_req);
    // The request ended meanwhile (its peer failed): nothing waits for this reply.
    if (!awaiting_.erase(in.h.origin_req) || it == w_->requests.end()) return;
    Request *r = it->second;
    Op *op = op_of(r);
    if (in.h.status != UCXDT_OK && !op->error)
        op->error = fail(static_cast<ucxdt_status_t>(in.h.status),
                         std::string("the target of a one-sided operation failed it: ") +
                             ucxdt_status_string(static_cast<ucxdt_status_t>(in.h.status)));
    op->target_ns = in.h.target_ns;
    if (in.h.kind == AmOp::GET_REPLY && !op->error && r->status == UCXDT_INPROGRESS) {
        if (in.length != static_cast<size_t>(r->packed))
            op->error = fail(UCXDT_ERR_UCX, "a one-sided get's reply differs from the size asked for");
        else if (!landed && in.length > 0)
            std::memcpy(op->landing, in.data, in.length);
    }
    ucp_done(r, UCS_OK);  // ends the reply's operation with those of UCP (progress)
}

// ---- The target ----------------------------------------------------------------------------

void Rma::reply(ucp_ep_h ep, const AmOp &h, Bytes data) {
    auto *rp = new Reply{h, std::move(data)};
    ucp_request_param_t p{};
    p.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA;
    p.cb.send = reply_sent;
    p.user_data = rp;
    ucs_status_ptr_t s = ucp_am_send_nbx(ep, UCXDT_UCP_AM_ID_RMA, &rp->h, sizeof rp->h, rp->data.data(),
                                         rp->data.size(), &p);
    // A failed send (the origin is gone) has no callback; an immediate one neither.
    if (!UCS_PTR_IS_PTR(s) || s == nullptr) delete rp;
}

ucxdt_status_t Rma::plan_of(const char *bytes, size_t size, int64_t packed, PlanPtr *out) {
    std::string key(bytes, size);
    if (auto it = decoded_.find(key); it != decoded_.end()) {
        *out = it->second;
        return UCXDT_OK;
    }
    if (ucxdt_status_t st = decode_plan(bytes, size, packed, out)) return st;
    if (decoded_.size() >= kPlanCache) decoded_.clear();
    decoded_.emplace(std::move(key), *out);
    return UCXDT_OK;
}

std::shared_ptr<const std::vector<char>> Rma::encoding_of(const Plan &p) {
    if (auto it = encoded_.find(p.id); it != encoded_.end()) return it->second;
    if (encoded_.size() >= kPlanCache) encoded_.clear();
    auto e = std::make_shared<std::vector<char>>();
    encode_plan(p, e.get());
    return encoded_.emplace(p.id, std::move(e)).first->second;
}

void Rma::drop_received() {
    for (Receiving *rc : received_) delete rc;
    received_.clear();
}

void Rma::detach_receiving() {
    // UCP still writes these after ucxdt_worker_destroy's bounded wait: the callback frees each
    // (it has no Rma to queue to), and a get's reply that lands in its origin's staging takes
    // that staging along, since the requests are deleted next (a contiguous host origin that
    // is its own landing is the user's buffer, which nothing here can keep).
    for (Receiving *rc : receiving_) {
        rc->rma = nullptr;
        if (!rc->data.empty() || rc->in.h.kind != AmOp::GET_REPLY) continue;
        if (auto it = w_->requests.find(rc->in.h.origin_req); it != w_->requests.end() && it->second->ext) {
            Op *op = op_of(it->second);
            rc->keep_host = std::move(op->host);
            rc->keep_pinned = std::exchange(op->pinned, nullptr);
        }
    }
    receiving_.clear();
}

void Rma::serve_received(const Incoming &in, const char *data, size_t size) {
    const auto t0 = std::chrono::steady_clock::now();
    AmOp out{};
    out.kind = in.h.kind == AmOp::PUT ? AmOp::PUT_ACK : AmOp::GET_REPLY;
    out.origin_req = in.h.origin_req;
    out.packed = in.h.packed;
    Bytes reply_data;  // a get's: written in full by the pack
    const ucxdt_status_t st = [&]() -> ucxdt_status_t {
        const size_t want = in.h.plan_bytes + (in.h.kind == AmOp::PUT ? static_cast<size_t>(in.h.packed) : 0);
        if (in.h.packed <= 0 || in.h.plan_bytes > size || size != want)
            return fail(UCXDT_ERR_INVALID_PARAM, "a one-sided message whose size differs from its header's");
        PlanPtr plan;
        if (ucxdt_status_t e = plan_of(data, in.h.plan_bytes, in.h.packed, &plan)) return e;
        // The target layout must lie in a registered region of this worker, whatever the
        // origin checked (MPI-4.1 12.3: an access outside the window is erroneous).
        const __int128 lo = static_cast<__int128>(in.h.address) + plan->data_lo;
        const __int128 hi = static_cast<__int128>(in.h.address) + plan->data_hi;
        const Mem *m = nullptr;
        for (const Mem *x : regions_) {
            const auto a = static_cast<__int128>(reinterpret_cast<uintptr_t>(x->address));
            if (lo >= a && hi <= a + static_cast<__int128>(x->length)) m = x;
        }
        if (!m) return fail(UCXDT_ERR_OUT_OF_RANGE, "a one-sided target layout outside every registered region");
        char *target = reinterpret_cast<char *>(static_cast<uintptr_t>(in.h.address));
        if (in.h.kind == AmOp::PUT)
            return transfer(*plan, target, const_cast<char *>(data) + in.h.plan_bytes, 0, in.h.packed, false, nullptr);
        reply_data.resize(static_cast<size_t>(in.h.packed));
        return transfer(*plan, target, reply_data.data(), 0, in.h.packed, true, nullptr);
    }();
    if (st) {
        clear_error();  // the origin's request reports it
        reply_data.clear();
    }
    ++counters.served;
    out.status = st;
    out.target_ns = static_cast<uint64_t>(seconds_since(t0) * 1e9);
    if (in.reply_ep) reply(in.reply_ep, out, std::move(reply_data));
}

void Rma::serve(Incoming &in) {
    if (in.h.kind == AmOp::PUT_ACK || in.h.kind == AmOp::GET_REPLY) {
        if (!in.rndv) {
            on_reply(in);
            return;
        }
    } else if (!in.rndv) {
        serve_received(in, static_cast<const char *>(in.data), in.length);
        return;
    }
    // By rendezvous: received here first (a get's reply straight into the origin's landing).
    auto *rc = new Receiving{this, in, {}, UCS_OK, {}, nullptr};
    char *dst = nullptr;
    if (in.h.kind == AmOp::GET_REPLY) {
        auto it = w_->requests.find(in.h.origin_req);
        if (awaiting_.count(in.h.origin_req) && it != w_->requests.end() &&
            in.length == static_cast<size_t>(it->second->packed))
            dst = op_of(it->second)->landing;
    }
    if (!dst) {
        rc->data.resize(in.length);
        dst = rc->data.data();
    }
    ucp_request_param_t p{};
    p.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA | UCP_OP_ATTR_FIELD_MEMORY_TYPE;
    p.memory_type = UCS_MEMORY_TYPE_HOST;
    p.user_data = rc;
    p.cb.recv_am = [](void *request, ucs_status_t status, size_t, void *user_data) {
        auto *rc = static_cast<Receiving *>(user_data);
        if (request) ucp_request_free(request);
        if (!rc->rma) {  // the worker is gone
            if (rc->keep_pinned) cudaFreeHost(rc->keep_pinned);
            delete rc;
            return;
        }
        rc->status = status;
        rc->rma->receiving_.erase(rc);
        rc->rma->received_.push_back(rc);
    };
    receiving_.insert(rc);
    ucs_status_ptr_t s = ucp_am_recv_data_nbx(w_->ucp_worker, in.data, dst, in.length, &p);
    if (!UCS_PTR_IS_PTR(s) || s == nullptr) {
        receiving_.erase(rc);
        rc->status = UCS_PTR_STATUS(s);
        received_.push_back(rc);
    }
}

unsigned Rma::serve_incoming() {
    unsigned n = 0;
    while (!incoming_.empty()) {
        Incoming in = incoming_.front();
        incoming_.pop_front();
        serve(in);
        if (in.persistent) ucp_am_data_release(w_->ucp_worker, in.data);
        ++n;
    }
    while (!received_.empty()) {
        std::unique_ptr<Receiving> rc(received_.front());
        received_.pop_front();
        Incoming in = rc->in;
        in.rndv = false;
        const ucxdt_status_t st = rc->status == UCS_OK ? UCXDT_OK : w_->ucx_error("ucp_am_recv_data_nbx", rc->status);
        if (in.h.kind == AmOp::PUT || in.h.kind == AmOp::GET) {
            if (!st) {
                serve_received(in, rc->data.data(), rc->data.size());
            } else if (in.reply_ep) {  // the origin waits for an answer
                clear_error();
                AmOp out{};
                out.kind = in.h.kind == AmOp::PUT ? AmOp::PUT_ACK : AmOp::GET_REPLY;
                out.origin_req = in.h.origin_req;
                out.status = st;
                reply(in.reply_ep, out, {});
            }
        } else {
            // A get's reply landed in the origin's staging (data empty) or in rc->data.
            if (st) in.h.status = st;
            const bool landed = rc->data.empty();
            if (!landed) in.data = rc->data.data();
            on_reply(in, landed);
        }
        ++n;
    }
    return n;
}

ucs_status_t Rma::am_handler(void *arg, const void *header, size_t header_length, void *data, size_t length,
                             const ucp_am_recv_param_t *param) {
    AmOp h;
    if (header_length != sizeof h) return UCS_OK;  // not ours
    std::memcpy(&h, header, sizeof h);
    if (h.magic != AmOp::kMagic) return UCS_OK;
    Incoming in{h, data, length, (param->recv_attr & UCP_AM_RECV_ATTR_FLAG_RNDV) != 0,
                data && (param->recv_attr & UCP_AM_RECV_ATTR_FLAG_DATA) != 0,
                (param->recv_attr & UCP_AM_RECV_ATTR_FIELD_REPLY_EP) ? param->reply_ep : nullptr, nullptr};
    if (data && !in.rndv && !in.persistent) {
        in.copy = std::make_shared<std::vector<char>>(static_cast<char *>(data), static_cast<char *>(data) + length);
        in.data = in.copy->data();
    }
    static_cast<Rma *>(arg)->am_arrived(in);
    return in.rndv || in.persistent ? UCS_INPROGRESS : UCS_OK;
}

}  // namespace ucxdt::rma
