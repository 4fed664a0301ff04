// GPU work of the rendezvous and its completion. Packs, unpacks and copies of GPU layouts run on
// one of the worker's streams of the layout's GPU (cuda::DeviceStaging) and record an event; progress
// polls the events in order and takes the protocol's next step when one completes: READY, ACK,
// FIN or ATS, or the RTS of a host-staged send whose first fragments are packed. The CPU thus
// never waits for the GPU, and UCP's progress (which serves the peer's GETs and active
// messages) runs while fragments pack and unpack.
#include "ucp_rndv/rndv_worker.hpp"

#include "pack/transfer.hpp"
#include "cuda/cuda_check.hpp"

#include <algorithm>

namespace ucxdt::rndv {

ucxdt_status_t Worker::gpu(int device, cuda::DeviceStaging **out) {
    auto &g = gpus[device];
    if (!g) {
        cuda::DeviceStaging *made = nullptr;
        if (ucxdt_status_t st = cuda::DeviceStaging::create(device, 2 * cfg.depth, cfg.ipc_frag_max, cfg.gpu_streams, &made)) {
            gpus.erase(device);
            return st;
        }
        g.reset(made);
    }
    *out = g.get();
    return UCXDT_OK;
}

ucxdt_status_t Worker::gpu(Request *r) {
    if (ucxdt_status_t st = gpu(r->gpu, &r->dev)) return st;
    if (!r->stream) {
        // A large message's kernel then starts while the one before drains, where back to back
        // on one stream each paid that (performance-log.md, run 30). Small ones keep sharing
        // one stream's launches and events.
        const int64_t bytes = r->is_send ? r->packed : r->hdr.packed;
        const int n = r->dev->streams();
        r->stream = r->dev->stream(bytes >= cfg.gpu_stream_split ? static_cast<int>(streams_taken++ % n) : 0);
    }
    return UCXDT_OK;
}

ucxdt_status_t Worker::launch(Request *r, GpuOp op, const GpuWork &work) {
    op.req = r;
    mark(r, "gpu_issue");
    if (r->stream) {
        // A window of small messages issues many of these between progress calls: their kernels
        // share a launch and an event (cuda::LaunchQueue), where each paid its own (the host-
        // staged packs and unpacks, pulls; docs/performance.md, table c).
        cuda::LaunchBatch &b = r->stream->batch();
        const cudaStream_t s = r->stream->cuda_stream();
        const cuda::LaunchBatch::Mark mark = b.mark();
        if (ucxdt_status_t st = work(&s)) {
            b.rewind(mark);  // none of it may run once r has ended
            return st;
        }
        if (!r->ipc && b.grew_since(mark)) b.host_link = true;  // host staging
        op.stream = r->stream;
        ++r->ucp_ops;
        ++gpu_launches;
        if (launching.add(r->stream, op) >= static_cast<size_t>(cfg.gpu_batch)) flush_launches(r->stream);
        return UCXDT_OK;
    }
    if (ucxdt_status_t st = work(nullptr)) return st;  // host memory: synchronous
    ++r->ucp_ops;
    gpu_ops.push_back(op);
    return UCXDT_OK;
}

void Worker::launched(std::vector<GpuOp> &ops, cudaEvent_t event, ucxdt_status_t st) {
    if (!st) ++gpu_events;
    for (size_t k = 0; k < ops.size(); ++k) {
        mark(ops[k].req, "gpu_launched");
        ops[k].event = event;
        ops[k].owns_event = event && k + 1 == ops.size();  // the last completes last
        ops[k].status = st;
        gpu_ops.push_back(ops[k]);
    }
}

template <class Pred>
void Worker::flush_launches_if(Pred &&launch_now) {
    launching.flush_if([this](cuda::WorkStream *, std::vector<GpuOp> &ops, cudaEvent_t event,
                              ucxdt_status_t st) { launched(ops, event, st); },
                       std::forward<Pred>(launch_now));
}

void Worker::flush_launches(cuda::WorkStream *only) {
    flush_launches_if([only](cuda::WorkStream *ws) { return !only || ws == only; });
}

void Worker::flush_idle_launches() {
    // A stream still running cfg.gpu_in_flight launches of ours keeps its new kernels across the
    // host link waiting: they join the next launch, once one of those ends, instead of each
    // message's kernels queueing a launch of their own behind the running ones. Under load a
    // launch thus takes every message that arrived while the GPU was busy (a window of
    // host-staged block lists sent one launch per message, each a grid too small to hide the
    // host link's latency; one launch in flight measured at least as well as two:
    // performance-log.md, run 24); an idle stream launches at once. Pulls over CUDA IPC never
    // wait: their windows measured faster launched as they came (run 25). Operations without
    // kernels (copies already on the stream) only need their event, and never wait.
    const auto busy = [this](cuda::WorkStream *ws) {
        if (cfg.gpu_in_flight == 0 || ws->events_out() < cfg.gpu_in_flight || ws->batch().empty() ||
            !ws->batch().host_link)
            return false;
        // Only while one of our operations awaits an event there, whose completion wakes this.
        return std::any_of(gpu_ops.begin(), gpu_ops.end(), [ws](const GpuOp &op) { return op.stream == ws && op.event; });
    };
    flush_launches_if([&busy](cuda::WorkStream *ws) { return !busy(ws); });
}

void Worker::quiesce(cuda::WorkStream *stream) {
    if (!launching.empty()) flush_launches(stream);
    stream->synchronize();  // with copies another layer (one-sided) batched on this stream
}

ucxdt_status_t move_bytes(Request *r, const cudaStream_t *s, char *packed, int64_t offset,
                                 int64_t length, bool pack, bool peer) {
    if (s)
        return transfer_on_gpu(*r->plan, r->buffer, packed, offset, length, pack, r->gpu, *s, peer, &r->stream->batch());
    return transfer(*r->plan, r->buffer, packed, offset, length, pack, nullptr, peer);
}

void Worker::send_fail(Request *r, ucxdt_status_t st) {
    // Nothing of it may still run once the receiver reads FIN (it then reuses its slots), nor once
    // our staging slots go back to the pool.
    if (r->stream) quiesce(r->stream);
    if (r->rreq_id && !r->peer_lost) send_fin(r, st);
    complete(r, st);
}

ucxdt_status_t Worker::send_fin(Request *r, ucxdt_status_t st) {
    AmHeader fin{};
    fin.kind = AmKind::fin;
    fin.status = st;
    fin.sreq_id = r->id;
    fin.rreq_id = r->rreq_id;
    return send_am(r->ep->ucp_ep, fin, false);
}

unsigned Worker::poll_gpu() {
    if (gpu_ops.empty()) return 0;
    std::deque<GpuOp> ops, later;
    ops.swap(gpu_ops);
    unsigned n = 0;
    // Events of one stream complete in the order they were recorded, and gpu_ops keeps that
    // order: once one is pending, the later ones of its stream are too, and querying them would
    // only cost driver calls (a window of messages queues many). Only the oldest is queried.
    // Ops of one launch share its event (flush_launches), queued together: one query serves them.
    std::vector<const cuda::WorkStream *> pending;
    cudaEvent_t complete_event = nullptr;
    for (const GpuOp &op : ops) {
        ucxdt_status_t st = op.status;
        if (op.event) {
            const bool behind = std::find(pending.begin(), pending.end(), op.stream) != pending.end();
            const cudaError_t e = behind                         ? cudaErrorNotReady
                                  : op.event == complete_event ? cudaSuccess
                                                               : cudaEventQuery(op.event);
            if (e == cudaErrorNotReady) {
                if (!behind) pending.push_back(op.stream);
                later.push_back(op);
                continue;
            }
            st = cuda::check(e, "GPU work of the rendezvous");
            complete_event = e == cudaSuccess && !op.owns_event ? op.event : nullptr;
            if (op.owns_event) op.stream->give_event(op.event);
        }
        ++n;
        Request *r = op.req;
        mark(r, "gpu_done");
        --r->ucp_ops;
        if (r->status == UCXDT_INPROGRESS) {
            if (st && op.kind == GpuOp::recv_eager) {  // no rendezvous to end: no ATS
                recv_eager_done(r, st);
            } else if (st) {
                if (r->is_send) send_fail(r, st);
                else recv_finish(r, st);
            } else {
                gpu_done(op);
            }
        }
        if (r->user_freed) release(r);
    }
    // Work queued while polling goes after what is still running.
    later.insert(later.end(), gpu_ops.begin(), gpu_ops.end());
    gpu_ops.swap(later);
    return n;
}

void Worker::gpu_done(const GpuOp &op) {
    Request *r = op.req;
    switch (op.kind) {
    case GpuOp::send_tagged:  // the tagged message's data is packed: eager data, or (host
                              // staging) the first fragments its RTS names
        if (ucxdt_status_t st = send_tagged(r)) send_fail(r, st);
        break;
    case GpuOp::recv_eager:  // unpacked out of the wire slot
        recv_eager_done(r, UCXDT_OK);
        break;
    case GpuOp::send_frag:  // fragment packed into its slot: announce it, or send it
        if (!r->ipc && r->hdr.am_frags && !r->in_place) {
            if (r->rreq_id) send_host_frag(r, op.frag, op.slot);  // the RTR came
            else r->packed_frags.emplace_back(op.frag, op.slot);
            break;
        }
        // Over IPC the receiver reads our device slot at this offset of the exported staging.
        if (ucxdt_status_t st = announce(r, op.frag, op.slot,
                                         r->ipc && !r->push ? static_cast<uint64_t>(r->dev->slot_offset(op.slot, r->slot_level)) : 0))
            send_fail(r, st);
        break;
    case GpuOp::send_all:  // packed into the receiver's buffer
        if (ucxdt_status_t st = send_fin(r, UCXDT_OK)) complete(r, st);
        break;
    case GpuOp::recv_frag:  // unpacked from the slot: grant it again, or free it
        if (!r->ipc) {  // host staging: the sender had its ACK when the GET landed
            r->free_slots.push_back(op.slot);
            return recv_frag_done(r);
        }
        if (r->push && r->next_get < r->nfrags) {
            if (ucxdt_status_t st = recv_grant(r, op.slot, AmKind::ack)) return recv_finish(r, st);
        } else if (r->push) {
            r->slots.erase(std::remove(r->slots.begin(), r->slots.end(), op.slot), r->slots.end());
            r->give_slot(op.slot);
        } else if (ucxdt_status_t st = acknowledge(r, op.frag, op.slot)) {
            return recv_finish(r, st);
        }
        if (++r->frags_done == r->nfrags) recv_finish(r, UCXDT_OK);
        break;
    case GpuOp::recv_in_place:  // unpacked from the sender's slot: it may refill it
        --r->gets_in_flight;
        if (r->hdr.initial < r->nfrags)  // else the RTS named every fragment: the ATS frees the slots
            if (ucxdt_status_t st = acknowledge(r, op.frag, op.slot); st && !r->status_pending) r->status_pending = st;
        return recv_frag_done(r);
    case GpuOp::recv_all:
        recv_finish(r, UCXDT_OK);
        break;
    }
}

}  // namespace ucxdt::rndv
