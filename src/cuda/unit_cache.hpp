// Work units of BLOCK_LIST plans (Wu et al., HPDC'16, 3.1): the plan's blocks cut on the
// host into units of at most kUnitBytes, uploaded once per (plan, device) and kept in the
// device cache (device_cache.hpp).
// The first use is pipelined: the host cuts the next chunk of units while the GPU uploads
// and packs the previous one.
#pragma once

#include "cuda/device_cache.hpp"
#include "kernels/pack_kernels.hpp"
#include "dt/plan.hpp"

#include <cuda_runtime_api.h>

#include <atomic>
#include <functional>
#include <memory>

namespace ucxdt::cuda {

/// Blocks longer than this are cut, so that a group of lanes gets a bounded share of work.
constexpr int64_t kUnitBytes = 2048;

struct DeviceUnits : DeviceObject {
    kernels::Unit *host = nullptr;    // pinned: the upload's source, and seeking on the host
    uint64_t count = 0;
    kernels::Unit *device = nullptr;  // on device_id
    int device_id = -1;
    int lanes_log2 = 5;               // lanes per unit, from the mean unit length
    cudaEvent_t ready = nullptr;      // recorded after a pipelined upload; null: uploaded
    // Set once a query has seen `ready` done: later uses skip the query, which cost 2-3 us a
    // message on the host path (performance-log.md, run 24).
    mutable std::atomic<bool> landed{false};
    ~DeviceUnits() override;
};

/// Makes work enqueued next on `stream` see the uploaded units (a pipelined upload may still
/// be in flight on the stream that first used them).
ucxdt_status_t wait_ready(const DeviceUnits &units, cudaStream_t stream);

/// Called during a pipelined first use once units [first, last) are enqueued for upload.
using ChunkReady =
    std::function<ucxdt_status_t(const DeviceUnits &units, uint64_t first, uint64_t last)>;

/// The units of `p` on `device` (current). From the cache if there (*fresh = false).
/// Otherwise built now (*fresh = true): with a non-null `stream` that is not capturing a graph,
/// chunk by chunk, each chunk's upload enqueued on it and then passed to `on_chunk`, so the
/// caller's work on a chunk overlaps the cutting of the next; without, uploaded synchronously
/// and `on_chunk` is not called. Holding the result keeps the units alive.
ucxdt_status_t device_units(const Plan &p, int device, const cudaStream_t *stream,
                            const ChunkReady &on_chunk, std::shared_ptr<const DeviceUnits> *units,
                            bool *fresh);

/// Copies `bytes` from host to `device` memory on the device's internal stream and waits:
/// safe while the caller captures a graph on another stream (relaxed capture mode).
ucxdt_status_t upload(void *dst, const void *src, size_t bytes, int device);

/// Keeps `object` alive for the life of the process if `stream` is capturing a graph, since
/// the graph holds its device pointers.
void hold_for_graphs(const cudaStream_t &stream, std::shared_ptr<const DeviceObject> object);

/// Index of the unit that holds packed byte `pos` (0 <= pos < unit size) of one outer index,
/// searching only the first `filled` units (a pipelined first use has cut no more yet): a
/// position past them gives the last filled unit.
uint64_t unit_at(const DeviceUnits &units, int64_t pos, uint64_t filled);

}  // namespace ucxdt::cuda
