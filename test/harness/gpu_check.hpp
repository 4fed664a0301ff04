// The GPU tests' shared harness (test/cuda/test_gpu_*.cpp): CUDA plumbing, buffers of every
// memory kind, and the check of a type's pack, unpack and ranges on the GPU against the CPU engine.
//
// Every check fills the buffers from host images, poisons the destination, runs the call and
// copies back the whole allocation: bytes of the type map must hold the expected data, every
// other byte (gaps, slack around the buffers) its poison.
//
// Without a GPU every test skips (OnGpu). The engine reads UCXDT_GPU_METHOD and
// UCXDT_STAGING_MB once per process, so test/CMakeLists.txt sets them in ctest entries of their
// own.
#pragma once

#include "support/app_layouts.hpp"
#include "support/random_desc.hpp"
#include "support/seeds.hpp"
#include "support/typemap_walk.hpp"

#include <ucxdt/ucxdt.h>
#include <ucxdt/ucxdt_cuda.h>

#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace ucxdt::testing {
using namespace ucxdt::support;  // the harness and its tests speak support/'s descriptions
}  // namespace ucxdt::testing

namespace ucxdt::testing::gpu {

namespace L = ucxdt::layouts;
namespace T = ucxdt::testing;
using Bytes = std::vector<std::byte>;
using Runs = std::vector<ucxdt::ref::Block>;
using Rng = T::Rng;
using Pair = std::pair<int64_t, int64_t>;
using Typed = std::vector<std::pair<L::TypeDescPtr, int64_t>>;  // (type, count)

using T::env_u64;  // support/seeds.hpp
using T::mix;
/// A uniform integer in [a, b].
int64_t uni(Rng &rng, int64_t a, int64_t b);

// ---- CUDA presence and plumbing -----------------------------------------------------------

struct Devices {
    int count = 0;
    std::string why;  // why there is none
};

/// The CUDA devices of this process, counted once.
const Devices &devices();

/// Test helpers throw on CUDA failures; GoogleTest reports an exception as the test's failure.
void must(cudaError_t e, const char *what);

/// The current CUDA device.
int current_device();

/// Makes `device` current for a scope (buffers and streams on a second GPU).
class DeviceScope {
public:
    explicit DeviceScope(int device);
    ~DeviceScope();
    DeviceScope(const DeviceScope &) = delete;
    DeviceScope &operator=(const DeviceScope &) = delete;

private:
    int saved_;
};

/// A user stream: non-blocking unless asked, so that it never orders with the legacy stream.
class Stream {
public:
    explicit Stream(int device = 0, unsigned flags = cudaStreamNonBlocking);
    ~Stream();
    Stream(const Stream &) = delete;
    Stream &operator=(const Stream &) = delete;
    cudaStream_t get() const { return s_; }

private:
    cudaStream_t s_ = nullptr;
};

enum class Mem { Device, Pinned, Registered, Managed, Pageable };

/// The kind's name in messages and test names.
const char *mem_name(Mem m);

/// One allocation of a memory kind, filled from and read back into host images of its size.
/// `pad` bytes more on either side belong to the allocation but are never copied.
class Buffer {
public:
    Buffer(Mem kind, int64_t bytes, int device = 0, int64_t pad = 0);
    ~Buffer();
    Buffer(const Buffer &) = delete;
    Buffer &operator=(const Buffer &) = delete;

    char *data() const { return static_cast<char *>(p_) + pad_; }

