// What a rendezvous worker keeps per GPU for the CUDA IPC path: a stream for its packs, unpacks
// and copies (blocking, like the library's other internal streams), reusable events to poll
// their completion, and staging slots in device memory exported once for IPC, into which a
// non-contiguous sender packs fragments for the peer to read (or, pushed, the receiver's slots
// that the sender packs into). Slots split down to a message's size (base/buddy_slots.hpp), so
// that a window of small messages is in flight at once: 8 slots of 32 MiB held 8 messages of
// 0.5-2 MiB and bounded their rate to 0.44-0.85 of UCP's (performance-log.md, run 29).
#pragma once

#include "uct_cuda/ipc.hpp"
#include "uct_cuda/launch_batch.hpp"
#include "base/buddy_slots.hpp"

#include <cuda_runtime_api.h>

#include <cstdint>
#include <vector>

namespace ucxdt::cuda {

class DeviceStaging {
public:
    /// `slots` x `slot_bytes` of staging, allocated by allocate().
    static ucxdt_status_t create(int device, int slots, int64_t slot_bytes, DeviceStaging **out);
    ~DeviceStaging();
    DeviceStaging(const DeviceStaging &) = delete;
    DeviceStaging &operator=(const DeviceStaging &) = delete;

    int device() const { return device_; }
    cudaStream_t stream() const { return stream_; }
    /// An event recorded on the stream now (returned with give_event once complete).
    ucxdt_status_t record(cudaEvent_t *event);
    void give_event(cudaEvent_t e) {
        events_.push_back(e);
        batch_.stream_busy = --events_out_ > 0;
    }
    /// Events recorded and not yet given back: the stream's work not yet seen complete.
    int events_out() const { return events_out_; }
    /// Copies collected for the stream's next launch (LaunchBatch).
    LaunchBatch &batch() { return batch_; }
    /// Launches batch() on the stream and records an event behind it (as record() does). On
    /// failure synchronizes the stream, so that nothing launched before still runs.
    ucxdt_status_t launch_batch(cudaEvent_t *event);
    /// Launches batch() and waits for everything on the stream: nothing of it runs after.
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
        taken_bytes_ += static_cast<int64_t>(got.size()) * (slot_bytes_ >> level);
        return got;
    }
    void give(int slot, int level) {
        free_.give(slot, level);
        taken_bytes_ -= slot_bytes_ >> level;
    }
    /// Bytes of the slots taken and not given back.
    int64_t taken_bytes() const { return taken_bytes_; }
    int64_t slot_bytes(int level) const { return slot_bytes_ >> level; }
    char *slot(int i, int level) const { return base_ + slot_offset(i, level); }
    int64_t slot_offset(int i, int level) const { return static_cast<int64_t>(i) * (slot_bytes_ >> level); }
    /// The IPC reference of slot 0 (after allocate()).
    const IpcRef &ref() const { return ref_; }

private:
    DeviceStaging() = default;
    int device_ = -1, slots_ = 0;
    int64_t slot_bytes_ = 0, taken_bytes_ = 0;
    cudaStream_t stream_ = nullptr;
    std::vector<cudaEvent_t> events_;
    int events_out_ = 0;
    LaunchBatch batch_;
    char *base_ = nullptr;
    IpcRef ref_{};
    BuddySlots free_;
};

}  // namespace ucxdt::cuda
