// The packed stream of a GPU layout served to UCP in host fragments through a pinned ring
// (cuda/pinned_ring.hpp). The stream is cut into chunks of one ring slot; chunk c lives in
// slot c mod depth.
//
// Send (pack): the GPU packs the first `depth` chunks at start; UCP's fragments are copied out
// of the slots, and a slot whose chunk has been read to its end is refilled with chunk
// c + depth, so the GPU stays up to depth - 1 chunks ahead of UCP.
// Receive (unpack): fragments, in any order, are copied into their chunk's slot; a chunk that
// is complete is unpacked by the GPU straight from the slot. A fragment whose slot is still
// held by an incomplete chunk makes its own chunk "direct": all of that chunk is unpacked
// fragment by fragment through the synchronous path, so memory stays bounded by the ring.
//
// Fragments outside the ring's reach (a send fragment asked for again after its slot was
// refilled, for example) take the synchronous path too: the ring only ever makes things faster.
#pragma once

#include "dt/plan.hpp"
#include "cuda/pinned_ring.hpp"

#include <cstdint>
#include <unordered_set>
#include <vector>

namespace ucxdt {

class RingStream {
public:
    /// Takes a ring of `device` and, when packing, starts the GPU on the first chunks.
    /// On failure (no ring free, CUDA error) returns UCXDT_ERR_* and the caller serves the
    /// request without a ring.
    static ucxdt_status_t start(PlanPtr plan, char *layout, bool pack, int device,
                                std::unique_ptr<RingStream> *out);
    /// Waits for the GPU work this stream launched, then gives the ring back.
    ~RingStream();

    /// Copies packed bytes [offset, offset + length) into `dest` (host memory).
    ucxdt_status_t pack(int64_t offset, char *dest, int64_t length);
    /// Takes packed bytes [offset, offset + length) from `src` (host memory).
    ucxdt_status_t unpack(int64_t offset, const char *src, int64_t length);
    /// Waits until every byte given to unpack() is in the layout.
    ucxdt_status_t flush();

private:
    struct Slot {
        int64_t chunk = -1;     // chunk held, -1: none
        int64_t bytes = 0;      // pack: bytes read up to (max end); unpack: bytes received
        bool launched = false;  // GPU work queued, event recorded
        bool done = false;      // event seen complete
    };

    RingStream(PlanPtr plan, char *layout, bool pack, cuda::RingPtr ring);
    int64_t chunk_bytes(int64_t c) const;
    ucxdt_status_t launch(int64_t c);  // GPU pack or unpack of chunk c in its slot
    ucxdt_status_t wait(Slot &s);
    ucxdt_status_t direct(int64_t offset, char *host, int64_t length);  // synchronous path

    PlanPtr plan_;
    char *layout_;
    bool pack_;
    cuda::RingPtr ring_;
    int64_t chunks_;
    std::vector<Slot> slots_;
    std::unordered_set<int64_t> direct_chunks_;  // unpack: chunks served fragment by fragment
    ucxdt_status_t error_ = UCXDT_OK;            // first CUDA failure: later work goes direct
};

}  // namespace ucxdt
