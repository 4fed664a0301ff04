// The sending half of the rendezvous (include/ucxdt/ucxdt_ucp.h): the RTS, the staging ring of a
// non-contiguous sender, and the replies (ACK, ATS) that move it on.
#include "ucp_rndv/rndv_worker.hpp"

#include "ucp_rndv/packed_rkey.hpp"

#include "base/address.hpp"
#include "base/error.hpp"
#include "dt/api_util.hpp"
#include "pack/transfer.hpp"

#include <algorithm>
#include <cstring>
#include <utility>

namespace ucxdt::rndv {

namespace {

void sent(Request *r, void *request, ucs_status_t status) {
    if (ucp_callback(r, request)) return;
    Event &e = r->worker->events.emplace_back();  // in place: an Event is 416 bytes
    e.kind = Event::tag_send_done;
    e.req = r;
    e.status = status;
    ucp_request_free(request);
}

void tag_sent(void *request, ucs_status_t status, void *user_data) {
    sent(static_cast<Request *>(user_data), request, status);
}

// A plain send (Config::plain_bit) of up to kPlainFirstBytes goes to UCP before any request of
// ours exists: most such complete in the call (eager), and need none. One that UCP keeps gets
// its request then, which UCP's callback finds by UCP's request (Worker::plain_sends). A larger
// one (UCP's rendezvous, which always returns a request) takes the request path at once. Any
// doubt (bad arguments, a layout that is not contiguous host memory, earlier sends still
// unsent, a timeline to keep) leaves the send to the request path, which reports the errors:
// returns false.
constexpr int64_t kPlainFirstBytes = 8192;  // UCX's shared-memory eager limit is about this

// Where it looked the type and its plan up and left the send to the request path, *t and *plan
// hold them for prepare_resolved; else they stay empty.
bool send_plain_first(Ep *ep, const void *buffer, int64_t count, ucxdt_type_t type, ucp_tag_t tag,
                      const ucxdt_request_param_t *param, ucs_status_ptr_t *sent, TypePtr *t, PlanPtr *plan) {
    Worker *w = ep->worker;
    if (!w->cfg.plain_bit || !ep->unsent.empty() || (tag & w->cfg.plain_bit) || count < 0 || w->timeline) return false;
    if (param && (param->field_mask & UCXDT_REQUEST_PARAM_FIELD_FLAGS) && (param->flags & ~UCXDT_SEND_FLAG_PACKED))
        return false;
    try {
        const Worker::TypeUse *u = nullptr;
        if (w->type_use(type, count, &u)) return clear_error(), false;  // prepare reports it
        const Plan &pl = *u->plan;
        if (pl.cls != UCXDT_PLAN_CONTIGUOUS || pl.packed_size > kPlainFirstBytes || layout_gpu(pl, buffer) >= 0) {
            *t = u->type, *plan = u->plan;
            return false;
        }
        ucp_request_param_t p{};
        p.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA;
        p.cb.send = plain_sent;
        p.user_data = w;
        *sent = ucp_tag_send_nbx(ep->ucp_ep, at(const_cast<void *>(buffer), pl.base),
                                 static_cast<size_t>(pl.packed_size), tag | w->cfg.plain_bit, &p);
        // UCP keeps it: its request is made below, from the type and plan.
        if (*sent != nullptr && !UCS_PTR_IS_ERR(*sent)) *t = u->type, *plan = u->plan;
        return true;
    } catch (...) {
        t->reset(), plan->reset();
        return false;
    }
}

// Makes send r a plain message: UCP's own protocols move its bytes (post_tagged), under its tag
// with the worker's plain bit, and it completes when UCP is done with the buffer (as eager).
void as_plain(Request *r, ucp_tag_t plain_bit) {
    r->plain = true;
    r->tag |= plain_bit;
    r->hdr.kind = TagKind::eager;
}

}  // namespace

void plain_sent(void *request, ucs_status_t status, void *user_data) {
    auto *w = static_cast<Worker *>(user_data);
    const auto it = w->plain_sends.find(request);
    if (it == w->plain_sends.end()) return ucp_request_free(request);  // its request could not be made
    Request *r = it->second;
    w->plain_sends.erase(it);
    sent(r, request, status);
}

namespace {

/// Posts r's tagged message (wire_alloc) with the user's tag; completion arrives as a
/// tag_send_done event, except that an eager message UCP sent at once completes r here (its
/// buffer is free again), so that ucxdt_tag_send_nbx can return NULL as UCP would.
ucxdt_status_t post_tagged(Request *r) {
    ucp_request_param_t p{};
    p.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA;
    p.cb.send = tag_sent;
    p.user_data = r;
    const bool eager = is_eager(r->hdr.kind);
    if (!eager) r->tagged_at = std::chrono::steady_clock::now();  // the RTS's round trip (rndv_ipc.cpp)
    // Not ucp_tag_send_sync_nbx for a synchronous send: UCP acknowledges a message when any
    // receive takes it, and ucxdt_tag_probe_nb takes one out of UCP to read its header. Its
    // eager_sync message waits for the receiver's ATS instead, sent when a receive matched it.
    ucs_status_ptr_t s;
    r->worker->mark(r, r->plain ? "plain_sent" : eager ? "eager_sent" : "rts_sent");
    if (r->plain) {  // the contiguous host buffer as it is, by UCP's own protocols
        s = ucp_tag_send_nbx(r->ep->ucp_ep, at(r->buffer, r->plan->base), static_cast<size_t>(r->packed), r->tag, &p);
    } else if (r->by_wire_dt) {  // packed by UCP through the wire datatype (wire_dt.cpp)
        p.op_attr_mask |= UCP_OP_ATTR_FIELD_DATATYPE;
        p.datatype = r->worker->wire_dt;
        s = ucp_tag_send_nbx(r->ep->ucp_ep, r, 1, r->tag, &p);
    } else {
        s = ucp_tag_send_nbx(r->ep->ucp_ep, r->worker->wire_data(r), r->wire_len, r->tag, &p);
    }
    if (UCS_PTR_IS_ERR(s)) return Worker::ucx_error("ucp_tag_send_nbx", UCS_PTR_STATUS(s));
    if (s == nullptr && eager) {
        r->worker->wire_free(r);
        if (r->hdr.kind == TagKind::eager) r->worker->complete(r, UCXDT_OK);  // eager_sync: at the ATS
        return UCXDT_OK;
    }
    ++r->ucp_ops;
    if (s != nullptr) ++r->ucp_pending;
    if (s == nullptr) {  // done at once: the same path as the callback
        Event e;
        e.kind = Event::tag_send_done;
        e.req = r;
        r->worker->events.push_back(e);
    }
    return UCXDT_OK;
}

}  // namespace

ucxdt_status_t Worker::send_tagged(Request *r) {
    r->tagged_ready = true;
    if (!r->unsent) return post_tagged(r);
    return send_unsent(r->ep, r);
}

ucxdt_status_t Worker::send_unsent(Ep *ep, Request *mine) {
    ucxdt_status_t out = UCXDT_OK;
    std::deque<Request *> &q = ep->unsent;
    while (!q.empty() && q.front()->tagged_ready) {
        Request *f = q.front();
        q.pop_front();
        f->unsent = false;
        if (ucxdt_status_t st = post_tagged(f)) {
            if (f == mine) out = st;
            else send_fail(f, st);
        }
    }
    return out;
}

void Worker::drop_unsent(Request *r) {
    if (!r->unsent) return;
    r->unsent = false;
    std::deque<Request *> &q = r->ep->unsent;
    const bool head = !q.empty() && q.front() == r;
    q.erase(std::remove(q.begin(), q.end(), r), q.end());
    if (head) unsent_due.push_back(r->ep->id);
}

namespace {

// Packs fragment k of r into `dst` (`peer`: another GPU's memory): on stream *s, or
// synchronously without one.
ucxdt_status_t pack_frag(Request *r, const cudaStream_t *s, int64_t k, char *dst, bool peer) {
    return move_bytes(r, s, dst, k * r->hdr.frag, r->frag_bytes(k), true, peer);
}

// Writes r's RTS into its tagged message: the header, then the slots of the first fragments,
// then the packed rkey (rndv_wire.hpp).
void write_rts(Worker *w, Request *r, const std::vector<int32_t> &initial, const std::vector<char> &rkey) {
    TagHeader &h = r->hdr;
    h.initial = static_cast<int32_t>(initial.size());
    h.rkey_len = static_cast<uint32_t>(rkey.size());
    const size_t slots_len = initial.size() * sizeof(int32_t);
    char *m = w->wire_alloc(r, sizeof h + slots_len + rkey.size());
    std::memcpy(m, &h, sizeof h);
    if (!initial.empty()) std::memcpy(m + sizeof h, initial.data(), slots_len);
    if (!rkey.empty()) std::memcpy(m + sizeof h + slots_len, rkey.data(), rkey.size());
}

}  // namespace

void Worker::send_start(Request *r) {
    if (send_start_ipc(r)) return;
    TagHeader &h = r->hdr;
    h.kind = TagKind::rts;
    h.frag = cfg.frag;
    h.contig = r->contig ? 1 : 0;
    if (!r->contig) {  // a message shorter than a slot is one fragment in a slot its size
        // A host layout's fragments are at most host_frag: the CPU packs each while the peer
        // unpacks the one before (a GPU's pack is quick enough for the slot's size).
        r->slot_level = staging_level(cfg.frag, r->gpu < 0 ? std::min(r->packed, cfg.host_frag) : r->packed);
        h.frag = cfg.frag >> r->slot_level;
    }
    r->nfrags = (r->packed + h.frag - 1) / h.frag;
    if (!r->contig) {
        // Slots go to sends in call order (ids grow with it): a later send that took them while
        // an earlier one waits would hold them behind that one's RTS (Ep::unsent), for ever.
        // With fragments as active messages the RTS needs no slot, and goes at once whatever
        // the slots (below).
        const bool behind = !cfg.host_am && std::any_of(waiting.begin(), waiting.end(), [r](const Request *q) {
            return q->is_send && !q->ipc && q->id < r->id;
        });
        if (!behind)
            if (ucxdt_status_t st = take_slots(r, static_cast<int>(std::min<int64_t>(cfg.depth, r->nfrags))))
                return complete(r, st);
        if (!cfg.host_am && (behind || r->slots.empty())) {
            waiting.push_back(r);  // every slot is in use: try again after progress
            return;
        }
    }
    if (cfg.host_am) {
        // The RTS goes now, with neither slots nor rkey; the fragments go as active messages once
        // the receiver's RTR names its request: straight from a contiguous buffer, else each from
        // its slot as soon as it is packed (the first ones meanwhile).
        h.am_frags = 1;
        // A receiver on this node may map our staging and read the slots in place.
        const bool offer = cfg.host_shm && !r->contig && r->ep->peer_known && r->ep->peer.node == node;
        if (offer) {
            h.remote_addr = reinterpret_cast<uint64_t>(r->pool->base());
            h.staging_bytes = r->pool->bytes();
        }
        // Unless the message is one fragment and the receiver may read it in place: then the RTS
        // goes once it is packed, naming its slot, and the receiver unpacks at once and answers
        // with the ATS alone. Two messages where announcing the fragment took five (RTS, RTR,
        // READY, ACK, ATS), which bounded a window of small host-staged messages
        // (docs/performance.md, table d). Longer messages keep the RTS first, so that the
        // receiver unpacks each fragment while the next packs.
        // A send that found no free slot sends its RTS all the same, so that a receive already
        // posted for it matches (MPI-4.1 §3.5), and takes slots once the RTR has come.
        if (!offer || r->contig || r->nfrags != 1 || r->slots.empty()) {
            const std::vector<char> no_rkey;
            write_rts(this, r, {}, offer ? r->pool->rkey() : no_rkey);
            if (ucxdt_status_t st = send_tagged(r)) return complete(r, st);
            if (r->contig) return;
            r->rts_out = r->slots.empty();
            if (r->rts_out) return;
            stage_on_gpu(r);
            return pack_first(r);
        }
        // A receiver that cannot map our staging answers with an RTR: they go as active
        // messages then (send_on_host_rtr).
        r->packed_frags.emplace_back(0, r->slots[0]);
    }
    std::vector<char> rkey;
    std::vector<int32_t> initial;
    if (r->contig) {
        ucp_mem_map_params_t mp{};
        mp.field_mask = UCP_MEM_MAP_PARAM_FIELD_ADDRESS | UCP_MEM_MAP_PARAM_FIELD_LENGTH;
        mp.address = at(r->buffer, r->plan->base);
        mp.length = static_cast<size_t>(r->packed);
        ucs_status_t us = ucp_mem_map(ucp_context, &mp, &r->memh);
        if (us == UCS_OK) us = packed_rkey(ucp_context, r->memh, &rkey);
        if (us != UCS_OK)
            return complete(r, fail(UCXDT_ERR_UCX, std::string("registering the send buffer: ") + ucs_status_string(us)));
        h.remote_addr = reinterpret_cast<uint64_t>(mp.address);
    } else {
        initial.assign(r->slots.begin(), r->slots.end());
        r->next_pack = static_cast<int64_t>(r->slots.size());
        rkey = r->pool->rkey();
        h.remote_addr = reinterpret_cast<uint64_t>(r->pool->base());
    }
    write_rts(this, r, initial, rkey);
    if (initial.empty()) {
        if (ucxdt_status_t st = send_tagged(r)) complete(r, st);
        return;
    }
    // The RTS goes once the fragments it names are packed (gpu_done): on the GPU's stream, the
    // CPU goes on progressing other requests meanwhile.
    stage_on_gpu(r);
    const ucxdt_status_t st = launch(r, GpuOp{GpuOp::send_tagged}, [&](const cudaStream_t *s) {
        for (size_t i = 0; i < initial.size(); ++i)
            if (ucxdt_status_t ps = pack_frag(r, s, static_cast<int64_t>(i), r->slot_mem(initial[i]), false))
                return ps;
        return UCXDT_OK;
    });
    if (st) send_fail(r, st);
}

void Worker::send_slots(Request *r) {
    if (ucxdt_status_t st = take_slots(r, static_cast<int>(std::min<int64_t>(cfg.depth, r->nfrags - r->next_pack))))
        return send_fail(r, st);
    if (r->slots.empty()) return waiting.push_back(r);  // every slot is in use: try again after progress
    r->rts_out = false;
    stage_on_gpu(r);
    pack_first(r);
}

void Worker::stage_on_gpu(Request *r) {
    if (r->dev || r->gpu < 0 || !r->pool || !r->pool->page_locked()) return;
    if (gpu(r)) clear_error();  // staged synchronously then
}

void Worker::send_on_am(const AmHeader &h) {
    const auto it = requests.find(h.sreq_id);
    if (it == requests.end() || !it->second->is_send || it->second->status != UCXDT_INPROGRESS)
        return;  // a late reply to a request that already ended
    Request *r = it->second;
    if (h.kind == AmKind::ats) {
        mark(r, "ats_seen");
        // Our GPU work may still read the user's buffer and write our staging or (push) the
        // receiver's slots: send_fail waits for it, then FIN lets the receiver reuse its slots.
        if (h.status != UCXDT_OK && (r->ipc || r->dev)) {
            r->rreq_id = h.rreq_id;
            return send_fail(r, static_cast<ucxdt_status_t>(h.status));
        }
        return complete(r, static_cast<ucxdt_status_t>(h.status));
    }
    r->rreq_id = h.rreq_id;
    if (h.push) {  // a grant: pack the next fragment into the receiver's slot
        if (!r->push) r->grants.emplace_back(h.slot, h.offset);  // before the RTR that maps it
        else send_ipc_push(r, h.slot, h.offset);
        return;
    }
    // ACK: the receiver has fetched fragment h.frag_index from slot h.slot. A slot r does not hold
    // (a bad or repeated ACK) is dropped: giving it back would hand out memory in use.
    if (std::find(r->slots.begin(), r->slots.end(), h.slot) == r->slots.end()) return;
    refill(r, h.slot);
}

void Worker::pack_next(Request *r, int64_t k, int slot, char *dst, bool peer) {
    GpuOp op{GpuOp::send_frag};
    op.frag = k;
    op.slot = slot;
    if (ucxdt_status_t st = launch(r, op, [&](const cudaStream_t *s) { return pack_frag(r, s, k, dst, peer); }))
        send_fail(r, st);
}

void Worker::pack_first(Request *r) {
    r->next_pack = static_cast<int64_t>(r->slots.size());
    const std::vector<int> first = r->slots;
    // The CPU packs a host layout's first fragment now and the others one per progress call,
    // each announced once packed: the receiver unpacks one while the next packs. Packed all at
    // once, the whole window of fragments was packed before the receiver could start (issue 62).
    const size_t now = r->gpu < 0 ? std::min<size_t>(1, first.size()) : first.size();
    for (size_t i = 0; i < now && r->status == UCXDT_INPROGRESS; ++i)
        pack_next(r, static_cast<int64_t>(i), first[i], r->slot_mem(first[i]));
    if (now == first.size() || r->status != UCXDT_INPROGRESS) return;
    for (size_t i = now; i < first.size(); ++i) r->to_pack.emplace_back(static_cast<int64_t>(i), first[i]);
    ++r->ucp_ops;  // the request lives while it is listed
    host_packing.push_back(r);
}

unsigned Worker::pack_deferred() {
    std::vector<Request *> list;
    list.swap(host_packing);
    unsigned n = 0;
    for (Request *r : list) {
        if (r->status == UCXDT_INPROGRESS && !r->to_pack.empty()) {
            const auto [k, slot] = r->to_pack.front();
            r->to_pack.erase(r->to_pack.begin());
            pack_next(r, k, slot, r->slot_mem(slot));
            ++n;
        }
        if (r->status == UCXDT_INPROGRESS && !r->to_pack.empty()) {
            host_packing.push_back(r);
            continue;
        }
        r->to_pack.clear();
        --r->ucp_ops;
        if (r->user_freed) release(r);
    }
    return n;
}

void Worker::refill(Request *r, int slot) {
    if (r->next_pack < r->nfrags) {
        const int64_t k = r->next_pack++;
        return pack_next(r, k, slot, r->slot_mem(slot));  // READY or FRAG follows from gpu_done
    }
    r->slots.erase(std::remove(r->slots.begin(), r->slots.end(), slot), r->slots.end());
    r->give_slot(slot);
}

// ---- Fragments as active messages ---------------------------------------------------------

void Worker::send_host_frag(Request *r, int64_t k, int slot) {
    auto *m = new FragOp{r, Event::frag_sent, k, slot};
    m->h.kind = AmKind::frag;
    m->h.sreq_id = r->id;
    m->h.rreq_id = r->rreq_id;
    m->h.frag_index = k;
    m->h.slot = slot;
    ucp_request_param_t p{};
    p.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA | UCP_OP_ATTR_FIELD_MEMORY_TYPE;
    p.cb.send = frag_op_done;
    p.user_data = m;
    p.memory_type = UCS_MEMORY_TYPE_HOST;
    ++r->ucp_ops;
    r->am_sending.push_back(slot);
    const char *src = slot >= 0 ? r->slot_mem(slot) : at(r->buffer, r->plan->base + k * r->hdr.frag);
    // UCP picks the protocol (eager, or its rendezvous over whatever RMA the transport has): a
    // GET of our memory would be emulated where the transport has no GET (UCX 1.13's tcp).
    const ucs_status_ptr_t s = ucp_am_send_nbx(r->ep->ucp_ep, UCXDT_UCP_AM_ID, &m->h, sizeof m->h, src,
                                               static_cast<size_t>(r->frag_bytes(k)), &p);
    frag_op_posted(s, m);
}

void Worker::send_contig_frags(Request *r) {
    while (r->status == UCXDT_INPROGRESS && r->next_pack < r->nfrags &&
           static_cast<int>(r->am_sending.size()) < cfg.depth)
        send_host_frag(r, r->next_pack++, -1);
}

void Worker::send_on_frag_sent(const Event &e) {
    Request *r = e.req;
    const auto it = std::find(r->am_sending.begin(), r->am_sending.end(), e.slot);
    if (it != r->am_sending.end()) r->am_sending.erase(it);
    if (r->status != UCXDT_INPROGRESS) {
        // The send ended while UCP still read this slot, which complete() therefore kept back.
        if (e.slot >= 0) r->give_slot(e.slot);
        return;
    }
    if (e.status != UCS_OK) return send_fail(r, ucx_error("ucp_am_send_nbx", e.status));
    if (e.slot >= 0) return refill(r, e.slot);
    send_contig_frags(r);
}

void Worker::send_on_host_rtr(Request *r, const AmHeader &rtr) {
    r->rreq_id = rtr.rreq_id;
    r->in_place = rtr.direct == 1;
    if (r->contig) return send_contig_frags(r);
    if (r->rts_out) return send_slots(r);
    for (const auto &[k, slot] : std::exchange(r->packed_frags, {})) {
        if (!r->in_place) {
            send_host_frag(r, k, slot);
        } else if (k < r->hdr.initial) {
            continue;  // named by the RTS already
        } else if (ucxdt_status_t st = announce(r, k, slot, 0)) {
            return send_fail(r, st);
        }
    }
}

ucxdt_status_t Worker::announce(Request *r, int64_t k, int slot, uint64_t offset) {
    AmHeader m{};
    m.kind = AmKind::ready;
    m.sreq_id = r->id;
    m.rreq_id = r->rreq_id;
    m.frag_index = k;
    m.slot = slot;
    m.offset = offset;
    return send_am(r->ep->ucp_ep, m, false);
}

// ucxdt_tag_send_nbx after its argument checks, under the worker's lock: a plain message where
// it may go at once, else a request whose tagged message is eager data, a plain message or an
// RTS.
ucxdt_status_ptr_t Worker::tag_send(Ep *ep, const void *buffer, int64_t count, ucxdt_type_t type, ucp_tag_t tag,
                                    const ucxdt_request_param_t *param) {
    Worker *w = this;
    ucs_status_ptr_t sent = nullptr;
    TypePtr resolved_type;
    PlanPtr resolved_plan;
    if (send_plain_first(ep, buffer, count, type, tag, param, &sent, &resolved_type, &resolved_plan)) {
        if (sent == nullptr) return nullptr;
        if (UCS_PTR_IS_ERR(sent)) return error_ptr(Worker::ucx_error("ucp_tag_send_nbx", UCS_PTR_STATUS(sent)));
    }
    Request *r = w->new_request(true, param);
    const ucxdt_status_t st = guard([&]() -> ucxdt_status_t {
        if (ucxdt_status_t e = check_flags(r, UCXDT_SEND_FLAG_SYNC | UCXDT_SEND_FLAG_PACKED)) return e;
        if (resolved_plan) prepare_resolved(r, const_cast<void *>(buffer), count, std::move(resolved_type), std::move(resolved_plan));
        else if (ucxdt_status_t e = prepare(r, const_cast<void *>(buffer), count, type)) return e;
        r->ep = ep;
        r->tag = tag;
        if (tag & w->cfg.plain_bit)
            return fail(UCXDT_ERR_INVALID_PARAM, "the tag sets the worker's plain_tag_bit");
        if (sent) {  // UCP has it, and its callback names r from now on
            as_plain(r, w->cfg.plain_bit);
            ++r->ucp_ops, ++r->ucp_pending;
            w->plain_sends[sent] = r;
            return UCXDT_OK;
        }
        ep->unsent.push_back(r);  // its tagged message goes after those of earlier sends
        r->unsent = true;
        if (w->cfg.plain_bit && r->contig && !(r->param.flags & UCXDT_SEND_FLAG_SYNC)) {
            as_plain(r, w->cfg.plain_bit);
            return w->send_tagged(r);
        }
        TagHeader &h = r->hdr;
        h.magic = kMagic;
        h.sender_uuid = w->uuid;
        h.sreq_id = r->id;
        h.packed = r->packed;
        const Signature sig = Signature::repeat(r->type->signature, count);
        h.sig_hash = sig.hash;
        h.sig_length = (r->param.flags & UCXDT_SEND_FLAG_PACKED) ? kPackedSignature : sig.length;
        // A receiver that can pull the message copies it in one GPU operation where eager takes
        // two (a pack into the wire buffer, an unpack out of it): faster from 256 B on, one
        // message at a time or a window (docs/performance.md, table c).
        const int64_t eager = r->gpu < 0           ? w->cfg.host_eager
                              : w->offers_pull(r) ? std::min(w->cfg.eager, w->cfg.ipc_eager)
                                                  : w->cfg.eager;
        if (r->packed <= eager) {
            h.kind = r->param.flags & UCXDT_SEND_FLAG_SYNC ? TagKind::eager_sync : TagKind::eager;
            if (r->gpu < 0) {  // UCP packs it from the layout when it sends (wire_dt.cpp)
                r->by_wire_dt = true;
                return w->send_tagged(r);
            }
            // A GPU layout packs into page-locked memory with zero copy (wire_alloc), on the
            // worker's stream of its GPU; the message goes once that is done (gpu_done), so that
            // a window of small sends queues its packs back to back instead of waiting for each.
            char *m = w->wire_alloc(r, kEagerHeaderBytes + static_cast<size_t>(r->packed));
            std::memcpy(m, &h, kEagerHeaderBytes);
            char *data = m + kEagerHeaderBytes;
            if (r->wire_slot >= 0 && r->packed > 0) {
                if (!w->gpu(r)) {
                    const ucxdt_status_t e = w->launch(r, GpuOp{GpuOp::send_tagged}, [&](const cudaStream_t *s) {
                        return move_bytes(r, s, data, 0, r->packed, true, false);
                    });
                    if (e) cudaStreamSynchronize(r->stream->cuda_stream());  // nothing may write the slot after
                    return e;
                }
                clear_error();  // no stream for r's GPU: packed synchronously
            }
            if (ucxdt_status_t e = move_bytes(r, nullptr, data, 0, r->packed, true, false)) return e;
            return w->send_tagged(r);
        }
        w->send_start(r);
        return UCXDT_OK;
    });
    if (st) w->complete(r, st);
    return w->hand_out(r);  // NULL when the message went at once
}

}  // namespace ucxdt::rndv
