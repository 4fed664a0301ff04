// The receiving half of the rendezvous (include/ucxdt/ucxdt_ucp.h): checks of the matched
// message, the GETs, unpacking, and the replies (ACK, ATS) to the sender.
#include "ucp_rndv/rndv_worker.hpp"

#include "base/address.hpp"
#include "base/error.hpp"
#include "dt/api_util.hpp"
#include "dt/packed_prefix.hpp"

#include <algorithm>
#include <cstring>

namespace ucxdt::rndv {

// The message's signature against that of the receive's first h.packed bytes, which may end
// inside an element (MPI: the receive takes the whole primitives that arrived). Packed data on
// either side (MPI_PACKED, UCXDT_*_FLAG_PACKED) matches any signature that ends on a primitive.
ucxdt_status_t check_signature(const Request *r, const TagHeader &h) {
    if (h.packed > r->packed) return UCXDT_ERR_TRUNCATED;
    const Type &t = *r->type;
    const bool any = h.sig_length == kPackedSignature || (r->param.flags & UCXDT_RECV_FLAG_PACKED);
    Signature s;
    if (t.size > 0 && h.packed % t.size == 0) {
        if (any) return UCXDT_OK;
        s = Signature::repeat(t.signature, h.packed / t.size);
    } else {
        PackedPrefix p;
        if (!packed_prefix(t, h.packed, &p)) return UCXDT_ERR_TYPE_MISMATCH;
        if (any) return UCXDT_OK;
        s = p.sig;
    }
    return s.hash == h.sig_hash && s.length == h.sig_length ? UCXDT_OK : UCXDT_ERR_TYPE_MISMATCH;
}

bool Worker::recv_matched(Request *r, const Event &e) {
    mark(r, "matched");
    r->sender_tag = e.sender_tag;
    const char *m = wire_data(r);
    if (!r->by_wire_dt) {
        // The kind, among the eager header's fields, says how long the header is.
        r->hdr_got = std::min(e.length, kEagerHeaderBytes);
        std::memcpy(&r->hdr, m, r->hdr_got);
        if (r->hdr_got == kEagerHeaderBytes && !is_eager(r->hdr.kind)) {
            r->hdr_got = std::min(e.length, sizeof r->hdr);
            std::memcpy(&r->hdr, m, r->hdr_got);
        }
    } else if (!r->wire_spilled && r->hdr_got >= header_bytes(r->hdr.kind)) {
        // The header alone arrived, into hdr (wire_dt.cpp).
        char *landing = wire_alloc(r, landing_bytes(cfg));
        std::memcpy(landing, &r->hdr, header_bytes(r->hdr.kind));
        m = landing;
    }
    const TagHeader &h = r->hdr;
    const size_t hb = header_bytes(h.kind);
    if (e.length < kEagerHeaderBytes || r->hdr_got < hb || h.magic != kMagic) {
        complete(r, fail(UCXDT_ERR_UCX, "a message without a ucxdt header matched the receive"));
        return true;
    }
    const ucxdt_status_t sig = r->wire_direct ? UCXDT_OK : check_signature(r, h);  // direct: checked
    if (is_eager(h.kind)) {
        if (h.kind == TagKind::eager_sync) answer_sync(h, r->id, sig);
        if (sig) return complete(r, sig), true;
        if (e.length != hb + static_cast<size_t>(h.packed)) {
            complete(r, fail(UCXDT_ERR_UCX, "eager message of the wrong length"));
            return true;
        }
        r->packed = h.packed;
        if (r->wire_direct) return complete(r, UCXDT_OK), true;
        // A GPU layout unpacks out of the page-locked wire slot on the worker's stream of its
        // GPU, and completes when that is done (gpu_done), so that a window of small receives
        // queues its unpacks back to back.
        if (r->wire_slot >= 0 && h.packed > 0) {
            if (!gpu(r)) {
                r->wire_busy = true;
                const ucxdt_status_t st = launch(r, GpuOp{GpuOp::recv_eager}, [&](const cudaStream_t *s) {
                    return move_bytes(r, s, const_cast<char *>(m) + hb, 0, h.packed, false, false);
                });
                if (st) recv_eager_done(r, st);
                return true;
            }
            clear_error();  // no stream for r's GPU: unpacked synchronously
        }
        complete(r, move_bytes(r, nullptr, const_cast<char *>(m) + hb, 0, h.packed, false, false));
        return true;
    }
    // RTS: keep the slot list and the rkey (or IPC reference); the tagged message goes.
    r->matched = true;
    r->status_pending = sig;
    r->nfrags = h.frag > 0 ? (h.packed + h.frag - 1) / h.frag : 0;
    if (!sig && !h.ipc && !r->contig && h.frag > cfg.frag)
        r->status_pending = fail(UCXDT_ERR_UNSUPPORTED, "the sender's fragments (UCXDT_FRAG_SIZE " +
                                 std::to_string(h.frag) + ") exceed this worker's staging slots");
    else if (!h.ipc && !r->contig)
        r->slot_level = staging_level(cfg.frag, h.frag);  // our slots that hold one fragment
    r->remote_slots.assign(static_cast<size_t>(r->nfrags), -1);
    const char *p = m + sizeof h;
    if (h.ipc) {
        if (e.length < sizeof h + sizeof r->peer_ref) {
            complete(r, fail(UCXDT_ERR_UCX, "an IPC RTS without its reference"));
            return true;
        }
        std::memcpy(&r->peer_ref, p, sizeof r->peer_ref);
        if (h.pull && e.length >= sizeof h + 2 * sizeof r->peer_ref + sizeof r->pull_shape) {
            std::memcpy(&r->pull_ref, p + sizeof r->peer_ref, sizeof r->pull_ref);
            std::memcpy(&r->pull_shape, p + 2 * sizeof r->peer_ref, sizeof r->pull_shape);
            r->pull_offered = true;
        }
        return recv_advance(r);
    }
    for (int i = 0; i < h.initial && i < r->nfrags; ++i) std::memcpy(&r->remote_slots[i], p + i * 4, 4);
    p += static_cast<size_t>(h.initial) * 4;
    r->rkey_buf.assign(p, p + h.rkey_len);
    return recv_advance(r);
}

void Worker::answer_sync(const TagHeader &h, uint64_t rreq_id, ucxdt_status_t st) {
    AmHeader ats{};
    ats.kind = AmKind::ats;
    ats.status = st;
    ats.sreq_id = h.sreq_id;
    ats.rreq_id = rreq_id;
    if (failed_peers.count(h.sender_uuid)) return;
    const auto it = peers.find(h.sender_uuid);
    if (it == peers.end()) return sync_due.emplace_back(h.sender_uuid, ats), void();  // sent on its HELLO
    send_am(it->second.ep, ats, false);  // a failure ends the sender's request through its peer's
}

// Ends a matched rendezvous: ATS to the sender (its request completes with the same status),
// then the receive itself.
void Worker::recv_eager_done(Request *r, ucxdt_status_t st) {
    if (st && r->stream) quiesce(r->stream);  // nothing may read the slot after
    r->wire_busy = false;
    wire_free(r);
    complete(r, st);
}

void Worker::recv_finish(Request *r, ucxdt_status_t st) {
    // Failing, our own GPU work on the request must end before its slots and buffer are free.
    if (st && r->stream) quiesce(r->stream);
    if (r->peer_lost || st == UCXDT_ERR_PEER_FAILURE) return complete(r, st);
    AmHeader ats{};
    ats.kind = AmKind::ats;
    ats.status = st;
    ats.sreq_id = r->hdr.sreq_id;
    ats.rreq_id = r->id;
    const ucxdt_status_t sent = send_am(r->peer, ats, false);
    mark(r, "ats_sent");
    if (!st) r->packed = r->hdr.packed;
    complete(r, st ? st : sent);
}

bool Worker::recv_advance(Request *r) {
    if (r->status != UCXDT_INPROGRESS) return true;
    if (!r->peer) {
        if (failed_peers.count(r->hdr.sender_uuid))
            return complete(r, fail(UCXDT_ERR_PEER_FAILURE, "the sender failed")), true;
        const auto it = peers.find(r->hdr.sender_uuid);
        if (it == peers.end()) return false;  // its HELLO has not arrived yet
        r->peer = it->second.ep;
    }
    if (r->status_pending) return recv_end(r, r->status_pending), true;
    if (r->hdr.ipc) return recv_start_ipc(r);
    if (r->hdr.am_frags && !r->rtr_sent && r->hdr.rkey_len > 0 && cfg.host_shm) {
        // The sender is on this node: read its slots in place if its staging maps here.
        r->peer_slots = peer_staging.map(r->peer, r->hdr.sender_uuid, r->hdr.remote_addr, r->hdr.staging_bytes,
                                         r->rkey_buf, r->gpu >= 0);
        if (r->peer_slots && r->gpu >= 0 && gpu(r)) clear_error();
    }
    if (!r->contig && !r->peer_slots && r->slots.empty() && r->frags_done < r->nfrags) {
        if (ucxdt_status_t st = take_slots(r, static_cast<int>(std::min<int64_t>(cfg.depth, r->nfrags))))
            return recv_finish(r, st), true;
        if (r->slots.empty()) return false;  // staging exhausted: wait
        r->free_slots = r->slots;
        stage_on_gpu(r);
    }
    if (r->hdr.am_frags) return recv_advance_am(r);
    if (!r->rkey) {
        const ucs_status_t us = ucp_ep_rkey_unpack(r->peer, r->rkey_buf.data(), &r->rkey);
        if (us != UCS_OK) {
            recv_finish(r, fail(UCXDT_ERR_UCX, std::string("ucp_ep_rkey_unpack: ") + ucs_status_string(us)));
            return true;
        }
    }
    while (r->next_get < r->nfrags && r->gets_in_flight < cfg.depth) {
        const int64_t k = r->next_get;
        if (!r->hdr.contig && r->remote_slots[k] < 0) break;   // not packed by the sender yet
        if (!r->contig && r->free_slots.empty()) break;
        int slot = -1;
        char *local = recv_landing(r, k, &slot);
        const uint64_t remote = r->hdr.contig ? r->hdr.remote_addr + k * r->hdr.frag
                                              : r->hdr.remote_addr + r->remote_slots[k] * r->hdr.frag;
        auto *g = new FragOp{r, Event::get_done, k, slot};
        ucp_request_param_t p{};
        p.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA;
        p.cb.send = frag_op_done;
        p.user_data = g;
        ucs_status_ptr_t s = ucp_get_nbx(r->peer, local, static_cast<size_t>(r->frag_bytes(k)),
                                         remote, r->rkey, &p);
        ++r->next_get, ++r->gets_in_flight, ++r->ucp_ops, ++host_frags.get;
        frag_op_posted(s, g);
    }
    return true;
}

void Worker::recv_on_get(Request *r, const Event &e) {
    --r->gets_in_flight;
    if (r->status != UCXDT_INPROGRESS) return;  // ended by the worker's destruction
    if (e.status != UCS_OK && !r->status_pending) r->status_pending = ucx_error("ucp_get_nbx", e.status);
    // The fragment is ours now: the sender may refill its slot while we unpack (fragments sent as
    // active messages free the sender's slot through UCP).
    if (!r->status_pending && !r->hdr.contig && !r->hdr.am_frags)
        if (ucxdt_status_t st = acknowledge(r, e.frag, r->remote_slots[e.frag])) r->status_pending = st;
    if (!r->status_pending && e.slot >= 0) {
        // Unpacked from our slot (gpu_done then frees it, counts the fragment and goes on).
        GpuOp op{GpuOp::recv_frag};
        op.frag = e.frag;
        op.slot = e.slot;
        const ucxdt_status_t st = launch(r, op, [&](const cudaStream_t *s) {
            return move_bytes(r, s, r->slot_mem(e.slot), e.frag * r->hdr.frag, r->frag_bytes(e.frag), false, false);
        });
        if (!st) return;
        r->status_pending = st;
    }
    if (e.slot >= 0) r->free_slots.push_back(e.slot);
    recv_frag_done(r);
}

ucxdt_status_t Worker::acknowledge(Request *r, int64_t k, int slot) {
    AmHeader ack{};
    ack.kind = AmKind::ack;
    ack.sreq_id = r->hdr.sreq_id;
    ack.rreq_id = r->id;
    ack.frag_index = k;
    ack.slot = slot;
    return send_am(r->peer, ack, false);
}

void Worker::recv_end(Request *r, ucxdt_status_t st) {
    if (!r->status_pending) r->status_pending = st;
    if (r->gets_in_flight == 0) recv_finish(r, r->status_pending);
}

void Worker::recv_frag_done(Request *r) {
    if (r->status_pending) return recv_end(r, r->status_pending);
    if (++r->frags_done == r->nfrags) return recv_finish(r, UCXDT_OK);
    recv_advance(r);
}

char *Worker::recv_landing(Request *r, int64_t k, int *slot) {
    if (r->contig) {
        *slot = -1;
        return at(r->buffer, r->plan->base + k * r->hdr.frag);
    }
    *slot = r->free_slots.back();
    r->free_slots.pop_back();
    return r->slot_mem(*slot);
}

// ---- Fragments as active messages ---------------------------------------------------------

namespace {

void got_am(void *request, ucs_status_t status, size_t, void *user_data) { frag_op_done(request, status, user_data); }

}  // namespace

bool Worker::recv_advance_am(Request *r) {
    // An RTS that names the slot of every fragment, to a receiver that reads them in place, needs
    // no RTR: the fragments are unpacked now, and the ATS ends the transfer.
    const bool named = r->peer_slots && r->hdr.initial >= r->nfrags;
    if (!r->rtr_sent && !named) {
        AmHeader rtr{};
        rtr.kind = AmKind::rtr;
        rtr.sreq_id = r->hdr.sreq_id;
        rtr.rreq_id = r->id;
        rtr.direct = r->peer_slots ? 1 : 0;
        if (ucxdt_status_t st = send_am(r->peer, rtr, false)) return recv_finish(r, st), true;
        r->rtr_sent = true;
    }
    if (r->peer_slots) return recv_in_place(r);
    while (!r->arrived.empty() && (r->contig || !r->free_slots.empty())) {
        const Request::Arrived f = r->arrived.front();
        r->arrived.erase(r->arrived.begin());  // at most a pipeline's depth of them
        if (f.frag < 0 || f.frag >= r->nfrags || static_cast<int64_t>(f.length) != r->frag_bytes(f.frag)) {
            drop_frag(f.data);
            return recv_end(r, fail(UCXDT_ERR_UCX, "a fragment of the wrong index or size arrived")), true;
        }
        int slot = -1;
        char *dst = recv_landing(r, f.frag, &slot);
        auto *g = new FragOp{r, Event::get_done, f.frag, slot};
        ++r->gets_in_flight, ++r->ucp_ops, ++host_frags.am;
        if (!f.rndv) {  // eager: UCP's copy of the data, held since the handler
            std::memcpy(dst, f.data, f.length);
            drop_frag(f.data);
            frag_op_done(nullptr, UCS_OK, g);
            continue;
        }
        ucp_request_param_t p{};
        p.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA | UCP_OP_ATTR_FIELD_MEMORY_TYPE;
        p.cb.recv_am = got_am;
        p.user_data = g;
        p.memory_type = UCS_MEMORY_TYPE_HOST;
        const ucs_status_ptr_t s = ucp_am_recv_data_nbx(ucp_worker, f.data, dst, f.length, &p);
        frag_op_posted(s, g);
    }
    return true;
}

bool Worker::recv_in_place(Request *r) {
    while (r->next_get < r->nfrags && r->remote_slots[r->next_get] >= 0 && r->gets_in_flight < cfg.depth &&
           !r->status_pending) {
        GpuOp op{GpuOp::recv_in_place};
        op.frag = r->next_get++;
        op.slot = r->remote_slots[op.frag];
        if ((op.slot + int64_t{1}) * r->hdr.frag > r->hdr.staging_bytes)
            return recv_end(r, fail(UCXDT_ERR_UCX, "a fragment announced outside the sender's staging")), true;
        char *src = r->peer_slots + op.slot * r->hdr.frag;
        ++r->gets_in_flight, ++host_frags.in_place;
        // On the GPU's stream for a GPU layout, else now by the CPU; the ACK follows (gpu_done).
        const ucxdt_status_t st = launch(r, op, [&](const cudaStream_t *s) {
            return move_bytes(r, s, src, op.frag * r->hdr.frag, r->frag_bytes(op.frag), false, false);
        });
        if (st) --r->gets_in_flight, recv_end(r, st);
    }
    return true;
}

void Worker::recv_on_frag(const Event &e) {
    const auto it = requests.find(e.am.rreq_id);
    Request *r = it == requests.end() ? nullptr : it->second;
    if (!r || r->is_send || r->status != UCXDT_INPROGRESS || !r->hdr.am_frags || r->status_pending)
        return drop_frag(e.data);  // for a receive that ended or is ending
    r->arrived.push_back(Request::Arrived{e.am.frag_index, e.data, e.length, e.rndv});
    recv_advance(r);
}

void Worker::recv_on_ready(const AmHeader &h) {
    const auto it = requests.find(h.rreq_id);
    if (it == requests.end() || it->second->is_send || it->second->status != UCXDT_INPROGRESS) return;
    Request *r = it->second;
    if (r->ipc) return recv_ipc_frag(r, h.frag_index, h.slot, h.offset);
    if (h.frag_index >= 0 && h.frag_index < r->nfrags) r->remote_slots[h.frag_index] = h.slot;
    recv_advance(r);
}

// UCP's callback of a receive posted to it (post_recv): queued for progress.
static void tag_received(void *request, ucs_status_t status, const ucp_tag_recv_info_t *info, void *user_data) {
    auto *r = static_cast<Request *>(user_data);
    if (ucp_callback(r, request)) return;
    Event &e = r->worker->events.emplace_back();  // in place: an Event is 416 bytes, once per message
    e.kind = Event::tag_recv_done;
    e.req = r;
    e.status = status;
    if (info) e.length = info->length, e.sender_tag = info->sender_tag;
    r->ucp_req = nullptr;
    r->ucp_done = true;
    r->worker->mark(r, "ucp_received");
    ucp_request_free(request);
}

ucxdt_status_t Worker::post_recv(Request *r, ucp_tag_message_h handle) {
    ucp_request_param_t p{};
    // No immediate completion: the callback (maybe called inside this call) then sees
    // every receive, with its length and sender tag.
    p.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA | UCP_OP_ATTR_FLAG_NO_IMM_CMPL;
    p.cb.recv = tag_received;
    p.user_data = r;
    // A host layout takes the message through the wire datatype, whose callbacks may run
    // inside this call (an unexpected message); a GPU layout lands it in its wire slot.
    void *landing = r;
    size_t count = 1;
    if (r->gpu < 0) {
        r->by_wire_dt = true;
        p.op_attr_mask |= UCP_OP_ATTR_FIELD_DATATYPE;
        p.datatype = wire_dt;
    } else {
        landing = wire_alloc(r, landing_bytes(cfg));
        count = r->wire_len;
    }
    const ucs_status_ptr_t s = handle ? ucp_tag_msg_recv_nbx(ucp_worker, landing, count, handle, &p)
                                      : ucp_tag_recv_nbx(ucp_worker, landing, count, r->tag, r->tag_mask, &p);
    if (UCS_PTR_IS_ERR(s))
        return fail(UCXDT_ERR_UCX, std::string(handle ? "ucp_tag_msg_recv_nbx: " : "ucp_tag_recv_nbx: ") +
                                       ucs_status_string(UCS_PTR_STATUS(s)));
    if (s == nullptr) return fail(UCXDT_ERR_UCX, "UCP's tagged receive completed without a request");
    ++r->ucp_ops;
    ++r->ucp_pending;
    if (!r->ucp_done && !handle) r->ucp_req = s;  // cancelable until matched
    return UCXDT_OK;
}

// A new receive of (buffer, count, type) whose `match` (under guard) takes or posts it; a
// receive that fails there ends at once, with its error as the returned pointer.
template <class Match>
static ucxdt_status_ptr_t new_receive(Worker *w, void *buffer, int64_t count, ucxdt_type_t type,
                                      const ucxdt_request_param_t *param, Match match) {
    Request *r = w->new_request(false, param);
    const ucxdt_status_t st = guard([&]() -> ucxdt_status_t {
        if (ucxdt_status_t e = check_flags(r, UCXDT_RECV_FLAG_PACKED)) return e;
        if (ucxdt_status_t e = prepare(r, buffer, count, type)) return e;
        return match(r);
    });
    if (st) {
        w->complete(r, st);
        return w->hand_out(r);
    }
    return r;
}

// ucxdt_tag_recv_nbx after its argument checks, under the worker's lock.
ucxdt_status_ptr_t Worker::tag_recv(void *buffer, int64_t count, ucxdt_type_t type, ucp_tag_t tag, ucp_tag_t tag_mask,
                                    const ucxdt_request_param_t *param) {
    return new_receive(this, buffer, count, type, param, [&](Request *r) -> ucxdt_status_t {
        r->tag = tag;
        r->tag_mask = tag_mask;
        if (const ucp_tag_t b = cfg.plain_bit) {  // matched here, in arrival order
            r->tag &= ~b, r->tag_mask &= ~b;
            take_arrivals();
            if (Message *m = probed_match(r->tag, r->tag_mask)) return take(m, r), UCXDT_OK;
            posted.push_back(r);
            return UCXDT_OK;
        }
        // A message that a probe took out of UCP matches first: it came before UCP's.
        if (Message *m = probed.empty() ? nullptr : probed_match(tag, tag_mask)) return claim(m, r), UCXDT_OK;
        return post_recv(r, nullptr);
    });
}

// ucxdt_tag_msg_recv_nbx after its argument checks: m is a message a probe removed, which no
// receive has taken. A receive that fails leaves it for another ucxdt_tag_msg_recv_nbx.
ucxdt_status_ptr_t Worker::tag_msg_recv(void *buffer, int64_t count, ucxdt_type_t type, Message *m,
                                        const ucxdt_request_param_t *param) {
    return new_receive(this, buffer, count, type, param, [&](Request *r) -> ucxdt_status_t {
        r->tag = m->sender_tag;
        r->tag_mask = ~ucp_tag_t{0};
        take(m, r);
        return UCXDT_OK;
    });
}

bool Worker::end_unmatched(Request *r, ucxdt_status_t st) {
    Worker *w = this;
    if (r->is_send || r->matched || r->status != UCXDT_INPROGRESS) return false;
    if (auto it = std::find(w->posted.begin(), w->posted.end(), r); it != w->posted.end()) {
        w->posted.erase(it);  // never posted to UCP
        w->complete(r, st);
        return true;
    }
    if (!r->ucp_req) return false;
    r->cancel_status = st;
    ucp_request_cancel(w->ucp_worker, r->ucp_req);
    return true;
}

}  // namespace ucxdt::rndv