    /// The engine's internal streams do not order with the legacy stream that cudaMemcpy uses:
    /// waits for the copy before any call may read the buffer.
    void upload(const Bytes &image);
    Bytes download() const;

private:
    Mem kind_;
    size_t bytes_, pad_;
    int device_;
    void *p_ = nullptr;
};

/// A committed ucxdt type built from a description, freed at the end of its scope.
class Type {
public:
    explicit Type(const L::TypeDesc &d);
    ~Type();
    Type(const Type &) = delete;
    Type &operator=(const Type &) = delete;
    ucxdt_type_t get() const { return h_; }
    int64_t size() const;

private:
    ucxdt_type_t h_ = UCXDT_TYPE_NULL;
};

// ---- Expected images ----------------------------------------------------------------------

/// "" when got == want, else how many bytes differ and the first of them (offsets relative
/// to `origin`, the pointer passed to the call).
std::string compare(const Bytes &got, const Bytes &want, const std::string &what,
                    int64_t origin);

/// Writes packed bytes to `image` at the runs of a type map, in pack order; `flip` writes
/// their complements instead (a poison that differs from the data in every byte).
void scatter(Bytes &image, int64_t origin, const Runs &runs, const Bytes &packed, bool flip);

// ---- The check ------------------------------------------------------------------------------

/// Where the buffers live and how the calls are made.
struct Placement {
    Mem layout = Mem::Device, packed = Mem::Device;
    int device = 0;                 // the GPU of device and managed buffers
    int64_t mis_layout = 0;         // bytes added to the layout allocation's address (0..15)
    int64_t mis_packed = 0;         // likewise for the packed side
    cudaStream_t stream = nullptr;  // non-null: the _async calls on it
    int pieces = 8;                 // ranges per stream in the range checks
    int64_t cut_align = 1;          // the ranges start and end at multiples of this (bytes)
};

/// (type, count) as an application would use it: `recv` has the signature of `send` and
/// touches no byte twice (nullptr: pack checks only). app_bytes > 0 gives the layout buffer
/// (the application's array and the pointer's offset in it); else it is sized from the type map.
struct Case {
    L::TypeDescPtr send, recv;
    int64_t count = 1;
    int64_t app_bytes = 0, app_origin = 0;
    int64_t pad = 0;  // Buffer's pad of the layout buffers
};

struct Geometry {
    int64_t bytes = 0;   // allocation
    int64_t origin = 0;  // offset of the buffer pointer passed to the calls
};

/// The layout buffer of c for its side `d`, `mis` bytes misaligned, with poisoned slack.
Geometry geometry(const Case &c, const L::TypeDesc &d, int64_t mis);

/// "" when a ucxdt call returned UCXDT_OK and left the caller's current device as it was.
template <class F>
std::string call(const std::string &what, F &&f) {
    const int before = current_device();
    const ucxdt_status_t st = f();
    const int after = current_device();
    if (st != UCXDT_OK)
        return what + " returned " + ucxdt_status_string(st) + " (" + ucxdt_last_error() + ")";
    if (after != before)
        return what + " changed the current device from " + std::to_string(before) + " to " +
               std::to_string(after);
    return "";
}

/// In a function that returns a std::string ("" when all is well): returns `expr` unless "".
#define CHECK_OK(expr)                                  \
    do {                                                \
        if (std::string e_ = (expr); !e_.empty()) return e_; \
    } while (0)

/// pack, unpack, and both in random byte ranges, of c on the GPU as set up by s, against the
/// CPU engine on host copies (itself checked against the walker). "" when all agree.
/// *method_out, when given, receives the GPU method of (send, count).
std::string check_case(const Case &c, const Placement &s, uint64_t seed,
                       ucxdt_gpu_method_t *method_out = nullptr);

/// A description for messages, cut at 400 characters.
std::string short_desc(const L::TypeDesc &d);

/// The case and the setup, for messages.
std::string context(const Case &c, const Placement &s);

/// Checks c under every setup; a failure names the case and the setup.
void expect_case(const Case &c, const std::vector<Placement> &setups, uint64_t seed);

/// A receive type for `send`: itself where it touches no byte twice, else a relayout.
L::TypeDescPtr receiver(const L::TypeDescPtr &send, int64_t count, uint64_t seed);

/// (send, count) with receiver(send, count, seed) as its receive type.
Case make_case(L::TypeDescPtr send, int64_t count, uint64_t seed = 1);

/// Aligned, and misaligned by up to 15 bytes on either side or both.
std::vector<Placement> misalignments();

// ---- Fixtures: every test skips without a GPU ---------------------------------------------

template <class Base>
class OnGpu : public Base {
protected:
    void SetUp() override {
        if (devices().count < 1) GTEST_SKIP() << "no CUDA device: " << devices().why;
        ASSERT_EQ(cudaSetDevice(0), cudaSuccess);
    }
    void TearDown() override {
        if (devices().count < 1) return;
        // No test leaves an error behind or another device current.
        EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
        EXPECT_EQ(cudaGetLastError(), cudaSuccess);
        int d = -1;
        EXPECT_EQ(cudaGetDevice(&d), cudaSuccess);
        EXPECT_EQ(d, 0);
    }
};

using GpuTest = OnGpu<::testing::Test>;

}  // namespace ucxdt::testing::gpu
