// The ucxdt worker of include/ucxdt/ucxdt_ucp.h: requests, endpoints, the staging pools, and
// the event queue through which UCP's callbacks (which run inside ucp_worker_progress) hand
// their work to ucxdt_worker_progress, so that the protocol never re-enters UCP from a callback.
#pragma once

#include "ucp_rndv/peer_staging.hpp"
#include "base/bytes.hpp"
#include "dt/handle_table.hpp"
#include "dt/plan.hpp"
#include "dt/signature.hpp"
#include "dt/type.hpp"
#include "ucp_rndv/rndv_wire.hpp"
#include "ucp_rndv/staging_pool.hpp"
#include "ucp_rndv/timeline.hpp"
#include "ucp_rndv/wire_pool.hpp"
#include "cuda/device_staging.hpp"
#include "ucp_rndv/ucx_reach.hpp"
#include "cuda/ipc.hpp"
#include "cuda/launch_queue.hpp"

#include <ucxdt/ucxdt_ucp.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <deque>
#include <utility>
#include <functional>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace ucxdt::rndv {

struct Config {
    int64_t eager = 8192;             // UCXDT_EAGER_THRESHOLD: GPU layouts (and host ones when set)
    int64_t host_eager = 128 << 10;   // UCXDT_HOST_EAGER_THRESHOLD: host layouts, whose eager
                                      // messages UCP packs and unpacks in place (wire_dt.cpp);
                                      // below it a rendezvous's round trips cost more than the
                                      // copy through UCP (docs/performance.md, table c; 64 to
                                      // 128 KiB: performance-log run 46). Every posted receive
                                      // reserves this much (landing_bytes)
    int64_t frag = 1 << 20;
    int64_t host_frag = 128 << 10;    // UCXDT_HOST_FRAG_SIZE: a host layout's staged fragment (a
                                      // slot of `frag` halved to the smallest that holds it): the
                                      // CPU packs one while the peer unpacks the one before, which
                                      // 1 MiB fragments left to one pack then one unpack; 128 KiB
                                      // led 64 and 256 KiB for runs of 2 KiB and blocks of a
                                      // triangle (issue 62, performance-log run 46)
    int depth = 4;
    int slots = 16;
    int64_t wire_pool = 16 << 20;    // UCXDT_WIRE_POOL_SIZE: page-locked bytes each wire pool
                                     // (GPU layouts' sends, receives) may grow to: 128 receive
                                     // slots of a landing, two windows of 64
    bool ipc = true;                 // UCXDT_CUDA_IPC
    int64_t ipc_frag_max = 32 << 20;  // UCXDT_IPC_FRAG_SIZE: largest fragment (device staging slot)
    bool ipc_strided = true;          // UCXDT_IPC_STRIDED_COPY: strided into strided, run by run
    int64_t ipc_pull = 1 << 20;       // UCXDT_IPC_PULL_SIZE: up to this many bytes, the receiver
                                      // makes that copy from the sender's layout (TagHeader::pull)
    int64_t ipc_eager = 0;            // UCXDT_IPC_EAGER_THRESHOLD: GPU messages an IPC peer could
                                      // pull (offers_pull) go eager only up to this many bytes: the
                                      // pull's one copy beat eager's pack and unpack from 256 B
    int gpu_batch = 8;                // UCXDT_GPU_BATCH: GPU operations of one GPU (packs, unpacks,
                                      // pulls, one-sided copies) issued between progress calls
                                      // that share a kernel launch and its event (1: each its own)
    int gpu_in_flight = 1;            // UCXDT_GPU_IN_FLIGHT: launches of a GPU's stream running before
                                      // its next kernels wait to share one launch (0: never wait)
    int gpu_streams = 8;              // UCXDT_GPU_STREAMS: streams per GPU, which messages of
    int64_t gpu_stream_split = 3 << 20;  // UCXDT_GPU_STREAM_SPLIT bytes or more take in turn;
                                      // smaller ones share the first, and its launches (run 30:
                                      // 4-8 MB messages gained, 0.5-2 MiB ones lost the batching)
    bool ipc_same_layout = true;      // UCXDT_IPC_SAME_LAYOUT_COPY: a block list into the same
                                      // block list, each byte to its own displacement
    bool host_am = true;              // UCXDT_HOST_FRAGS=am: a staged sender sends its fragments
                                      // as active messages (get: the receiver GETs them)
    bool host_shm = true;             // UCXDT_HOST_SHM: a receiver on the sender's node unpacks
                                      // from the sender's slots in place when it can map them
    ucp_tag_t plain_bit = 0;          // ucxdt_worker_params_t::plain_tag_bit (UCXDT_PLAIN_MESSAGES):
                                      // contiguous host sends go as plain UCP messages with this
                                      // bit, and the worker matches in arrival order (0: off)
};

/// Bytes a posted receive reserves for the tagged message: an eager message of either memory
/// kind, or the largest RTS (an rkey and the initial slot list, or an IPC reference).
size_t landing_bytes(const Config &c);
/// Bytes of a GPU layout's tagged message at most: its eager message, or the largest RTS.
size_t send_wire_bytes(const Config &c);

struct Worker;
struct Ep;
struct Request;

/// UCXDT_ERR_INVALID_PARAM when r's parameters set flags beyond `allowed`
/// (ucxdt_request_param_t::flags: UCXDT_SEND_FLAG_* on sends, none elsewhere).
ucxdt_status_t check_flags(const Request *r, uint32_t allowed);

/// The state of a request of a layer above the rendezvous (ucp_rma's one-sided operations,
/// which are requests of this worker too, so that their status, callbacks, freeing and peer
/// failure work as for sends); destroyed with the request.
struct RequestExt {
    virtual ~RequestExt() = default;
};

