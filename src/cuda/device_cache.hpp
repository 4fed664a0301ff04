// The GPU-side cache of per-plan data (work units, type trees): one LRU over all devices,
// bounded by the device memory it holds (env UCXDT_GPU_PLAN_CACHE_MB, default 256), keyed by
// (plan id, device, kind). Evicted objects live on while a caller holds them.
#pragma once

#include <cstdint>
#include <memory>

namespace ucxdt::cuda {

struct DeviceObject {
    virtual ~DeviceObject() = default;
};

enum class CacheKind : int { UNITS, TREE };

std::shared_ptr<const DeviceObject> cache_find(uint64_t plan_id, int device, CacheKind kind);

void cache_insert(uint64_t plan_id, int device, CacheKind kind,
                  std::shared_ptr<const DeviceObject> object, int64_t bytes);

}  // namespace ucxdt::cuda
