// Where host memory should live for a GPU: hwloc tells which CPUs (and so which NUMA nodes) are
// local to the GPU's PCI slot, and binds staging pages there, so that the GPU's zero-copy
// accesses and copy-engine transfers to that memory cross no inter-socket link.
#pragma once

#include <cstddef>

namespace ucxdt::cuda {

/// Binds the pages of [addr, addr + bytes) to the NUMA nodes local to CUDA device `device`
/// (moving pages already touched). Best effort: false, with nothing changed, when hwloc cannot
/// tell the GPU's locality, when the GPU is local to the whole machine (one NUMA node, or no
/// locality information) or when binding fails. Thread-safe; the topology is loaded once.
bool bind_near_gpu(void *addr, size_t bytes, int device);

}  // namespace ucxdt::cuda