/// A layer above the rendezvous that keeps requests on a worker (ucp_rma): progressed by
/// ucxdt_worker_progress after the rendezvous' own events, destroyed before the requests when
/// the worker is.
struct Extension {
    virtual ~Extension() = default;
    virtual unsigned progress() = 0;
    /// Whether work that no request of this worker stands for is still running (a peer's
    /// one-sided operation arriving): ucxdt_worker_destroy waits for it as for its requests.
    virtual bool busy() const { return false; }
};

/// One send or receive. Owned by the worker until both completed and freed by the user.
struct Request {
    Worker *worker = nullptr;
    bool is_send = false;
    uint64_t id = 0;
    int status = UCXDT_INPROGRESS;
    bool user_freed = false, callback_due = false;
    int ucp_ops = 0;         // UCP operations and GPU work naming this request: it lives until they end
    int ucp_pending = 0;     // of those, UCP operations whose callback names it (directly or by a
                             // FragOp): it outlives its worker until they end (ucp_callback)
    bool peer_lost = false;  // its peer failed: nothing more is sent to it
    ucxdt_request_param_t param{};

    // The user's data.
    char *buffer = nullptr;
    int64_t count = 0;
    // The committed type (its size and signature: what a receive checks a message against,
    // a partial last element through dt/packed_prefix.hpp) and its plan. They outlive the
    // user's handle, which MPI lets the user free meanwhile (MPI-4.1 5.1.9); a duplicate handle
    // per request cost a type, its normalization and two writes to the handle table.
    TypePtr type;
    PlanPtr plan;
    bool contig = false;  // the buffer is the packed stream, and UCP may GET to or from it
    bool plain = false;   // a plain UCP message (Config::plain_bit): the send's bytes as they are,
                          // or the receive's, landing straight in its contiguous buffer
    bool dense = false;   // the buffer is the packed stream (host or GPU)
    int gpu = -1;         // the GPU of the layout, -1 for host memory
    int64_t packed = 0;   // send: bytes sent; receive: capacity, then bytes received
    StagingPool *pool = nullptr;  // the worker's pool of this request's role, once slots are held
    cuda::DeviceStaging *dev = nullptr;  // what the worker keeps for `gpu` (IPC path, or host
                                         // staging of a GPU layout): for an IPC send, its device slots
    cuda::WorkStream *stream = nullptr;  // ... and of dev's streams, the one all of r's GPU work runs on
    std::vector<int> slots;       // staging slots held (send: filled or being refilled), in
                                  // the device staging when the request is on the IPC path
    int slot_level = 0;           // the size of those slots (staging_level: the pool's or device
                                  // staging's slot size halved this many times; on a host-staged
                                  // send, hdr.frag)
    int64_t nfrags = 0;           // fragments of the rendezvous (both sides)

    // The tagged message (eager data or RTS): sent from or received into `wire`, or, for a GPU
    // layout, slot `wire_slot` of the worker's page-locked wire pool, which the GPU packs into
    // and unpacks out of with zero copy (pageable memory costs a staged copy each way). Kept
    // until UCP's operation on it ends.
    Bytes wire;  // base/bytes.hpp: written in full before it is sent
    int wire_slot = -1;
    size_t wire_len = 0;
    bool wire_busy = false;  // eager receive: the GPU still unpacks out of the wire slot
    // Host layouts: the tagged message goes and arrives as the worker's wire datatype
    // (wire_dt.cpp): an eager message is packed straight from the layout into UCP's buffer and
    // unpacked straight out of it; `wire` then holds a received message only when it could not
    // be (an RTS, a bad header), and recv_matched reads it there.
    bool by_wire_dt = false;
    bool wire_spilled = false;        // receive: the message is in `wire`
    bool wire_direct = false;         // receive: eager data went into the layout
    bool wire_copied = false;         // send: the message is in `wire` (complete() copied it
                                      // there while UCP still had it to send)
    size_t hdr_got = 0;               // receive: header bytes received into hdr

    // Send.
    Ep *ep = nullptr;
    ucp_tag_t tag = 0;
    // In ep->unsent until its tagged message goes (Worker::send_tagged); ready once it may.
    bool unsent = false, tagged_ready = false;
    std::chrono::steady_clock::time_point tagged_at;  // when the RTS (or eager message) was posted
    ucp_mem_h memh = nullptr;              // contiguous rendezvous: the user's buffer
    int64_t next_pack = 0;                 // next fragment to pack
    uint64_t rreq_id = 0;                  // the receiver's request, from its first ACK or (am_frags)
                                           // its RTR, after which fragments may go
    std::vector<std::pair<int64_t, int>> to_pack;  // a host layout's first fragments (fragment, slot)
                                                   // still to pack, one per progress call
    std::vector<std::pair<int64_t, int>> packed_frags;  // am_frags: (fragment, slot) packed before it
    std::vector<int> am_sending;  // am_frags: slots of the fragments under ucp_am_send_nbx (-1: from
                                  // the user's contiguous buffer); UCP reads them until it completes
    bool in_place = false;        // am_frags: the receiver reads our slots in place (its RTR said
                                  // so): each fragment is announced with READY and freed by ACK
    bool rts_out = false;         // am_frags: the RTS went before the send had slots; it waits in
                                  // `waiting` for them once its RTR has come (send_slots)

    // CUDA IPC path (both sides).
    bool ipc = false;
    cuda::IpcRef peer_ref{};       // the peer memory mapped for this request
    // Receive, pull: the sender's first run and the shape of its layout (TagHeader::pull).
    bool pull_offered = false;
    cuda::IpcRef pull_ref{};
    StridedShape pull_shape{};
    char *peer_mem = nullptr;      // ... at this local address (sender data, its staging, or
                                   // the receiver's buffer)
    int map_device = -1;
    uint64_t peer_uuid = 0;
    bool peer_gpu = false;         // peer_mem is on another GPU (transfers cross the link)
    // Push (neither layout contiguous): the sender packs each fragment over NVLink straight into
    // a slot of the receiver's device staging that the receiver granted (RTR, then ACKs), and
    // the receiver unpacks it from local memory. Kernels write peer memory faster than they
    // read it, so the slow stage runs at the copy engines' rate.
    bool push = false;
    std::vector<std::pair<int32_t, uint64_t>> grants;  // send: (slot, offset) granted before the RTR
    std::vector<int> granted;  // receive: slots granted whose READY has not come; the sender may be
                               // writing them, so they are retired, not reused, if the receive fails

