#include <cuda_runtime.h>

#include "cuda/unit_cache.hpp"

#include "cuda/cuda_check.hpp"
#include "cuda/resources.hpp"

#include <mutex>
#include <vector>

#include <algorithm>

namespace ucxdt::cuda {

namespace {

// Units cut and uploaded per step of a pipelined first use (768 KiB of units).
constexpr uint64_t kChunkUnits = 32768;

// Cuts the plan's blocks into units, one chunk at a time: the state of the cut between chunks.
class Cutter {
public:
    explicit Cutter(const Plan &p) : p_(p) {}

    uint64_t total() const {
        uint64_t n = 0;
        for (int64_t len : p_.len) n += static_cast<uint64_t>((len + kUnitBytes - 1) / kUnitBytes);
        return n;
    }

    /// Writes up to `max` units at `out`; returns how many.
    uint64_t cut(kernels::Unit *out, uint64_t max) {
        uint64_t n = 0;
        for (; n < max && block_ < p_.len.size(); ++n) {
            const int64_t len = std::min(kUnitBytes, p_.len[block_] - at_);
            out[n] = {p_.disp[block_] + at_, p_.prefix[block_] + at_, len};
            at_ += len;
            if (at_ == p_.len[block_]) ++block_, at_ = 0;
        }
        return n;
    }

private:
    const Plan &p_;
    size_t block_ = 0;
    int64_t at_ = 0;
};

}  // namespace

ucxdt_status_t upload(void *dst, const void *src, size_t bytes, int device) {
    // The internal stream is non-blocking: a copy on it does not touch a legacy stream that
    // the caller may be capturing into a graph.
    cudaStream_t stream;
    if (ucxdt_status_t st = internal_stream(device, &stream)) return st;
    if (ucxdt_status_t st = check(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, stream),
                                  "cudaMemcpyAsync (upload)"))
        return st;
    return check(cudaStreamSynchronize(stream), "cudaStreamSynchronize (upload)");
}

void hold_for_graphs(const cudaStream_t &stream, std::shared_ptr<const DeviceObject> object) {
    cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
    if (cudaStreamIsCapturing(stream, &capture) != cudaSuccess || capture == cudaStreamCaptureStatusNone)
        return;
    // A graph keeps raw pointers to the object and may be launched at any time later: the
    // object must outlive every graph, and graphs do not say when they die.
    static std::mutex mutex;
    static std::vector<std::shared_ptr<const DeviceObject>> held;
    std::lock_guard lock(mutex);
    if (std::find(held.begin(), held.end(), object) == held.end()) held.push_back(std::move(object));
}

DeviceUnits::~DeviceUnits() {
    DeviceGuard guard(device_id);
    if (device) cudaFree(device);  // waits for work still using the units
    if (host) cudaFreeHost(host);
    if (ready) cudaEventDestroy(ready);
}

ucxdt_status_t wait_ready(const DeviceUnits &units, cudaStream_t stream) {
    if (!units.ready || units.landed.load(std::memory_order_acquire)) return UCXDT_OK;
    if (cudaEventQuery(units.ready) == cudaSuccess) {
        units.landed.store(true, std::memory_order_release);
        return UCXDT_OK;
    }
    cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
    cudaStreamIsCapturing(stream, &capture);
    // A graph cannot depend on an event recorded outside it: wait on the host instead.
    if (capture != cudaStreamCaptureStatusNone)
        return check(cudaEventSynchronize(units.ready), "cudaEventSynchronize (work units)");
    return check(cudaStreamWaitEvent(stream, units.ready, 0), "cudaStreamWaitEvent (work units)");
}

uint64_t unit_at(const DeviceUnits &units, int64_t pos, uint64_t filled) {
    const kernels::Unit *begin = units.host, *end = units.host + std::min(filled, units.count);
    const kernels::Unit *it = std::upper_bound(
        begin, end, pos, [](int64_t v, const kernels::Unit &u) { return v < u.dst; });
    return static_cast<uint64_t>(it - begin) - 1;
}

ucxdt_status_t device_units(const Plan &p, int device, const cudaStream_t *stream,
                            const ChunkReady &on_chunk, std::shared_ptr<const DeviceUnits> *out,
                            bool *fresh) {
    if (auto cached = cache_find(p.id, device, CacheKind::UNITS)) {
        *out = std::static_pointer_cast<const DeviceUnits>(cached);
        *fresh = false;
        return UCXDT_OK;
    }
    *fresh = true;
    Cutter cutter(p);
    auto units = std::make_shared<DeviceUnits>();
    units->device_id = device;
    units->count = cutter.total();
    // One lane per 16 bytes of a mean unit, up to a warp.
    const int64_t mean = p.unit_size / static_cast<int64_t>(std::max<uint64_t>(1, units->count));
    units->lanes_log2 = 0;
    while (units->lanes_log2 < 5 && (int64_t{16} << units->lanes_log2) < mean) ++units->lanes_log2;
    const size_t bytes = units->count * sizeof(kernels::Unit);

    cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
    if (stream && cudaStreamIsCapturing(*stream, &capture) != cudaSuccess) capture =
        cudaStreamCaptureStatusActive;
    // A graph would replay the upload but the cache would outlive an unlaunched graph, so
    // captured first uses upload eagerly, outside the capture (relaxed mode permits it).
    const bool pipelined = stream && on_chunk && capture == cudaStreamCaptureStatusNone;
    cudaStreamCaptureMode mode = cudaStreamCaptureModeRelaxed;
    if (!pipelined) cudaThreadExchangeStreamCaptureMode(&mode);
    ucxdt_status_t st = check(cudaMallocHost(&units->host, bytes), "cudaMallocHost (work units)");
    if (!st) st = check(cudaMalloc(&units->device, bytes), "cudaMalloc (work units)");
    if (!st && pipelined) {
        for (uint64_t first = 0; !st && first < units->count;) {
            const uint64_t n = cutter.cut(units->host + first, kChunkUnits);
            st = check(cudaMemcpyAsync(units->device + first, units->host + first,
                                       n * sizeof(kernels::Unit), cudaMemcpyHostToDevice, *stream),
                       "cudaMemcpyAsync (work units)");
            if (!st) st = on_chunk(*units, first, first + n);
            first += n;
        }
        if (!st) st = check(cudaEventCreateWithFlags(&units->ready, cudaEventDisableTiming),
                            "cudaEventCreate (work units)");
        if (!st) st = check(cudaEventRecord(units->ready, *stream), "cudaEventRecord (work units)");
    } else if (!st) {
        cutter.cut(units->host, units->count);
        st = upload(units->device, units->host, bytes, device);
    }
    if (!pipelined) cudaThreadExchangeStreamCaptureMode(&mode);
    if (st) return st;
    cache_insert(p.id, device, CacheKind::UNITS, units,
                 static_cast<int64_t>(units->count * sizeof(kernels::Unit)));
    *out = std::move(units);
    return UCXDT_OK;
}

}  // namespace ucxdt::cuda
