// The CUDA IPC path of the rendezvous (include/ucxdt/ucxdt_ucp.h), for a sender whose layout is
// in GPU memory and a receiver on the same node: the GPUs read and write each other's memory
// through CUDA IPC mappings instead of staging through the host (Wu et al., HPDC'16, 4.1, with
// cuda_ipc in place of the BTL's RDMA). The RTS carries an IPC reference instead of an rkey:
//   sender contiguous:   the receiver copies (or unpacks) straight from the sender's buffer;
//   receiver contiguous: the receiver's RTR carries its buffer, which the sender packs into
//                        (a small strided sender's runs the receiver pulls, below);
//   both strided, runs of one length: the RTR carries the receiver's first run and the shape of
//                        its layout, and the sender copies each run into the run of the same
//                        index (one GPU operation in all, where pack and unpack take two); up
//                        to UCXDT_IPC_PULL_SIZE the RTS carries the sender's first run and
//                        shape instead, and the receiver copies, then sends the ATS (pull;
//                        a contiguous receiver too, into its runs laid end to end);
//   one block list on both sides (equal layout hashes): the RTR carries the receiver's lowest
//                        byte, and the sender copies each byte to its own displacement there;
//                        up to UCXDT_IPC_PULL_SIZE the RTS carries the sender's lowest byte
//                        instead, and the receiver copies (pull);
//   neither:             push: the RTR and then ACKs grant slots of the receiver's device
//                        staging; the sender packs the next fragment into each granted slot
//                        through the mapping and sends READY when the GPU is done; the receiver
//                        unpacks it from its own memory and grants the slot again (a GPU
//                        receiver without a free device slot waits for one). A receiver in host
//                        memory, or whose slots are smaller than the sender's fragments, pulls:
//                        the sender packs into its own device staging, announces each fragment
//                        with READY, and the receiver unpacks it from there and ACKs to free
//                        the slot. Either way, packs and unpacks of different fragments overlap.
// GPU work runs on the worker's stream of the layout's GPU; its completion is polled through
// events in ucxdt_worker_progress, which then sends READY, ACK, FIN or ATS.
#include "ucp_rndv/rndv_worker.hpp"

#include "base/address.hpp"
#include "base/error.hpp"
#include "dt/address_order.hpp"
#include "ucp_rndv/frag_model.hpp"
#include "kernels/pack_kernels.hpp"
#include "pack/transfer.hpp"
#include "cuda/cuda_check.hpp"
#include "cuda/gpu_engine.hpp"
#include "cuda/method.hpp"
#include "cuda/resources.hpp"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <utility>