    // Receive.
    ucp_tag_t tag_mask = 0, sender_tag = 0;
    void *ucp_req = nullptr;               // the posted ucp_tag_recv_nbx, until it completes
    ucxdt_status_t cancel_status = UCXDT_ERR_CANCELED;  // what UCP's cancel of ucp_req ends it with
    bool ucp_done = false;
    TagHeader hdr{};                       // the matched RTS
    std::vector<int32_t> remote_slots;     // sender slot of each announced fragment (-1: not yet)
    ucp_ep_h peer = nullptr;
    ucp_rkey_h rkey = nullptr;
    std::vector<char> rkey_buf;            // the sender's packed rkey
    std::vector<int> free_slots;           // held slots not under a GET
    int64_t next_get = 0, gets_in_flight = 0, frags_done = 0;  // next_get, push: fragments granted
    bool matched = false;
    bool rtr_sent = false;                 // am_frags: the sender may send the fragments
    char *peer_slots = nullptr;            // am_frags: the sender's staging mapped here (PeerStaging):
                                           // fragments are unpacked from its slots in place
    // am_frags: fragments that arrived before a slot was free for them, with UCP's data or
    // rendezvous descriptor (held until ucp_am_recv_data_nbx or ucp_am_data_release)
    struct Arrived {
        int64_t frag;
        void *data;
        size_t length;
        bool rndv;
    };
    std::vector<Arrived> arrived;  // a vector: a deque allocated on every request's construction
    ucxdt_status_t status_pending = UCXDT_OK;  // the end is decided; waiting for GETs in flight

    std::unique_ptr<RequestExt> ext;  // a one-sided operation's state (not a send or receive)

    /// Returns one of r's slots to where it came from: the device staging on the IPC path, else
    /// the host pool.
    void give_slot(int s) { ipc ? dev->give(s, slot_level) : pool->give(s, slot_level); }
    /// The memory of one of r's slots, by the same rule.
    char *slot_mem(int s) const { return ipc ? dev->slot(s, slot_level) : pool->slot(s, slot_level); }

    /// Bytes of fragment k (hdr.packed is the message size on both sides).
    int64_t frag_bytes(int64_t k) const { return std::min(hdr.frag, hdr.packed - k * hdr.frag); }
};

/// A tagged message taken out of UCP's unexpected queue by ucxdt_tag_probe_nb (rndv_probe.cpp):
/// UCP shows a message's length, not its packed length, which is in the ucxdt header, so the
/// probe receives the message (an eager message's data or an RTS: no rendezvous data moves).
/// It waits in Worker::probed, in the order it left UCP, until a receive claims it: one that
/// ucxdt_tag_recv_nbx matches before it posts to UCP, or ucxdt_tag_msg_recv_nbx by handle.
struct Message {
    Worker *worker = nullptr;  // nullptr once the worker is destroyed with UCP's receive pending
    ucp_tag_t sender_tag = 0;  // without Config::plain_bit
    // Matching in arrival order (Config::plain_bit): the message as UCP's probe left it, not yet
    // received (ucp_tag_msg_recv_nbx takes it when a receive claims it, or a probe reads its
    // header), and whether it is a plain message, of `length` bytes, with no ucxdt header.
    ucp_tag_message_h handle = nullptr;
    bool plain = false;
    Bytes data;                // the tagged message, as UCP delivers it
    size_t length = 0;         // bytes of it received
    bool arrived = false;      // UCP's receive of it completed, with `status`
    ucs_status_t status = UCS_OK;
    bool removed = false;      // handed out by a probe with `remove`: only ucxdt_tag_msg_recv_nbx takes it
    Request *claim = nullptr;  // the receive that takes it once it has arrived
    /// The probe's answer: the sender's tag and, from the ucxdt header, the packed bytes
    /// (the bytes received when the message is not ucxdt's; the receive then fails).
    ucxdt_tag_recv_info_t info() const;
};

/// GPU work of a rendezvous (the IPC path, or host staging of a GPU layout), polled in
/// ucxdt_worker_progress (an event of the request's stream; none when the work ran synchronously).
struct GpuOp {
    enum Kind { recv_all, recv_frag, recv_in_place, recv_eager, send_tagged, send_frag, send_all } kind;
    Request *req = nullptr;
    cuda::WorkStream *stream = nullptr;  // whose event
    cudaEvent_t event = nullptr;
    bool owns_event = true;  // false: a later op of the same launch shares the event and gives it back
    ucxdt_status_t status = UCXDT_OK;  // its launch failed (flush_launches)
    int64_t frag = -1;
    int slot = -1;
};

/// Events from UCP callbacks, handled in ucxdt_worker_progress.
struct Event {
    enum Kind { tag_recv_done, tag_send_done, get_done, am_message, peer_failed, frag_arrived, frag_sent } kind;
    Request *req = nullptr;
    ucs_status_t status = UCS_OK;
    size_t length = 0;          // tag_recv_done: bytes received
    ucp_tag_t sender_tag = 0;
    int64_t frag = -1;          // get_done, frag_sent
    int slot = -1;              // get_done: local slot, -1 into the user buffer; frag_sent: its slot
    void *data = nullptr;       // frag_arrived: UCP's data (length bytes) or rendezvous descriptor
    bool rndv = false;          // frag_arrived: `data` is a descriptor for ucp_am_recv_data_nbx
    AmHeader am{};
    bool has_shape = false;       // am_message: the data was a StridedShape
    StridedShape shape{};
    ucp_ep_h reply_ep = nullptr;  // am_message: the sender; peer_failed: the failed endpoint
};

