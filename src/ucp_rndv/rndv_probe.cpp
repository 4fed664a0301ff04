// Probed messages (include/ucxdt/ucxdt_ucp.h, ucxdt_tag_probe_nb): a probe takes a tagged
// message out of UCP's unexpected queue and receives it, since its packed length is in the
// ucxdt header; the message then waits in Worker::probed for the receive that claims it.
#include "ucp_rndv/rndv_worker.hpp"

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

ucxdt_tag_recv_info_t Message::info() const {
    ucxdt_tag_recv_info_t i{sender_tag, static_cast<int64_t>(length)};
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

Message *Worker::probe(ucp_tag_t tag, ucp_tag_t mask) {
    Message *m = probed_match(tag, mask);
    // A message whose receive from UCP failed (its peer did) is no message: dropped.
    while (m && m->arrived && m->status != UCS_OK) {
        probed.erase(std::find(probed.begin(), probed.end(), m));
        destroy(m);
        m = probed_match(tag, mask);
    }
    if (m) return m;
    ucp_tag_recv_info_t ui{};
    const ucp_tag_message_h um = ucp_tag_probe_nb(ucp_worker, tag, mask, 1, &ui);
    if (!um) return nullptr;
    m = new ucxdt_tag_message;
    m->worker = this;
    m->sender_tag = ui.sender_tag;
    m->data.resize(ui.length);
    probed.push_back(m);
    ucp_request_param_t p{};
    // The callback runs inside this call when the message is all here (NO_IMM_CMPL).
    p.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA | UCP_OP_ATTR_FIELD_DATATYPE |
                     UCP_OP_ATTR_FLAG_NO_IMM_CMPL;
    p.cb.recv = probe_received;
    p.user_data = m;
    p.datatype = ucp_dt_make_contig(1);
    const ucs_status_ptr_t s = ucp_tag_msg_recv_nbx(ucp_worker, m->data.data(), ui.length, um, &p);
    if (UCS_PTR_IS_ERR(s)) m->arrived = true, m->status = UCS_PTR_STATUS(s);
    return m;
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
        if (m->arrived) destroy(m);
        else m->worker = nullptr;  // UCP's callback frees it
    }
    probed.clear();
}

}  // namespace ucxdt::rndv
