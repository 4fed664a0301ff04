// Page-locked host and device staging for operations that need a buffer for their lifetime
// only (one-sided puts and gets that cross between a host and a GPU layout): buffers are kept
// after use, per size class (a power of two, at least 4 KiB) and device, and handed out again:
// with staging allocated per operation, a one-sided get of 4 bytes from a GPU window into host
// memory took 0.75 ms on an H200 host, where one into device memory took 12 us (2026-11-30). Process-wide, bounded (UCXDT_STAGING_CACHE_MB, default 256, of kept
// buffers; beyond it a released buffer is freed), thread-safe. A buffer may also be freed
// directly (cudaFreeHost, cudaFree): each is an allocation of its own.
#pragma once

#include <cstdint>

namespace ucxdt::cuda {

/// A page-locked host buffer of at least `bytes`, or nullptr (the CUDA error cleared).
char *staging_pinned(int64_t bytes);
/// A device buffer of at least `bytes` on `device` (allocated there, the current device left as
/// it was), or nullptr.
char *staging_device(int device, int64_t bytes);
/// Gives back a buffer from the calls above, with the `bytes` asked for; nullptr is ignored.
void staging_release_pinned(char *p, int64_t bytes);
void staging_release_device(int device, char *p, int64_t bytes);

}  // namespace ucxdt::cuda
