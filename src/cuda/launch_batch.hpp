// Kernel copies collected for one launch on a stream: a window of small messages pays one
// launch (kernels::launch_strided_batch, launch_units_batch, launch_point_batch,
// launch_tiles_batch, launch_transpose_batch) where each copy would pay its own
// (docs/performance.md, table c: a launch and an event a copy cost the receiver more than UCP's
// whole 4 KiB message).
#pragma once

#include "kernels/pack_kernels.hpp"

#include <ucxdt/ucxdt.h>

#include <cuda_runtime_api.h>

#include <array>
#include <cstddef>
#include <memory>
#include <vector>

namespace ucxdt::cuda {

/// The arguments of copy kernels not launched yet, by kind. transfer_async and the
/// layout copies append to one when given it; nothing runs until launch(). Copies in one batch
/// must not depend on each other's bytes (they may run in any order, at once).
class LaunchBatch {
public:
    /// Sizes of the kinds' vectors, in the order of each_kind.
    using Mark = std::array<size_t, 5>;
    std::vector<kernels::StridedArgs> strided;
    std::vector<kernels::UnitArgs> units;
    std::vector<kernels::PointArgs> points;
    std::vector<kernels::TileArgs> tiles;
    std::vector<kernels::TransposeArgs> transposes;
    /// What the arguments point into (a plan's work units or tree on the device), held until the launch:
    /// the device cache may evict them meanwhile, and their cudaFree waits only for work
    /// already enqueued.
    std::vector<std::shared_ptr<const void>> holds;

    /// Set by the stream's owner: launches of its earlier work still run there, so a kernel
    /// appended now waits behind them and its launch overlaps their work.
    bool stream_busy = false;

    /// Set by the stream's owner: a kernel in the batch moves packed bytes in page-locked host
    /// memory, across the host link (whose latency a small grid cannot hide). Cleared with it.
    bool host_link = false;

    bool empty() const {
        bool none = true;
        each_kind(*this, [&](const auto &v) { none = none && v.empty(); });
        return none;
    }
    /// Whether a kernel appended now shares its launch's cost: with other copies, or behind
    /// work still running.
    bool shares_launch() const { return !empty() || stream_busy; }
    /// Where the batch ends now; rewind(mark) drops what was appended since (a failed operation's
    /// copies, which must not run once it has ended).
    Mark mark() const {
        Mark m{};
        size_t i = 0;
        each_kind(*this, [&](const auto &v) { m[i++] = v.size(); });
        return m;
    }
    bool grew_since(const Mark &m) const {
        bool grew = false;
        size_t i = 0;
        each_kind(*this, [&](const auto &v) { grew = grew || v.size() > m[i++]; });
        return grew;
    }
    void rewind(const Mark &m) {
        size_t i = 0;
        each_kind(*this, [&](auto &v) { v.resize(m[i++]); });
    }
    void clear() {
        rewind(Mark{});
        holds.clear();
        host_link = false;
    }
    /// Enqueues every copy on `stream` (the current device's) and empties the batch: up to
    /// kernels::kMaxBatch copies of a kind per launch, a lone copy as its own kernel.
    ucxdt_status_t launch(cudaStream_t stream);

private:
    /// Calls f on each kind's vector, in Mark's order (one list of the kinds for every query).
    template <class Self, class F>
    static void each_kind(Self &self, F &&f) {
        f(self.strided);
        f(self.units);
        f(self.points);
        f(self.tiles);
        f(self.transposes);
    }
};

}  // namespace ucxdt::cuda
