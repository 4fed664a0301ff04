// The C entry points of include/ucxdt/ucxdt_ucp.h: arguments checked, the worker locked, then
// the Worker's own calls (sending in rndv_send.cpp, receiving in rndv_recv.cpp). The worker's
// creation and its configuration read from the environment are here.
#include "dt/api_util.hpp"
#include "base/address.hpp"
#include "base/checked.hpp"
#include "base/env.hpp"
#include "ucp_rndv/rndv_worker.hpp"
#include "cuda/gpu_share.hpp"
#include "cuda/memory_type.hpp"

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <algorithm>
#include <random>
#include <string>

using namespace ucxdt;
using namespace ucxdt::rndv;

namespace {

ucs_status_t am_handler(void *arg, const void *header, size_t header_length, void *data, size_t length,
                        const ucp_am_recv_param_t *param) {
    if (header_length != sizeof(AmHeader)) return UCS_OK;  // not ours
    auto *w = static_cast<Worker *>(arg);
    Event e;
    e.kind = Event::am_message;
    std::memcpy(&e.am, header, sizeof e.am);
    // A shape is small enough to arrive eagerly, with its data in place during the callback.
    if (length == sizeof e.shape && data && !(param->recv_attr & UCP_AM_RECV_ATTR_FLAG_RNDV)) {
        std::memcpy(&e.shape, data, sizeof e.shape);
        e.has_shape = true;
    }
    if (e.am.kind == AmKind::frag) {
        // A fragment of host staging: its data (persistent, UCP_AM_FLAG_PERSISTENT_DATA) or
        // rendezvous descriptor is held until progress receives it into a slot or drops it.
        if (!data || !(param->recv_attr & (UCP_AM_RECV_ATTR_FLAG_DATA | UCP_AM_RECV_ATTR_FLAG_RNDV))) return UCS_OK;
        e.kind = Event::frag_arrived;
        e.data = data;
        e.length = length;
        e.rndv = (param->recv_attr & UCP_AM_RECV_ATTR_FLAG_RNDV) != 0;
        w->events.push_back(e);
        return UCS_INPROGRESS;
    }
    if (param->recv_attr & UCP_AM_RECV_ATTR_FIELD_REPLY_EP) e.reply_ep = param->reply_ep;
    if (e.am.kind == AmKind::hello && !e.reply_ep) return UCS_OK;
    w->events.push_back(e);
    return UCS_OK;
}

// UCP's error handler as ucxdt_ep_params_set_err_handler sets it.
void ep_error_handler(void *arg, ucp_ep_h ep, ucs_status_t status) {
    const auto *h = static_cast<const Worker::ErrHandler *>(arg);
    ucxdt_worker_handle_ep_error(static_cast<ucxdt_worker_h>(h->worker), ep, status);
    if (h->cb) h->cb(h->arg, ep, status);
}

}  // namespace

