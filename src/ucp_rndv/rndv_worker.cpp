#include "ucp_rndv/rndv_worker.hpp"

#include "base/error.hpp"
#include "dt/api_util.hpp"
#include "dt/handle_table.hpp"
#include "pack/transfer.hpp"

#include <iterator>
#include <new>
#include <string>

namespace ucxdt::rndv {

namespace {

// An RTS: the rkey and the initial slot list (an IPC reference is shorter).
int64_t rts_bytes(const Config &c) { return kMaxRkeyBytes + 4 * static_cast<int64_t>(c.depth); }
// A header and `payload` bytes, rounded up to 64 bytes.
size_t message_bytes(int64_t payload) { return (sizeof(TagHeader) + static_cast<size_t>(payload) + 63) / 64 * 64; }

}  // namespace

size_t landing_bytes(const Config &c) { return message_bytes(std::max({c.eager, c.host_eager, rts_bytes(c)})); }
size_t send_wire_bytes(const Config &c) { return message_bytes(std::max(c.eager, rts_bytes(c))); }

char *Worker::wire_alloc(Request *r, size_t bytes) {
    r->wire_len = bytes;
    if (r->gpu >= 0) {
        WirePool &pool = wire_pools[r->is_send];
        if (pool.slot_bytes() == 0)
            pool.configure(ucp_context, cfg.slots,
                           static_cast<int64_t>(r->is_send ? send_wire_bytes(cfg) : landing_bytes(cfg)), cfg.wire_pool);
        if (bytes <= static_cast<size_t>(pool.slot_bytes()) && (r->wire_slot = pool.take(r->gpu)) >= 0)
            return pool.slot(r->wire_slot);
    }
    if (r->wire.capacity() < bytes && !spare_wire.empty()) {
        r->wire.swap(spare_wire.back());
        spare_wire.pop_back();
    }
    r->wire.resize(bytes);
    return r->wire.data();
}

void Worker::wire_free(Request *r) {
    if (r->wire_slot >= 0) wire_pools[r->is_send].give(r->wire_slot), r->wire_slot = -1;
    // Up to one window of buffers, none larger than a landing (an RTS or eager message).
    constexpr size_t kSpares = 64;
    if (r->wire.capacity() > 0 && r->wire.capacity() <= landing_bytes(cfg) && spare_wire.size() < kSpares) {
        r->wire.clear();
        spare_wire.push_back(std::move(r->wire));
    }
    r->wire = Bytes();
}

ucxdt_status_t Worker::take_slots(Request *r, int want) {
    auto &p = pools[r->is_send ? 0 : 1];
    if (!p) {
        StagingPool *made = nullptr;
        if (ucxdt_status_t st = StagingPool::create(ucp_context, cfg.slots, cfg.frag, r->gpu, &made)) return st;
        p.reset(made);
    }
    r->pool = p.get();
    r->slots = p->take(want, r->slot_level);
    if (cfg.host_am && r->is_send && r->rreq_id == 0)  // unanswered: the last whole slot stays free
        while (!r->slots.empty() && p->free_slots() < 1) p->give(r->slots.back(), r->slot_level), r->slots.pop_back();
    return UCXDT_OK;
}

Worker::~Worker() {
    for (Request *r : spare_plain) delete r;
    for (void *m : spare_requests) ::operator delete(m);
}

Request *Worker::new_request(bool is_send, const ucxdt_request_param_t *param) {
    // The memory is ::operator new's either way, so that `delete r` stays right for a request
    // that outlives its worker (ucp_callback).
    Request *r;
    if (!spare_plain.empty()) {  // as new: see renew_plain_recv
        r = spare_plain.back();
        spare_plain.pop_back();
    } else {
        void *mem = spare_requests.empty() ? ::operator new(sizeof(Request)) : spare_requests.back();
        if (!spare_requests.empty()) spare_requests.pop_back();
        r = new (mem) Request;
    }
    r->worker = this;
    r->is_send = is_send;
    r->id = next_id++;
    if (param) {  // the fields its mask names: an older caller's struct may end before flags
        r->param.field_mask = param->field_mask;
        r->param.cb = param->cb;
        r->param.user_data = param->user_data;
        if (param->field_mask & UCXDT_REQUEST_PARAM_FIELD_FLAGS) r->param.flags = param->flags;
    }
    if (!spare_nodes.empty()) {
        auto node = std::move(spare_nodes.back());
        spare_nodes.pop_back();
        node.key() = r->id;
        node.mapped() = r;
        requests.insert(std::move(node));
    } else {
        requests.emplace(r->id, r);
    }
    ++(is_send ? sends_in_progress : recvs_in_progress);
    mark(r, "posted");
    return r;
}

ucxdt_status_t check_flags(const Request *r, uint32_t allowed) {
    if ((r->param.flags & ~allowed) == 0) return UCXDT_OK;
    return fail(UCXDT_ERR_INVALID_PARAM,
                !allowed    ? "param->flags must be 0 here (flags are for tagged sends and receives)"
                : r->is_send ? "param->flags may hold UCXDT_SEND_FLAG_SYNC and UCXDT_SEND_FLAG_PACKED only"
                             : "param->flags may hold UCXDT_RECV_FLAG_PACKED only");
}

void Worker::complete(Request *r, ucxdt_status_t status) {
    if (r->status != UCXDT_INPROGRESS) return;
    // A host eager send that UCP has yet to pack (canceled, failed) would read the layout after
    // the caller has it back: the message is copied now, and UCP packs from the copy.
    if (r->is_send && r->by_wire_dt && r->ucp_ops > 0 && !r->wire_copied) {
        const size_t hb = header_bytes(r->hdr.kind);
        char *m = wire_alloc(r, hb + static_cast<size_t>(r->packed));
        std::memcpy(m, &r->hdr, hb);
        if (move_bytes(r, nullptr, m + hb, 0, r->packed, true, false) == UCXDT_OK) r->wire_copied = true;
        else clear_error();  // then UCP packs zeros after the header: the layout is not read
    }
    r->status = status;
    --(r->is_send ? sends_in_progress : recvs_in_progress);
    mark(r, "complete");
    if (r->memh) ucp_mem_unmap(ucp_context, r->memh), r->memh = nullptr;
    if (r->rkey) ucp_rkey_destroy(r->rkey), r->rkey = nullptr;
    if (!r->granted.empty()) {  // push, failed: the sender may still write these slots
        for (int s : r->granted) r->slots.erase(std::remove(r->slots.begin(), r->slots.end(), s), r->slots.end());
        retired[r->id] = Retired{r->dev, std::move(r->granted), r->slot_level, r->hdr.sender_uuid};
        r->granted.clear();
    }
    // Slots that UCP still sends from go back when it completes (send_on_frag_sent).
    for (int s : r->slots)
        if (std::find(r->am_sending.begin(), r->am_sending.end(), s) == r->am_sending.end()) r->give_slot(s);
    r->slots.clear();
    if (r->peer_mem) imports->unmap(r->peer_uuid, r->peer_ref, r->map_device), r->peer_mem = nullptr;
    r->free_slots.clear();
    for (const Request::Arrived &f : r->arrived) drop_frag(f.data);
    r->arrived.clear();
    // The tagged message stays while UCP may still use it (wire_free).
    // Guarded: std::remove and erase over an empty deque's iterators cost about 80 instructions,
    // on every request.
    if (!waiting.empty()) waiting.erase(std::remove(waiting.begin(), waiting.end(), r), waiting.end());
    drop_unsent(r);
    r->callback_due = true;
    completed.push_back(r);
}

void Worker::give_back_retired(uint64_t sender) {
    for (auto it = retired.begin(); it != retired.end();) {
        if (it->second.sender != sender) {
            ++it;
            continue;
        }
        for (int s : it->second.slots) it->second.dev->give(s, it->second.level);
        it = retired.erase(it);
    }
}

int64_t Worker::retired_bytes(const cuda::DeviceStaging *dev) const {
    int64_t n = 0;
    for (const auto &[id, q] : retired)
        if (q.dev == dev) n += static_cast<int64_t>(q.slots.size()) * dev->slot_bytes(q.level);
    return n;
}

// A receive that took a plain message into its contiguous buffer and ended well (the plain
// branch of receive_message, then plain_received) wrote only the fields below: setting them
// back makes it new at a fraction of a destruction and a construction, which cost about 400
// instructions a message (a request is about 1 KiB). Any other request is made anew.
static bool renew_plain_recv(Request *r) {
    if (r->is_send || !r->plain || r->status != UCXDT_OK || r->ext || r->wire.capacity() > 0 || r->wire_slot >= 0)
        return false;
    r->status = UCXDT_INPROGRESS;
    r->user_freed = r->callback_due = r->peer_lost = false;
    r->cancel_status = UCXDT_ERR_CANCELED;
    r->param = ucxdt_request_param_t{};
    r->buffer = nullptr;
    r->count = 0;
    r->type.reset();
    r->plan.reset();
    r->contig = r->plain = r->dense = false;
    r->gpu = -1;
    r->packed = 0;
    r->tag = r->tag_mask = r->sender_tag = 0;
    r->matched = r->ucp_done = false;
    return true;
}

void Worker::release(Request *r) {
    r->user_freed = true;
    if (r->status == UCXDT_INPROGRESS || r->callback_due || r->ucp_ops > 0) return;
    wire_free(r);  // a message that never reached UCP
    if (auto node = requests.extract(r->id); node && spare_nodes.size() < kSpareRequests)
        spare_nodes.push_back(std::move(node));
    if (spare_plain.size() < kSpareRequests && renew_plain_recv(r)) {
        spare_plain.push_back(r);
        return;
    }
    r->~Request();
    if (spare_requests.size() < kSpareRequests) spare_requests.push_back(r);
    else ::operator delete(r);
}

ucxdt_status_t Worker::type_miss(ucxdt_type_t handle, int64_t count, uint64_t erased, TypeUse *u) {
    std::shared_ptr<Type> t;
    PlanPtr plan;
    if (ucxdt_status_t st = resolve(handle, "type", &t)) return st;
    if (ucxdt_status_t st = require_committed(*t, "type")) return st;
    if (ucxdt_status_t st = get_plan(*t, count, &plan)) return st;
    *u = TypeUse{handle, count, erased, std::move(t), std::move(plan)};
    return UCXDT_OK;
}

ucxdt_status_t Worker::resolve_type(ucxdt_type_t handle, int64_t count, TypePtr *type, PlanPtr *plan) {
    const TypeUse *u = nullptr;
    if (ucxdt_status_t st = type_use(handle, count, &u)) return st;
    *type = u->type;
    *plan = u->plan;
    return UCXDT_OK;
}

ucxdt_status_t prepare(Request *r, void *buffer, int64_t count, ucxdt_type_t type) {
    if (count < 0) return fail(UCXDT_ERR_INVALID_PARAM, "count must be >= 0");
    TypePtr t;
    PlanPtr plan;
    if (ucxdt_status_t st = r->worker->resolve_type(type, count, &t, &plan)) return st;
    prepare_resolved(r, buffer, count, std::move(t), std::move(plan));
    return UCXDT_OK;
}

void prepare_resolved(Request *r, void *buffer, int64_t count, TypePtr type, PlanPtr plan) {
    r->type = std::move(type);
    r->plan = std::move(plan);
    r->buffer = static_cast<char *>(buffer);
    r->count = count;
    r->packed = r->plan->packed_size;
    r->dense = r->plan->cls == UCXDT_PLAN_CONTIGUOUS;
    r->gpu = layout_gpu(*r->plan, r->buffer);
    // GPU memory is never handed to UCP's GET: UCP 1.13's ucp_get_nbx selects RMA lanes for host
    // memory only and otherwise emulates the GET with active messages whose handler reads the
    // remote address with the CPU (seen: SIGSEGV in ucp_get_req_handler on device memory, two
    // H200s). GPU layouts take the CUDA IPC path on one node (rndv_ipc.cpp), else host staging:
    // the GPU packs into pinned host slots and unpacks from them (zero copy).
    r->contig = r->dense && r->gpu < 0;
}

bool Worker::recv_ended(Request *r, ucs_status_t us) {
    if (r->status != UCXDT_INPROGRESS) return true;  // ended meanwhile (destroyed, peer failure)
    if (us == UCS_OK) return false;
    if (us == UCS_ERR_CANCELED) complete(r, r->cancel_status);
    else if (us == UCS_ERR_MESSAGE_TRUNCATED) complete(r, UCXDT_ERR_TRUNCATED);
    else complete(r, ucx_error("ucp_tag_recv_nbx", us));
    return true;
}

ucxdt_status_ptr_t error_ptr(ucxdt_status_t st) {
    return reinterpret_cast<ucxdt_status_ptr_t>(static_cast<intptr_t>(st));
}

ucxdt_status_ptr_t Worker::hand_out(Request *r) {
    if (r->status == UCXDT_INPROGRESS) return r;
    completed.erase(std::remove(completed.begin(), completed.end(), r), completed.end());
    r->callback_due = false;
    const auto st = static_cast<ucxdt_status_t>(r->status);
    release(r);
    return st == UCXDT_OK ? nullptr : error_ptr(st);
}

ucxdt_status_t Worker::ucx_error(const char *what, ucs_status_t us) {
    const bool peer = us == UCS_ERR_CONNECTION_RESET || us == UCS_ERR_ENDPOINT_TIMEOUT ||
                      us == UCS_ERR_UNREACHABLE || us == UCS_ERR_REJECTED;
    return fail(peer ? UCXDT_ERR_PEER_FAILURE : UCXDT_ERR_UCX, std::string(what) + ": " + ucs_status_string(us));
}

void Worker::peer_failed(ucp_ep_h ep) {
    std::vector<uint64_t> lost;  // the workers behind ep
    for (auto it = peers.begin(); it != peers.end();) {
        if (it->second.ep == ep) lost.push_back(it->first), it = peers.erase(it);
        else ++it;
    }
    for (auto &[id, e] : eps)
        if (e->ucp_ep == ep && e->peer_known) lost.push_back(e->peer_uuid);
    failed_peers.insert(lost.begin(), lost.end());
    // Their memory is unmapped once no GPU work of ours can still touch it.
    if (!lost.empty()) {
        flush_launches();
        for (auto &[device, g] : gpus) g->synchronize();
    }
    for (uint64_t uuid : lost) imports->forget_peer(uuid), peer_staging.forget(uuid);
    std::vector<Request *> hit;
    for (auto &[id, r] : requests) {
        if (r->status != UCXDT_INPROGRESS) continue;
        const bool mine = r->is_send ? r->ep && r->ep->ucp_ep == ep
                                     : r->matched && (r->peer == ep || failed_peers.count(r->hdr.sender_uuid));
        if (mine) hit.push_back(r);
    }
    for (Request *r : hit) {
        r->peer_lost = true;
        if (r->is_send || r->gets_in_flight == 0) complete(r, fail(UCXDT_ERR_PEER_FAILURE, "the peer failed"));
        else if (!r->status_pending) r->status_pending = fail(UCXDT_ERR_PEER_FAILURE, "the peer failed");
    }
    for (uint64_t uuid : lost) give_back_retired(uuid);
}

bool ucp_callback(Request *r, void *ucp_request) {
    if (ucp_request) --r->ucp_pending;
    Worker *w = r->worker;
    if (!w->destroyed) return false;
    if (ucp_request) ucp_request_free(ucp_request);
    if (r->ucp_pending > 0) return true;
    delete r;
    if (--w->orphans == 0) delete w;
    return true;
}

void frag_op_done(void *request, ucs_status_t status, void *user_data) {
    auto *f = static_cast<FragOp *>(user_data);
    if (ucp_callback(f->r, request)) {
        delete f;
        return;
    }
    Event e;
    e.kind = f->kind;
    e.req = f->r;
    e.status = status;
    e.frag = f->frag;
    e.slot = f->slot;
    f->r->worker->events.push_back(e);
    delete f;
    if (request) ucp_request_free(request);
}

void frag_op_posted(ucs_status_ptr_t s, FragOp *op) {
    if (UCS_PTR_IS_PTR(s) && s != nullptr) ++op->r->ucp_pending;
    if (s == nullptr) frag_op_done(nullptr, UCS_OK, op);
    else if (UCS_PTR_IS_ERR(s)) frag_op_done(nullptr, UCS_PTR_STATUS(s), op);
}

namespace {

struct AmSend {
    AmHeader h;
    StridedShape shape;
};

void am_sent(void *request, ucs_status_t, void *user_data) {
    delete static_cast<AmSend *>(user_data);
    ucp_request_free(request);
}

}  // namespace

ucxdt_status_t Worker::send_am(ucp_ep_h ep, const AmHeader &h, bool reply, const StridedShape *shape) {
    ++control_sent[static_cast<size_t>(h.kind) % std::size(control_sent)];
    auto *m = new AmSend{h, shape ? *shape : StridedShape{}};
    ucp_request_param_t p{};
    p.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA |
                     UCP_OP_ATTR_FIELD_FLAGS;
    p.cb.send = am_sent;
    p.user_data = m;
    p.flags = reply ? UCP_AM_SEND_FLAG_REPLY : 0;
    // The handler reads a shape in place: it must not go by rendezvous (UCX_RNDV_THRESH may be
    // below its size).
    if (shape) p.flags |= UCP_AM_SEND_FLAG_EAGER;
    // The header must live until the send completes (UCX 1.13 has no COPY_HEADER flag).
    ucs_status_ptr_t s = ucp_am_send_nbx(ep, UCXDT_UCP_AM_ID, &m->h, sizeof m->h, shape ? &m->shape : nullptr,
                                         shape ? sizeof m->shape : 0, &p);
    if (s == nullptr) {
        delete m;
        return UCXDT_OK;
    }
    if (UCS_PTR_IS_ERR(s)) {
        delete m;
        return ucx_error("ucp_am_send_nbx", UCS_PTR_STATUS(s));
    }
    return UCXDT_OK;
}

AmHeader Worker::hello(AmKind kind) const {
    AmHeader h{};
    h.kind = kind;
    h.uuid = uuid;
    h.node = node;
    h.process = process;
    h.ipc = cfg.ipc ? 1 : 0;
    return h;
}

bool Worker::ipc_reaches(ucp_ep_h ep, uint64_t peer_node, uint64_t peer_process, bool peer_ipc) const {
    if (!cfg.ipc || !peer_ipc || peer_node != node) return false;
    return peer_process == process || ep_has_transport(ep, "cuda_ipc") != 0;
}

unsigned Worker::progress() {
    if (!launching.empty()) flush_idle_launches();  // what the calls since the last progress issued
    unsigned n = ucp_worker_progress(ucp_worker);
    if (cfg.plain_bit) n += take_arrivals();
    if (!host_packing.empty()) n += pack_deferred();  // announced by poll_gpu at once
    if (!gpu_ops.empty()) n += poll_gpu();
    if (!probed.empty()) n += deliver_probed();
    // Idle polling (a wait for the next message) stops here: the rest works through queues.
    if (events.empty() && waiting.empty() && launching.empty() && unsent_due.empty() && completed.empty() &&
        extensions.empty())
        return n;
    // In batches: an event handled may queue more, which the next batch takes, in order. The
    // batch's buffer is kept for the next call (a deque node or vector per message cost a
    // malloc and a free); a nested call would take an empty one.
    std::vector<Event> batch = std::move(spare_events);
    while (!events.empty()) {
        batch.clear();
        batch.swap(events);
        for (const Event &e : batch) {
            ++n;
            if (e.req) op_done(e.req);
            switch (e.kind) {
            case Event::tag_send_done:
                wire_free(e.req);
                if (e.status != UCS_OK) complete(e.req, ucx_error("ucp_tag_send_nbx", e.status));
                else if (e.req->hdr.kind == TagKind::eager) complete(e.req, UCXDT_OK);
                break;
            case Event::tag_recv_done:
                if (!recv_ended(e.req, e.status) && !recv_matched(e.req, e)) waiting.push_back(e.req);
                // UCP is done with it, and what the RTS carried is copied out; eager data the GPU
                // unpacks is freed when that is done.
                if (!e.req->wire_busy) wire_free(e.req);
                break;
            case Event::get_done:
                recv_on_get(e.req, e);
                break;
            case Event::frag_arrived:
                recv_on_frag(e);
                break;
            case Event::frag_sent:
                send_on_frag_sent(e);
                break;
            case Event::peer_failed:
                peer_failed(e.reply_ep);
                break;
            case Event::am_message:
                switch (e.am.kind) {
                case AmKind::hello: {
                    peers[e.am.uuid] = peer_of(e.reply_ep, e.am);
                    for (auto it = sync_due.begin(); it != sync_due.end();) {  // answer_sync
                        if (it->first != e.am.uuid) ++it;
                        else send_am(e.reply_ep, it->second, false), it = sync_due.erase(it);
                    }
                    AmHeader reply = hello(AmKind::hello_reply);
                    reply.ep_id = e.am.ep_id;
                    send_am(e.reply_ep, reply, false);
                    break;
                }
                case AmKind::hello_reply:
                    if (const auto it = eps.find(e.am.ep_id); it != eps.end()) {
                        Ep *ep = it->second;
                        ep->peer = peer_of(ep->ucp_ep, e.am);
                        ep->peer_uuid = e.am.uuid;
                        ep->peer_known = true;
                    }
                    break;
                case AmKind::ready: recv_on_ready(e.am); break;
                case AmKind::ack:
                case AmKind::ats: send_on_am(e.am); break;
                case AmKind::rtr: send_on_rtr(e); break;
                case AmKind::fin: recv_on_fin(e.am); break;
                case AmKind::frag: break;  // queued by the handler as frag_arrived instead
                }
                break;
            }
            if (e.req && e.req->user_freed) release(e.req);  // maybe its last UCP operation
        }
    }
    batch.clear();
    spare_events = std::move(batch);
    for (auto &x : extensions) n += x->progress();
    // Requests that waited for staging or for their peer's HELLO.
    for (size_t k = waiting.size(); k > 0 && !waiting.empty(); --k) {
        Request *r = waiting.front();
        waiting.pop_front();
        if (r->is_send) r->ipc ? send_ipc_stage(r) : r->rts_out ? send_slots(r) : send_start(r);
        else if (!recv_advance(r)) waiting.push_back(r);
        ++n;
    }
    if (!launching.empty()) flush_idle_launches();
    // Endpoints whose first unsent message ended before it went: the ones behind it may go.
    std::vector<uint64_t> due;
    due.swap(unsent_due);
    for (uint64_t id : due)
        if (const auto it = eps.find(id); it != eps.end()) send_unsent(it->second), ++n;
    std::vector<Request *> done = std::move(spare_completed);
    done.clear();
    done.swap(completed);
    for (Request *r : done) {
        if (r->param.field_mask & UCXDT_REQUEST_PARAM_FIELD_CALLBACK) {
            void *ud = (r->param.field_mask & UCXDT_REQUEST_PARAM_FIELD_USER_DATA) ? r->param.user_data : nullptr;
            if (r->is_send) {
                if (r->param.cb.send) r->param.cb.send(r, static_cast<ucxdt_status_t>(r->status), ud);
            } else if (r->param.cb.recv) {
                r->param.cb.recv(r, static_cast<ucxdt_status_t>(r->status), r->packed, r->sender_tag, ud);
            }
        }
        r->callback_due = false;
        if (r->user_freed) release(r);
    }
    done.clear();
    spare_completed = std::move(done);
    return n;
}

}  // namespace ucxdt::rndv
