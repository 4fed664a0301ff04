// Messages of the datatype-aware rendezvous (include/ucxdt/ucxdt_ucp.h). The first message of a
// transfer is tagged with the user's tag: a TagHeader (its first kEagerHeaderBytes bytes for
// EAGER) followed by the packed data (EAGER) or by
// the initial slot list and the packed rkey (RTS), or by the IPC reference of the sender's data
// or device staging (RTS of the CUDA IPC path). Everything else is a UCP active message whose
// header is an AmHeader and which carries no data, but for an RTR's StridedShape and the
// fragments of host staging (AmKind::frag).
#pragma once

#include "cuda/ipc.hpp"

#include <cstddef>
#include <cstdint>

namespace ucxdt::rndv {

constexpr uint32_t kMagic = 0x75636474;  // "ucdt"
/// TagHeader::sig_length of packed data (UCXDT_SEND_FLAG_PACKED), which matches any signature.
constexpr int64_t kPackedSignature = -1;
constexpr int kMaxRkeyBytes = 4096;      // posted receives leave this much for an RTS

// eager_sync: an eager message of a synchronous send, whose sender waits for an ATS that the
// receiver sends once a receive has matched it (a probe does not: MPI-4.1 §3.4).
enum class TagKind : uint8_t { eager = 1, rts = 2, eager_sync = 3 };
constexpr bool is_eager(TagKind k) { return k == TagKind::eager || k == TagKind::eager_sync; }

struct TagHeader {
    uint32_t magic;
    TagKind kind;
    uint8_t contig;         // RTS: the sender's layout is contiguous; remote_addr is its data
    uint8_t ipc;            // RTS: CUDA IPC path; a cuda::IpcRef follows instead of slots and rkey
    uint8_t am_frags;       // RTS, host staging: the fragments come as active messages (AmKind::frag)
                            // once the receiver's RTR names its request, or, with an rkey (the
                            // staging to map), are read in place; when `initial` names every
                            // fragment, a receiver reading in place sends no RTR
    uint64_t sender_uuid;   // the sending worker, known to the receiver through HELLO
    uint64_t sreq_id;       // the send request, named in the receiver's replies
    int64_t packed;         // packed bytes of the message
    uint64_t sig_hash;      // type signature of (type, count): ucxdt_type_signature
    int64_t sig_length;     // kPackedSignature: packed data (UCXDT_SEND_FLAG_PACKED), no signature
    int64_t frag;           // RTS: bytes per fragment
    uint64_t remote_addr;   // RTS: contiguous data, or the base of the sender's staging slots
    int32_t initial;        // RTS, non-contiguous: fragments 0 .. initial-1 are ready, in the
                            // slots listed after the header (int32 each)
    uint32_t rkey_len;      // RTS: bytes of packed rkey after the slot list
    int64_t run_len;        // IPC RTS: the sender's layout is strided with runs of this many
                            // bytes and can be copied run by run into a receiver's (0: not)
    uint64_t layout_hash;   // IPC RTS: the sender's layout is a block list of this Plan::layout_hash,
                            // which a receive of the same plan may take byte for byte (0: not)
    int64_t staging_bytes;  // RTS with am_frags and an rkey (a receiver on the sender's node):
                            // the sender's staging region, remote_addr and this many bytes,
                            // which the receiver may map and read in place (PeerStaging)
    int64_t pull;           // IPC RTS of a strided sender (run_len > 0): 1 when a second
                            // cuda::IpcRef, of the sender's first run, and the StridedShape of its
                            // layout follow the first, so that the receiver may copy the runs
                            // itself and answer with the ATS alone (0: not). Of a block-list
                            // sender (layout_hash != 0): the second reference is of its lowest
                            // data byte (Plan::data_lo), for a receive of the same block list,
                            // and the shape is empty (ndims 0)
};

/// An eager message carries the header's fields up to sig_length, all that its receiver reads,
/// then its data. With the whole header an 8,192-byte host message outgrew UCX 1.13's
/// shared-memory eager limit (8,256 bytes with UCP's own header) and went by UCP's rendezvous,
/// where UCP's generic datatype path sends it eagerly.
constexpr size_t kEagerHeaderBytes = offsetof(TagHeader, frag);
static_assert(kEagerHeaderBytes == 48, "the eager header is TagHeader's first six fields");
/// Bytes of the header that a message of `kind` carries.
constexpr size_t header_bytes(TagKind kind) { return is_eager(kind) ? kEagerHeaderBytes : sizeof(TagHeader); }

/// A strided layout (STRIDED plan, kernels::kMaxDims dims at most): runs of block_len bytes at
/// a reference plus the displacement of their index by `dims` (outermost first, innermost
/// fastest). Sent as the data of an RTR with direct == 2 (the receive's), and after the pull
/// reference of an IPC RTS (the send's).
struct StridedShape {
    static constexpr int kMaxDims = 8;
    int64_t block_len;
    int64_t packed;  // bytes of the whole receive: runs x block_len
    int32_t ndims;
    int32_t pad;
    struct {
        int64_t count, stride;  // stride in bytes
    } dims[kMaxDims];
};

enum class AmKind : uint8_t {
    hello = 1,        // introduces the sending worker: uuid, node, process, ipc, ep_id (sent with
                      // UCP_AM_SEND_FLAG_REPLY)
    ready = 2,        // to the receiver: fragment `frag_index` is ready in sender slot `slot`
    ack = 3,          // to the sender: fragment `frag_index` was fetched, its slot may be reused;
                      // with `push`, a grant: receiver slot `slot` at `offset` takes the next
                      // fragment
    ats = 4,          // to the sender: the transfer ended with `status` (an eager_sync message:
                      // a receive matched it, with `status`)
    hello_reply = 5,  // the answer to a hello, with the same fields, for ucxdt endpoint `ep_id`
    rtr = 6,          // host staging with am_frags: send the fragments to receive `rreq_id`
                      // (direct == 1: the receiver reads them in our slots, announce each with
                      // READY and take back its slot on ACK; none when the RTS named them all);
                      // IPC path, to a non-contiguous sender: pack into `ref` (direct), into
                      // the receiver's device staging `ref` (push: this RTR grants `slot` at
                      // `offset`, later grants come as ACKs), or into the sender's own device
                      // staging slots announced with READY
    fin = 7,          // to the receiver: the sender's part ended with `status` (host staging:
                      // only a failure)
    frag = 8          // host staging with am_frags, to the receiver: the message's data is
                      // fragment `frag_index` (UCP picks eager or rendezvous for it)
};

struct AmHeader {
    AmKind kind;
    uint8_t ipc;        // hello: CUDA IPC is enabled on the sending worker
    uint8_t direct;     // rtr: 1: `ref` is the receiver's contiguous buffer; 2: its first run,
                        // of the strided layout that the message's data (StridedShape) gives;
                        // 3: byte `offset` (Plan::data_lo, its lowest of data) of a receive
                        // layout of the sender's layout_hash, which takes each byte at its own
                        // displacement
    uint8_t push;       // rtr, ack: a grant of a slot of the receiver's device staging
    int32_t status;
    uint64_t uuid;      // hello: the sender's worker
    uint64_t sreq_id;
    uint64_t rreq_id;
    int64_t frag_index;
    int32_t slot;
    uint64_t process;   // hello: the sending process (process_identity())
    uint64_t node;      // hello: the sending node (node_identity(): UCX's)
    uint64_t ep_id;     // hello: the ucxdt endpoint that sent it
    uint64_t offset;    // ready (IPC path): byte offset of the slot in the sender's staging;
                        // rtr with direct == 3: the displacement that `ref` points at;
                        // grant (push): byte offset of the slot in the receiver's staging
    cuda::IpcRef ref;   // rtr: the receiver's buffer (direct) or device staging (push)
};

}  // namespace ucxdt::rndv
