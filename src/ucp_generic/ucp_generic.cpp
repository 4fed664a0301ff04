// ucxdt types as UCP generic datatypes (include/ucxdt/ucp_generic.h): the ucp_generic_dt_ops_t
// callbacks serve each fragment UCP asks for with a byte range of the packed stream, for GPU
// layouts through a pinned ring that the GPU fills ahead of UCP (ring_stream.hpp).
#include "dt/api_util.hpp"
#include "base/checked.hpp"
#include "ucp_generic/ring_stream.hpp"
#include "pack/transfer.hpp"

#include <ucxdt/ucp_generic.h>

#include <cstdint>
#include <memory>
#include <mutex>
#include <new>
#include <string>
#include <unordered_map>

namespace {

// Context of one ucp_datatype_t: its own reference to the committed type, which the user's
// handle may be freed before.
struct DtContext {
    std::shared_ptr<const ucxdt::Type> type;
    int64_t size = 0;  // bytes of one element
};

// Per-request state, made by start_pack/start_unpack and released by finish. The plan of
// (type, count) outlives the datatype should it be destroyed meanwhile; a duplicate handle per
// request, as before, cost a new type and its normalization every message.
struct RequestState {
    ucxdt::PlanPtr plan;
    void *buffer = nullptr;
    int64_t total = 0;  // packed size: count x size
    std::unique_ptr<ucxdt::RingStream> ring;  // GPU layouts; none: each fragment on its own
    int64_t received = 0;                     // unpack: bytes taken so far
};

// A state for requests that could not get their own: packed size 0 (generic ops have no way
// to fail at start, and a null state would be passed on to packed_size).
RequestState g_failed_state;

// ucxdt_ucp_dt_destroy gets only the ucp_datatype_t, and UCP offers no public way back to
// the context: remember it here.
std::mutex g_registry_mutex;
std::unordered_map<ucp_datatype_t, DtContext *> g_registry;

// A GPU layout gets a ring. Without one (host layout, no ring free, CUDA error) every fragment
// is packed or unpacked on its own by the range calls, which stage GPU data synchronously.
void start_ring(RequestState *s, bool pack) {
    using namespace ucxdt;
    if (s->total == 0) return;
    guard([&]() -> ucxdt_status_t {
        const int device = layout_gpu(*s->plan, s->buffer);
        if (device < 0) return UCXDT_OK;
        return RingStream::start(s->plan, static_cast<char *>(s->buffer), pack, device, &s->ring);
    });
}

RequestState *start(void *context, void *buffer, size_t count, bool pack) {
    const auto *ctx = static_cast<const DtContext *>(context);
    int64_t total = 0;
    if (count > static_cast<size_t>(INT64_MAX) ||
        !ucxdt::checked_mul(static_cast<int64_t>(count), ctx->size, &total))
        return &g_failed_state;
    auto *s = new (std::nothrow) RequestState;
    if (!s) return &g_failed_state;
    if (ucxdt::guard([&] { return ucxdt::get_plan(*ctx->type, static_cast<int64_t>(count), &s->plan); }) !=
        UCXDT_OK) {
        delete s;
        return &g_failed_state;
    }
    s->buffer = buffer;
    s->total = total;
    start_ring(s, pack);
    return s;
}

void *start_pack(void *context, const void *buffer, size_t count) {
    // Only pack reads through it; const is restored there.
    return start(context, const_cast<void *>(buffer), count, true);
}

void *start_unpack(void *context, void *buffer, size_t count) {
    return start(context, buffer, count, false);
}

size_t packed_size(void *state) {
    return static_cast<size_t>(static_cast<RequestState *>(state)->total);
}

size_t pack(void *state, size_t offset, void *dest, size_t max_length) {
    const auto *s = static_cast<const RequestState *>(state);
    if (offset >= static_cast<size_t>(s->total)) return 0;
    const size_t remaining = static_cast<size_t>(s->total) - offset;
    const size_t length = max_length < remaining ? max_length : remaining;
    if (s->ring) {
        if (s->ring->pack(static_cast<int64_t>(offset), static_cast<char *>(dest),
                          static_cast<int64_t>(length)) != UCXDT_OK)
            return 0;
        return length;
    }
    // The range is inside [0, total] of a committed type, so only a CUDA failure (device
    // buffers) can fail here; UCP's pack has no error return, so 0 bytes are reported.
    if (ucxdt::guard([&] {
            return ucxdt::transfer(*s->plan, static_cast<char *>(s->buffer), static_cast<char *>(dest),
                                   static_cast<int64_t>(offset), static_cast<int64_t>(length), true, nullptr);
        }) != UCXDT_OK)
        return 0;
    return length;
}

ucs_status_t unpack(void *state, size_t offset, const void *src, size_t length) {
    auto *s = static_cast<RequestState *>(state);
    const size_t total = static_cast<size_t>(s->total);
    // Checked here so that the status is UCP's truncation status.
    if (offset > total || length > total - offset) return UCS_ERR_MESSAGE_TRUNCATED;
    ucxdt_status_t st =
        s->ring ? s->ring->unpack(static_cast<int64_t>(offset), static_cast<const char *>(src),
                                  static_cast<int64_t>(length))
                : ucxdt::guard([&] {
                      return ucxdt::transfer(*s->plan, static_cast<char *>(s->buffer), const_cast<char *>(static_cast<const char *>(src)),
                                             static_cast<int64_t>(offset), static_cast<int64_t>(length), false, nullptr);
                  });
    // With the last fragment in, the GPU's unpacks are waited for here rather than in
    // finish, so that a failure completes the request with an error.
    if (s->ring) {
        s->received += static_cast<int64_t>(length);
        if (st == UCXDT_OK && s->received == s->total) st = s->ring->flush();
    }
    switch (st) {
    case UCXDT_OK: return UCS_OK;
    case UCXDT_ERR_TRUNCATED: return UCS_ERR_MESSAGE_TRUNCATED;
    case UCXDT_ERR_NO_MEMORY: return UCS_ERR_NO_MEMORY;
    case UCXDT_ERR_CUDA: return UCS_ERR_IO_ERROR;
    default: return UCS_ERR_INVALID_PARAM;
    }
}

void finish(void *state) {
    auto *s = static_cast<RequestState *>(state);
    if (s == &g_failed_state) return;
    // Also on error or cancel: the ring's GPU work is waited for (~RingStream) before the
    // ring goes back to the pool.
    s->ring.reset();
    delete s;
}

const ucp_generic_dt_ops_t g_ops = {start_pack, start_unpack, packed_size, pack, unpack, finish};

ucs_status_t to_ucs(ucxdt_status_t st) {
    return st == UCXDT_ERR_NO_MEMORY ? UCS_ERR_NO_MEMORY : UCS_ERR_INVALID_PARAM;
}

}  // namespace

