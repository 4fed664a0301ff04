// Put, get and flush (include/ucxdt/ucxdt_rma.h): the CUDA IPC path, where the origin's GPU
// copies between the origin layout and the target layout mapped into this process, and the UCP
// path, one ucp_put_nbx / ucp_get_nbx per contiguous run of the target layout.
#include "ucp_rma/rma.hpp"

#include "base/address.hpp"
#include "base/error.hpp"
#include "dt/cpu_engine.hpp"
#include "pack/transfer.hpp"
#include "cuda/cuda_check.hpp"
#include "cuda/staging_cache.hpp"
#include "cuda/gpu_engine.hpp"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <string>

namespace ucxdt::rma {

using rndv::Request;

namespace {

Op *op_of(Request *r) { return static_cast<Op *>(r->ext.get()); }

// UCP's completion callback of an operation whose user_data is its request.
void on_ucp_done(void *request, ucs_status_t status, void *user_data) {
    auto *r = static_cast<Request *>(user_data);
    if (rndv::ucp_callback(r, request)) return;
    op_of(r)->rma->ucp_done(r, status);
    if (request) ucp_request_free(request);
}

ucp_request_param_t ucp_param(Request *r) {
    ucp_request_param_t p{};
    p.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA;
    p.cb.send = on_ucp_done;
    p.user_data = r;
    return p;
}

// Calls run(displacement, packed position, bytes) for each contiguous run of plan p over its
// whole packed stream, runs that touch in memory and in the stream merged into one.
template <typename Run>
void for_each_run(const Plan &p, Run &&run) {
    int64_t disp = 0, pos = 0, len = 0;
    cpu::for_each_piece(p, 0, p.packed_size, [&](int64_t d, int64_t at, int64_t n) {
        if (len > 0 && disp + len == d && pos + len == at) {
            len += n;
            return;
        }
        if (len > 0) run(disp, pos, len);
        disp = d, pos = at, len = n;
    });
    if (len > 0) run(disp, pos, len);
}

}  // namespace

Op::~Op() {
    cuda::staging_release_pinned(pinned, staged);
    cuda::staging_release_device(staged_device, device, staged);
}

Rma::Rma(rndv::Worker *w) : w_(w) {
    if (const char *v = std::getenv("UCXDT_RMA_PATH")) {
        const std::string s(v);
        path_ = s == "runs" ? Path::RUNS : s == "am" ? Path::AM : Path::AUTO;
    }
    ucp_am_handler_param_t hp{};
    hp.field_mask = UCP_AM_HANDLER_PARAM_FIELD_ID | UCP_AM_HANDLER_PARAM_FIELD_CB | UCP_AM_HANDLER_PARAM_FIELD_ARG |
                    UCP_AM_HANDLER_PARAM_FIELD_FLAGS;
    hp.id = UCXDT_UCP_AM_ID_RMA;
    hp.cb = am_handler;
    hp.arg = this;
    hp.flags = UCP_AM_FLAG_PERSISTENT_DATA;  // served from progress, not from the callback
    handler_status_ = ucp_worker_set_am_recv_handler(w->ucp_worker, &hp);
}

Rma::~Rma() {
    // The worker synchronized its streams: the events are complete.
    for (const GpuWait &g : gpu_)
        if (g.owns_event) g.stream->give_event(g.event);
    ucp_am_handler_param_t hp{};
    hp.field_mask = UCP_AM_HANDLER_PARAM_FIELD_ID | UCP_AM_HANDLER_PARAM_FIELD_CB;
    hp.id = UCXDT_UCP_AM_ID_RMA;
    ucp_worker_set_am_recv_handler(w_->ucp_worker, &hp);
    for (const Incoming &in : incoming_)
        if (in.persistent || in.rndv) ucp_am_data_release(w_->ucp_worker, in.data);
    drop_received();
    detach_receiving();
}

Rma &Rma::of(rndv::Worker *w) {
    for (auto &x : w->extensions)
        if (auto *r = dynamic_cast<Rma *>(x.get())) return *r;
    w->extensions.push_back(std::make_unique<Rma>(w));
    return static_cast<Rma &>(*w->extensions.back());
}

ucxdt_status_t Rma::start(Request *r, const Rkey &rkey, uint64_t remote) {
    Op *op = op_of(r);
    const RkeyWire &k = rkey.wire;
    // The target layout must lie in the region (MPI-4.1 12.3: an access outside the target
    // window is erroneous): checked before anything moves.
    const Plan &t = *op->target;
    if (t.packed_size > 0) {
        __int128 lo = static_cast<__int128>(remote) + t.data_lo, hi = static_cast<__int128>(remote) + t.data_hi;
        if (lo < static_cast<__int128>(k.address) || hi > static_cast<__int128>(k.address) + k.length)
            return fail(UCXDT_ERR_OUT_OF_RANGE,
                        "the target layout spans bytes [" + std::to_string(static_cast<long long>(lo - k.address)) +
                            ", " + std::to_string(static_cast<long long>(hi - k.address)) +
                            ") of a registered region of " + std::to_string(k.length) + " bytes");
    }
    if (r->packed == 0) return UCXDT_OK;
    if (handler_status_ != UCS_OK)
        return fail(UCXDT_ERR_UCX, std::string("ucp_worker_set_am_recv_handler (the context needs UCP_FEATURE_AM): ") +
                                       ucs_status_string(handler_status_));
    // A device region on this node is the origin GPU's to copy into (CUDA IPC). Elsewhere UCP's
    // RMA where it reaches device memory itself (choose), else the target's worker unpacks it.
    if (rkey.ipc) return start_ipc(r, rkey, remote);
    op->device_target = k.device != 0;
    if (op->device_target && !rkey.ucp_rkey) return start_am(r, remote);  // not registered with UCP
    return choose(*r) == Path::AM ? start_am(r, remote) : start_ucp(r, rkey, remote);
}

// ---- The UCP path --------------------------------------------------------------------------

ucxdt_status_t Rma::stage(Request *r, bool on_device, char **out) {
    Op *op = op_of(r);
    const Plan &o = *r->plan;
    // The packed stream: the origin itself when it is contiguous, else staging: page-locked for
    // a GPU origin, which the GPU packs into and unpacks from directly, or device memory when
    // UCP puts it into (or gets it from) a device target itself.
    char *packed = nullptr;
    if (r->contig) {
        packed = at(r->buffer, o.base);
    } else if (r->gpu >= 0 && on_device) {
        op->staged = r->packed, op->staged_device = r->gpu;
        if (!(op->device = cuda::staging_device(r->gpu, r->packed)))
            return fail(UCXDT_ERR_NO_MEMORY, "cudaMalloc of the one-sided staging");
        packed = op->device;
    } else if (r->gpu >= 0) {
        op->staged = r->packed;
        if (!(op->pinned = cuda::staging_pinned(r->packed)))
            return fail(UCXDT_ERR_NO_MEMORY, "cudaMallocHost of the one-sided staging");
        packed = op->pinned;
    } else {
        op->host.resize(static_cast<size_t>(r->packed));
        packed = op->host.data();
    }
    if (op->put && !r->contig)
        if (ucxdt_status_t st = transfer(*r->plan, r->buffer, packed, 0, r->packed, true, nullptr)) return st;
    op->landing = packed;
    *out = packed;
    return UCXDT_OK;
}

ucxdt_status_t Rma::start_ucp(Request *r, const Rkey &rkey, uint64_t remote) {
    Op *op = op_of(r);
    const auto t0 = std::chrono::steady_clock::now();  // the pack counts, as on the other path
    // A host origin laid out as the target (equal layout hashes: the same byte addresses from
    // each pointer) moves each run from its own place, without packing into staging first: the
    // pack and a fresh staging per operation took half of an MPI_Put of hpdc16_T on an H200
    // host, where osc ucx puts the runs where they lie.
    const Plan &o = *r->plan, &t = *op->target;
    const bool in_place = !r->contig && r->gpu < 0 && !op->device_target && o.cls == t.cls && o.layout_hash != 0 &&
                          o.layout_hash == t.layout_hash && o.packed_size == t.packed_size;
    char *packed = nullptr;
    if (!in_place)
        if (ucxdt_status_t st = stage(r, op->device_target, &packed)) return st;
    ++counters.runs;
    int64_t runs = 0;
    const ucp_request_param_t p = ucp_param(r);
    ucxdt_status_t st = UCXDT_OK;
    for_each_run(*op->target, [&](int64_t disp, int64_t pos, int64_t n) {
        if (st) return;
        ++runs;
        const uint64_t to = remote + static_cast<uint64_t>(disp);
        char *from = in_place ? at(r->buffer, disp) : packed + pos;
        ucs_status_ptr_t s = op->put ? ucp_put_nbx(rkey.ep->ucp_ep, from, static_cast<size_t>(n), to, rkey.ucp_rkey, &p)
                                     : ucp_get_nbx(rkey.ep->ucp_ep, from, static_cast<size_t>(n), to, rkey.ucp_rkey, &p);
        if (UCS_PTR_IS_ERR(s)) st = w_->ucx_error(op->put ? "ucp_put_nbx" : "ucp_get_nbx", UCS_PTR_STATUS(s));
        else if (s != nullptr) ++r->ucp_ops, ++r->ucp_pending;
    });
    op->started = t0;
    op->target_runs = runs;
    if (st) {
        // Runs already posted still complete through UCP; the request ends with the first error.
        op->error = st;
        if (r->ucp_ops == 0) return st;
        return UCXDT_OK;
    }
    if (r->ucp_ops == 0) finish(r);
    return UCXDT_OK;
}

// ---- The CUDA IPC path ---------------------------------------------------------------------

ucxdt_status_t Rma::start_ipc(Request *r, const Rkey &rkey, uint64_t remote) {
    Op *op = op_of(r);
    const RkeyWire &k = rkey.wire;
    ++counters.ipc;
    int device = r->gpu;
    if (device < 0)
        if (ucxdt_status_t st = cuda::check(cudaGetDevice(&device), "cudaGetDevice")) return st;
    cuda::DeviceGuard guard(device);
    if (ucxdt_status_t st = guard.status()) return st;
    char *region = nullptr;
    if (ucxdt_status_t st = w_->imports->map(k.worker_uuid, k.process, k.ipc, device, k.process == w_->process, &region)) return st;
    // complete() unmaps it.
    r->peer_ref = k.ipc;
    r->peer_mem = region;
    r->map_device = device;
    r->peer_uuid = k.worker_uuid;
    const bool remote_gpu = !cuda::ipc_on_device(k.ipc, device);
    char *target = region + (remote - k.address);
    if (ucxdt_status_t st = w_->gpu(device, &r->dev)) return st;
    r->stream = r->dev->stream(0);  // the first: its copies run in the order issued
    const cudaStream_t s = r->stream->cuda_stream();
    const Plan &o = *r->plan, &t = *op->target;
    // A GPU origin copies strided runs into strided runs, or a block list into the same one,
    // queued for the next progress call; anything else launches now, after what is queued, so
    // that the stream runs the copies in the order issued.
    const bool strided = r->gpu >= 0 && (op->put ? cuda::strided_pair(o, t) : cuda::strided_pair(t, o));
    const bool same = r->gpu >= 0 && !strided && o.cls == UCXDT_PLAN_BLOCK_LIST &&
                      t.cls == UCXDT_PLAN_BLOCK_LIST && o.layout_hash == t.layout_hash &&
                      o.packed_size == t.packed_size;
    if (!strided && !same && !launching_.empty()) flush_launches();
    const int64_t n = r->packed;
    char *origin = r->buffer;
    ucxdt_status_t st = UCXDT_OK;
    if (r->gpu < 0) {
        // A host origin goes through page-locked staging, which the GPU reaches directly: the
        // CPU packs before a put, and unpacks after a get (finish()).
        op->staged = n;
        if (!(op->pinned = cuda::staging_pinned(n))) return fail(UCXDT_ERR_NO_MEMORY, "cudaMallocHost of the one-sided staging");
        if (op->put) cpu::pack(o, origin, 0, n, op->pinned);
        else op->unpack_on_host = true;
        st = transfer_on_gpu(t, target, op->pinned, 0, n, !op->put, device, s, false);
    } else if (strided || same) {
        // Into the stream's batch, launched by the next progress call with the others'.
        cuda::LaunchBatch &b = r->stream->batch();
        const cuda::LaunchBatch::Mark mark = b.mark();
        if (strided)
            st = op->put ? cuda::copy_layouts_async(o, origin, t, target, device, s, remote_gpu, &b)
                         : cuda::copy_layouts_async(t, target, o, origin, device, s, false, &b);
        else
            st = op->put ? cuda::copy_same_layout_async(o, origin, target, device, s, &b)
                         : cuda::copy_same_layout_async(t, target, origin, device, s, &b);
        if (st) {
            b.rewind(mark);
            cudaStreamSynchronize(s);  // a 2-D copy may have started
            return st;
        }
        ++r->ucp_ops;  // the GPU work, which the request outlives
        if (launching_.add(r->stream, r) >= static_cast<size_t>(w_->cfg.gpu_batch)) flush_launches(r->stream);
        return UCXDT_OK;
    } else if (t.cls == UCXDT_PLAN_CONTIGUOUS) {
        // The target is the packed stream: the origin packs into it, or unpacks from it.
        st = transfer_on_gpu(o, origin, at(target, t.base), 0, n, op->put, device, s, remote_gpu);
    } else if (o.cls == UCXDT_PLAN_CONTIGUOUS) {
        st = transfer_on_gpu(t, target, at(origin, o.base), 0, n, !op->put, device, s, false);
    } else {
        // Neither: through device staging, packed on one side and unpacked on the other.
        op->staged = n, op->staged_device = device;
        if (!(op->device = cuda::staging_device(device, n))) return fail(UCXDT_ERR_NO_MEMORY, "cudaMalloc of the one-sided staging");
        const Plan &from = op->put ? o : t, &to = op->put ? t : o;
        char *from_buf = op->put ? origin : target, *to_buf = op->put ? target : origin;
        st = transfer_on_gpu(from, from_buf, op->device, 0, n, true, device, s, false);
        if (!st) st = transfer_on_gpu(to, to_buf, op->device, 0, n, false, device, s, op->put && remote_gpu);
    }
    if (st) {
        cudaStreamSynchronize(s);  // nothing of it may run once the request ends
        return st;
    }
    GpuWait g{r, r->stream, nullptr, true, UCXDT_OK};
    if (ucxdt_status_t e = r->stream->record(&g.event)) {
        cudaStreamSynchronize(s);
        return e;
    }
    ++r->ucp_ops;  // the GPU work, which the request outlives
    ++counters.ipc_events;
    gpu_.push_back(g);
    return UCXDT_OK;
}

void Rma::flush_launches(cuda::WorkStream *only) {
    launching_.flush(
        [this](cuda::WorkStream *ws, std::vector<Request *> &rs, cudaEvent_t event, ucxdt_status_t st) {
            if (!st) ++counters.ipc_events;
            for (size_t k = 0; k < rs.size(); ++k)
                gpu_.push_back(GpuWait{rs[k], ws, event, event && k + 1 == rs.size(), st});
        },
        only);
}

// ---- Completion ----------------------------------------------------------------------------

void Rma::finish(Request *r) {
    Op *op = op_of(r);
    if (r->status != UCXDT_INPROGRESS) return;  // failed meanwhile (peer failure, endpoint gone)
    ucxdt_status_t st = op->error;
    // A get unpacks what landed in staging; a contiguous host origin was the landing itself.
    if (!st && !op->put && !op->flush && op->landing && !r->contig)
        st = transfer(*r->plan, r->buffer, op->landing, 0, r->packed, false, nullptr);
    if (!st && op->unpack_on_host) cpu::unpack(*r->plan, r->buffer, 0, r->packed, op->pinned);
    if (!st) measure(*op);
    w_->complete(r, st);
}

void Rma::measure(const Op &op) {
    // An operation's service time is the time since the previous completion, or since it
    // started if that is later (with operations in flight, latency counts the queue too).
    const auto now = std::chrono::steady_clock::now();
    const auto since = std::max(op.started, last_completion_);
    last_completion_ = now;
    if (op.target_runs < 2 || op.started.time_since_epoch().count() == 0) return;  // IPC, or one run
    Window &w = window_[op.device_target];
    PathCosts &costs = costs_[op.device_target];
    if (w.ops == 0 || w.am != op.am) {  // the first completion opens a window, uncounted
        w = Window{op.am, 1};
        return;
    }
    ++w.ops;
    w.seconds += std::chrono::duration<double>(now - since).count();
    w.runs += static_cast<double>(op.target_runs);
    w.target_seconds += static_cast<double>(op.target_ns) * 1e-9;
    if (w.ops < PathCosts::kStint) return;
    if (!op.am) {
        costs.run.add(w.seconds / w.runs);
    } else {
        costs.target_run.add(w.target_seconds / w.runs);
        costs.am.add(std::max(0.0, w.seconds - w.target_seconds) / (w.ops - 1));
    }
    if (costs.stint_path == (op.am ? Path::AM : Path::RUNS)) costs.probing = false;
    w = Window{op.am, 1};  // this completion opens the next
}

void Rma::start_flush(Request *r, rndv::Ep *ep) {
    Op *op = op_of(r);
    for (auto &[id, q] : w_->requests)
        if (q != r && q->ext && q->status == UCXDT_INPROGRESS && !op_of(q)->flush && (!ep || q->ep == ep))
            op->before.push_back(id);
    flushes_.push_back(r->id);
    advance_flush(r);
}

void Rma::advance_flush(Request *r) {
    Op *op = op_of(r);
    if (r->status != UCXDT_INPROGRESS || op->ucp_flush_posted) return;
    for (uint64_t id : op->before) {
        auto it = w_->requests.find(id);
        if (it != w_->requests.end() && it->second->status == UCXDT_INPROGRESS) return;
    }
    // Every earlier operation is complete here; UCP's flush completes its puts at the targets.
    const ucp_request_param_t p = ucp_param(r);
    ucs_status_ptr_t s = r->ep ? ucp_ep_flush_nbx(r->ep->ucp_ep, &p) : ucp_worker_flush_nbx(w_->ucp_worker, &p);
    op->ucp_flush_posted = true;
    if (UCS_PTR_IS_ERR(s)) w_->complete(r, w_->ucx_error("ucp flush", UCS_PTR_STATUS(s)));
    else if (s == nullptr) w_->complete(r, UCXDT_OK);
    else ++r->ucp_ops, ++r->ucp_pending;
}

unsigned Rma::progress() {
    unsigned n = serve_incoming();
    if (!launching_.empty()) flush_launches();
    std::vector<Request *> ended;
    // Events of one stream complete in order: only the oldest pending one is queried, once for
    // the waits of one launch.
    cudaEvent_t complete_event = nullptr;
    while (!gpu_.empty()) {
        const GpuWait g = gpu_.front();
        const cudaError_t e = !g.event || g.event == complete_event ? cudaSuccess : cudaEventQuery(g.event);
        if (e == cudaErrorNotReady) break;
        gpu_.pop_front();
        complete_event = e == cudaSuccess && !g.owns_event ? g.event : nullptr;
        if (g.owns_event) g.stream->give_event(g.event);
        w_->op_done(g.r);
        if (g.status) {
            op_of(g.r)->error = g.status;
        } else if (e != cudaSuccess) {
            cudaGetLastError();
            op_of(g.r)->error = fail(UCXDT_ERR_CUDA, std::string("one-sided GPU copy: ") + cudaGetErrorString(e));
        }
        ended.push_back(g.r);
        ++n;
    }
    while (!done_.empty()) {
        const UcpDone d = done_.front();
        done_.pop_front();
        w_->op_done(d.r);
        Op *op = op_of(d.r);
        if (d.status != UCS_OK && !op->error) op->error = w_->ucx_error("one-sided UCP operation", d.status);
        ended.push_back(d.r);
        ++n;
    }
    // An operation whose peer failed gets no reply: it stops waiting for one.
    for (auto it = awaiting_.begin(); it != awaiting_.end();) {
        auto q = w_->requests.find(*it);
        if (q != w_->requests.end() && q->second->status == UCXDT_INPROGRESS) {
            ++it;
            continue;
        }
        if (q != w_->requests.end()) {
            w_->op_done(q->second);
            ended.push_back(q->second);
        }
        it = awaiting_.erase(it);
    }
    // Flushes first: a flush may wait for an operation that ends below, and is looked up by id
    // because the user may free a completed one.
    for (size_t i = 0; i < flushes_.size();) {
        auto it = w_->requests.find(flushes_[i]);
        if (it == w_->requests.end() || it->second->status != UCXDT_INPROGRESS) {
            flushes_[i] = flushes_.back();
            flushes_.pop_back();
            continue;
        }
        advance_flush(it->second);
        ++i;
    }
    std::sort(ended.begin(), ended.end());
    ended.erase(std::unique(ended.begin(), ended.end()), ended.end());
    for (Request *r : ended) {
        if (r->ucp_ops == 0) {
            if (op_of(r)->flush) w_->complete(r, op_of(r)->error);
            else finish(r);
        }
        if (r->user_freed) w_->release(r);
    }
    return n;
}

}  // namespace ucxdt::rma
