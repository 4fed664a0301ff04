// Yaksa, MPICH's datatype engine, as the peer of ucxdt's GPU pack kernels in ucxdt_packbench_yaksa
// (issue 46): the same layout descriptions built with Yaksa's own constructors, and packed and
// unpacked on device memory through Yaksa's own API, as MPICH does for its messages.
#pragma once

#include "support/type_desc.hpp"

#include <cuda_runtime_api.h>

#include <cstdint>
#include <stdexcept>
#include <string>

namespace ucxdt::bench {

/// A failed Yaksa call: what was called, and Yaksa's error code in words.
struct YaksaError : std::runtime_error {
    explicit YaksaError(const std::string &what) : std::runtime_error(what) {}
};

/// Yaksa's library state: yaksa_init on construction, yaksa_finalize on destruction. One at a
/// time per process. Throws YaksaError.
class Yaksa {
  public:
    Yaksa();
    ~Yaksa();
    Yaksa(const Yaksa &) = delete;
    Yaksa &operator=(const Yaksa &) = delete;
};

/// A committed Yaksa type built from a TypeDesc by the constructors of the same names (Yaksa's
/// counts and displacements are intptr_t: no narrowing). Freed on destruction.
class YaksaType {
  public:
    /// Throws YaksaError when Yaksa rejects a constructor, std::invalid_argument for a primitive
    /// Yaksa has no type for.
    explicit YaksaType(const layouts::TypeDesc &desc);
    ~YaksaType();
    YaksaType(const YaksaType &) = delete;
    YaksaType &operator=(const YaksaType &) = delete;
    /// Bytes of data in one element (yaksa_type_get_size, asked once).
    int64_t size() const { return size_; }
    uint64_t handle() const { return h_; }

  private:
    uint64_t h_ = 0;  // yaksa_type_t
    int64_t size_ = 0;
};

/// Packs `count` elements of `t` at `in` into `out` (room for `out_bytes`), enqueued on `stream`
/// (yaksa_pack_stream): the GPU time of Yaksa's kernels, comparable with ucxdt_pack_async.
/// Throws YaksaError, or when fewer bytes than the layout holds were packed.
void yaksa_pack_on(const void *in, int64_t count, const YaksaType &t, void *out,
                   int64_t out_bytes, cudaStream_t stream);
/// The inverse of yaksa_pack_on (yaksa_unpack_stream): `in_bytes` packed bytes into `count`
/// elements of `t` at `out`.
void yaksa_unpack_on(const void *in, int64_t in_bytes, void *out, int64_t count,
                     const YaksaType &t, cudaStream_t stream);
/// yaksa_ipack then yaksa_request_wait: what MPICH does to pack a message, complete at return.
/// Any memory Yaksa knows: device, or host (its CPU backend).
void yaksa_pack_wait(const void *in, int64_t count, const YaksaType &t, void *out,
                     int64_t out_bytes);
/// yaksa_iunpack then yaksa_request_wait: `in_bytes` packed bytes into `count` elements of `t`.
void yaksa_unpack_wait(const void *in, int64_t in_bytes, void *out, int64_t count,
                       const YaksaType &t);

}  // namespace ucxdt::bench
