// The operations waiting for their streams' batched launch (LaunchBatch): one launch and one
// event serve a window of small copies on a stream, where each copy would pay both.
#pragma once

#include "uct_cuda/device_staging.hpp"

#include <ucxdt/ucxdt.h>

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstddef>
#include <iterator>
#include <utility>
#include <vector>

namespace ucxdt::cuda {

/// Operations (T: whatever their owner completes) whose copies wait in the LaunchBatch of a
/// DeviceStaging's stream, or already ran on it. flush() launches each stream's batch once and
/// records one event behind it, which all of that stream's operations share. Not thread safe:
/// the owner's progress serializes it.
template <class T>
class LaunchQueue {
public:
    bool empty() const { return waiting_.empty(); }
    /// Adds `op`, whose GPU work went into dev->batch() or onto dev->stream(); returns how many
    /// operations now wait on `dev`.
    size_t add(DeviceStaging *dev, T op) {
        waiting_.emplace_back(dev, std::move(op));
        return static_cast<size_t>(std::count_if(waiting_.begin(), waiting_.end(),
                                                 [dev](const auto &w) { return w.first == dev; }));
    }
    /// For each stream with waiting operations (only `dev` when given): launches its batch and
    /// records an event, then calls done(dev, ops, event, status) with that stream's operations in
    /// the order added. The last of them owns the event (it completes last). On failure the
    /// stream is synchronized (nothing of the operations still runs) and `event` is null.
    template <class Done>
    void flush(Done &&done, DeviceStaging *only = nullptr) {
        flush_if(std::forward<Done>(done), [only](DeviceStaging *dev) { return !only || dev == only; });
    }
    /// As flush, for the streams for which launch_now(dev) is true; the others' operations wait.
    template <class Done, class Pred>
    void flush_if(Done &&done, Pred &&launch_now) {
        std::vector<std::pair<DeviceStaging *, T>> q, held;
        q.swap(waiting_);
        std::vector<T> ops;
        while (!q.empty()) {
            DeviceStaging *dev = q.front().first;
            const bool now = launch_now(dev);
            ops.clear();
            auto keep = q.begin();
            for (auto &w : q) {
                if (w.first != dev) *keep++ = std::move(w);
                else if (now) ops.push_back(std::move(w.second));
                else held.push_back(std::move(w));
            }
            q.erase(keep, q.end());
            if (!ops.empty()) {
                cudaEvent_t event = nullptr;
                const ucxdt_status_t st = dev->launch_batch(&event);
                done(dev, ops, event, st);
            }
        }
        // Operations held, and any added meanwhile by `done`, wait on, in the order added.
        held.insert(held.end(), std::make_move_iterator(waiting_.begin()), std::make_move_iterator(waiting_.end()));
        waiting_.swap(held);
    }

private:
    std::vector<std::pair<DeviceStaging *, T>> waiting_;
};

}  // namespace ucxdt::cuda