extern "C" {

ucxdt_status_t ucxdt_worker_create(const ucxdt_worker_params_t *params, ucxdt_worker_h *worker) {
    return guard([&]() -> ucxdt_status_t {
        if (!params || !worker) return fail(UCXDT_ERR_INVALID_PARAM, "params and worker must not be NULL");
        if (!(params->field_mask & UCXDT_WORKER_PARAM_FIELD_UCP_WORKER) || !params->ucp_worker)
            return fail(UCXDT_ERR_INVALID_PARAM, "params->ucp_worker is required");
        if (!(params->field_mask & UCXDT_WORKER_PARAM_FIELD_UCP_CONTEXT) || !params->ucp_context)
            return fail(UCXDT_ERR_INVALID_PARAM, "params->ucp_context is required");
        Config c;
        // One threshold set (environment or params) applies to both memory kinds, unless
        // UCXDT_HOST_EAGER_THRESHOLD sets the host's apart.
        if (std::getenv("UCXDT_EAGER_THRESHOLD")) c.eager = c.host_eager = env_integer("UCXDT_EAGER_THRESHOLD", c.eager);
        c.frag = env_integer("UCXDT_FRAG_SIZE", c.frag);
        c.host_frag = env_integer("UCXDT_HOST_FRAG_SIZE", c.host_frag, 4096, int64_t(1) << 30);
        c.depth = static_cast<int>(env_integer("UCXDT_PIPELINE_DEPTH", c.depth));
        c.slots = static_cast<int>(env_integer("UCXDT_STAGING_SLOTS", c.slots));
        c.wire_pool = env_integer("UCXDT_WIRE_POOL_SIZE", c.wire_pool, 0, int64_t(1) << 30);
        c.ipc = env_flag("UCXDT_CUDA_IPC", c.ipc) && cuda::gpu_present();
        // As UCX would: only through a context that UCX_TLS left its cuda_ipc transport.
        if (c.ipc && !context_transports(params->ucp_context).count("cuda_ipc")) c.ipc = false;
        c.ipc_frag_max = env_integer("UCXDT_IPC_FRAG_SIZE", c.ipc_frag_max, 4096, int64_t(1) << 30);
        c.ipc_strided = env_flag("UCXDT_IPC_STRIDED_COPY", c.ipc_strided);
        c.ipc_pull = env_integer("UCXDT_IPC_PULL_SIZE", c.ipc_pull, 0, int64_t(1) << 40);
        c.gpu_batch = static_cast<int>(env_integer("UCXDT_GPU_BATCH", c.gpu_batch, 1, 1024));
        c.gpu_in_flight = static_cast<int>(env_integer("UCXDT_GPU_IN_FLIGHT", c.gpu_in_flight, 0, 1024));
        c.gpu_streams = static_cast<int>(env_integer("UCXDT_GPU_STREAMS", c.gpu_streams, 1, 64));
        c.gpu_stream_split = env_integer("UCXDT_GPU_STREAM_SPLIT", c.gpu_stream_split, 0, int64_t(1) << 40);
        c.ipc_eager = env_integer("UCXDT_IPC_EAGER_THRESHOLD", c.ipc_eager, 0, int64_t(64) << 20);
        c.ipc_same_layout = env_flag("UCXDT_IPC_SAME_LAYOUT_COPY", c.ipc_same_layout);
        // am|get, like UCX's enumerated settings; anything else keeps the default.
        if (const char *v = std::getenv("UCXDT_HOST_FRAGS"); v && (!std::strcmp(v, "am") || !std::strcmp(v, "get")))
            c.host_am = v[0] == 'a';
        c.host_shm = env_flag("UCXDT_HOST_SHM", c.host_shm);
        const uint64_t m = params->field_mask;
        if (m & UCXDT_WORKER_PARAM_FIELD_EAGER_THRESHOLD) c.eager = c.host_eager = params->eager_threshold;
        c.host_eager = env_integer("UCXDT_HOST_EAGER_THRESHOLD", c.host_eager);
        if (m & UCXDT_WORKER_PARAM_FIELD_FRAG_SIZE) c.frag = params->frag_size;
        if (m & UCXDT_WORKER_PARAM_FIELD_PIPELINE_DEPTH) c.depth = params->depth;
        if (m & UCXDT_WORKER_PARAM_FIELD_STAGING_SLOTS) c.slots = params->staging_slots;
        if (m & UCXDT_WORKER_PARAM_FIELD_PLAIN_TAG_BIT) {
            const ucp_tag_t b = params->plain_tag_bit;
            if (b == 0 || (b & (b - 1)) != 0)
                return fail(UCXDT_ERR_INVALID_PARAM, "plain_tag_bit must be exactly one bit of the tag");
            if (env_flag("UCXDT_PLAIN_MESSAGES", true)) c.plain_bit = b;
        }
        if (c.eager < 0 || c.eager > (64 << 20) || c.host_eager < 0 || c.host_eager > (64 << 20))
            return fail(UCXDT_ERR_INVALID_PARAM, "eager thresholds must be in [0, 64 MiB]");
        if (c.frag < 4096 || c.frag > (int64_t(1) << 30))
            return fail(UCXDT_ERR_INVALID_PARAM, "fragment size must be in [4 KiB, 1 GiB]");
        if (c.depth < 1 || c.depth > 1024) return fail(UCXDT_ERR_INVALID_PARAM, "depth must be in [1, 1024]");
        if (c.slots < c.depth || c.slots > 65536)
            return fail(UCXDT_ERR_INVALID_PARAM, "staging slots must be in [depth, 65536]");
        auto w = std::make_unique<ucxdt_worker>();
        if (ucxdt_status_t st = wire_datatype(&w->wire_dt)) return st;
        w->ucp_worker = params->ucp_worker;
        w->ucp_context = params->ucp_context;
        // Threads as the UCP worker's: a multi-threaded one gets the worker lock (Worker::multi).
        ucp_worker_attr_t wa{};
        wa.field_mask = UCP_WORKER_ATTR_FIELD_THREAD_MODE;
        if (const ucs_status_t qs = ucp_worker_query(params->ucp_worker, &wa); qs != UCS_OK)
            return fail(UCXDT_ERR_UCX, std::string("ucp_worker_query: ") + ucs_status_string(qs));
        w->multi = wa.thread_mode == UCS_THREAD_MODE_MULTI;
        w->cfg = c;
        w->node = node_identity();
        w->process = process_identity();
        std::random_device rd;
        w->uuid = (static_cast<uint64_t>(rd()) << 32) ^ rd() ^
                  static_cast<uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count());
        w->timeline = Timeline::from_env(w->uuid);
        ucp_am_handler_param_t hp{};
        hp.field_mask = UCP_AM_HANDLER_PARAM_FIELD_ID | UCP_AM_HANDLER_PARAM_FIELD_CB |
                        UCP_AM_HANDLER_PARAM_FIELD_ARG | UCP_AM_HANDLER_PARAM_FIELD_FLAGS;
        hp.id = UCXDT_UCP_AM_ID;
        hp.flags = UCP_AM_FLAG_PERSISTENT_DATA;  // eager fragments are held until a slot is free
        hp.cb = am_handler;
        hp.arg = static_cast<Worker *>(w.get());
        const ucs_status_t us = ucp_worker_set_am_recv_handler(params->ucp_worker, &hp);
        if (us != UCS_OK)
            return fail(UCXDT_ERR_UCX, std::string("ucp_worker_set_am_recv_handler: ") + ucs_status_string(us));
        *worker = w.release();
        return UCXDT_OK;
    });
}

