#include "ucp_generic/ring_stream.hpp"

#include "pack/transfer.hpp"
#include "cuda/cuda_check.hpp"

#include <algorithm>
#include <cstring>

namespace ucxdt {

ucxdt_status_t RingStream::start(PlanPtr plan, char *layout, bool pack, int device,
                                 std::unique_ptr<RingStream> *out) {
    cuda::RingPtr ring = cuda::acquire_ring(device);
    if (!ring) return UCXDT_ERR_NO_MEMORY;
    std::unique_ptr<RingStream> s(new RingStream(std::move(plan), layout, pack, std::move(ring)));
    if (pack)
        for (int64_t c = 0; c < std::min<int64_t>(s->chunks_, s->ring_->depth); ++c)
            if (ucxdt_status_t st = s->launch(c)) return st;  // ~RingStream waits for the rest
    *out = std::move(s);
    return UCXDT_OK;
}

RingStream::RingStream(PlanPtr plan, char *layout, bool pack, cuda::RingPtr ring)
    : plan_(std::move(plan)), layout_(layout), pack_(pack), ring_(std::move(ring)),
      slots_(static_cast<size_t>(ring_->depth)) {
    chunks_ = (plan_->packed_size + ring_->slot_bytes - 1) / ring_->slot_bytes;
}

RingStream::~RingStream() {
    // The slots go back to the pool: no GPU work may still read or write them.
    for (Slot &s : slots_) wait(s);
}

int64_t RingStream::chunk_bytes(int64_t c) const {
    return std::min(ring_->slot_bytes, plan_->packed_size - c * ring_->slot_bytes);
}

ucxdt_status_t RingStream::launch(int64_t c) {
    const int i = static_cast<int>(c % ring_->depth);
    Slot &s = slots_[i];
    s = Slot{c, 0, false, false};
    if (error_) return error_;
    ucxdt_status_t st = transfer(*plan_, layout_, ring_->slot(i), c * ring_->slot_bytes,
                                 chunk_bytes(c), pack_, &ring_->stream);
    if (!st) {
        cuda::DeviceGuard guard(ring_->device);
        st = cuda::check(cudaEventRecord(ring_->events[i], ring_->stream), "cudaEventRecord");
    }
    if (st) return error_ = st;
    s.launched = true;
    return UCXDT_OK;
}

ucxdt_status_t RingStream::wait(Slot &s) {
    if (!s.launched || s.done) return UCXDT_OK;
    const int i = static_cast<int>(&s - slots_.data());
    ucxdt_status_t st = cuda::check(cudaEventSynchronize(ring_->events[i]), "cudaEventSynchronize");
    s.done = true;
    if (st && !error_) error_ = st;
    return st;
}

ucxdt_status_t RingStream::direct(int64_t offset, char *host, int64_t length) {
    return transfer(*plan_, layout_, host, offset, length, pack_, nullptr);
}

ucxdt_status_t RingStream::pack(int64_t offset, char *dest, int64_t length) {
    while (length > 0) {
        const int64_t c = offset / ring_->slot_bytes, in = offset - c * ring_->slot_bytes;
        const int64_t n = std::min(length, chunk_bytes(c) - in);
        Slot &s = slots_[static_cast<size_t>(c % ring_->depth)];
        if (s.chunk != c || !s.launched || wait(s)) {
            if (ucxdt_status_t st = direct(offset, dest, n)) return st;
        } else {
            std::memcpy(dest, ring_->slot(static_cast<int>(c % ring_->depth)) + in,
                        static_cast<size_t>(n));
            s.bytes = std::max(s.bytes, in + n);
            // Read to its end: the slot moves on to the chunk `depth` ahead. A failure to
            // launch it is remembered in error_, and that chunk is then served directly.
            if (s.bytes == chunk_bytes(c) && c + ring_->depth < chunks_) launch(c + ring_->depth);
        }
        offset += n, dest += n, length -= n;
    }
    return UCXDT_OK;
}

ucxdt_status_t RingStream::unpack(int64_t offset, const char *src, int64_t length) {
    if (error_) return error_;  // bytes already in the ring can no longer reach the layout
    while (length > 0) {
        const int64_t c = offset / ring_->slot_bytes, in = offset - c * ring_->slot_bytes;
        const int64_t n = std::min(length, chunk_bytes(c) - in);
        Slot &s = slots_[static_cast<size_t>(c % ring_->depth)];
        if (s.chunk != c && !direct_chunks_.count(c)) {
            if (s.chunk >= 0 && !s.launched) {
                direct_chunks_.insert(c);  // the slot holds another chunk still filling
            } else {
                if (ucxdt_status_t st = wait(s)) return st;  // the slot's last unpack read it
                s = Slot{c, 0, false, false};
            }
        }
        if (direct_chunks_.count(c)) {
            if (ucxdt_status_t st = direct(offset, const_cast<char *>(src), n)) return st;
        } else {
            std::memcpy(ring_->slot(static_cast<int>(c % ring_->depth)) + in, src,
                        static_cast<size_t>(n));
            s.bytes += n;
            if (s.bytes == chunk_bytes(c))
                if (ucxdt_status_t st = launch(c)) return st;
        }
        offset += n, src += n, length -= n;
    }
    return UCXDT_OK;
}

ucxdt_status_t RingStream::flush() {
    for (Slot &s : slots_)
        if (ucxdt_status_t st = wait(s)) return st;
    return error_;
}

}  // namespace ucxdt
