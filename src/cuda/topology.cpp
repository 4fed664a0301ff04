#include "cuda/topology.hpp"

#include <hwloc.h>
#include <hwloc/cudart.h>

#include <mutex>

namespace ucxdt::cuda {

namespace {

struct Topology {
    hwloc_topology_t t = nullptr;
    bool loaded = false;
    Topology() {
        if (hwloc_topology_init(&t) == 0) loaded = hwloc_topology_load(t) == 0;
    }
};

}  // namespace

bool bind_near_gpu(void *addr, size_t bytes, int device) {
    static std::mutex mutex;
    static auto *topo = new Topology;  // never destroyed: pools may be made and freed during exit
    std::lock_guard<std::mutex> lock(mutex);
    if (!topo->loaded || device < 0 || !addr || bytes == 0) return false;
    hwloc_cpuset_t cpus = hwloc_bitmap_alloc();
    bool bound = cpus && hwloc_cudart_get_device_cpuset(topo->t, device, cpus) == 0 && !hwloc_bitmap_iszero(cpus);
    // A GPU local to every CPU gains nothing, and a bind to every node would still replace the
    // first-touch policy of the process.
    bound = bound && !hwloc_bitmap_isincluded(hwloc_topology_get_topology_cpuset(topo->t), cpus);
    bound = bound && hwloc_set_area_membind(topo->t, addr, bytes, cpus, HWLOC_MEMBIND_BIND, HWLOC_MEMBIND_MIGRATE) == 0;
    hwloc_bitmap_free(cpus);
    return bound;
}

}  // namespace ucxdt::cuda