void ucxdt_worker_destroy(ucxdt_worker_h worker) {
    if (!worker) return;
    Worker *w = worker;
    // Unmatched receives are canceled through UCP; what is still running after a bounded
    // wait is completed as canceled. The AM handler is removed before the worker goes.
    for (auto &[id, r] : w->requests)
        if (!r->is_send && r->ucp_req) ucp_request_cancel(w->ucp_worker, r->ucp_req);
    for (Request *r : w->posted) w->complete(r, UCXDT_ERR_CANCELED);
    w->posted.clear();
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(1);
    while (!w->events.empty() || std::chrono::steady_clock::now() < deadline) {
        w->progress();
        bool busy = false;
        for (auto &[id, r] : w->requests) busy |= r->status == UCXDT_INPROGRESS;
        for (auto &x : w->extensions) busy |= x->busy();
        if (!busy) break;
    }
    // The layers above first: their GPU work ends, and they forget the requests deleted next.
    w->flush_launches();
    for (auto &[device, g] : w->gpus) g->synchronize();
    w->extensions.clear();
    w->drop_probed();
    w->host_packing.clear();  // sends about to be deleted
    std::vector<Request *> all;
    for (auto &[id, r] : w->requests) all.push_back(r);
    size_t orphans = 0;
    for (Request *r : all) {
        w->complete(r, UCXDT_ERR_CANCELED);
        // UCP still holds an operation of it (a send to a peer that stopped progressing cannot
        // be canceled): the request, and the worker with the memory UCP reads and writes, live
        // until UCP calls back, when the user closes the endpoint or progresses its worker.
        if (r->ucp_pending > 0) ++orphans;
        else delete r;
    }
    w->requests.clear();
    w->completed.clear();
    ucp_am_handler_param_t hp{};
    hp.field_mask = UCP_AM_HANDLER_PARAM_FIELD_ID | UCP_AM_HANDLER_PARAM_FIELD_CB;
    hp.id = UCXDT_UCP_AM_ID;
    hp.cb = nullptr;
    ucp_worker_set_am_recv_handler(w->ucp_worker, &hp);
    if (orphans > 0) {
        w->destroyed = true;
        w->orphans = orphans;
        return;
    }
    delete worker;
}