/// The context of a UCP operation on one fragment (a GET, or an active message received or
/// sent): frag_op_done queues event `kind` for r with the fragment, its slot and UCP's status.
/// An AM send's header lives here until UCP completes it (UCX 1.13 has no COPY_HEADER flag).
struct FragOp {
    Request *r;
    Event::Kind kind;
    int64_t frag;
    int slot;
    AmHeader h{};
};
/// UCP's completion callback (ucp_send_nbx_callback_t) of a FragOp `user_data`; frees both.
void frag_op_done(void *request, ucs_status_t status, void *user_data);
/// UCP's callback of a plain send posted before its request existed (user_data: the worker,
/// which finds the request in plain_sends).
void plain_sent(void *request, ucs_status_t status, void *user_data);
/// After posting op's UCP operation with status pointer `s`: when UCP finished it at once
/// (nullptr) or failed it (an error pointer), no callback will come, so op completes now.
void frag_op_posted(ucs_status_ptr_t s, FragOp *op);

/// A peer worker as its HELLO or HELLO reply describes it.
struct PeerInfo {
    ucp_ep_h ep = nullptr;  // to reach it (the HELLO's reply endpoint)
    uint64_t node = 0;      // node_identity() of its process
    uint64_t process = 0;   // process_identity() of its process
    bool ipc = false;       // this worker sends to it over CUDA IPC (Worker::ipc_reaches)
};

struct Ep {
    Worker *worker = nullptr;
    ucp_ep_h ucp_ep = nullptr;
    uint64_t id = 0;
    bool peer_known = false;  // the HELLO reply arrived
    uint64_t peer_uuid = 0;
    PeerInfo peer;
    double rtt_s = 0;  // least time from an RTS to its RTR on the CUDA IPC path (0: none seen)
    int8_t rma_device = -1;  // ucp_rma_reaches_device(ucp_ep), asked on first need (-1: not yet)
    // Sends in call order whose tagged message (eager data or RTS) has not gone: each goes only
    // after those before it (MPI-4.1 3.5, non-overtaking), whatever its data waits for (GPU
    // packing, staging slots).
    std::deque<Request *> unsent;
};

