// What a rendezvous worker keeps per GPU for its GPU work: streams (WorkStream) for its packs,
// unpacks and copies, and staging slots in device memory exported once for CUDA IPC, into which
// a non-contiguous sender packs fragments for the peer to read (or, pushed, the receiver's slots
// that the sender packs into). Slots split down to a message's size (base/buddy_slots.hpp), so
// that a window of small messages is in flight at once: 8 slots of 32 MiB held 8 messages of
// 0.5-2 MiB and bounded their rate to 0.44-0.85 of UCP's (performance-log.md, run 29). Several
// streams let one large message's kernel start while the previous one drains: back to back on
// one stream, kernels writing a peer GPU lost 1.7 us each of 13 (performance-log.md, run 30).
#pragma once

#include "cuda/ipc.hpp"
#include "cuda/work_stream.hpp"
#include "base/buddy_slots.hpp"

#include <cuda_runtime_api.h>

#include <cstdint>
#include <memory>
#include <vector>

namespace ucxdt::cuda {

class DeviceStaging {
public:
    /// `slots` x `slot_bytes` of staging, allocated by allocate(), and `streams` streams (at
    /// least one).
    static ucxdt_status_t create(int device, int slots, int64_t slot_bytes, int streams, DeviceStaging **out);
    ~DeviceStaging();
    DeviceStaging(const DeviceStaging &) = delete;
    DeviceStaging &operator=(const DeviceStaging &) = delete;

    int device() const { return device_; }
    int streams() const { return static_cast<int>(streams_.size()); }
    /// Stream i, 0 <= i < streams().
    WorkStream *stream(int i) const { return streams_[static_cast<size_t>(i)].get(); }
    /// Launches every stream's batch and waits for all their work.
    void synchronize();

    /// Allocates and exports the staging slots (once; later calls return at once).
    ucxdt_status_t allocate();
    bool allocated() const { return base_ != nullptr; }
    /// The level of the smallest slot that holds `bytes` (staging_level of the slot size).
    int level_for(int64_t bytes) const { return staging_level(slot_bytes_, bytes); }
    /// Takes up to `want` free slots of `level` (slot_bytes >> level bytes each; none when none
    /// is free); after allocate().
    std::vector<int> take(int want, int level) {
        std::vector<int> got = free_.take(want, level);
        taken_bytes_ += static_cast<int64_t>(got.size()) * slot_bytes(level);
        return got;
    }
    void give(int slot, int level) {
        free_.give(slot, level);
        taken_bytes_ -= slot_bytes(level);
    }
    /// Bytes of the slots taken and not given back.
    int64_t taken_bytes() const { return taken_bytes_; }
    int64_t slot_bytes(int level) const { return slot_bytes_ >> level; }
    char *slot(int i, int level) const { return base_ + slot_offset(i, level); }
    int64_t slot_offset(int i, int level) const { return static_cast<int64_t>(i) * slot_bytes(level); }
    /// The IPC reference of slot 0 (after allocate()).
    const IpcRef &ref() const { return ref_; }

private:
    DeviceStaging() = default;
    int device_ = -1, slots_ = 0;
    int64_t slot_bytes_ = 0, taken_bytes_ = 0;
    std::vector<std::unique_ptr<WorkStream>> streams_;
    char *base_ = nullptr;
    IpcRef ref_{};
    BuddySlots free_;
};

}  // namespace ucxdt::cuda