unsigned ucxdt_worker_progress(ucxdt_worker_h worker) {
    WorkerLock lock(worker);
    return worker->progress();
}

void ucxdt_worker_handle_ep_error(ucxdt_worker_h worker, ucp_ep_h ep, ucs_status_t) {
    WorkerLock lock(worker);
    if (!worker || !ep) return;
    // Called from the user's UCP error handler, inside ucp_worker_progress: queued, so that
    // the requests end in ucxdt_worker_progress.
    Event e;
    e.kind = Event::peer_failed;
    e.reply_ep = ep;
    worker->events.push_back(e);
}

ucxdt_status_t ucxdt_ep_params_set_err_handler(ucp_ep_params_t *params, ucxdt_worker_h worker,
                                               ucp_err_handler_cb_t cb, void *arg) {
    return guard([&]() -> ucxdt_status_t {
        if (!params || !worker) return fail(UCXDT_ERR_INVALID_PARAM, "params and worker must not be NULL");
        // UCP passes user_data to the handler in place of err_handler.arg when both are set.
        if (params->field_mask & UCP_EP_PARAM_FIELD_USER_DATA)
            return fail(UCXDT_ERR_INVALID_PARAM,
                        "params->user_data is set: UCP would pass it to the error handler instead of "
                        "ucxdt's argument");
        if ((params->field_mask & UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE) &&
            params->err_mode != UCP_ERR_HANDLING_MODE_PEER)
            return fail(UCXDT_ERR_INVALID_PARAM,
                        "params->err_mode is set, and not to UCP_ERR_HANDLING_MODE_PEER");
        if ((params->field_mask & UCP_EP_PARAM_FIELD_ERR_HANDLER) && params->err_handler.cb &&
            params->err_handler.cb != ep_error_handler)
            return fail(UCXDT_ERR_INVALID_PARAM,
                        "params->err_handler is set already: pass that handler as cb instead");
        Worker *w = worker;
        Worker::ErrHandler *h = nullptr;
        for (const auto &e : w->err_handlers)
            if (e->cb == cb && e->arg == arg) h = e.get();
        if (!h) {
            w->err_handlers.push_back(std::make_unique<Worker::ErrHandler>(Worker::ErrHandler{w, cb, arg}));
            h = w->err_handlers.back().get();
        }
        params->field_mask |= UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE | UCP_EP_PARAM_FIELD_ERR_HANDLER;
        params->err_mode = UCP_ERR_HANDLING_MODE_PEER;
        params->err_handler.cb = ep_error_handler;
        params->err_handler.arg = h;
        return UCXDT_OK;
    });
}

