#include "cuda/staging_cache.hpp"

#include "base/env.hpp"
#include "cuda/cuda_check.hpp"

#include <cuda_runtime_api.h>

#include <map>
#include <mutex>
#include <utility>
#include <vector>

namespace ucxdt::cuda {

namespace {

int64_t size_class(int64_t bytes) {
    int64_t c = 4096;
    while (c < bytes) c *= 2;
    return c;
}

struct Cache {
    std::mutex lock;
    std::map<std::pair<int, int64_t>, std::vector<char *>> free;  // (device or -1, class) -> buffers
    int64_t kept = 0;
    const int64_t limit = env_integer("UCXDT_STAGING_CACHE_MB", 256, 0, 1 << 20) << 20;
};

// Never destroyed: buffers handed out may come back during the process's exit.
Cache &cache() {
    static Cache *c = new Cache;
    return *c;
}

char *take(int device, int64_t bytes) {
    Cache &c = cache();
    std::lock_guard<std::mutex> g(c.lock);
    auto it = c.free.find({device, size_class(bytes)});
    if (it == c.free.end() || it->second.empty()) return nullptr;
    char *p = it->second.back();
    it->second.pop_back();
    c.kept -= it->first.second;
    return p;
}

// Whether p was kept (else the caller frees it).
bool keep(int device, char *p, int64_t bytes) {
    Cache &c = cache();
    const int64_t cls = size_class(bytes);
    std::lock_guard<std::mutex> g(c.lock);
    if (c.kept + cls > c.limit) return false;
    c.free[{device, cls}].push_back(p);
    c.kept += cls;
    return true;
}

}  // namespace

char *staging_pinned(int64_t bytes) {
    if (char *p = take(-1, bytes)) return p;
    void *p = nullptr;
    if (cudaMallocHost(&p, static_cast<size_t>(size_class(bytes))) != cudaSuccess) {
        cudaGetLastError();
        return nullptr;
    }
    return static_cast<char *>(p);
}

char *staging_device(int device, int64_t bytes) {
    if (char *p = take(device, bytes)) return p;
    DeviceGuard g(device);
    void *p = nullptr;
    if (g.status() != UCXDT_OK || cudaMalloc(&p, static_cast<size_t>(size_class(bytes))) != cudaSuccess) {
        cudaGetLastError();
        return nullptr;
    }
    return static_cast<char *>(p);
}

void staging_release_pinned(char *p, int64_t bytes) {
    if (p && !keep(-1, p, bytes)) cudaFreeHost(p);
}

void staging_release_device(int device, char *p, int64_t bytes) {
    if (!p || keep(device, p, bytes)) return;
    DeviceGuard g(device);
    cudaFree(p);
}

}  // namespace ucxdt::cuda