struct Worker {
    ucp_worker_h ucp_worker = nullptr;
    ucp_context_h ucp_context = nullptr;
    // Set by ucxdt_worker_destroy when UCP still held operations of some requests (orphans):
    // what those operations read and write (staging, wire buffers) lives on with this worker,
    // which the last orphan's last callback deletes (ucp_callback).
    bool destroyed = false;
    size_t orphans = 0;
    // A worker over a UCS_THREAD_MODE_MULTI UCP worker takes this lock in every entry point
    // (WorkerLock), so that any thread may post, progress, test, cancel and free; UCP's
    // callbacks come inside ucp_worker_progress or a UCP call, so inside it too. Recursive: a
    // completion callback may call the API. A single-threaded worker never touches it.
    bool multi = false;
    mutable std::recursive_mutex mu;
    Config cfg;
    uint64_t uuid = 0;
    uint64_t next_id = 1;
    std::unordered_map<uint64_t, Request *> requests;     // every live request by id
    // Memory of released requests and nodes of `requests`, kept for the next ones: each message
    // otherwise paid two mallocs and two frees (a request of about 1 KiB is past glibc's
    // thread cache).
    std::vector<void *> spare_requests;
    std::vector<std::unordered_map<uint64_t, Request *>::node_type> spare_nodes;
    std::vector<Request *> spare_plain;  // constructed and as new (renew_plain_recv)
    static constexpr size_t kSpareRequests = 256;
    ~Worker();
    uint64_t recvs_in_progress = 0;  // receives posted and not yet complete (strided_pull)
    uint64_t sends_in_progress = 0;  // sends posted and not yet complete (send_start_ipc)
    // The committed types and plans of recent requests by (handle, count), for prepare(): a hit
    // takes neither the handle table's read lock nor the type's plan mutex (about 250
    // instructions a message). An entry holds while no handle has been freed since it was made
    // (handles::erasures), so that a freed handle still fails.
    struct TypeUse {
        ucxdt_type_t handle = nullptr;
        int64_t count = -1;
        uint64_t erasures = 0;
        TypePtr type;
        PlanPtr plan;
    };
    std::array<TypeUse, 8> type_uses;
    /// The committed type behind `handle` and its plan of `count` (>= 0) elements. Errors:
    /// UCXDT_ERR_INVALID_PARAM (invalid handle), UCXDT_ERR_NOT_COMMITTED, UCXDT_ERR_OVERFLOW.
    ucxdt_status_t resolve_type(ucxdt_type_t handle, int64_t count, TypePtr *type, PlanPtr *plan);
    /// The same as the cache entry that holds them, valid until the next lookup: a caller that
    /// only reads them pays no reference count (four atomic operations a message).
    ucxdt_status_t type_use(ucxdt_type_t handle, int64_t count, const TypeUse **use) {
        const uint64_t erased = handles::erasures();  // before the lookup: an erase after it misses next time
        TypeUse &u = type_uses[(reinterpret_cast<uintptr_t>(handle) ^ static_cast<uint64_t>(count)) % type_uses.size()];
        *use = &u;
        if (u.handle == handle && u.count == count && u.erasures == erased && u.type) return UCXDT_OK;
        return type_miss(handle, count, erased, &u);
    }
    /// Fills cache entry u from the handle table (type_use's miss).
    ucxdt_status_t type_miss(ucxdt_type_t handle, int64_t count, uint64_t erased, TypeUse *u);
    uint64_t node = 0;                                    // this node (ucx_reach.hpp)
    uint64_t process = 0;                                 // this process (ucx_reach.hpp)
    std::unordered_map<uint64_t, PeerInfo> peers;         // worker uuid -> how to reach it
    std::unordered_map<uint64_t, Ep *> eps;               // ucxdt endpoints by id
    uint64_t next_ep_id = 1;
    std::unordered_set<uint64_t> failed_peers;            // workers whose endpoint failed
    std::vector<Event> events;              // UCP callbacks' results, handled by progress()
    std::vector<Event> spare_events;        // progress()'s batch buffer, kept between calls
    std::vector<Request *> spare_completed;  // likewise for the callbacks' list
    std::deque<Request *> waiting;                        // for staging or for a HELLO
    std::deque<Message *> probed;                         // taken out of UCP by probes, in order
    std::deque<Request *> posted;  // matching in arrival order: receives no message matched yet
    std::unordered_map<void *, Request *> plain_sends;  // UCP's request -> ours (send_plain_first)
    // ATSs of eager_sync messages matched before their sender's HELLO came: (sender, ATS).
    std::vector<std::pair<uint64_t, AmHeader>> sync_due;
    std::vector<uint64_t> unsent_due;                     // endpoints (ids) whose unsent head ended
    std::vector<Request *> completed;                     // callbacks to call
    // Host staging per role, made on first use: sends and receives apart, so that a receive
    // never waits for slots held by sends that themselves wait for receives.
    std::unique_ptr<StagingPool> pools[2];
    // Page-locked buffers for the tagged messages of GPU layouts (Request::wire_slot), by role
    // (index is_send): a receive reserves a landing, a send only its own message.
    WirePool wire_pools[2];
    ucp_datatype_t wire_dt = 0;  // the tagged message of host layouts (Request::by_wire_dt)
    // Host wire buffers of ended requests, kept for the next ones: a window of small messages
    // otherwise paid a malloc and a free of several KiB apiece (perf, host eager sends).
    std::vector<Bytes> spare_wire;
    // The CUDA IPC path: peers' memory mapped here, and per GPU a stream and device staging.
    std::unique_ptr<cuda::IpcImports> imports = std::make_unique<cuda::IpcImports>();
    // Host staging of senders on this node, mapped for in-place unpacking.
    PeerStaging peer_staging;
    std::unordered_map<int, std::unique_ptr<cuda::DeviceStaging>> gpus;
    uint64_t streams_taken = 0;  // large messages that took a stream in turn (gpu(Request *))
    std::deque<GpuOp> gpu_ops;
    std::vector<Request *> host_packing;  // sends with Request::to_pack (each holds a ucp_ops)
    // Host-staged fragments received, by how they came (for tests and debugging).
    struct {
        uint64_t am = 0, get = 0, in_place = 0;
    } host_frags;
    uint64_t ipc_pulls = 0;  // receives that copied the runs of the sender's layout (pull)
    uint64_t dense_pulls = 0;  // receives that copied a contiguous send out of the sender's buffer
    uint64_t lone_pulls = 0;   // strided pulls of the only receive posted, not batched (strided_pull)
    uint64_t control_sent[9] = {};  // control messages sent, by AmKind (tests, debugging)
    uint64_t gpu_launches = 0;  // GPU operations issued on a stream (launch)
    uint64_t gpu_events = 0;    // events recorded behind them (shared by a launch's)
    // GPU operations whose kernels wait in their stream's batch (launch), launched together by
    // flush_idle_launches at the start and end of progress (unless the stream is busy), or once
    // cfg.gpu_batch wait on one GPU.
    cuda::LaunchQueue<GpuOp> launching;
    // Push: device slots of receives that failed while their sender could still be writing them,
    // by receive id; the sender's FIN (sent once its GPU work ended) gives them back, or the
    // sender's failure (its context, and so its writes, end with its process).
    struct Retired {
        cuda::DeviceStaging *dev;
        std::vector<int> slots;
        int level;        // of the device staging's slots (Request::slot_level)
        uint64_t sender;  // worker uuid
    };
    std::unordered_map<uint64_t, Retired> retired;
    // ucxdt_ep_params_set_err_handler's argument of UCP's error handler: this worker and the
    // user's handler, one per distinct handler, kept until the worker is destroyed.
    struct ErrHandler {
        Worker *worker;
        ucp_err_handler_cb_t cb;
        void *arg;
    };
    std::vector<std::unique_ptr<ErrHandler>> err_handlers;
    // Layers above that keep requests here (ucp_rma), made on their first use.
    std::vector<std::unique_ptr<Extension>> extensions;
    /// UCXDT_TIMELINE: each request's protocol steps, timed (timeline.hpp); null when off.
    std::unique_ptr<Timeline> timeline;
    void mark(const Request *r, const char *step) {
        if (timeline) timeline->mark(r->id, r->is_send, step);
    }
    void give_back_retired(uint64_t sender);  // every entry of a failed sender
    int64_t retired_bytes(const cuda::DeviceStaging *dev) const;  // of dev's slots, in retired