extern "C" {

ucs_status_t ucxdt_ucp_dt_create(ucxdt_type_t type, ucp_datatype_t *datatype) {
    using namespace ucxdt;
    DtContext *ctx = nullptr;
    const ucxdt_status_t st = guard([&]() -> ucxdt_status_t {
        if (!datatype) return fail(UCXDT_ERR_INVALID_PARAM, "datatype must not be NULL");
        std::shared_ptr<Type> t;
        if (ucxdt_status_t e = resolve(type, "type", &t)) return e;
        if (ucxdt_status_t e = require_committed(*t, "type")) return e;
        auto c = std::make_unique<DtContext>();
        c->size = t->size;
        c->type = std::move(t);
        ctx = c.release();
        return UCXDT_OK;
    });
    if (st != UCXDT_OK) return to_ucs(st);

    ucp_datatype_t dt = 0;
    const ucs_status_t us = ucp_dt_create_generic(&g_ops, ctx, &dt);
    if (us != UCS_OK) {
        fail(UCXDT_ERR_UCX, std::string("ucp_dt_create_generic: ") + ucs_status_string(us));
        delete ctx;
        return us;
    }
    try {
        std::lock_guard<std::mutex> lock(g_registry_mutex);
        g_registry.emplace(dt, ctx);
    } catch (const std::bad_alloc &) {
        ucp_dt_destroy(dt);
        delete ctx;
        fail(UCXDT_ERR_NO_MEMORY, "allocation failed");
        return UCS_ERR_NO_MEMORY;
    }
    *datatype = dt;
    return UCS_OK;
}

void ucxdt_ucp_dt_destroy(ucp_datatype_t datatype) {
    DtContext *ctx = nullptr;
    {
        std::lock_guard<std::mutex> lock(g_registry_mutex);
        const auto it = g_registry.find(datatype);
        if (it == g_registry.end()) return;
        ctx = it->second;
        g_registry.erase(it);
    }
    ucp_dt_destroy(datatype);
    delete ctx;
}

}  // extern "C"
