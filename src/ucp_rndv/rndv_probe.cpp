// Probed messages (include/ucxdt/ucxdt_ucp.h, ucxdt_tag_probe_nb): a probe takes a tagged
// message out of UCP's unexpected queue and receives it, since its packed length is in the
// ucxdt header; the message then waits in Worker::probed for the receive that claims it.
// With plain messages (ucxdt_worker_params_t::plain_tag_bit) every message leaves UCP this way,
// in arrival order, and the worker matches it to its receives itself.
#include "ucp_rndv/rndv_worker.hpp"

#include "base/address.hpp"
#include "base/error.hpp"

#include <algorithm>
#include <cstring>

namespace ucxdt::rndv {

namespace {

void destroy(Message *m) { delete static_cast<ucxdt_tag_message *>(m); }

void probe_received(void *request, ucs_status_t status, const ucp_tag_recv_info_t *info, void *user_data) {
    auto *m = static_cast<Message *>(user_data);
    ucp_request_free(request);
    if (!m->worker) return destroy(m);  // its worker is gone (drop_probed)
    m->arrived = true;
    m->status = status;
    m->length = status == UCS_OK && info ? info->length : 0;
}

}  // namespace

// A plain message's UCP receive: into the receive's buffer (Request::plain), which then ends
// here, since complete() only queues r and nothing of a plain receive calls UCP (an event per
// message cost about 150 instructions); or into its wire buffer after an eager header that
// makes it an eager message of packed data, which progress() takes on.
void plain_received(void *request, ucs_status_t status, const ucp_tag_recv_info_t *info, void *user_data) {
    auto *r = static_cast<Request *>(user_data);
    if (ucp_callback(r, request)) return;
    Worker *w = r->worker;
    r->ucp_done = true;
    w->mark(r, "ucp_received");
    ucp_request_free(request);
    if (r->plain) {
        w->op_done(r);
        if (!w->recv_ended(r, status)) w->recv_plain_done(r, info ? info->length : 0);
        if (r->user_freed) w->release(r);  // maybe its last UCP operation
        return;
    }
    Event &e = w->events.emplace_back();
    e.kind = Event::tag_recv_done;
    e.req = r;
    e.status = status;
    e.sender_tag = r->sender_tag;
    if (info) e.length = info->length + kEagerHeaderBytes;
}

// Whether a plain message of `length` bytes may land in r: UCXDT_OK, else r's error. Packed
// data: the receive must have room, and its primitives must hold it whole.
ucxdt_status_t plain_fits(const Request *r, size_t length) {
    TagHeader h{};
    h.packed = static_cast<int64_t>(length);
    h.sig_length = kPackedSignature;
    return check_signature(r, h);
}

// Called back for messages given back unreceived: nothing waits for them.
void dropped(void *, ucs_status_t, const ucp_tag_recv_info_t *, void *) {}

ucxdt_tag_recv_info_t Message::info() const {
    ucxdt_tag_recv_info_t i{sender_tag, static_cast<int64_t>(length)};
    if (plain) return i;
    TagHeader h{};
    if (length >= kEagerHeaderBytes) {
        std::memcpy(&h, data.data(), kEagerHeaderBytes);
        if (h.magic == kMagic) i.length = h.packed;
    }
    return i;
}

Message *Worker::probed_match(ucp_tag_t tag, ucp_tag_t mask) const {
    for (Message *m : probed)
        if (!m->removed && !m->claim && ((m->sender_tag ^ tag) & mask) == 0) return m;
    return nullptr;
}

// Receives UCP message `um` as `length` bytes at `buf`; `cb` gets `user_data`, also when the
// message is all here already: it then runs inside this call (NO_IMM_CMPL).
static ucs_status_ptr_t recv_bytes(ucp_worker_h uw, ucp_tag_message_h um, void *buf, size_t length,
                                   ucp_tag_recv_nbx_callback_t cb, void *user_data) {
    ucp_request_param_t p{};
    p.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA | UCP_OP_ATTR_FIELD_DATATYPE |
                     UCP_OP_ATTR_FLAG_NO_IMM_CMPL;
    p.cb.recv = cb;
    p.user_data = user_data;
    p.datatype = ucp_dt_make_contig(1);
    return ucp_tag_msg_recv_nbx(uw, buf, length, um, &p);
}

// Receives message m's ucxdt header and data, all of it (an eager message, or an RTS).
static void fetch(Message *m, ucp_worker_h uw, ucp_tag_message_h um, size_t length) {
    m->data.resize(length);
    const ucs_status_ptr_t s = recv_bytes(uw, um, m->data.data(), length, probe_received, m);
    if (UCS_PTR_IS_ERR(s)) m->arrived = true, m->status = UCS_PTR_STATUS(s);
}

Message *Worker::probe(ucp_tag_t tag, ucp_tag_t mask) {
    const ucp_tag_t b = cfg.plain_bit;
    if (b) take_arrivals(), tag &= ~b, mask &= ~b;  // every message has left UCP, in arrival order
    Message *m = probed_match(tag, mask);
    // A message whose receive from UCP failed (its peer did) is no message: dropped.
    while (m && m->arrived && m->status != UCS_OK) {
        probed.erase(std::find(probed.begin(), probed.end(), m));
        destroy(m);
        m = probed_match(tag, mask);
    }
    if (b) {
        if (m && m->handle && !m->plain) {  // its packed length is in its header: received now
            const ucp_tag_message_h um = std::exchange(m->handle, nullptr);
            fetch(m, ucp_worker, um, m->length);
        }
        return m;
    }
    if (m) return m;
    ucp_tag_recv_info_t ui{};
    const ucp_tag_message_h um = ucp_tag_probe_nb(ucp_worker, tag, mask, 1, &ui);
    if (!um) return nullptr;
    m = new ucxdt_tag_message;
    m->worker = this;
    m->sender_tag = ui.sender_tag;
    probed.push_back(m);
    fetch(m, ucp_worker, um, ui.length);
    return m;
}

unsigned Worker::take_arrivals() {
    unsigned n = 0;
    ucp_tag_recv_info_t ui{};
    // Mask 0: UCP's oldest message, whatever its tag.
    while (const ucp_tag_message_h um = ucp_tag_probe_nb(ucp_worker, 0, 0, 1, &ui)) {
        ++n;
        const bool plain = (ui.sender_tag & cfg.plain_bit) != 0;
        const ucp_tag_t tag = ui.sender_tag & ~cfg.plain_bit;
        const auto it = std::find_if(posted.begin(), posted.end(),
                                     [tag](const Request *r) { return ((tag ^ r->tag) & r->tag_mask) == 0; });
        if (it != posted.end()) {
            Request *r = *it;
            // Mostly the oldest receive: pop_front costs a tenth of deque::erase's general case.
            if (it == posted.begin()) posted.pop_front();
            else posted.erase(it);
            receive_message(r, um, tag, ui.length, plain);
            continue;
        }
        Message *m = new ucxdt_tag_message;
        m->worker = this;
        m->sender_tag = tag;
        m->handle = um;
        m->plain = plain;
        m->length = ui.length;
        m->arrived = plain;  // a probe answers from the tag and length alone
        probed.push_back(m);
    }
    return n;
}

void Worker::take(Message *m, Request *r) {
    if (!m->handle) return claim(m, r);
    probed.erase(std::find(probed.begin(), probed.end(), m));
    receive_message(r, m->handle, m->sender_tag, m->length, m->plain);
    destroy(m);
}

void Worker::receive_message(Request *r, ucp_tag_message_h um, ucp_tag_t sender_tag, size_t length, bool plain) {
    r->matched = true;  // no longer cancelable
    r->sender_tag = sender_tag;
    mark(r, "taken");
    ucxdt_status_t st = UCXDT_OK;
    if (!plain) {
        st = post_recv(r, um);
    } else if ((st = plain_fits(r, length))) {
        drop_message(um);  // nothing is written
    } else {
        // Straight into a contiguous host buffer (UCP truncates what does not fit, and says so);
        // any other layout takes it as an eager message of packed data (recv_matched).
        r->plain = r->contig;
        char *dst;
        size_t cap;
        if (r->plain) {
            dst = at(r->buffer, r->plan->base);
            cap = static_cast<size_t>(r->packed);
        } else {
            r->by_wire_dt = false;
            char *w = wire_alloc(r, kEagerHeaderBytes + length);
            TagHeader h{};
            h.magic = kMagic;
            h.kind = TagKind::eager;
            h.packed = static_cast<int64_t>(length);
            h.sig_length = kPackedSignature;
            std::memcpy(w, &h, kEagerHeaderBytes);
            dst = w + kEagerHeaderBytes;
            cap = length;
        }
        ++r->ucp_ops, ++r->ucp_pending;  // first: the callback may run inside the call
        const ucs_status_ptr_t s = recv_bytes(ucp_worker, um, dst, cap, plain_received, r);
        if (UCS_PTR_IS_ERR(s)) --r->ucp_ops, --r->ucp_pending, st = ucx_error("ucp_tag_msg_recv_nbx", UCS_PTR_STATUS(s));
    }
    if (st) complete(r, st);
}

void Worker::drop_message(ucp_tag_message_h um) {
    const ucs_status_ptr_t s = recv_bytes(ucp_worker, um, nullptr, 0, dropped, nullptr);  // truncated
    if (UCS_PTR_IS_PTR(s)) ucp_request_free(s);
}

void Worker::recv_plain_done(Request *r, size_t length) {
    r->packed = static_cast<int64_t>(length);  // checked before it was received (plain_fits)
    complete(r, UCXDT_OK);
}

void Worker::claim(Message *m, Request *r) {
    m->claim = r;
    r->matched = true;  // no longer cancelable
    r->sender_tag = m->sender_tag;
}

unsigned Worker::deliver_probed() {
    unsigned n = 0;
    for (auto it = probed.begin(); it != probed.end();) {
        Message *m = *it;
        if (!m->arrived || !m->claim) {
            ++it;
            continue;
        }
        it = probed.erase(it);
        // As a GPU layout's receive from its wire slot: recv_matched reads the message in `wire`.
        Request *r = m->claim;
        r->by_wire_dt = false;
        r->wire = std::move(m->data);
        r->wire_len = m->length;
        Event &e = events.emplace_back();
        e.kind = Event::tag_recv_done;
        e.req = r;
        e.status = m->status;
        e.length = m->length;
        e.sender_tag = m->sender_tag;
        ++r->ucp_ops;  // the event's
        destroy(m);
        ++n;
    }
    return n;
}

void Worker::drop_probed() {
    for (Message *m : probed) {
        if (m->handle) drop_message(m->handle), destroy(m);
        else if (m->arrived) destroy(m);
        else m->worker = nullptr;  // UCP's callback frees it
    }
    probed.clear();
}

}  // namespace ucxdt::rndv