    /// Takes up to `want` slots of the pool of r's role into r->slots (none when none is free).
    /// With fragments as active messages (host_am), a send whose receiver has not answered yet
    /// (no RTR) leaves the pool's last whole slot free, for a send whose receive is posted: one
    /// may wait for its receive indefinitely, the other must complete (MPI-4.1 §3.5, progress).
    ucxdt_status_t take_slots(Request *r, int want);
    /// Slots for an am_frags send whose RTS went without them (rts_out), once its RTR has come:
    /// it packs into them, else waits in `waiting`.
    void send_slots(Request *r);
    Request *new_request(bool is_send, const ucxdt_request_param_t *param);
    /// Where r's tagged message of `bytes` goes: a page-locked wire slot for a GPU layout while
    /// the pool of its role has one or may grow, else r->wire.
    char *wire_alloc(Request *r, size_t bytes);
    char *wire_data(const Request *r) const {
        return r->wire_slot >= 0 ? wire_pools[r->is_send].slot(r->wire_slot) : const_cast<char *>(r->wire.data());
    }
    /// UCP is done with r's tagged message.
    void wire_free(Request *r);
    /// Final status: releases the request's resources; the callback runs from progress.
    void complete(Request *r, ucxdt_status_t status);
    /// Frees the object once it is complete, its callback has run, the user freed it and no UCP
    /// operation names it any more; otherwise the last of these events frees it.
    void release(Request *r);
    /// The request as an nbx call returns it: NULL when it already completed successfully (it
    /// is then released), an error status when it failed (released too), else the request.
    ucxdt_status_ptr_t hand_out(Request *r);
    /// Ends a UCP operation of r (its callback event was handled).
    void op_done(Request *r) { --r->ucp_ops; }
    /// Every request that depends on `ep` completes with UCXDT_ERR_PEER_FAILURE (section "Peer
    /// failure" of ucxdt_ucp.h); nothing is sent on `ep` afterwards.
    void peer_failed(ucp_ep_h ep);
    /// The status of a request whose UCP operation `what` failed with `us`: a failure of the
    /// connection (UCP's peer error handling) is UCXDT_ERR_PEER_FAILURE.
    static ucxdt_status_t ucx_error(const char *what, ucs_status_t us);
    /// Sends h (and `shape`, when given, as the message's data) to ep.
    ucxdt_status_t send_am(ucp_ep_h ep, const AmHeader &h, bool reply, const StridedShape *shape = nullptr);
    unsigned progress();

    // The CUDA IPC path (rndv_ipc.cpp).
    /// Whether this worker reaches a peer worker's GPU memory over CUDA IPC, the peer being on
    /// `peer_node` in `peer_process`, reached by `ep`, with CUDA IPC on there (`peer_ipc`): both
    /// workers use it (UCXDT_CUDA_IPC, and a context that UCX_TLS left UCX's cuda_ipc), they
    /// share UCX's node, and where UCP reports the endpoint's transports, one of them is
    /// cuda_ipc (workers of one process need none).
    bool ipc_reaches(ucp_ep_h ep, uint64_t peer_node, uint64_t peer_process, bool peer_ipc) const;
    /// The peer that a HELLO or HELLO reply received through `ep` introduces.
    PeerInfo peer_of(ucp_ep_h ep, const AmHeader &hello) const {
        return PeerInfo{ep, hello.node, hello.process, ipc_reaches(ep, hello.node, hello.process, hello.ipc != 0)};
    }
    bool send_start_ipc(Request *r);         // false: the host path serves it
    void send_on_rtr(const Event &e);
    void send_ipc_stage(Request *r);         // takes device slots, packs the first fragments
    bool recv_start_ipc(Request *r);        // false: waits for a device slot (push)
    void recv_on_fin(const AmHeader &h);
    void recv_ipc_frag(Request *r, int64_t k, int slot, uint64_t offset);  // READY on the IPC path
    void send_ipc_push(Request *r, int slot, uint64_t offset);  // packs the next fragment into a grant
    enum class Push { started, busy, unavailable };
    Push recv_start_push(Request *r);  // RTR and grants; unavailable: pull instead
    /// Whether r's sender may copy its strided layout run by run into r's: then fills the RTR's
    /// reference and the shape (false, with no error left, when not).
    bool strided_offer(Request *r, AmHeader *rtr, StridedShape *shape);
    /// Whether r's RTS would offer its receiver a pull: a GPU layout up to cfg.ipc_pull bytes (a
    /// strided one, a block list, or a contiguous buffer that CUDA IPC can export), to a peer on
    /// the CUDA IPC path.
    bool offers_pull(const Request *r) const;
    bool strided_pull(Request *r, const PeerInfo &p);  // the receiver copies from the send layout
    bool same_layout_pull(Request *r, const PeerInfo &p);  // the same, of one block list on both sides
    bool same_layout_offer(Request *r, AmHeader *rtr);
    ucxdt_status_t recv_grant(Request *r, int slot, AmKind kind);  // the slot takes fragment next_get
    AmHeader hello(AmKind kind) const;       // this worker's HELLO (or reply) fields
    ucxdt_status_t map_peer(Request *r, const cuda::IpcRef &ref, uint64_t peer_uuid, const PeerInfo &p);
    /// UCXDT_OK when bytes [lo, hi) from r->peer_mem lie inside the allocation that the peer's
    /// reference names (cuda::ipc_covers), else UCXDT_ERR_UCX saying which bytes: checked before
    /// any GPU work reaches into a peer's memory on what the peer's message says.
    ucxdt_status_t peer_reach(const Request *r, int64_t lo, int64_t hi);
    int64_t ipc_frag(const Request *r);  // the fragment size model (frag_model.hpp) for a send

