// The tagged message of a host layout as a UCP generic datatype (Request::by_wire_dt): UCP packs
// the header and the packed stream through these callbacks straight from the user's layout into
// its own send buffer, and hands a receive's bytes straight to the unpack callback. Both sides
// are host memory, so the CPU engine runs without asking CUDA what the buffers are (two
// cudaPointerGetAttributes calls a message on a GPU machine). Through a
// contiguous wire buffer each side made one more copy of every eager message, and the pipeline
// sent 4 KiB host messages slower than UCP's generic datatype path (issue 22).
#include "ucp_rndv/rndv_worker.hpp"

#include "base/error.hpp"
#include "dt/cpu_engine.hpp"

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <string>
#include <utility>

namespace ucxdt::rndv {

namespace {

constexpr size_t kKindAt = offsetof(TagHeader, kind);

// The header's length once its kind has arrived (header_bytes), the longest until then.
size_t header_len(const Request *r) { return r->hdr_got > kKindAt ? header_bytes(r->hdr.kind) : sizeof(TagHeader); }

void *start_pack(void *, const void *buffer, size_t) { return const_cast<void *>(buffer); }
void *start_unpack(void *, void *buffer, size_t) { return buffer; }

// A send's message; a receive takes what a posted receive reserves (landing_bytes): UCP fails
// a longer message with UCS_ERR_MESSAGE_TRUNCATED.
size_t packed_size(void *state) {
    const auto *r = static_cast<const Request *>(state);
    return r->is_send ? header_bytes(r->hdr.kind) + static_cast<size_t>(r->packed) : landing_bytes(r->worker->cfg);
}

size_t pack(void *state, size_t offset, void *dest, size_t max_length) {
    auto *r = static_cast<Request *>(state);
    const size_t hb = header_bytes(r->hdr.kind), total = hb + static_cast<size_t>(r->packed);
    const size_t n = offset < total ? std::min(max_length, total - offset) : 0;
    char *d = static_cast<char *>(dest);
    if (r->wire_copied) return std::memcpy(d, r->wire.data() + offset, n), n;  // Worker::complete
    size_t done = 0;
    if (offset < hb) {
        done = std::min(n, hb - offset);
        std::memcpy(d, reinterpret_cast<const char *>(&r->hdr) + offset, done);
    }
    if (done < n && r->status != UCXDT_INPROGRESS) {
        std::memset(d + done, 0, n - done);  // ended and not copied: the layout is the caller's again
    } else if (done < n) {
        cpu::pack(*r->plan, r->buffer, static_cast<int64_t>(offset + done - hb), static_cast<int64_t>(n - done),
                  d + done);
    }
    return n;
}

// An eager message whose header matches the receive: its data may go straight to the layout.
bool direct(const Request *r) {
    return r->hdr.magic == kMagic && is_eager(r->hdr.kind) && check_signature(r, r->hdr) == UCXDT_OK;
}

ucs_status_t unpack(void *state, size_t offset, const void *src, size_t length) {
    auto *r = static_cast<Request *>(state);
    Worker *w = r->worker;
    if (r->status != UCXDT_INPROGRESS) return UCS_OK;  // ended (the worker's destruction): the
                                                       // buffer is the caller's again
    if (offset + length > landing_bytes(w->cfg)) return UCS_ERR_MESSAGE_TRUNCATED;
    const char *p = static_cast<const char *>(src);
    // The header first, up to its kind byte and then to the length that the kind gives.
    while (length > 0 && offset < header_len(r)) {
        const size_t upto = r->hdr_got > kKindAt || offset > kKindAt ? header_len(r) : kKindAt + 1;
        const size_t n = std::min(length, upto - offset);
        std::memcpy(reinterpret_cast<char *>(&r->hdr) + offset, p, n);
        if (r->wire_spilled) std::memcpy(r->wire.data() + offset, p, n);
        r->hdr_got += n;
        offset += n, p += n, length -= n;
    }
    if (length == 0) return UCS_OK;
    const size_t hb = header_len(r);
    if (!r->wire_spilled && r->hdr_got == hb && (r->wire_direct || direct(r))) {  // checked once
        // Bytes past the sent size are a wrong length, which recv_matched reports.
        const int64_t lo = static_cast<int64_t>(offset - hb);
        const int64_t n = std::min<int64_t>(static_cast<int64_t>(length), r->hdr.packed - lo);
        if (n > 0) cpu::unpack(*r->plan, r->buffer, lo, n, p);
        r->wire_direct = true;
        return UCS_OK;
    }
    if (!r->wire_spilled) {  // from here on the message lives in `wire`, the header included
        char *landing = w->wire_alloc(r, landing_bytes(w->cfg));
        std::memcpy(landing, &r->hdr, hb);
        r->wire_spilled = true;
    }
    std::memcpy(r->wire.data() + offset, p, length);
    return UCS_OK;
}

void finish(void *) {}

const ucp_generic_dt_ops_t kOps = {start_pack, start_unpack, packed_size, pack, unpack, finish};

}  // namespace

ucxdt_status_t wire_datatype(ucp_datatype_t *dt) {
    // One per process and never destroyed: an operation UCP still holds after its ucxdt worker
    // is gone would otherwise use a freed datatype.
    static const std::pair<ucs_status_t, ucp_datatype_t> made = [] {
        ucp_datatype_t d = 0;
        const ucs_status_t st = ucp_dt_create_generic(&kOps, nullptr, &d);
        return std::make_pair(st, d);
    }();
    if (made.first != UCS_OK)
        return fail(UCXDT_ERR_UCX, std::string("ucp_dt_create_generic: ") + ucs_status_string(made.first));
    *dt = made.second;
    return UCXDT_OK;
}

}  // namespace ucxdt::rndv
