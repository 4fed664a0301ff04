#include "cuda/device_cache.hpp"

#include "base/env.hpp"

#include <cstdlib>
#include <list>
#include <mutex>

namespace ucxdt::cuda {

namespace {

int64_t cache_limit() {
    static const int64_t bytes = env_integer("UCXDT_GPU_PLAN_CACHE_MB", 256, 0, INT64_MAX >> 20) << 20;
    return bytes;
}

struct Entry {
    uint64_t plan_id;
    int device;
    CacheKind kind;
    std::shared_ptr<const DeviceObject> object;
    int64_t bytes;
};

std::mutex cache_mutex;
std::list<Entry> cache;  // most recently used first
int64_t cached_bytes = 0;

}  // namespace

std::shared_ptr<const DeviceObject> cache_find(uint64_t plan_id, int device, CacheKind kind) {
    std::lock_guard lock(cache_mutex);
    for (auto it = cache.begin(); it != cache.end(); ++it) {
        if (it->plan_id == plan_id && it->device == device && it->kind == kind) {
            cache.splice(cache.begin(), cache, it);
            return it->object;
        }
    }
    return nullptr;
}

void cache_insert(uint64_t plan_id, int device, CacheKind kind,
                  std::shared_ptr<const DeviceObject> object, int64_t bytes) {
    std::list<Entry> evicted;  // destroyed after the lock: freeing device memory waits
    std::lock_guard lock(cache_mutex);
    cache.push_front({plan_id, device, kind, std::move(object), bytes});
    cached_bytes += bytes;
    // The newest entry stays even if it alone exceeds the bound: its caller needs it now.
    while (cached_bytes > cache_limit() && cache.size() > 1) {
        cached_bytes -= cache.back().bytes;
        evicted.splice(evicted.begin(), cache, std::prev(cache.end()));
    }
}

}  // namespace ucxdt::cuda