    // GPU work of the rendezvous (rndv_gpu_ops.cpp).
    /// The streams and IPC staging of GPU `device`, made on first use.
    ucxdt_status_t gpu(int device, cuda::DeviceStaging **out);
    /// Sets r->dev for r->gpu and, the first time, r->stream: a message of cfg.gpu_stream_split
    /// bytes or more takes the next of dev's streams in turn, a smaller one the first.
    ucxdt_status_t gpu(Request *r);
    /// Runs `work` on r's GPU stream (or synchronously when r has none) and queues `op`, whose
    /// completion gpu_done handles. On a stream, the work's kernels go into the stream's batch
    /// (move_bytes, and the copies given r->stream->batch()), launched with other operations' by
    /// flush_launches, which records the event.
    using GpuWork = std::function<ucxdt_status_t(const cudaStream_t *)>;
    ucxdt_status_t launch(Request *r, GpuOp op, const GpuWork &work);
    /// Launches the batches of the operations waiting in `launching` (only `only`'s when given),
    /// an event behind each, and moves the operations to gpu_ops.
    void flush_launches(cuda::WorkStream *only = nullptr);
    /// As flush_launches, but a stream with cfg.gpu_in_flight launches running keeps its kernels
    /// waiting for the next (progress).
    void flush_idle_launches();
    /// As flush_launches, for the streams for which launch_now(stream) is true.
    template <class Pred>
    void flush_launches_if(Pred &&launch_now);
    /// gpu_ops takes the operations of one launch, `event` behind them (flush_launches).
    void launched(std::vector<GpuOp> &ops, cudaEvent_t event, ucxdt_status_t st);
    /// Ends every GPU operation on `stream`: what is batched is launched, then waited for.
    void quiesce(cuda::WorkStream *stream);
    unsigned poll_gpu();
    void gpu_done(const GpuOp &op);
    /// Ends a send that failed once it may have GPU work or a receiver: waits for the GPU work,
    /// sends FIN with the error to a receiver that knows it, then completes.
    void send_fail(Request *r, ucxdt_status_t st);
    ucxdt_status_t send_fin(Request *r, ucxdt_status_t st);  // FIN: our part ended with st

    // The order of tagged messages on an endpoint (rndv_send.cpp).
    /// r's tagged message is ready (its data packed, its slots named): it goes now if every
    /// send before it on its endpoint has sent its own, else when they have. The status is that
    /// of r's ucp_tag_send_nbx when it went now, else UCXDT_OK.
    ucxdt_status_t send_tagged(Request *r);
    /// Sends the ready messages at the head of ep->unsent; a failure of one other than `mine`
    /// fails that send, `mine`'s is returned.
    ucxdt_status_t send_unsent(Ep *ep, Request *mine = nullptr);
    /// Takes r out of its endpoint's order when it ends before its message went; the messages
    /// behind it go at the next progress.
    void drop_unsent(Request *r);

    // Protocol steps (rndv_send.cpp, rndv_recv.cpp).
    void send_start(Request *r);             // rendezvous: slots, first fragments, RTS
    /// Host staging of r's GPU layout runs on its GPU's stream (r->dev) when the slots are
    /// page-locked, so the GPU reaches them with zero copy; otherwise it stays synchronous.
    void stage_on_gpu(Request *r);
    /// Packs fragment k into `dst` (slot `slot`, or a slot the receiver granted; `peer`: another
    /// GPU's memory); gpu_done then announces or sends it.
    void pack_next(Request *r, int64_t k, int slot, char *dst, bool peer = false);
    void pack_first(Request *r);            // the first fragments into r->slots
    unsigned pack_deferred();               // the next of each host_packing send's to_pack
    void refill(Request *r, int slot);      // the slot is free again: the next fragment, or give it back
    void send_on_am(const AmHeader &h);      // ACK and ATS for a send
    bool recv_matched(Request *r, const Event &e);
    /// Tells the sender of eager_sync message h that receive `rreq_id` matched it, with `st`
    /// (ATS); held in sync_due until the sender's HELLO when it has not come.
    void answer_sync(const TagHeader &h, uint64_t rreq_id, ucxdt_status_t st);
    // Probed messages (rndv_probe.cpp).
    /// The first message in `probed` that a receive of (tag, mask) would take, or nullptr.
    Message *probed_match(ucp_tag_t tag, ucp_tag_t mask) const;
    /// ucxdt_tag_probe_nb: that message, else the first that UCP holds, taken out of UCP and
    /// received into `probed` (it may still be arriving); nullptr when there is none.
    Message *probe(ucp_tag_t tag, ucp_tag_t mask);
    /// r takes m: delivered (as UCP's receive would) once m has arrived, at the next progress.
    void claim(Message *m, Request *r);
    // Matching in arrival order (Config::plain_bit; rndv_probe.cpp).
    /// Takes every message UCP holds, oldest first, each to the first posted receive it
    /// matches, else into `probed`.
    unsigned take_arrivals();
    /// r takes m: a message not yet received from UCP is received for r now (m goes), else claim.
    void take(Message *m, Request *r);
    /// Receives UCP message `handle` (`plain`, of `length` bytes, tag `sender_tag`) for r.
    void receive_message(Request *r, ucp_tag_message_h handle, ucp_tag_t sender_tag, size_t length, bool plain);
    /// Posts r's receive of a ucxdt message to UCP: by tag and mask, or of `handle` (from a probe).
    ucxdt_status_t post_recv(Request *r, ucp_tag_message_h handle);
    /// The tagged calls of ucxdt_ucp.h after their argument checks, under the worker's lock
    /// (rndv_send.cpp, rndv_recv.cpp).
    ucxdt_status_ptr_t tag_send(Ep *ep, const void *buffer, int64_t count, ucxdt_type_t type, ucp_tag_t tag,
                                const ucxdt_request_param_t *param);
    ucxdt_status_ptr_t tag_recv(void *buffer, int64_t count, ucxdt_type_t type, ucp_tag_t tag, ucp_tag_t tag_mask,
                                const ucxdt_request_param_t *param);
    ucxdt_status_ptr_t tag_msg_recv(void *buffer, int64_t count, ucxdt_type_t type, Message *m,
                                    const ucxdt_request_param_t *param);
    /// Ends r with `st` if it is a receive no message has matched: at once when the worker
    /// matches in arrival order (posted), else through UCP's cancel, which ends it with
    /// r->cancel_status (Event::tag_recv_done). Whether it did.
    bool end_unmatched(Request *r, ucxdt_status_t st);
    /// A plain message landed in r's buffer (`length` bytes): r completes.
    void recv_plain_done(Request *r, size_t length);
    /// UCP's receive for r ended with `us`: true when that ends r (an error, or r had ended
    /// already), false when r goes on with what it received.
    bool recv_ended(Request *r, ucs_status_t us);
    /// Gives UCP back a message that nothing receives (received into no buffer, truncated).
    void drop_message(ucp_tag_message_h handle);
    /// Hands each arrived, claimed message to its receive (recv_matched), in progress.
    unsigned deliver_probed();
    /// Worker destruction: messages UCP still receives are left to its callback, the rest freed.
    void drop_probed();
    /// Ends an eager receive whose GPU unpack out of the wire slot ended (or failed to start).
    void recv_eager_done(Request *r, ucxdt_status_t st);
    bool recv_advance(Request *r);           // GETs; false: still waiting for a resource
    void recv_on_get(Request *r, const Event &e);
    /// A fragment of r's host staging has landed (and been unpacked) or failed: finish the
    /// receive, or take the next fragments.
    void recv_frag_done(Request *r);
    void recv_end(Request *r, ucxdt_status_t st);  // status_pending (the first stays), then the
                                                   // end once no fragment is in flight
    /// Where fragment k of r lands: the contiguous host buffer, or a free slot (taken, into *slot;
    /// -1 for the buffer). The caller has checked that r->contig or a slot is free.
    char *recv_landing(Request *r, int64_t k, int *slot);
    void recv_on_ready(const AmHeader &h);
    void recv_finish(Request *r, ucxdt_status_t st);