void ucxdt_worker_print_config(ucxdt_worker_h worker, FILE *stream) {
    WorkerLock lock(worker);
    const Config &c = worker->cfg;
    std::fprintf(stream,
                 "# ucxdt worker configuration\n"
                 "UCXDT_EAGER_THRESHOLD=%lld\nUCXDT_HOST_EAGER_THRESHOLD=%lld\nUCXDT_FRAG_SIZE=%lld\n"
                 "UCXDT_HOST_FRAG_SIZE=%lld\nUCXDT_PIPELINE_DEPTH=%d\n"
                 "UCXDT_STAGING_SLOTS=%d\nUCXDT_WIRE_POOL_SIZE=%lld\nUCXDT_CUDA_IPC=%s\nUCXDT_IPC_FRAG_SIZE=%lld\n"
                 "UCXDT_IPC_STRIDED_COPY=%s\nUCXDT_IPC_PULL_SIZE=%lld\nUCXDT_IPC_EAGER_THRESHOLD=%lld\nUCXDT_GPU_BATCH=%d\nUCXDT_GPU_IN_FLIGHT=%d\nUCXDT_GPU_STREAMS=%d\n"
                 "UCXDT_GPU_STREAM_SPLIT=%lld\nUCXDT_IPC_SAME_LAYOUT_COPY=%s\nUCXDT_HOST_FRAGS=%s\n"
                 "UCXDT_HOST_SHM=%s\n",
                 static_cast<long long>(c.eager), static_cast<long long>(c.host_eager),
                 static_cast<long long>(c.frag), static_cast<long long>(c.host_frag), c.depth, c.slots, static_cast<long long>(c.wire_pool),
                 c.ipc ? "y" : "n", static_cast<long long>(c.ipc_frag_max), c.ipc_strided ? "y" : "n",
                 static_cast<long long>(c.ipc_pull), static_cast<long long>(c.ipc_eager), c.gpu_batch, c.gpu_in_flight,
                 c.gpu_streams, static_cast<long long>(c.gpu_stream_split),
                 c.ipc_same_layout ? "y" : "n", c.host_am ? "am" : "get", c.host_shm ? "y" : "n");
    std::fputs(ucxdt::cuda::sharing_settings().c_str(), stream);
    // What UCX_TLS left the context: CUDA IPC needs its cuda_ipc (ucx_reach.hpp).
    std::string tls;
    for (const std::string &t : context_transports(worker->ucp_context)) tls += " " + t;
    std::fprintf(stream, "# UCX transports of the context:%s\n", tls.c_str());
}

ucxdt_status_t ucxdt_ep_create(ucxdt_worker_h worker, const ucxdt_ep_params_t *params, ucxdt_ep_h *ep) {
    WorkerLock lock(worker);
    return guard([&]() -> ucxdt_status_t {
        if (!worker || !params || !ep) return fail(UCXDT_ERR_INVALID_PARAM, "worker, params and ep must not be NULL");
        if (!(params->field_mask & UCXDT_EP_PARAM_FIELD_UCP_EP) || !params->ucp_ep)
            return fail(UCXDT_ERR_INVALID_PARAM, "params->ucp_ep is required");
        auto e = std::make_unique<ucxdt_ep>();
        e->worker = worker;
        e->ucp_ep = params->ucp_ep;
        e->id = worker->next_ep_id++;
        AmHeader hello = worker->hello(AmKind::hello);
        hello.ep_id = e->id;
        if (ucxdt_status_t st = worker->send_am(params->ucp_ep, hello, true)) return st;
        worker->eps[e->id] = e.get();
        *ep = e.release();
        return UCXDT_OK;
    });
}

void ucxdt_ep_destroy(ucxdt_ep_h ep) {
    if (!ep) return;
    Worker *w = ep->worker;
    WorkerLock lock(w);
    std::vector<Request *> mine;
    for (auto &[id, r] : w->requests)
        if (r->is_send && r->ep == ep && r->status == UCXDT_INPROGRESS) mine.push_back(r);
    for (Request *r : mine) {
        w->waiting.erase(std::remove(w->waiting.begin(), w->waiting.end(), r), w->waiting.end());
        // Wait for our GPU work and tell a receiver that knows us (FIN): it may be waiting for
        // fragments or holding slots for them.
        w->send_fail(r, UCXDT_ERR_CANCELED);
    }
    w->eps.erase(ep->id);
    delete ep;
}

ucxdt_status_ptr_t ucxdt_tag_send_nbx(ucxdt_ep_h ep, const void *buffer, int64_t count,
                                      ucxdt_type_t type, ucp_tag_t tag,
                                      const ucxdt_request_param_t *param) {
    if (!ep) return error_ptr(fail(UCXDT_ERR_INVALID_PARAM, "ep must not be NULL"));
    WorkerLock lock(ep->worker);
    return ep->worker->tag_send(ep, buffer, count, type, tag, param);
}

ucxdt_status_ptr_t ucxdt_tag_recv_nbx(ucxdt_worker_h worker, void *buffer, int64_t count,
                                      ucxdt_type_t type, ucp_tag_t tag, ucp_tag_t tag_mask,
                                      const ucxdt_request_param_t *param) {
    if (!worker) return error_ptr(fail(UCXDT_ERR_INVALID_PARAM, "worker must not be NULL"));
    WorkerLock lock(worker);
    return worker->tag_recv(buffer, count, type, tag, tag_mask, param);
}