namespace ucxdt::rndv {

static_assert(StridedShape::kMaxDims == kernels::kMaxDims, "a shape must fit the strided kernel");

namespace {

bool shape_fits(const Plan &p) {
    return p.cls == UCXDT_PLAN_STRIDED && p.dims.size() <= static_cast<size_t>(StridedShape::kMaxDims);
}

// The sender offers its runs to be copied one by one across the link (a pull, or the sender's
// copy into the receiver's layout) only where that beats the fragment pipeline.
// `alone`: the only send in progress, with no GPU work of the worker in flight
// (runs_cross_peer_link).
bool offers_runs(const Plan &p, bool alone = false) { return shape_fits(p) && cuda::runs_cross_peer_link(p, alone); }

// Whether a send's RTS offers its layout to a receive of the same layout, which then has each
// byte copied to its own displacement (layout_hash): a block list; a strided layout too short-
// run to cross the link run by run (offers_runs) but whose runs in address order would (a
// transpose's columns, FFT's scatter: one copy of the whole span), when the sender writes it
// (above the pull size), so that smaller ones keep eager and their receivers of other layouts
// keep their path.
// `runs`: offers_runs' answer for this send.
bool offers_same_layout(const Plan &p, int64_t packed, int64_t pull_limit, bool runs) {
    if (p.layout_hash == 0) return false;
    if (p.cls == UCXDT_PLAN_BLOCK_LIST) return true;
    Plan ordered;
    return p.cls == UCXDT_PLAN_STRIDED && packed > pull_limit && !runs && address_ordered(p, &ordered) &&
           cuda::runs_cross_peer_link(ordered);
}

// The receiver's layout that an RTR's shape describes, with its first run at displacement 0;
// false when the shape is malformed (its runs and bytes do not multiply out).
bool plan_of(const StridedShape &s, Plan *out) {
    if (s.ndims < 1 || s.ndims > StridedShape::kMaxDims || s.block_len <= 0) return false;
    int64_t runs = 1, bytes = 0;
    out->dims.clear();
    for (int k = 0; k < s.ndims; ++k) {
        if (s.dims[k].count < 1 || __builtin_mul_overflow(runs, s.dims[k].count, &runs)) return false;
        out->dims.push_back({s.dims[k].count, s.dims[k].stride});
    }
    if (__builtin_mul_overflow(runs, s.block_len, &bytes) || bytes != s.packed) return false;
    out->cls = UCXDT_PLAN_STRIDED;
    out->block_len = out->unit_size = s.block_len;
    out->packed_size = s.packed;
    out->num_blocks = runs;
    out->base = 0;
    return true;
}

// Bytes [lo, hi) that p's runs cover, relative to its first run; false on overflow.
bool run_span(const Plan &p, int64_t *lo, int64_t *hi) {
    *lo = 0, *hi = p.block_len;
    for (const Plan::Dim &d : p.dims) {
        int64_t reach = 0;
        if (__builtin_mul_overflow(d.count - 1, d.stride, &reach)) return false;
        if (__builtin_add_overflow(reach < 0 ? *lo : *hi, reach, reach < 0 ? lo : hi)) return false;
    }
    return true;
}

// p's shape, runs relative to its first (shape_fits(p)).
StridedShape shape_of(const Plan &p) {
    StridedShape s{};
    s.block_len = p.block_len;
    s.packed = p.packed_size;
    s.ndims = static_cast<int32_t>(p.dims.size());
    for (size_t k = 0; k < p.dims.size(); ++k) s.dims[k] = {p.dims[k].count, p.dims[k].stride};
    return s;
}

// Exports the device memory at `ptr` into *ref when bytes [ptr + lo, ptr + hi) all lie in the
// allocation that the reference maps (a layout the peer will write through it); else false,
// with *ref cleared and no error left behind.
bool export_covering(char *ptr, int64_t lo, int64_t hi, cuda::IpcRef *ref) {
    if (cuda::ipc_export(ptr, ref)) return clear_error(), false;
    if (!cuda::ipc_covers(*ref, lo, hi)) {
        *ref = {};
        return false;
    }
    return true;
}

}  // namespace

int64_t Worker::ipc_frag(const Request *r) {
    // More fragments overlap more of the sender's pack across the link (the slow stage) with
    // the receiver's local unpack, but each adds to the critical path a GPU operation seen from
    // the CPU (launch, event, polls) and a control message one way (READY, or the ACK that
    // grants its slot). The three inputs are measured: the kernel's rate (this GPU's, on 1 KiB
    // runs, standing in for the receiver's unpack of its own layout) and the operation's cost
    // once per device (cuda/method.cpp), and the message's time as half the least
    // RTS-to-RTR time seen on this endpoint. That time also holds the receiver's matching and
    // its building of the RTR, so it bounds the message's from above. Until an RTR has come,
    // 3 us stands in. The constants this replaced were fitted on two H200s (1 TB/s, 10 us a
    // fragment: four fragments of an 8 MB V cost 82 us against 39 us for one pack straight
    // into the peer's buffer).
    constexpr double kOneWayPriorSeconds = 3e-6;
    constexpr int64_t kAlign = 64 << 10;
    cuda::CopyCosts c;
    if (cuda::device_costs(r->gpu, &c)) {
        clear_error();  // no measurement: one fragment as large as a slot
        return pipeline_frag_bytes(r->packed, 0, 0, kAlign, cfg.ipc_frag_max);
    }
    const double one_way = r->ep->rtt_s > 0 ? r->ep->rtt_s / 2 : kOneWayPriorSeconds;
    return pipeline_frag_bytes(r->packed, c.kernel_bytes_per_s, c.op_seconds + one_way, kAlign, cfg.ipc_frag_max);
}

ucxdt_status_t Worker::map_peer(Request *r, const cuda::IpcRef &ref, uint64_t uuid, const PeerInfo &p) {
    int device = r->gpu;
    if (device < 0)
        if (ucxdt_status_t st = cuda::check(cudaGetDevice(&device), "cudaGetDevice")) return st;
    char *mem = nullptr;
    if (ucxdt_status_t st = imports->map(uuid, p.process, ref, device, p.process == process, &mem)) return st;
    r->peer_ref = ref;
    r->peer_mem = mem;
    r->map_device = device;
    r->peer_uuid = uuid;
    r->peer_gpu = !cuda::ipc_on_device(ref, device);
    return UCXDT_OK;
}

ucxdt_status_t Worker::peer_reach(const Request *r, int64_t lo, int64_t hi) {
    if (cuda::ipc_covers(r->peer_ref, lo, hi)) return UCXDT_OK;
    return fail(UCXDT_ERR_UCX, "the peer's CUDA IPC reference covers bytes [" +
                                   std::to_string(-static_cast<long long>(r->peer_ref.offset)) + ", " +
                                   std::to_string(static_cast<long long>(r->peer_ref.alloc_bytes - r->peer_ref.offset)) +
                                   ") around the named byte; this transfer would touch [" + std::to_string(lo) + ", " +
                                   std::to_string(hi) + ")");
}

// ---- Sending ------------------------------------------------------------------------------

bool Worker::offers_pull(const Request *r) const {
    if (r->gpu < 0 || !r->ep->peer_known || !r->ep->peer.ipc || r->packed > cfg.ipc_pull) return false;
    if (r->dense) {
        // The receiver copies straight out of our buffer (recv_start_ipc), where it can be
        // exported: one copy where eager takes two (4 KiB between two H200s, UCX 1.13.1 and 1.22.0:
        // 9.9-13.2 us a message against 19.0-21.5 eager).
        cuda::IpcRef ref{};
        return !cuda::ipc_export(at(r->buffer, r->plan->base), &ref) || (clear_error(), false);
    }
    const Plan &p = *r->plan;
    return (cfg.ipc_strided && offers_runs(p)) ||
           (cfg.ipc_same_layout && p.cls == UCXDT_PLAN_BLOCK_LIST && p.layout_hash != 0);
}

bool Worker::send_start_ipc(Request *r) {
    if (r->gpu < 0 || !r->ep->peer_known || !r->ep->peer.ipc) return false;
    cuda::IpcRef ref{};
    TagHeader &h = r->hdr;
    if (r->dense) {
        if (cuda::ipc_export(at(r->buffer, r->plan->base), &ref)) return clear_error(), false;
        h.frag = std::max<int64_t>(r->packed, 1);
    } else {
        if (gpu(r) || r->dev->allocate()) return clear_error(), false;
        ref = r->dev->ref();
        h.frag = ipc_frag(r);
        // The only send in progress, with no GPU work of this worker outstanding: the pipeline's
        // two kernels and their launches would run one after the other, so runs that a window
        // packs cross the link one by one. The first message of a window is alone too.
        const bool alone = sends_in_progress == 1 && gpu_ops.empty() && launching.empty();
        const bool runs = offers_runs(*r->plan, alone);
        h.run_len = cfg.ipc_strided && runs ? r->plan->block_len : 0;
        h.layout_hash = cfg.ipc_same_layout && offers_same_layout(*r->plan, r->packed, cfg.ipc_pull, runs)
                            ? r->plan->layout_hash : 0;
    }
    // A small strided message offers the receiver its runs to copy itself (pull), and a small
    // block list its data to a receive of the same block list: one round trip (RTS, ATS) where
    // the sender's copy takes one and a half (RTS, RTR, FIN), and the copy's CPU work (the GPU
    // call and its event) falls to the receiver, which otherwise waits and which launches the
    // copies of a window together (flush_launches). Larger ones are pushed: kernels write peer
    // memory faster than they read it.
    cuda::IpcRef runs{};
    const Plan &pl = *r->plan;
    int64_t lo = 0, hi = 0;
    h.pull = 0;
    if (r->packed <= cfg.ipc_pull && h.run_len > 0 && run_span(pl, &lo, &hi))
        h.pull = export_covering(at(r->buffer, pl.base), lo, hi, &runs);
    else if (r->packed <= cfg.ipc_pull && h.layout_hash != 0)
        h.pull = export_covering(at(r->buffer, pl.data_lo), 0, pl.data_hi - pl.data_lo, &runs);
    r->ipc = true;
    h.kind = TagKind::rts;
    h.ipc = 1;
    h.contig = r->dense ? 1 : 0;
    h.initial = 0;
    h.rkey_len = 0;
    h.remote_addr = ref.base + ref.offset;
    r->nfrags = (r->packed + h.frag - 1) / h.frag;
    const StridedShape shape = h.pull && h.run_len > 0 ? shape_of(pl) : StridedShape{};
    char *m = wire_alloc(r, sizeof h + sizeof ref + (h.pull ? sizeof runs + sizeof shape : 0));
    std::memcpy(m, &h, sizeof h);
    std::memcpy(m + sizeof h, &ref, sizeof ref);
    if (h.pull) {
        std::memcpy(m + sizeof h + sizeof ref, &runs, sizeof runs);
        std::memcpy(m + sizeof h + 2 * sizeof ref, &shape, sizeof shape);
    }
    if (ucxdt_status_t st = send_tagged(r)) complete(r, st);
    return true;
}

void Worker::send_on_rtr(const Event &e) {
    const AmHeader &h = e.am;
    const auto it = requests.find(h.sreq_id);
    if (it == requests.end() || !it->second->is_send || it->second->status != UCXDT_INPROGRESS) return;
    Request *r = it->second;
    if (!r->ipc) return send_on_host_rtr(r, h);
    const double rtt = std::chrono::duration<double>(std::chrono::steady_clock::now() - r->tagged_at).count();
    if (r->ep->rtt_s <= 0 || rtt < r->ep->rtt_s) r->ep->rtt_s = rtt;
    r->rreq_id = h.rreq_id;
    if (ucxdt_status_t st = gpu(r)) return send_fail(r, st);
    if (!h.direct && !h.push) return send_ipc_stage(r);
    if (ucxdt_status_t st = map_peer(r, h.ref, r->ep->peer_uuid, r->ep->peer)) return send_fail(r, st);
    if (h.push) {
        r->push = true;
        send_ipc_push(r, h.slot, h.offset);
        for (const auto &[slot, offset] : std::exchange(r->grants, {})) send_ipc_push(r, slot, offset);
        return;
    }
    if (h.direct == 2) {
        // The receiver's strided layout: each of our runs straight into its run of that index.
        Plan to;
        int64_t lo = 0, hi = 0;
        if (!e.has_shape || !plan_of(e.shape, &to) || !cuda::strided_pair(*r->plan, to) || !run_span(to, &lo, &hi))
            return send_fail(r, fail(UCXDT_ERR_UCX, "an RTR whose strided layout does not fit the send"));
        if (ucxdt_status_t st = peer_reach(r, lo, hi)) return send_fail(r, st);
        const ucxdt_status_t st = launch(r, GpuOp{GpuOp::send_all}, [&](const cudaStream_t *s) {
            cuda::DeviceGuard g(r->gpu);
            if (ucxdt_status_t gs = g.status()) return gs;
            // Not batched: messages this large (above the pull limit) keep the method model's 2-D
            // copy across the link (8-128 MB V on two H200s: 0.91-0.94 of UCP's rate by kernel).
            return cuda::copy_layouts_async(*r->plan, r->buffer, to, r->peer_mem, r->gpu, *s, r->peer_gpu);
        });
        if (st) send_fail(r, st);
        return;
    }
    if (h.direct == 3) {
        // The receiver's layout is ours: each byte to its own displacement from the receive
        // buffer, whose byte at displacement h.offset (its lowest of data) the mapping starts at.
        if (r->hdr.layout_hash == 0)
            return send_fail(r, fail(UCXDT_ERR_UCX, "an RTR for a same-layout copy that the send did not offer"));
        const auto lowest = static_cast<int64_t>(h.offset);  // a displacement: may be negative
        int64_t lo = 0, hi = 0;
        if (__builtin_sub_overflow(r->plan->data_lo, lowest, &lo) || __builtin_sub_overflow(r->plan->data_hi, lowest, &hi))
            return send_fail(r, fail(UCXDT_ERR_UCX, "an RTR whose lowest data byte lies beyond any layout"));
        if (ucxdt_status_t st = peer_reach(r, lo, hi)) return send_fail(r, st);
        char *to = at(r->peer_mem, -lowest);
        const ucxdt_status_t st = launch(r, GpuOp{GpuOp::send_all}, [&](const cudaStream_t *s) {
            cuda::DeviceGuard g(r->gpu);
            if (ucxdt_status_t gs = g.status()) return gs;
            return cuda::copy_same_layout_async(*r->plan, r->buffer, to, r->gpu, *s);
        });
        if (st) send_fail(r, st);
        return;
    }
    // The receiver's contiguous buffer: pack the whole message into it.
    if (ucxdt_status_t st = peer_reach(r, 0, r->packed)) return send_fail(r, st);
    const ucxdt_status_t st = launch(r, GpuOp{GpuOp::send_all}, [&](const cudaStream_t *s) {
        return move_bytes(r, s, r->peer_mem, 0, r->packed, true, r->peer_gpu);
    });
    if (st) send_fail(r, st);
}

void Worker::send_ipc_push(Request *r, int slot, uint64_t offset) {
    if (r->status != UCXDT_INPROGRESS || r->next_pack >= r->nfrags) return;
    const int64_t k = r->next_pack++;
    const auto at_off = static_cast<int64_t>(std::min<uint64_t>(offset, uint64_t{1} << 62));
    if (ucxdt_status_t st = peer_reach(r, at_off, at_off + r->frag_bytes(k))) return send_fail(r, st);
    pack_next(r, k, slot, r->peer_mem + offset, r->peer_gpu);
}

void Worker::send_ipc_stage(Request *r) {
    if (r->status != UCXDT_INPROGRESS) return;
    r->slot_level = r->dev->level_for(std::min(r->hdr.frag, r->packed));
    r->slots = r->dev->take(static_cast<int>(std::min<int64_t>(cfg.depth, r->nfrags)), r->slot_level);
    if (r->slots.empty()) {
        waiting.push_back(r);  // every device slot is in use: try again after progress
        return;
    }
    pack_first(r);
}

// ---- Receiving ----------------------------------------------------------------------------

bool Worker::recv_start_ipc(Request *r) {
    if (r->ipc) return true;  // started
    const auto pi = peers.find(r->hdr.sender_uuid);
    const PeerInfo p = pi->second;
    r->ipc = true;
    // The sender's choice stands wherever this worker can map its memory.
    if (!cfg.ipc || p.node != node)
        return recv_finish(r, fail(UCXDT_ERR_UNSUPPORTED, "the sender chose CUDA IPC, which this worker does not use "
                                                          "(UCXDT_CUDA_IPC, UCX_TLS without cuda_ipc, or no GPU)")),
               true;
    if (r->gpu >= 0)
        if (ucxdt_status_t st = gpu(r)) return recv_finish(r, st), true;
    AmHeader rtr{};
    rtr.kind = AmKind::rtr;
    rtr.sreq_id = r->hdr.sreq_id;
    rtr.rreq_id = r->id;
    // A contiguous message up to cfg.ipc_pull bytes is copied straight from the sender's buffer
    // (one round trip). A larger one into a contiguous GPU receive, the sender writes (RTR with
    // our buffer, then FIN): the copy engines write a peer at 337-347 GB/s and read one at
    // 275-295 (8 MB; performance-log.md, run 30).
    const auto export_dense = [&] {
        return r->dense && r->gpu >= 0 && (!cuda::ipc_export(at(r->buffer, r->plan->base), &rtr.ref) || (clear_error(), false));
    };
    const bool sender_writes = r->hdr.contig && r->hdr.packed > cfg.ipc_pull && export_dense();
    if (r->hdr.contig && !sender_writes) {
        ucxdt_status_t mst = map_peer(r, r->peer_ref, r->hdr.sender_uuid, p);
        if (!mst) mst = peer_reach(r, 0, r->hdr.packed);
        if (mst) return recv_finish(r, mst), true;
        ++dense_pulls;
        // A contiguous receive layout is one cudaMemcpyAsync.
        const ucxdt_status_t st = launch(r, GpuOp{GpuOp::recv_all}, [&](const cudaStream_t *s) {
            return move_bytes(r, s, r->peer_mem, 0, r->hdr.packed, false, r->peer_gpu);
        });
        if (st) recv_finish(r, st);
        return true;
    }
    if (strided_pull(r, p) || same_layout_pull(r, p)) return true;  // never offered by a contiguous send
    StridedShape shape{};
    if (sender_writes || export_dense()) {
        rtr.direct = 1;
    } else if (strided_offer(r, &rtr, &shape)) {
        rtr.direct = 2;
    } else if (same_layout_offer(r, &rtr)) {
        rtr.direct = 3;
    } else {
        switch (recv_start_push(r)) {
        case Push::started: return true;
        case Push::busy: r->ipc = false; return false;  // nothing started: retried from progress
        case Push::unavailable: break;
        }
        if (ucxdt_status_t st = map_peer(r, r->peer_ref, r->hdr.sender_uuid, p)) return recv_finish(r, st), true;
    }
    if (ucxdt_status_t st = send_am(r->peer, rtr, false, rtr.direct == 2 ? &shape : nullptr)) recv_finish(r, st);
    return true;
}

bool Worker::strided_offer(Request *r, AmHeader *rtr, StridedShape *shape) {
    // The sender copies run by run when both layouts are strided with runs of one length: one
    // kernel (or 2-D copy) where pack, transfer and unpack would each cost a GPU operation and
    // its event, which bounds small messages (performance-log.md, run 13).
    const Plan &p = *r->plan;
    if (!cfg.ipc_strided || r->gpu < 0 || r->hdr.run_len <= 0 || !shape_fits(p) || p.dims.empty() ||
        p.block_len != r->hdr.run_len || p.packed_size != r->hdr.packed)
        return false;
    int64_t lo = 0, hi = 0;
    if (!run_span(p, &lo, &hi)) return false;
    if (!export_covering(at(r->buffer, p.base), lo, hi, &rtr->ref)) return false;  // every run
    *shape = shape_of(p);
    return true;
}

bool Worker::strided_pull(Request *r, const PeerInfo &p) {
    Plan from;
    if (!r->pull_offered || !cfg.ipc_strided || r->gpu < 0 || r->hdr.packed > cfg.ipc_pull ||
        !plan_of(r->pull_shape, &from))
        return false;
    // A contiguous receive takes the runs back to back: a strided layout of one level whose
    // stride is the run, from the first data byte.
    Plan dense;
    if (r->dense) {
        dense.cls = UCXDT_PLAN_STRIDED;
        dense.dims = {{from.num_blocks, from.block_len}};
        dense.block_len = dense.unit_size = from.block_len;
        dense.packed_size = r->plan->packed_size;
        dense.num_blocks = from.num_blocks;
    }
    const Plan &to = r->dense ? dense : *r->plan;
    char *to_buf = r->dense ? at(r->buffer, r->plan->base) : r->buffer;
    int64_t lo = 0, hi = 0;
    if (!cuda::strided_pair(from, to) || !run_span(from, &lo, &hi)) return false;
    ucxdt_status_t mst = map_peer(r, r->pull_ref, r->hdr.sender_uuid, p);
    if (!mst) mst = peer_reach(r, lo, hi);
    if (mst) return recv_finish(r, mst), true;
    ++ipc_pulls;
    // The only receive posted, with no other GPU work of this worker outstanding: the message is
    // bound by its latency and takes the method model's choice for one operation, where a 2-D
    // copy's call costs less than a kernel's launch (a 4 KiB vector of 16-byte runs between two
    // H200s, UCX 1.22.0: 10.3-13.7 us a message by copy, 15.1-15.8 by kernel). With more
    // receives posted, more messages are coming, and their pulls share a kernel launch
    // (PulledWindowsShareALaunch): 4 KiB vectors into contiguous, 32 in flight, moved at 725-981
    // MB/s where an idle stream alone took the copy, and at 963-1,322 by kernels alone.
    const bool lone = recvs_in_progress == 1 && gpu_ops.empty() && launching.empty();
    lone_pulls += lone;
    const ucxdt_status_t st = launch(r, GpuOp{GpuOp::recv_all}, [&](const cudaStream_t *s) {
        cuda::DeviceGuard g(r->gpu);
        if (ucxdt_status_t gs = g.status()) return gs;
        return cuda::copy_layouts_async(from, r->peer_mem, to, to_buf, r->gpu, *s, r->peer_gpu,
                                        lone ? nullptr : &r->stream->batch());
    });
    if (st) recv_finish(r, st);
    return true;
}

bool Worker::same_layout_pull(Request *r, const PeerInfo &p) {
    const Plan &pl = *r->plan;
    if (!r->pull_offered || r->pull_shape.ndims != 0 || !cfg.ipc_same_layout || r->gpu < 0 ||
        r->hdr.packed > cfg.ipc_pull || pl.cls != UCXDT_PLAN_BLOCK_LIST || r->hdr.layout_hash == 0 ||
        r->hdr.layout_hash != pl.layout_hash || pl.packed_size != r->hdr.packed)
        return false;
    ucxdt_status_t mst = map_peer(r, r->pull_ref, r->hdr.sender_uuid, p);
    if (!mst) mst = peer_reach(r, 0, pl.data_hi - pl.data_lo);
    if (mst) return recv_finish(r, mst), true;
    ++ipc_pulls;
    const ucxdt_status_t st = launch(r, GpuOp{GpuOp::recv_all}, [&](const cudaStream_t *s) {
        cuda::DeviceGuard g(r->gpu);
        if (ucxdt_status_t gs = g.status()) return gs;
        return cuda::copy_same_layout_async(pl, at(r->peer_mem, -pl.data_lo), r->buffer, r->gpu, *s, &r->stream->batch());
    });
    if (st) recv_finish(r, st);
    return true;
}

bool Worker::same_layout_offer(Request *r, AmHeader *rtr) {
    // A layout into the same layout (application layouts such as T and WRF's structs of
    // subarrays, sent and received alike; a transpose's columns): one kernel or copy, where pack
    // and unpack take two and stage every byte in between.
    const Plan &p = *r->plan;
    if (!cfg.ipc_same_layout || r->gpu < 0 || (p.cls != UCXDT_PLAN_BLOCK_LIST && p.cls != UCXDT_PLAN_STRIDED) ||
        r->hdr.layout_hash == 0 ||
        r->hdr.layout_hash != p.layout_hash || p.packed_size != r->hdr.packed)
        return false;
    if (!export_covering(at(r->buffer, p.data_lo), 0, p.data_hi - p.data_lo, &rtr->ref)) return false;
    rtr->offset = static_cast<uint64_t>(p.data_lo);
    return true;
}

Worker::Push Worker::recv_start_push(Request *r) {
    // The sender's fragments must fit this worker's slots (UCXDT_IPC_FRAG_SIZE may differ).
    if (!r->dev || r->hdr.frag > cfg.ipc_frag_max) return Push::unavailable;
    if (r->dev->allocate()) return clear_error(), Push::unavailable;
    // Waiting for a slot beats pulling: several receives pulling at once read peer memory in
    // turn on this GPU's stream, at the slower rate, and measured slower than one at a time.
    // Slots come back as the receives holding them unpack, which needs nothing from us.
    // A slot the size of a fragment (split from a larger one), so that a window of small
    // messages is granted slots at once.
    r->slot_level = r->dev->level_for(std::min(r->hdr.frag, r->hdr.packed));
    r->slots = r->dev->take(static_cast<int>(std::min<int64_t>(cfg.depth, r->nfrags)), r->slot_level);
    // Wait only while requests hold slots that will come back; slots retired for a sender that
    // has not drained yet may not, and then pulling keeps this receive moving.
    if (r->slots.empty())
        return r->dev->taken_bytes() > retired_bytes(r->dev) ? Push::busy : Push::unavailable;
    r->push = true;
    const std::vector<int> first = r->slots;
    for (size_t i = 0; i < first.size(); ++i)
        if (ucxdt_status_t st = recv_grant(r, first[i], i == 0 ? AmKind::rtr : AmKind::ack))
            return recv_finish(r, st), Push::started;
    return Push::started;
}

ucxdt_status_t Worker::recv_grant(Request *r, int slot, AmKind kind) {
    AmHeader m{};
    m.kind = kind;
    m.push = 1;
    m.sreq_id = r->hdr.sreq_id;
    m.rreq_id = r->id;
    m.frag_index = r->next_get++;
    m.slot = slot;
    m.offset = static_cast<uint64_t>(r->dev->slot_offset(slot, r->slot_level));
    if (kind == AmKind::rtr) m.ref = r->dev->ref();
    r->granted.push_back(slot);
    return send_am(r->peer, m, false);
}

void Worker::recv_ipc_frag(Request *r, int64_t k, int slot, uint64_t offset) {
    if (k < 0 || k >= r->nfrags) return;
    char *src = nullptr;
    if (r->push) {
        const auto g = std::find(r->granted.begin(), r->granted.end(), slot);
        if (g == r->granted.end()) return;  // not a slot of ours that the sender may fill
        r->granted.erase(g);
        src = r->slot_mem(slot);
    } else {
        if (!r->peer_mem) return;
        const auto at_off = static_cast<int64_t>(std::min<uint64_t>(offset, uint64_t{1} << 62));
        if (ucxdt_status_t st = peer_reach(r, at_off, at_off + r->frag_bytes(k))) return recv_finish(r, st);
        src = r->peer_mem + offset;
    }
    r->remote_slots[k] = slot;
    GpuOp op{GpuOp::recv_frag};
    op.frag = k;
    op.slot = slot;
    const ucxdt_status_t st = launch(r, op, [&](const cudaStream_t *s) {
        return move_bytes(r, s, src, k * r->hdr.frag, r->frag_bytes(k), false, !r->push && r->peer_gpu);
    });
    if (st) recv_finish(r, st);
}

void Worker::recv_on_fin(const AmHeader &h) {
    if (const auto q = retired.find(h.rreq_id); q != retired.end()) {  // the sender has drained
        for (int s : q->second.slots) q->second.dev->give(s, q->second.level);
        retired.erase(q);
        return;
    }
    const auto it = requests.find(h.rreq_id);
    if (it == requests.end() || it->second->is_send || it->second->status != UCXDT_INPROGRESS) return;
    Request *r = it->second;
    // Only a failed sender sends FIN to a receive with GPU work of its own; recv_finish
    // synchronizes the receive's stream on failure. GETs of a host-staged receive still write
    // its slots: the receive ends when the last of them does (recv_on_get).
    if (r->gets_in_flight > 0) {
        if (!r->status_pending) r->status_pending = static_cast<ucxdt_status_t>(h.status);
        return;
    }
    r->granted.clear();  // the sender's GPU work ended before its FIN: our slots are free again
    recv_finish(r, static_cast<ucxdt_status_t>(h.status));
}

}  // namespace ucxdt::rndv