    // Host staging with fragments as active messages (rndv_send.cpp, rndv_recv.cpp).
    void send_host_frag(Request *r, int64_t k, int slot);  // fragment k from our slot (-1: from the
                                                           // contiguous buffer), to the receiver
    void send_contig_frags(Request *r);                    // contiguous: up to cfg.depth in flight
    void send_on_host_rtr(Request *r, const AmHeader &rtr);  // the packed fragments go
    ucxdt_status_t announce(Request *r, int64_t k, int slot, uint64_t offset);  // READY
    ucxdt_status_t acknowledge(Request *r, int64_t k, int slot);  // ACK: the sender's slot is free
    void send_on_frag_sent(const Event &e);                // UCP is done with it: refill the slot
    void recv_on_frag(const Event &e);                     // a fragment arrived
    bool recv_advance_am(Request *r);                      // RTR, then take arrived fragments
    bool recv_in_place(Request *r);                        // unpack announced fragments from the
                                                           // sender's slots (peer_slots)
    /// Gives UCP back the data or descriptor of a fragment that will not be received.
    void drop_frag(void *data) { ucp_am_data_release(ucp_worker, data); }
};

/// What every request with user data shares (sends, receives, one-sided operations): r holds a
/// reference to the committed `type` and its plan of `count` elements, the buffer, the packed
/// size and where the layout lives. Errors: UCXDT_ERR_INVALID_PARAM (negative count, invalid
/// type), UCXDT_ERR_NOT_COMMITTED, UCXDT_ERR_OVERFLOW.
ucxdt_status_t prepare(Request *r, void *buffer, int64_t count, ucxdt_type_t type);
/// prepare() with the type and its plan of `count` elements already resolved (a committed type):
/// a send that send_plain_first looked up and left to the request path does not look them up
/// again (a handle lookup under the table's lock and a plan lookup under the type's mutex, about
/// 250 instructions a message).
void prepare_resolved(Request *r, void *buffer, int64_t count, TypePtr type, PlanPtr plan);

/// To be called first by each UCP callback whose user data names request r (`ucp_request`: the
/// callback's request argument, NULL for a completion reported in place). Counts the operation
/// off r->ucp_pending; returns false while r's worker lives, and the callback goes on. After
/// ucxdt_worker_destroy it frees UCP's request, then r with its last operation and the worker
/// with its last orphan, and returns true: the callback must not touch either again.
bool ucp_callback(Request *r, void *ucp_request);

/// A status as an nbx call's return value (UCXDT_PTR_IS_ERR).
ucxdt_status_ptr_t error_ptr(ucxdt_status_t st);

/// Moves packed bytes [offset, offset + length) of r's layout to or from `packed`: on stream *s
/// when given (r's layout is on GPU r->gpu, *s is r->stream's, and kernels go into its
/// batch: Worker::launch), else synchronously through transfer(). `peer`: the packed bytes are
/// another GPU's memory.
ucxdt_status_t move_bytes(Request *r, const cudaStream_t *s, char *packed, int64_t offset, int64_t length,
                          bool pack, bool peer);

/// Whether the sent signature (of h.packed bytes) equals that of r's receive type's first
/// h.packed bytes: UCXDT_ERR_TRUNCATED, UCXDT_ERR_TYPE_MISMATCH or UCXDT_OK.
ucxdt_status_t check_signature(const Request *r, const TagHeader &h);

/// The UCP generic datatype of Request::by_wire_dt: a request (count 1) stands for its tagged
/// message, the header followed by its packed stream. The same for every worker of the
/// process, made on the first call. Thread safe. Errors: UCXDT_ERR_UCX.
ucxdt_status_t wire_datatype(ucp_datatype_t *dt);

/// Holds w's lock while in scope when w is multi-threaded (Worker::multi); nothing otherwise.
class WorkerLock {
public:
    explicit WorkerLock(const Worker *w) : m_(w && w->multi ? &w->mu : nullptr) {
        if (m_) m_->lock();
    }
    ~WorkerLock() {
        if (m_) m_->unlock();
    }
    WorkerLock(const WorkerLock &) = delete;
    WorkerLock &operator=(const WorkerLock &) = delete;

private:
    std::recursive_mutex *m_;
};

}  // namespace ucxdt::rndv

// The public handles of ucxdt_ucp.h are the worker and endpoint themselves.
struct ucxdt_worker : ucxdt::rndv::Worker {};
struct ucxdt_ep : ucxdt::rndv::Ep {};
struct ucxdt_tag_message : ucxdt::rndv::Message {};
