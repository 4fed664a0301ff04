// What a rendezvous worker keeps per GPU for the CUDA IPC path: a stream for its packs, unpacks
// and copies (blocking, like the library's other internal streams), marks that tell how far the
// stream has run, and staging slots in device memory exported once for IPC, into which a
// non-contiguous sender packs fragments for the peer to read.
//
// A mark is a counter that the stream itself writes into page-locked host memory after the work
// before it (cuStreamWriteValue64, which fences that work's writes first), so that polling reads
// memory: on the lent H200s a cudaEventQuery costs 1.3 us of driver time, and progress polled one
// per message or more (performance.md, run 17). Where the driver has no 64-bit stream memory
// operations, or `flags` is off, a mark is an event as before. A stream stopped by an error never
// writes its counter, so a mark unreached for a millisecond asks the stream (cudaStreamQuery).
#pragma once

#include "ipc.hpp"
#include "ucp_dt/slot_list.hpp"

#include <cuda.h>
#include <cuda_runtime_api.h>

#include <chrono>
#include <cstdint>
#include <deque>
#include <utility>
#include <vector>

namespace ucxdt::cuda {

class DeviceStaging {
public:
    /// `slots` x `slot_bytes` of staging, allocated by allocate(); `flags`: marks by counters in
    /// host memory where the driver allows it (else events).
    static ucxdt_status_t create(int device, int slots, int64_t slot_bytes, bool flags, DeviceStaging **out);
    ~DeviceStaging();
    DeviceStaging(const DeviceStaging &) = delete;
    DeviceStaging &operator=(const DeviceStaging &) = delete;

    int device() const { return device_; }
    cudaStream_t stream() const { return stream_; }
    /// Marks the work enqueued on the stream so far; *ticket is reached once all of it has run.
    ucxdt_status_t mark(uint64_t *ticket);
    /// Whether the work before `ticket` has run (*status UCXDT_OK) or the stream stopped on an
    /// error (*status that error); false while it runs. Tickets are reached in marking order.
    bool reached(uint64_t ticket, ucxdt_status_t *status);
    /// Whether marks are counters in host memory (else events).
    bool flags() const { return flag_ != nullptr; }

    /// Allocates and exports the staging slots (once; later calls return at once).
    ucxdt_status_t allocate();
    bool allocated() const { return base_ != nullptr; }
    /// Takes up to `want` free slots (none when all are taken); after allocate().
    std::vector<int> take(int want) { return free_.take(want); }
    void give(int slot) { free_.give(slot); }
    int free_slots() const { return free_.free_count(); }
    int slots() const { return slots_; }
    char *slot(int i) const { return base_ + slot_offset(i); }
    int64_t slot_offset(int i) const { return static_cast<int64_t>(i) * slot_bytes_; }
    /// The IPC reference of slot 0 (after allocate()).
    const IpcRef &ref() const { return ref_; }

private:
    DeviceStaging() = default;
    int device_ = -1, slots_ = 0;
    int64_t slot_bytes_ = 0;
    cudaStream_t stream_ = nullptr;
    uint64_t marked_ = 0, reached_ = 0;
    volatile uint64_t *flag_ = nullptr;  // the stream's counter, page-locked and mapped
    CUdeviceptr flag_dev_ = 0;
    std::chrono::steady_clock::time_point asked_{};  // the stream's status, last asked
    std::deque<std::pair<uint64_t, cudaEvent_t>> events_;  // without flags: marks not yet reached
    std::vector<cudaEvent_t> spare_;
    char *base_ = nullptr;
    IpcRef ref_{};
    SlotList free_;
};

}  // namespace ucxdt::cuda
