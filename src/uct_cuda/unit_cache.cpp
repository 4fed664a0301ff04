#include <cuda_runtime.h>

#include "unit_cache.hpp"

#include "cuda_check.hpp"

#include <algorithm>
#include <cstdlib>
#include <list>
#include <mutex>

namespace ucxdt::cuda {

namespace {

int64_t cache_limit() {
    static const int64_t bytes = [] {
        const char *env = std::getenv("UCXDT_GPU_PLAN_CACHE_MB");
        const long mb = env ? std::strtol(env, nullptr, 10) : 256;
        return static_cast<int64_t>(mb >= 0 ? mb : 256) << 20;
    }();
    return bytes;
}

struct Entry {
    uint64_t plan_id;
    int device;
    std::shared_ptr<const DeviceUnits> units;
    int64_t bytes;
};

// Most recently used first. Evicted entries stay alive while a caller holds them.
std::mutex cache_mutex;
std::list<Entry> cache;
int64_t cached_bytes = 0;

int lanes_for(const std::vector<kernels::Unit> &units) {
    int64_t total = 0;
    for (const auto &u : units) total += u.len;
    const int64_t mean = units.empty() ? 1 : total / static_cast<int64_t>(units.size());
    // One lane per 16 bytes of a typical unit, up to a warp.
    int lg = 0;
    while (lg < 5 && (int64_t{16} << lg) < mean) ++lg;
    return lg;
}

}  // namespace

DeviceUnits::~DeviceUnits() {
    if (device) {
        DeviceGuard guard(device_id);
        cudaFree(device);  // waits for work still using the units
    }
}

std::vector<kernels::Unit> cut_units(const Plan &p) {
    std::vector<kernels::Unit> units;
    size_t n = 0;
    for (int64_t len : p.len) n += static_cast<size_t>((len + kUnitBytes - 1) / kUnitBytes);
    units.reserve(n);
    for (size_t j = 0; j < p.len.size(); ++j)
        for (int64_t at = 0; at < p.len[j]; at += kUnitBytes)
            units.push_back({p.disp[j] + at, p.prefix[j] + at, std::min(kUnitBytes, p.len[j] - at)});
    return units;
}

uint64_t unit_at(const std::vector<kernels::Unit> &units, int64_t pos) {
    auto it = std::upper_bound(units.begin(), units.end(), pos,
                               [](int64_t v, const kernels::Unit &u) { return v < u.dst; });
    return static_cast<uint64_t>(it - units.begin()) - 1;
}

ucxdt_status_t device_units(const Plan &p, int device, std::shared_ptr<const DeviceUnits> *out,
                            bool *fresh) {
    {
        std::lock_guard lock(cache_mutex);
        for (auto it = cache.begin(); it != cache.end(); ++it) {
            if (it->plan_id == p.id && it->device == device) {
                cache.splice(cache.begin(), cache, it);
                *out = it->units;
                if (fresh) *fresh = false;
                return UCXDT_OK;
            }
        }
    }
    auto units = std::make_shared<DeviceUnits>();
    units->host = cut_units(p);
    units->lanes_log2 = lanes_for(units->host);
    units->device_id = device;
    const int64_t bytes = static_cast<int64_t>(units->host.size() * sizeof(kernels::Unit));
    {
        DeviceGuard guard(device);
        if (ucxdt_status_t st = guard.status()) return st;
        // The upload may happen while the caller's stream is being captured into a graph:
        // relaxed mode lets these allocations and copies run outside the capture.
        cudaStreamCaptureMode mode = cudaStreamCaptureModeRelaxed;
        cudaThreadExchangeStreamCaptureMode(&mode);
        ucxdt_status_t st = check(cudaMalloc(&units->device, bytes), "cudaMalloc (work units)");
        if (!st)
            st = check(cudaMemcpy(units->device, units->host.data(), bytes, cudaMemcpyHostToDevice),
                       "cudaMemcpy (work units)");
        cudaThreadExchangeStreamCaptureMode(&mode);
        if (st) return st;
    }
    std::lock_guard lock(cache_mutex);
    cache.push_front({p.id, device, units, bytes});
    cached_bytes += bytes;
    // The newest entry stays even if it alone exceeds the bound: the caller needs it now.
    while (cached_bytes > cache_limit() && cache.size() > 1) {
        cached_bytes -= cache.back().bytes;
        cache.pop_back();
    }
    *out = std::move(units);
    if (fresh) *fresh = true;
    return UCXDT_OK;
}

}  // namespace ucxdt::cuda
