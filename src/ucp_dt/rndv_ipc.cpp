// The CUDA IPC path of the rendezvous (include/ucxdt/ucxdt_ucp.h), for a sender whose layout is
// in GPU memory and a receiver on the same node: the GPUs read and write each other's memory
// through CUDA IPC mappings instead of staging through the host (Wu et al., HPDC'16, 4.1, with
// cuda_ipc in place of the BTL's RDMA). The RTS carries an IPC reference instead of an rkey:
//   sender contiguous:   the receiver copies (or unpacks) straight from the sender's buffer;
//   receiver contiguous: the receiver's RTR carries its buffer, which the sender packs into;
//   neither:             the RTR asks for fragments; the sender packs fragment k into a device
//                        staging slot and sends READY when the GPU is done, the receiver
//                        unpacks it from the slot and ACKs, which frees the slot for fragment
//                        k + depth. Packs and unpacks of different fragments overlap.
// GPU work runs on the worker's stream of the layout's GPU; its completion is polled through
// events in ucxdt_worker_progress, which then sends READY, ACK, FIN or ATS.
#include "rndv_worker.hpp"

#include "address.hpp"
#include "error.hpp"
#include "transfer.hpp"
#include "uct_cuda/cuda_check.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>

namespace ucxdt::rndv {

ucxdt_status_t send_tagged(Request *r);  // rndv_send.cpp

int64_t Worker::ipc_frag(const Config &c, int64_t packed) {
    // More fragments overlap more of the sender's pack with the receiver's unpack (which reads
    // over NVLink, the slow stage), but each costs about kFragUs of launches, event polls and
    // two active messages on the critical path. With pack time P / Rp, the time
    //   P / Ru + P / (n Rp) + n kFragUs   is least at   n = sqrt(P / (Rp kFragUs)).
    // Measured on two H200s (V into V, p50; the sweep of scripts/pipeline-sweep): four
    // fragments cost 82 us at 8 MB against 39 us for one pack straight into the peer's buffer,
    // i.e. about 10 us per fragment; local packs of V run at 0.7-1.4 TB/s. At 128 MB the rule
    // gives the 4 fragments that measured best there (32 MiB: 410 us; 16 MiB: 444; 8 MiB: 485).
    constexpr double kPackBytesPerUs = 1e6, kFragUs = 10;
    constexpr int64_t kAlign = 64 << 10;
    const auto n = std::max<int64_t>(1, std::llround(std::sqrt(static_cast<double>(packed) / (kPackBytesPerUs * kFragUs))));
    const int64_t want = (packed + n - 1) / n;
    return std::min((want + kAlign - 1) / kAlign * kAlign, c.ipc_frag_max);
}

ucxdt_status_t Worker::gpu(int device, cuda::DeviceStaging **out) {
    auto &g = gpus[device];
    if (!g) {
        cuda::DeviceStaging *made = nullptr;
        if (ucxdt_status_t st = cuda::DeviceStaging::create(device, 2 * cfg.depth, cfg.ipc_frag_max, &made)) {
            gpus.erase(device);
            return st;
        }
        g.reset(made);
    }
    *out = g.get();
    return UCXDT_OK;
}

template <class Work> ucxdt_status_t Worker::launch(Request *r, GpuOp op, Work work) {
    op.req = r;
    if (r->dev) {
        const cudaStream_t s = r->dev->stream();
        if (ucxdt_status_t st = work(&s)) return st;
        if (ucxdt_status_t st = r->dev->record(&op.event)) return st;
        op.dev = r->dev;
    } else if (ucxdt_status_t st = work(nullptr)) {  // host memory: synchronous
        return st;
    }
    ++r->ucp_ops;
    gpu_ops.push_back(op);
    return UCXDT_OK;
}

ucxdt_status_t Worker::map_peer(Request *r, const cuda::IpcRef &ref, uint64_t uuid, const PeerInfo &p) {
    int device = r->gpu;
    if (device < 0)
        if (ucxdt_status_t st = cuda::check(cudaGetDevice(&device), "cudaGetDevice")) return st;
    char *mem = nullptr;
    if (ucxdt_status_t st = imports->map(uuid, ref, device, p.pid == pid, &mem)) return st;
    r->peer_ref = ref;
    r->peer_mem = mem;
    r->map_device = device;
    r->peer_uuid = uuid;
    return UCXDT_OK;
}

// ---- Sending ------------------------------------------------------------------------------

bool Worker::send_start_ipc(Request *r) {
    if (r->gpu < 0 || !r->ep->peer_known || !ipc_peer(r->ep->peer)) return false;
    cuda::IpcRef ref{};
    TagHeader &h = r->hdr;
    if (r->dense) {
        if (cuda::ipc_export(at(r->buffer, r->plan->base), &ref)) return clear_error(), false;
        h.frag = std::max<int64_t>(r->packed, 1);
    } else {
        if (gpu(r->gpu, &r->dev) || r->dev->allocate()) return clear_error(), false;
        ref = r->dev->ref();
        h.frag = ipc_frag(cfg, r->packed);
    }
    r->ipc = true;
    h.kind = TagKind::rts;
    h.ipc = 1;
    h.contig = r->dense ? 1 : 0;
    h.initial = 0;
    h.rkey_len = 0;
    h.remote_addr = ref.base + ref.offset;
    r->nfrags = (r->packed + h.frag - 1) / h.frag;
    char *m = wire_alloc(r, sizeof h + sizeof ref);
    std::memcpy(m, &h, sizeof h);
    std::memcpy(m + sizeof h, &ref, sizeof ref);
    if (ucxdt_status_t st = send_tagged(r)) complete(r, st);
    return true;
}

void Worker::send_ipc_fail(Request *r, ucxdt_status_t st) {
    if (r->rreq_id && !r->peer_lost) {
        AmHeader fin{};
        fin.kind = AmKind::fin;
        fin.status = st;
        fin.sreq_id = r->id;
        fin.rreq_id = r->rreq_id;
        send_am(r->ep->ucp_ep, fin, false);
    }
    if (r->dev) cudaStreamSynchronize(r->dev->stream());  // nothing of it may still run
    complete(r, st);
}

void Worker::send_on_rtr(const AmHeader &h) {
    const auto it = requests.find(h.sreq_id);
    if (it == requests.end() || !it->second->is_send || it->second->status != UCXDT_INPROGRESS) return;
    Request *r = it->second;
    r->rreq_id = h.rreq_id;
    if (ucxdt_status_t st = gpu(r->gpu, &r->dev)) return send_ipc_fail(r, st);
    if (!h.direct) return send_ipc_stage(r);
    // The receiver's contiguous buffer: pack the whole message into it.
    if (ucxdt_status_t st = map_peer(r, h.ref, r->ep->peer_uuid, r->ep->peer)) return send_ipc_fail(r, st);
    const ucxdt_status_t st = launch(r, GpuOp{GpuOp::send_all}, [&](const cudaStream_t *s) {
        return transfer(*r->plan, r->buffer, r->peer_mem, 0, r->packed, true, s);
    });
    if (st) send_ipc_fail(r, st);
}

void Worker::send_ipc_frag(Request *r, int64_t k, int slot) {
    GpuOp op{GpuOp::send_frag};
    op.frag = k;
    op.slot = slot;
    const ucxdt_status_t st = launch(r, op, [&](const cudaStream_t *s) {
        return transfer(*r->plan, r->buffer, r->dev->slot(slot), k * r->hdr.frag, r->frag_bytes(k), true, s);
    });
    if (st) send_ipc_fail(r, st);
}

void Worker::send_ipc_stage(Request *r) {
    if (r->status != UCXDT_INPROGRESS) return;
    r->slots = r->dev->take(static_cast<int>(std::min<int64_t>(cfg.depth, r->nfrags)));
    if (r->slots.empty()) {
        waiting.push_back(r);  // every device slot is in use: try again after progress
        return;
    }
    r->next_pack = static_cast<int64_t>(r->slots.size());
    const std::vector<int> first = r->slots;
    for (size_t i = 0; i < first.size() && r->status == UCXDT_INPROGRESS; ++i)
        send_ipc_frag(r, static_cast<int64_t>(i), first[i]);
}

// ---- Receiving ----------------------------------------------------------------------------

void Worker::recv_start_ipc(Request *r) {
    if (r->ipc) return;  // started
    r->ipc = true;
    const auto pi = peers.find(r->hdr.sender_uuid);
    const PeerInfo p = pi->second;
    if (!ipc_peer(p))
        return recv_finish(r, fail(UCXDT_ERR_UNSUPPORTED, "the sender chose CUDA IPC, which this worker does not use "
                                                          "(UCXDT_CUDA_IPC, or no GPU)"));
    if (r->gpu >= 0)
        if (ucxdt_status_t st = gpu(r->gpu, &r->dev)) return recv_finish(r, st);
    if (r->hdr.contig) {
        // Straight from the sender's buffer.
        if (ucxdt_status_t st = map_peer(r, r->peer_ref, r->hdr.sender_uuid, p)) return recv_finish(r, st);
        // transfer() copies with cudaMemcpyAsync when the receive layout is contiguous.
        const ucxdt_status_t st = launch(r, GpuOp{GpuOp::recv_all}, [&](const cudaStream_t *s) {
            return transfer(*r->plan, r->buffer, r->peer_mem, 0, r->hdr.packed, false, s);
        });
        if (st) recv_finish(r, st);
        return;
    }
    AmHeader rtr{};
    rtr.kind = AmKind::rtr;
    rtr.sreq_id = r->hdr.sreq_id;
    rtr.rreq_id = r->id;
    if (r->dense && r->gpu >= 0 && !cuda::ipc_export(at(r->buffer, r->plan->base), &rtr.ref)) {
        rtr.direct = 1;
    } else {
        clear_error();
        if (ucxdt_status_t st = map_peer(r, r->peer_ref, r->hdr.sender_uuid, p)) return recv_finish(r, st);
    }
    if (ucxdt_status_t st = send_am(r->peer, rtr, false)) recv_finish(r, st);
}

void Worker::recv_ipc_frag(Request *r, int64_t k, int slot, uint64_t offset) {
    if (k < 0 || k >= r->nfrags || !r->peer_mem) return;
    r->remote_slots[k] = slot;
    GpuOp op{GpuOp::recv_frag};
    op.frag = k;
    op.slot = slot;
    char *src = r->peer_mem + offset;
    const ucxdt_status_t st = launch(r, op, [&](const cudaStream_t *s) {
        return transfer(*r->plan, r->buffer, src, k * r->hdr.frag, r->frag_bytes(k), false, s);
    });
    if (st) {
        if (r->dev) cudaStreamSynchronize(r->dev->stream());
        recv_finish(r, st);
    }
}

void Worker::recv_on_fin(const AmHeader &h) {
    const auto it = requests.find(h.rreq_id);
    if (it == requests.end() || it->second->is_send || it->second->status != UCXDT_INPROGRESS) return;
    Request *r = it->second;
    if (r->dev) cudaStreamSynchronize(r->dev->stream());  // our own reads of its memory are over
    recv_finish(r, static_cast<ucxdt_status_t>(h.status));
}

// ---- Completion of GPU work ---------------------------------------------------------------

unsigned Worker::poll_gpu() {
    if (gpu_ops.empty()) return 0;
    std::deque<GpuOp> ops, later;
    ops.swap(gpu_ops);
    unsigned n = 0;
    for (const GpuOp &op : ops) {
        ucxdt_status_t st = UCXDT_OK;
        if (op.event) {
            const cudaError_t e = cudaEventQuery(op.event);
            if (e == cudaErrorNotReady) {
                later.push_back(op);
                continue;
            }
            st = cuda::check(e, "GPU work of the rendezvous");
            op.dev->give_event(op.event);
        }
        ++n;
        Request *r = op.req;
        --r->ucp_ops;
        if (r->status == UCXDT_INPROGRESS) {
            if (st) {
                if (r->is_send) send_ipc_fail(r, st);
                else {
                    if (r->dev) cudaStreamSynchronize(r->dev->stream());
                    recv_finish(r, st);
                }
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
    AmHeader m{};
    m.sreq_id = r->is_send ? r->id : r->hdr.sreq_id;
    m.rreq_id = r->is_send ? r->rreq_id : r->id;
    switch (op.kind) {
    case GpuOp::send_frag:  // fragment packed into its slot: announce it
        m.kind = AmKind::ready;
        m.frag_index = op.frag;
        m.slot = op.slot;
        m.offset = static_cast<uint64_t>(r->dev->slot_offset(op.slot));
        if (ucxdt_status_t st = send_am(r->ep->ucp_ep, m, false)) send_ipc_fail(r, st);
        break;
    case GpuOp::send_all:  // packed into the receiver's buffer
        m.kind = AmKind::fin;
        m.status = UCXDT_OK;
        if (ucxdt_status_t st = send_am(r->ep->ucp_ep, m, false)) complete(r, st);
        break;
    case GpuOp::recv_frag:  // unpacked from the sender's slot: free it
        m.kind = AmKind::ack;
        m.frag_index = op.frag;
        m.slot = op.slot;
        if (ucxdt_status_t st = send_am(r->peer, m, false)) return recv_finish(r, st);
        if (++r->frags_done == r->nfrags) recv_finish(r, UCXDT_OK);
        break;
    case GpuOp::recv_all:
        recv_finish(r, UCXDT_OK);
        break;
    }
}

}  // namespace ucxdt::rndv
