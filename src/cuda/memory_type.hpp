// Which memory a pointer refers to, asked of the CUDA driver (pointer attributes).
#pragma once

namespace ucxdt::cuda {

enum class MemoryType {
    HOST,          // pageable, or unknown to CUDA; also everything when no GPU is present
    HOST_PINNED,   // page-locked or registered host memory
    DEVICE,        // cudaMalloc'd memory of some GPU
    MANAGED        // unified memory, accessible from host and device
};

/// Whether a CUDA device and driver are present (checked once). Machines without them (CI)
/// skip the driver calls altogether.
bool gpu_present();

/// The memory type of `ptr` and, for DEVICE and MANAGED, the device ordinal in *device.
/// Thread-safe. Costs one driver call when a GPU is present, none otherwise.
MemoryType memory_type(const void *ptr, int *device = nullptr);

/// Device or managed memory: what the GPU engine packs.
inline bool is_gpu(MemoryType m) { return m == MemoryType::DEVICE || m == MemoryType::MANAGED; }

/// Whether the CPU may dereference `ptr` (every type but DEVICE).
inline bool is_host_accessible(const void *ptr) { return memory_type(ptr) != MemoryType::DEVICE; }

}  // namespace ucxdt::cuda