ucxdt_tag_message_h ucxdt_tag_probe_nb(ucxdt_worker_h worker, ucp_tag_t tag, ucp_tag_t tag_mask, int remove,
                                       ucxdt_tag_recv_info_t *info) {
    if (!worker || !info) return fail(UCXDT_ERR_INVALID_PARAM, "worker and info must not be NULL"), nullptr;
    Worker *w = worker;
    WorkerLock lock(w);
    Message *m = nullptr;
    if (guard([&]() -> ucxdt_status_t { return m = w->probe(tag, tag_mask), UCXDT_OK; })) return nullptr;
    if (!m || !m->arrived) return nullptr;  // none, or still arriving: a later probe returns it
    *info = m->info();
    if (remove) m->removed = true;
    return static_cast<ucxdt_tag_message *>(m);
}

ucxdt_status_ptr_t ucxdt_tag_msg_recv_nbx(ucxdt_worker_h worker, void *buffer, int64_t count, ucxdt_type_t type,
                                          ucxdt_tag_message_h message, const ucxdt_request_param_t *param) {
    if (!worker || !message) return error_ptr(fail(UCXDT_ERR_INVALID_PARAM, "worker and message must not be NULL"));
    WorkerLock lock(worker);
    Message *m = message;
    if (std::find(worker->probed.begin(), worker->probed.end(), m) == worker->probed.end() || !m->removed || m->claim)
        return error_ptr(fail(UCXDT_ERR_INVALID_PARAM,
                              "message is not one that ucxdt_tag_probe_nb removed on this worker and no receive took"));
    return worker->tag_msg_recv(buffer, count, type, m, param);
}

int ucxdt_request_check_status(void *request) {
    const auto *r = static_cast<Request *>(request);
    WorkerLock lock(r->worker);
    return r->status;
}

int64_t ucxdt_request_length(void *request) {
    const auto *r = static_cast<Request *>(request);
    WorkerLock lock(r->worker);
    return (!r->is_send && r->status == UCXDT_OK) ? r->packed : 0;
}

int ucxdt_tag_recv_request_test(void *request, ucxdt_tag_recv_info_t *info) {
    const auto *r = static_cast<Request *>(request);
    if (!r || !info || r->is_send) return fail(UCXDT_ERR_INVALID_PARAM, "a receive request and info are required");
    WorkerLock lock(r->worker);
    if (r->status != UCXDT_INPROGRESS) {
        info->sender_tag = r->sender_tag;
        info->length = r->status == UCXDT_OK ? r->packed : 0;
    }
    return r->status;
}

void ucxdt_request_cancel(ucxdt_worker_h worker, void *request) {
    WorkerLock lock(worker);
    if (worker) worker->end_unmatched(static_cast<Request *>(request), UCXDT_ERR_CANCELED);
}

size_t ucxdt_tag_recv_peer_failed(ucxdt_worker_h worker, ucp_tag_t tag, ucp_tag_t tag_mask) {
    if (!worker) return 0;
    WorkerLock lock(worker);
    // The receives whose every match would carry `tag` in the bits of `tag_mask`, in posting
    // order; collected first, since ending one may release it.
    std::vector<Request *> bound;
    for (auto &[id, r] : worker->requests)
        if (!r->is_send && (r->tag_mask & tag_mask) == tag_mask && ((r->tag ^ tag) & tag_mask) == 0) bound.push_back(r);
    std::sort(bound.begin(), bound.end(), [](const Request *a, const Request *b) { return a->id < b->id; });
    size_t n = 0;
    for (Request *r : bound) n += worker->end_unmatched(r, UCXDT_ERR_PEER_FAILURE);
    return n;
}

void ucxdt_request_free(void *request) {
    auto *r = static_cast<Request *>(request);
    Worker *w = r->worker;
    WorkerLock lock(w);
    w->release(r);
}

}  // extern "C"
