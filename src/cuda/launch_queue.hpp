// The operations waiting for their streams' batched launch (LaunchBatch): one launch and one
// event serve a window of small copies on a stream, where each copy would pay both.
#pragma once

#include "cuda/work_stream.hpp"

#include <ucxdt/ucxdt.h>

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstddef>
#include <iterator>
#include <utility>
#include <vector>

namespace ucxdt::cuda {

/// Operations (T: whatever their owner completes) whose copies wait in the LaunchBatch of a
/// WorkStream's stream, or already ran on it. flush() launches each stream's batch once and
/// records one event behind it, which all of that stream's operations share. Not thread safe:
/// the owner's progress serializes it.
template <class T>
class LaunchQueue {
public:
    bool empty() const { return waiting_.empty(); }
    /// Adds `op`, whose GPU work went into ws->batch() or onto its stream; returns how many
    /// operations now wait on `ws`.
    size_t add(WorkStream *ws, T op) {
        waiting_.emplace_back(ws, std::move(op));
        return static_cast<size_t>(std::count_if(waiting_.begin(), waiting_.end(),
                                                 [ws](const auto &w) { return w.first == ws; }));
    }
    /// For each stream with waiting operations (only `only` when given): launches its batch and
    /// records an event, then calls done(ws, ops, event, status) with that stream's operations in
    /// the order added. The last of them owns the event (it completes last). On failure the
    /// stream is synchronized (nothing of the operations still runs) and `event` is null.
    template <class Done>
    void flush(Done &&done, WorkStream *only = nullptr) {
        flush_if(std::forward<Done>(done), [only](WorkStream *ws) { return !only || ws == only; });
    }
    /// As flush, for the streams for which launch_now(ws) is true; the others' operations wait.
    template <class Done, class Pred>
    void flush_if(Done &&done, Pred &&launch_now) {
        std::vector<std::pair<WorkStream *, T>> q, held;
        q.swap(waiting_);
        std::vector<T> ops;
        while (!q.empty()) {
            WorkStream *ws = q.front().first;
            const bool now = launch_now(ws);
            ops.clear();
            auto keep = q.begin();
            for (auto &w : q) {
                if (w.first != ws) *keep++ = std::move(w);
                else if (now) ops.push_back(std::move(w.second));
                else held.push_back(std::move(w));
            }
            q.erase(keep, q.end());
            if (!ops.empty()) {
                cudaEvent_t event = nullptr;
                const ucxdt_status_t st = ws->launch_batch(&event);
                done(ws, ops, event, st);
            }
        }
        // Operations held, and any added meanwhile by `done`, wait on, in the order added.
        held.insert(held.end(), std::make_move_iterator(waiting_.begin()), std::make_move_iterator(waiting_.end()));
        waiting_.swap(held);
    }

private:
    std::vector<std::pair<WorkStream *, T>> waiting_;
};

}  // namespace ucxdt::cuda
