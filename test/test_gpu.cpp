// The GPU engine against the CPU engine and the reference type-map walker: random types and
// application layouts on device memory, element widths and misalignments, every memory kind
// on either side (zero copy, managed, staged pageable memory), the stream-ordered API on user
// streams and inside CUDA graphs, two GPUs, and the method the engine picks.
//
// Every check fills the buffers from host images, poisons the destination, runs the call and
// copies back the whole allocation: bytes of the type map must hold the expected data, every
// other byte (gaps, slack around the buffers) its poison.
//
// Without a GPU every test skips. Environment: UCXDT_GPU_TEST_TYPES (random types, default
// 10000; lower it under compute-sanitizer), UCXDT_TEST_SEED (replays a run),
// UCXDT_GPU_TEST_TRACE=1 (names each random type before its check: finds one that crashes), and
// the engine's UCXDT_GPU_METHOD / UCXDT_STAGING_MB, which test/CMakeLists.txt sets in ctest
// entries of their own because the engine reads them once per process.
#include "support/app_layouts.hpp"
#include "support/typemap_walk.hpp"
#include "support/layout_names.hpp"
#include "support/random_desc.hpp"

#include <ucxdt/ucxdt.h>
#include <ucxdt/ucxdt_cuda.h>

#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <map>
#include <memory>
#include <new>
#include <ostream>
#include <random>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace {

namespace L = ucxdt::layouts;
namespace T = ucxdt::testing;
using Bytes = std::vector<std::byte>;
using Runs = std::vector<ucxdt::ref::Block>;
using Rng = T::Rng;
using Ranges = std::vector<std::pair<int64_t, int64_t>>;

// Poisoned bytes on both sides of every window: writes just past a window show there.
constexpr int64_t kSlack = 32;

uint64_t env_u64(const char *name, uint64_t dflt) {
    const char *v = std::getenv(name);
    return v && *v ? std::strtoull(v, nullptr, 0) : dflt;
}

uint64_t mix(uint64_t z) {  // splitmix64: independent seeds for consecutive type numbers
    z += 0x9E3779B97F4A7C15ull;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

int64_t uni(Rng &rng, int64_t a, int64_t b) {
    return std::uniform_int_distribution<int64_t>(a, b)(rng);
}

// ---- CUDA presence and plumbing -----------------------------------------------------------

struct Devices {
    int count = 0;
    std::string why;  // why there is none
};

const Devices &devices() {
    static const Devices d = [] {
        Devices r;
        const cudaError_t e = cudaGetDeviceCount(&r.count);
        if (e != cudaSuccess) {
            r.count = 0;
            r.why = std::string("cudaGetDeviceCount: ") + cudaGetErrorName(e) + " (" +
                    cudaGetErrorString(e) + ")";
        } else if (r.count == 0) {
            r.why = "cudaGetDeviceCount reports 0 devices";
        }
        cudaGetLastError();
        return r;
    }();
    return d;
}

// Test helpers throw on CUDA failures; GoogleTest reports an exception as the test's failure.
void must(cudaError_t e, const char *what) {
    if (e != cudaSuccess)
        throw std::runtime_error(std::string(what) + ": " + cudaGetErrorName(e) + " (" +
                                 cudaGetErrorString(e) + ")");
}

int current_device() {
    int d = -1;
    must(cudaGetDevice(&d), "cudaGetDevice");
    return d;
}

// Makes `device` current for a scope (buffers and streams on a second GPU).
class DeviceScope {
public:
    explicit DeviceScope(int device) : saved_(current_device()) {
        if (device != saved_) must(cudaSetDevice(device), "cudaSetDevice");
    }
    ~DeviceScope() { cudaSetDevice(saved_); }
    DeviceScope(const DeviceScope &) = delete;
    DeviceScope &operator=(const DeviceScope &) = delete;

private:
    int saved_;
};

// A user stream: non-blocking unless asked, so that it never orders with the legacy stream.
class Stream {
public:
    explicit Stream(int device = 0, unsigned flags = cudaStreamNonBlocking) {
        DeviceScope on(device);
        must(cudaStreamCreateWithFlags(&s_, flags), "cudaStreamCreateWithFlags");
    }
    ~Stream() { cudaStreamDestroy(s_); }
    Stream(const Stream &) = delete;
    Stream &operator=(const Stream &) = delete;
    cudaStream_t get() const { return s_; }

private:
    cudaStream_t s_ = nullptr;
};

enum class Mem { Device, Pinned, Registered, Managed, Pageable };

const char *mem_name(Mem m) {
    switch (m) {
    case Mem::Device: return "device";
    case Mem::Pinned: return "pinned";
    case Mem::Registered: return "registered";
    case Mem::Managed: return "managed";
    case Mem::Pageable: return "pageable";
    }
    return "?";
}

bool gpu_accessible(Mem m) { return m != Mem::Pageable; }

// One allocation of a memory kind, filled from and read back into host images of its size.
// `pad` bytes more on either side belong to the allocation but are never copied.
class Buffer {
public:
    Buffer(Mem kind, int64_t bytes, int device = 0, int64_t pad = 0)
        : kind_(kind), bytes_(static_cast<size_t>(std::max<int64_t>(bytes, 1))),
          pad_(static_cast<size_t>(pad)), device_(device) {
        DeviceScope on(device_);
        const size_t all = bytes_ + 2 * pad_;
        switch (kind_) {
        case Mem::Device: must(cudaMalloc(&p_, all), "cudaMalloc"); break;
        case Mem::Pinned: must(cudaMallocHost(&p_, all), "cudaMallocHost"); break;
        case Mem::Managed: must(cudaMallocManaged(&p_, all), "cudaMallocManaged"); break;
        case Mem::Registered:
        case Mem::Pageable: {
            // Whole pages, so that two registered buffers never share one.
            const size_t r = (all + 4095) / 4096 * 4096;
            p_ = std::aligned_alloc(4096, r);
            if (!p_) throw std::bad_alloc();
            if (kind_ == Mem::Registered) {
                const cudaError_t e = cudaHostRegister(p_, r, cudaHostRegisterDefault);
                if (e != cudaSuccess) {
                    std::free(p_);
                    p_ = nullptr;
                    must(e, "cudaHostRegister");
                }
            }
            break;
        }
        }
    }
    ~Buffer() {
        if (!p_) return;
        int saved = 0;
        cudaGetDevice(&saved);
        cudaSetDevice(device_);
        // A check that failed half-way may leave stream-ordered work on the buffer.
        cudaDeviceSynchronize();
        switch (kind_) {
        case Mem::Device:
        case Mem::Managed: cudaFree(p_); break;
        case Mem::Pinned: cudaFreeHost(p_); break;
        case Mem::Registered:
            cudaHostUnregister(p_);
            std::free(p_);
            break;
        case Mem::Pageable: std::free(p_); break;
        }
        cudaSetDevice(saved);
    }
    Buffer(const Buffer &) = delete;
    Buffer &operator=(const Buffer &) = delete;

    char *data() const { return static_cast<char *>(p_) + pad_; }

    // The engine's internal streams do not order with the legacy stream that cudaMemcpy uses:
    // wait for the copy before any call may read the buffer.
    void upload(const Bytes &image) {
        if (image.size() != bytes_) throw std::logic_error("upload: image size");
        if (kind_ == Mem::Device) {
            DeviceScope on(device_);
            must(cudaMemcpy(data(), image.data(), bytes_, cudaMemcpyHostToDevice),
                 "cudaMemcpy (upload)");
            must(cudaDeviceSynchronize(), "cudaDeviceSynchronize (upload)");
        } else {
            std::memcpy(data(), image.data(), bytes_);
        }
    }
    Bytes download() const {
        Bytes out(bytes_);
        if (kind_ == Mem::Device) {
            DeviceScope on(device_);
            must(cudaMemcpy(out.data(), data(), bytes_, cudaMemcpyDeviceToHost),
                 "cudaMemcpy (download)");
        } else {
            std::memcpy(out.data(), data(), bytes_);
        }
        return out;
    }

private:
    Mem kind_;
    size_t bytes_, pad_;
    int device_;
    void *p_ = nullptr;
};

// A committed ucxdt type built from a description, freed at the end of its scope.
class Type {
public:
    explicit Type(const L::TypeDesc &d) {
        const ucxdt_status_t st = L::build(d, &h_, true);
        if (st != UCXDT_OK)
            throw std::runtime_error("build " + L::to_string(d).substr(0, 300) + ": " +
                                     ucxdt_status_string(st) + " (" + ucxdt_last_error() + ")");
    }
    ~Type() {
        if (h_ != UCXDT_TYPE_NULL) ucxdt_type_free(&h_);
    }
    Type(const Type &) = delete;
    Type &operator=(const Type &) = delete;
    ucxdt_type_t get() const { return h_; }
    int64_t size() const {
        int64_t s = 0;
        ucxdt_type_size(h_, &s);
        return s;
    }

private:
    ucxdt_type_t h_ = UCXDT_TYPE_NULL;
};

// ---- Expected images ----------------------------------------------------------------------

std::string hex(std::byte b) {
    char s[8];
    std::snprintf(s, sizeof s, "0x%02x", static_cast<unsigned>(b));
    return s;
}

// "" when got == want, else how many bytes differ and the first of them (offsets relative
// to `origin`, the pointer passed to the call).
std::string compare(const Bytes &got, const Bytes &want, const std::string &what,
                    int64_t origin) {
    if (got.size() != want.size()) return what + ": size " + std::to_string(got.size());
    if (std::memcmp(got.data(), want.data(), got.size()) == 0) return "";
    size_t first = got.size(), n = 0;
    for (size_t i = 0; i < got.size(); ++i)
        if (got[i] != want[i]) {
            if (first == got.size()) first = i;
            ++n;
        }
    return what + ": " + std::to_string(n) + " bytes differ, first at offset " +
           std::to_string(static_cast<int64_t>(first) - origin) + " from the buffer pointer: got " +
           hex(got[first]) + ", want " + hex(want[first]);
}

// Writes packed bytes to `image` at the runs of a type map, in pack order; `flip` writes
// their complements instead (a poison that differs from the data in every byte).
void scatter(Bytes &image, int64_t origin, const Runs &runs, const Bytes &packed, bool flip) {
    int64_t pos = 0;
    for (const auto &[disp, len] : runs) {
        std::byte *to = image.data() + origin + disp;
        std::memcpy(to, packed.data() + pos, static_cast<size_t>(len));
        if (flip)
            for (int64_t i = 0; i < len; ++i) to[i] = ~to[i];
        pos += len;
    }
}

bool touches_twice(Runs runs) {
    std::sort(runs.begin(), runs.end());
    for (size_t i = 1; i < runs.size(); ++i)
        if (runs[i].first < runs[i - 1].first + runs[i - 1].second) return true;
    return false;
}

// [0, total) cut at random points into about `pieces` ranges, a few of them a byte or two
// long; repeated cuts give zero-length ranges inside the stream, and one at each end is added.
// Shuffled: the engine must not depend on the order in which fragments come.
Ranges make_ranges(int64_t total, int pieces, Rng &rng) {
    std::vector<int64_t> cuts{0, total};
    for (int i = 1; i < pieces; ++i) cuts.push_back(uni(rng, 0, total));
    const int64_t c = uni(rng, 0, total);
    for (int64_t d : {int64_t{1}, int64_t{2}, int64_t{3}})
        if (c + d <= total) cuts.push_back(c + d);
    std::sort(cuts.begin(), cuts.end());
    Ranges out{{0, 0}, {total, 0}};
    for (size_t i = 1; i < cuts.size(); ++i) out.emplace_back(cuts[i - 1], cuts[i] - cuts[i - 1]);
    std::shuffle(out.begin(), out.end(), rng);
    return out;
}

// ---- The check ------------------------------------------------------------------------------

// Where the buffers live and how the calls are made.
struct Placement {
    Mem layout = Mem::Device, packed = Mem::Device;
    int device = 0;                 // the GPU of device and managed buffers
    int64_t mis_layout = 0;         // bytes added to the layout allocation's address (0..15)
    int64_t mis_packed = 0;         // likewise for the packed side
    cudaStream_t stream = nullptr;  // non-null: the _async calls on it
    int pieces = 8;                 // ranges per stream in the range checks
};

std::string describe(const Placement &s) {
    return std::string("layout ") + mem_name(s.layout) + "+" + std::to_string(s.mis_layout) +
           ", packed " + mem_name(s.packed) + "+" + std::to_string(s.mis_packed) + ", GPU " +
           std::to_string(s.device) + (s.stream ? ", async" : ", sync");
}

// (type, count) as an application would use it: `recv` has the signature of `send` and touches
// no byte twice (nullptr: pack checks only). app_bytes > 0 gives the layout buffer (the
// application's array and the pointer's offset in it); else it is sized from the type map.
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

Geometry geometry(const Case &c, const L::TypeDesc &d, int64_t mis) {
    if (c.app_bytes > 0) return {mis + kSlack + c.app_bytes + kSlack, mis + kSlack + c.app_origin};
    const T::BufferSpan sp = T::buffer_span(d, c.count, kSlack);
    // The buffer pointer itself stays inside the allocation (GpuPointers tests other pointers).
    const int64_t lo = std::min<int64_t>(0, sp.origin), hi = std::max(sp.bytes, sp.origin + 1);
    return {mis + hi - lo, mis + sp.origin - lo};
}

ucxdt_status_t do_pack(const Placement &s, const void *in, int64_t n, ucxdt_type_t t, void *out,
                       int64_t size, int64_t *pos) {
    return s.stream ? ucxdt_pack_async(in, n, t, out, size, pos, s.stream)
                    : ucxdt_pack(in, n, t, out, size, pos);
}
ucxdt_status_t do_unpack(const Placement &s, const void *in, int64_t size, int64_t *pos, void *out,
                         int64_t n, ucxdt_type_t t) {
    return s.stream ? ucxdt_unpack_async(in, size, pos, out, n, t, s.stream)
                    : ucxdt_unpack(in, size, pos, out, n, t);
}
ucxdt_status_t do_pack_range(const Placement &s, const void *buf, int64_t n, ucxdt_type_t t,
                             int64_t off, void *packed, int64_t len) {
    return s.stream ? ucxdt_pack_range_async(buf, n, t, off, packed, len, s.stream)
                    : ucxdt_pack_range(buf, n, t, off, packed, len);
}
ucxdt_status_t do_unpack_range(const Placement &s, const void *packed, int64_t off, int64_t len,
                               void *buf, int64_t n, ucxdt_type_t t) {
    return s.stream ? ucxdt_unpack_range_async(packed, off, len, buf, n, t, s.stream)
                    : ucxdt_unpack_range(packed, off, len, buf, n, t);
}

// "" when a ucxdt call returned UCXDT_OK and left the caller's current device as it was.
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

// The stream-ordered calls are complete once their stream is.
std::string finish(const Placement &s) {
    if (!s.stream) return "";
    const cudaError_t e = cudaStreamSynchronize(s.stream);
    return e == cudaSuccess ? "" : std::string("cudaStreamSynchronize: ") + cudaGetErrorName(e);
}

#define CHECK_OK(expr)                                  \
    do {                                                \
        if (std::string e_ = (expr); !e_.empty()) return e_; \
    } while (0)

// pack, unpack, and both in random byte ranges, of c on the GPU as set up by s, against the
// CPU engine on host copies (itself checked against the walker). "" when all agree.
// *method_out, when given, receives the GPU method of (send, count).
std::string check_case(const Case &c, const Placement &s, uint64_t seed,
                       ucxdt_gpu_method_t *method_out = nullptr) {
    Rng rng(seed);
    const Type ts(*c.send);
    const int64_t total = ts.size() * c.count;
    if (method_out) {
        DeviceScope on(s.device);
        CHECK_OK(call("ucxdt_gpu_method",
                      [&] { return ucxdt_gpu_method(ts.get(), c.count, method_out); }));
    }

    // Source image and its packed stream by the CPU engine, which the walker confirms.
    const Geometry gs = geometry(c, *c.send, s.mis_layout);
    Bytes src(static_cast<size_t>(gs.bytes));
    ucxdt::ref::fill_pattern(src.data(), gs.bytes, seed);
    Bytes ref(static_cast<size_t>(std::max<int64_t>(total, 1)));
    int64_t pos = 0;
    CHECK_OK(call("CPU ucxdt_pack", [&] {
        return ucxdt_pack(src.data() + gs.origin, c.count, ts.get(), ref.data(), total, &pos);
    }));
    const Runs send_runs = ucxdt::ref::typemap_runs(*c.send, c.count);
    if (auto d = ucxdt::ref::check_packed(send_runs, src.data() + gs.origin, ref.data());
        !d.empty())
        return "reference: CPU pack disagrees with the walker: " + d;

    // Packed side: window [at, at + total) between poisoned slack; the window's poison is the
    // complement of the data, so that every byte left unwritten shows.
    const int64_t at = s.mis_packed + kSlack, pk_bytes = at + total + kSlack;
    Bytes pk_poison(static_cast<size_t>(pk_bytes));
    ucxdt::ref::fill_pattern(pk_poison.data(), pk_bytes, mix(seed ^ 1));
    Bytes pk_want = pk_poison;
    for (int64_t i = 0; i < total; ++i) {
        pk_poison[static_cast<size_t>(at + i)] = ~ref[static_cast<size_t>(i)];
        pk_want[static_cast<size_t>(at + i)] = ref[static_cast<size_t>(i)];
    }

    Buffer lay(s.layout, gs.bytes, s.device, c.pad), pk(s.packed, pk_bytes, s.device);
    lay.upload(src);
    pk.upload(pk_poison);
    char *const lbuf = lay.data() + gs.origin;
    char *const outbuf = pk.data() + s.mis_packed;  // with *position = kSlack
    char *const window = pk.data() + at;

    // Whole pack, appended at a nonzero position.
    pos = kSlack;
    CHECK_OK(call("pack", [&] {
        return do_pack(s, lbuf, c.count, ts.get(), outbuf, kSlack + total, &pos);
    }));
    CHECK_OK(finish(s));
    if (pos != kSlack + total) return "pack left *position at " + std::to_string(pos);
    CHECK_OK(compare(pk.download(), pk_want, "pack: packed buffer", at));
    CHECK_OK(compare(lay.download(), src, "pack: layout buffer (a source)", gs.origin));

    // Ranges in random order, a zero-length one without a buffer too.
    const Ranges ranges = make_ranges(total, s.pieces, rng);
    pk.upload(pk_poison);
    for (const auto &[off, len] : ranges)
        CHECK_OK(call("pack_range [" + std::to_string(off) + ", +" + std::to_string(len) + ")",
                      [&, off = off, len = len] {
                          return do_pack_range(s, lbuf, c.count, ts.get(), off, window + off, len);
                      }));
    CHECK_OK(call("pack_range of 0 bytes into NULL", [&] {
        return do_pack_range(s, lbuf, c.count, ts.get(), total / 2, nullptr, 0);
    }));
    CHECK_OK(finish(s));
    CHECK_OK(compare(pk.download(), pk_want, "pack_range: packed buffer", at));

    if (!c.recv) return "";
    const Type tr(*c.recv);
    if (tr.size() * c.count != total) return "support: the receive type's size differs";
    const Geometry gr = geometry(c, *c.recv, s.mis_layout);
    const Runs recv_runs = ucxdt::ref::typemap_runs(*c.recv, c.count);
    if (touches_twice(recv_runs)) return "support: the receive type touches a byte twice";
    Bytes want(static_cast<size_t>(gr.bytes));
    ucxdt::ref::fill_pattern(want.data(), gr.bytes, mix(seed ^ 2));
    Bytes poison = want;
    scatter(want, gr.origin, recv_runs, ref, false);
    scatter(poison, gr.origin, recv_runs, ref, true);
    {
        Bytes cpu = poison;
        pos = 0;
        CHECK_OK(call("CPU ucxdt_unpack", [&] {
            return ucxdt_unpack(ref.data(), total, &pos, cpu.data() + gr.origin, c.count, tr.get());
        }));
        if (auto d = compare(cpu, want, "reference: CPU unpack vs walker", gr.origin); !d.empty())
            return d;
    }

    Buffer rl(s.layout, gr.bytes, s.device, c.pad);
    rl.upload(poison);
    pk.upload(pk_want);
    char *const rbuf = rl.data() + gr.origin;
    pos = kSlack;
    CHECK_OK(call("unpack", [&] {
        return do_unpack(s, outbuf, kSlack + total, &pos, rbuf, c.count, tr.get());
    }));
    CHECK_OK(finish(s));
    if (pos != kSlack + total) return "unpack left *position at " + std::to_string(pos);
    CHECK_OK(compare(rl.download(), want, "unpack: layout buffer", gr.origin));
    CHECK_OK(compare(pk.download(), pk_want, "unpack: packed buffer (a source)", at));

    rl.upload(poison);
    for (const auto &[off, len] : ranges)
        CHECK_OK(call("unpack_range [" + std::to_string(off) + ", +" + std::to_string(len) + ")",
                      [&, off = off, len = len] {
                          return do_unpack_range(s, window + off, off, len, rbuf, c.count, tr.get());
                      }));
    CHECK_OK(call("unpack_range of 0 bytes from NULL", [&] {
        return do_unpack_range(s, nullptr, total, 0, rbuf, c.count, tr.get());
    }));
    CHECK_OK(finish(s));
    CHECK_OK(compare(rl.download(), want, "unpack_range: layout buffer", gr.origin));
    return "";
}

std::string short_desc(const L::TypeDesc &d) {
    std::string s = L::to_string(d);
    return s.size() > 400 ? s.substr(0, 400) + "..." : s;
}

std::string context(const Case &c, const Placement &s) {
    return short_desc(*c.send) + " x " + std::to_string(c.count) + ", " + describe(s);
}

// Checks c under every setup; a failure names the case and the setup.
void expect_case(const Case &c, const std::vector<Placement> &setups, uint64_t seed) {
    for (const Placement &s : setups) {
        const std::string r = check_case(c, s, seed);
        EXPECT_EQ(r, "") << context(c, s);
    }
}

// A receive type for `send`: itself where it touches no byte twice, else a relayout.
L::TypeDescPtr receiver(const L::TypeDescPtr &send, int64_t count, uint64_t seed) {
    if (!touches_twice(ucxdt::ref::typemap_runs(*send, count))) return send;
    Rng rng(seed);
    return T::relayout(*send, rng);
}

Case make_case(L::TypeDescPtr send, int64_t count, uint64_t seed = 1) {
    Case c;
    c.recv = receiver(send, count, seed);
    c.send = std::move(send);
    c.count = count;
    return c;
}

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

const char *method_name(ucxdt_gpu_method_t m) {
    switch (m) {
    case UCXDT_GPU_METHOD_COPY_ENGINE: return "copy engine";
    case UCXDT_GPU_METHOD_COPY_ENGINE_2D: return "2-D copy engine";
    case UCXDT_GPU_METHOD_STRIDED_KERNEL: return "strided kernel";
    case UCXDT_GPU_METHOD_UNIT_KERNEL: return "work-unit kernel";
    default: return "other list kernel";
    }
}

// ---- Random types -------------------------------------------------------------------------

constexpr int kShards = 4;

// The random types with number i = shard (mod kShards), each packed and unpacked (into a
// relayout of the same signature) on device memory at random misalignments; every fourth also
// through the stream-ordered calls on a user stream.
class GpuRandom : public OnGpu<::testing::TestWithParam<int>> {};

TEST_P(GpuRandom, TypesAgainstCpuEngine) {
    const uint64_t ntypes = env_u64("UCXDT_GPU_TEST_TYPES", 10000);
    const uint64_t seed = env_u64("UCXDT_TEST_SEED", 20250611);
    const bool trace = env_u64("UCXDT_GPU_TEST_TRACE", 0) != 0;  // names a type that crashes
    const Stream stream;
    std::map<std::string, int64_t> methods;
    int64_t failures = 0, checked = 0;
    const auto t0 = std::chrono::steady_clock::now();
    for (uint64_t i = static_cast<uint64_t>(GetParam()); i < ntypes; i += kShards) {
        const uint64_t s = mix(seed ^ mix(i));
        Rng rng(s);
        Case c;
        c.send = T::random_desc(rng);
        c.recv = T::relayout(*c.send, rng);
        c.count = uni(rng, 1, 3);
        Placement st;
        st.mis_layout = uni(rng, 0, 15);
        st.mis_packed = uni(rng, 0, 15);
        if (trace) {
            std::fprintf(stderr, "[ gpu      ] type #%" PRIu64 " x %" PRId64 ": %s\n", i, c.count,
                         short_desc(*c.send).c_str());
            std::fflush(stderr);
        }
        ucxdt_gpu_method_t m{};
        bool have_method = false;
        std::string r;
        try {
            r = check_case(c, st, s, &m);
            have_method = true;
            if (r.empty() && i / kShards % 4 == 3) {
                st.stream = stream.get();
                r = check_case(c, st, s);
            }
        } catch (const std::exception &e) {
            r = std::string("exception: ") + e.what();
        }
        ++checked;
        ++methods[have_method ? method_name(m) : "unknown"];
        if (r.empty()) continue;
        if (++failures <= 10)
            ADD_FAILURE() << "type #" << i << " (UCXDT_TEST_SEED=" << seed << "): " << context(c, st)
                          << "\n  " << r;
    }
    const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::printf("[ gpu      ] shard %d: %" PRId64 " random types in %.1f s, seed %" PRIu64 ";",
                GetParam(), checked, secs, seed);
    for (const auto &[name, n] : methods) std::printf(" %s: %" PRId64 ";", name.c_str(), n);
    std::printf(" %" PRId64 " failures\n", failures);
    EXPECT_EQ(failures, 0);
}

INSTANTIATE_TEST_SUITE_P(Shard, GpuRandom, ::testing::Range(0, kShards));

// ---- Application layouts ------------------------------------------------------------------

using ucxdt::testing::app_layouts;

class GpuLayouts : public OnGpu<::testing::TestWithParam<size_t>> {};

// Each layout on its application-sized device buffer: aligned as the application has it,
// misaligned on both sides, and through the stream-ordered calls.
TEST_P(GpuLayouts, PackUnpackRangesOnDevice) {
    const L::Layout &l = app_layouts()[GetParam()];
    Case c;
    c.send = c.recv = l.type;
    c.count = l.count;
    c.app_bytes = l.buffer_bytes;
    c.app_origin = l.origin_bytes;
    const Stream stream;
    Placement aligned, misaligned, async;
    misaligned.mis_layout = 3;
    misaligned.mis_packed = 13;
    async.stream = stream.get();
    async.mis_packed = 8;
    for (const Placement &s : {aligned, misaligned, async}) {
        ucxdt_gpu_method_t m{};
        const std::string r = check_case(c, s, 0x1a70 + GetParam(), &m);
        EXPECT_EQ(r, "") << l.name << " (" << method_name(m) << "), " << context(c, s);
    }
}

std::string layout_name(const ::testing::TestParamInfo<size_t> &info) {
    return ucxdt::testing::param_name(info.param, app_layouts()[info.param].name);
}

INSTANTIATE_TEST_SUITE_P(App, GpuLayouts, ::testing::Range<size_t>(0, app_layouts().size()),
                         layout_name);

// ---- Strided plans: element widths, short blocks, misalignment -----------------------------
// These run in the default process (the cost model picks) and in the ctest entries that force
// UCXDT_GPU_METHOD=kernel and =copy.

using Pair = std::pair<int64_t, int64_t>;
using Typed = std::vector<std::pair<L::TypeDescPtr, int64_t>>;  // (type, count)

std::vector<Placement> misalignments() {
    static const Pair kMis[] = {{0, 0}, {1, 0}, {0, 1}, {3, 7}, {8, 8}, {15, 2}, {4, 12}, {2, 14}};
    std::vector<Placement> out;
    for (auto [l, p] : kMis) {
        Placement s;
        s.mis_layout = l;
        s.mis_packed = p;
        out.push_back(s);
    }
    return out;
}

class GpuStrided : public GpuTest {};

// Elements of 1, 2, 4, 8, 12 and 16 bytes (contiguous(k, byte)) in runs shorter and longer
// than a warp's width, with odd and negative strides, one and two strided levels.
TEST_F(GpuStrided, ElementWidthsAndMisalignment) {
    for (int64_t k : {1, 2, 4, 8, 12, 16}) {
        const auto e = L::contiguous(k, L::named(UCXDT_BYTE));
        const Typed types = {
            {L::vector(33, 1, 2, e), 1},                       // k-byte runs
            {L::vector(17, 3, 5, e), 2},                       // 3k-byte runs, count 2
            {L::vector(9, 2, -3, e), 1},                       // negative stride
            {L::hvector(12, 1, 3 * k + 5, e), 3},              // runs at odd byte distances
            {L::vector(6, 40, 41, e), 1},                      // runs longer than a warp's width
            {L::vector(3, 70, 100, e), 2},
            {L::vector(4, 1, 3, L::vector(5, 2, 4, e)), 2},    // two strided levels
            {L::hvector(7, 1, -(5 * k + 3), L::vector(3, 1, 2, e)), 1},
        };
        for (const auto &[d, count] : types) expect_case(make_case(d, count), misalignments(), 7 + k);
    }
}

// count > 1 with resized extents, positive and negative, so that elements step up, down,
// touch, or leave odd gaps.
TEST_F(GpuStrided, ResizedExtents) {
    const auto i16 = L::named(UCXDT_INT16), i32 = L::named(UCXDT_INT32), d = L::named(UCXDT_DOUBLE);
    const Typed types = {
        {L::resized(L::vector(4, 2, 3, i32), 0, 52), 5},
        {L::resized(L::vector(4, 2, 3, i32), -8, -60), 4},       // elements step downwards
        {L::resized(L::contiguous(3, d), 0, -24), 6},             // touching, downwards
        {L::resized(L::contiguous(3, d), 0, 25), 6},              // odd gaps
        {L::resized(L::named(UCXDT_LONG_DOUBLE), 0, 19), 9},
        {L::resized(L::vector(3, 1, 2, i16), 2, 13), 7},
        {L::hvector(3, 2, -24, L::resized(i16, 2, 6)), 2},
        {L::resized(L::hvector(5, 3, -40, L::contiguous(12, L::named(UCXDT_BYTE))), 4, -200), 3},
    };
    for (const auto &[t, count] : types) expect_case(make_case(t, count), misalignments(), 11);
}

// ---- Method classes -------------------------------------------------------------------------

class GpuMethod : public GpuTest {};

ucxdt_gpu_method_t method_of(const L::TypeDescPtr &d, int64_t count, ucxdt_plan_class_t want_cls) {
    const Type t(*d);
    ucxdt_plan_class_t cls{};
    int64_t blocks = 0;
    if (ucxdt_type_plan_info(t.get(), count, &cls, &blocks) != UCXDT_OK)
        throw std::runtime_error("ucxdt_type_plan_info failed");
    // The premise: the type lowers to the plan class the expectation is about.
    EXPECT_EQ(cls, want_cls) << short_desc(*d);
    ucxdt_gpu_method_t m{};
    const int before = current_device();
    EXPECT_EQ(ucxdt_gpu_method(t.get(), count, &m), UCXDT_OK) << ucxdt_last_error();
    EXPECT_EQ(current_device(), before);
    return m;
}

TEST_F(GpuMethod, ClassesOfPlans) {
    const auto dbl = L::named(UCXDT_DOUBLE), i32 = L::named(UCXDT_INT32);
    EXPECT_EQ(method_of(L::contiguous(1000, dbl), 3, UCXDT_PLAN_CONTIGUOUS),
              UCXDT_GPU_METHOD_COPY_ENGINE);

    // One strided level of rows that do not overlap: the copy engine may take it; the
    // environment forces one or the other.
    const char *force = std::getenv("UCXDT_GPU_METHOD");
    const std::string f = force ? force : "";
    const Typed copyable = {{L::vector(64, 3, 8, dbl), 1},
                            {L::vector(4096, 1, 2, i32), 1},
                            {L::resized(L::contiguous(1000, dbl), 0, 16000), 16}};
    for (const auto &[d, count] : copyable) {
        const ucxdt_gpu_method_t m = method_of(d, count, UCXDT_PLAN_STRIDED);
        if (f == "kernel") {
            EXPECT_EQ(m, UCXDT_GPU_METHOD_STRIDED_KERNEL) << short_desc(*d);
        } else if (f == "copy") {
            EXPECT_EQ(m, UCXDT_GPU_METHOD_COPY_ENGINE_2D) << short_desc(*d);
        } else {
            EXPECT_TRUE(m == UCXDT_GPU_METHOD_STRIDED_KERNEL || m == UCXDT_GPU_METHOD_COPY_ENGINE_2D)
                << short_desc(*d) << ": " << m;
        }
    }
    // Strided plans the 2-D copy engine cannot take: negative stride, overlapping rows. The
    // strided kernel, whatever the environment says.
    for (const auto &d : {L::vector(64, 3, -8, dbl), L::hvector(64, 3, 4, i32)})
        EXPECT_EQ(method_of(d, 1, UCXDT_PLAN_STRIDED), UCXDT_GPU_METHOD_STRIDED_KERNEL)
            << short_desc(*d);
    // Two levels: the copy engine would take one call per outer index, which the local model
    // does not price, so the strided kernel unless the copy is forced.
    const auto two_levels = L::subarray({6, 7, 8}, {3, 4, 5}, {1, 2, 3}, UCXDT_ORDER_C, dbl);
    EXPECT_EQ(method_of(two_levels, 1, UCXDT_PLAN_STRIDED),
              f == "copy" ? UCXDT_GPU_METHOD_COPY_ENGINE_2D : UCXDT_GPU_METHOD_STRIDED_KERNEL);
    // Block lists: a list kernel (work units, or the point-based one for tiny runs), never a
    // copy engine or the strided kernel.
    for (const auto &d : {L::indexed({5, 100, 37, 1, 64}, {0, 7, 200, 150, 400}, dbl),
                          L::hindexed({1, 2, 1}, {0, 3, 9}, L::named(UCXDT_BYTE))}) {
        const ucxdt_gpu_method_t m = method_of(d, 5, UCXDT_PLAN_BLOCK_LIST);
        EXPECT_NE(m, UCXDT_GPU_METHOD_COPY_ENGINE) << short_desc(*d);
        EXPECT_NE(m, UCXDT_GPU_METHOD_COPY_ENGINE_2D) << short_desc(*d);
        EXPECT_NE(m, UCXDT_GPU_METHOD_STRIDED_KERNEL) << short_desc(*d);
    }
    EXPECT_EQ(method_of(L::indexed({5, 100, 37, 1, 64}, {0, 7, 200, 150, 400}, dbl), 5,
                        UCXDT_PLAN_BLOCK_LIST),
              UCXDT_GPU_METHOD_UNIT_KERNEL);  // runs of 8 to 800 bytes: a unit list is cheap
}

// ---- Corner types -------------------------------------------------------------------------

class GpuCorners : public GpuTest {};

TEST_F(GpuCorners, NegativeDisplacements) {
    const auto ch = L::named(UCXDT_CHAR), i16 = L::named(UCXDT_INT16),
               i32 = L::named(UCXDT_INT32), dbl = L::named(UCXDT_DOUBLE);
    const Typed types = {
        {L::hindexed({2, 1, 3}, {-40, 8, -17}, i32), 2},
        {L::indexed({1, 2}, {-5, 3}, dbl), 3},
        {L::structure({1, 2, 1}, {-24, 0, -9}, {dbl, i16, ch}), 2},
        {L::indexed_block(2, {-4, 2, -9}, i32), 2},
        {L::vector(5, 1, -7, L::hindexed({1, 1, 1}, {-3, 0, 5}, ch)), 3},
        {L::subarray({4, 5}, {2, 3}, {1, 1}, UCXDT_ORDER_FORTRAN, L::resized(i32, -2, 8)), 2},
        {L::hindexed({3, 1}, {-1000, 4000}, L::vector(3, 2, -5, i16)), 2},
        {L::resized(L::structure({1, 1}, {-17, 5}, {dbl, ch}), -20, 40), 4},
    };
    for (const auto &[t, count] : types) expect_case(make_case(t, count), misalignments(), 13);
}

// A block list of more work units than one upload chunk (32768): its first use is cut,
// uploaded and packed chunk by chunk, and windows must find their units among those cut so far.
TEST_F(GpuCorners, BlockListFirstUseOverSeveralChunks) {
    std::vector<int64_t> bl, disp;
    int64_t at = 0;
    for (int64_t i = 0; i < 80000; ++i) {
        bl.push_back(4 + i % 7);  // 32 to 80 bytes: a unit list, not the point kernel
        disp.push_back(at);
        at += bl.back() + 1 + i % 3;
    }
    // Twice: whole, and first uses that start with a window in a later chunk (shuffled ranges).
    expect_case(make_case(L::indexed(bl, disp, L::named(UCXDT_DOUBLE)), 1), {Placement{}}, 5);
    Placement ranged;
    ranged.pieces = 3;
    expect_case(make_case(L::indexed(bl, disp, L::named(UCXDT_DOUBLE)), 2), {ranged}, 6);
}

// Empty types, count 0 and ranges of 0 bytes: OK, and not a byte written.
TEST_F(GpuCorners, NothingToMove) {
    const auto dbl = L::named(UCXDT_DOUBLE);
    const Stream stream;
    Placement sync, async;
    async.stream = stream.get();
    const Typed empty = {{L::contiguous(0, dbl), 3},
                         {L::vector(4, 2, 3, dbl), 0},
                         {L::indexed({0, 0}, {5, 1}, dbl), 2}};
    for (const auto &[t, count] : empty)
        expect_case(make_case(t, count), {sync, async}, 17);

    // Ranges of 0 bytes anywhere in a non-empty stream, from and into device memory.
    const Type t(*L::indexed({3, 1, 2}, {0, 5, 9}, dbl));
    const int64_t total = 6 * 8 * 2;
    Buffer lay(Mem::Device, 11 * 8 * 2 + 64), pk(Mem::Device, total);
    Bytes lay_img(static_cast<size_t>(11 * 8 * 2 + 64)), pk_img(static_cast<size_t>(total));
    ucxdt::ref::fill_pattern(lay_img.data(), ssize(lay_img), 5);
    ucxdt::ref::fill_pattern(pk_img.data(), ssize(pk_img), 6);
    lay.upload(lay_img);
    pk.upload(pk_img);
    for (int64_t off : {int64_t{0}, int64_t{1}, total / 2, total - 1, total}) {
        EXPECT_EQ(ucxdt_pack_range(lay.data(), 2, t.get(), off, pk.data() + off % total, 0), UCXDT_OK);
        EXPECT_EQ(ucxdt_unpack_range(pk.data(), off, 0, lay.data(), 2, t.get()), UCXDT_OK);
        EXPECT_EQ(ucxdt_pack_range_async(lay.data(), 2, t.get(), off, pk.data(), 0, stream.get()),
                  UCXDT_OK);
        EXPECT_EQ(ucxdt_unpack_range_async(pk.data(), off, 0, lay.data(), 2, t.get(), stream.get()),
                  UCXDT_OK);
    }
    ASSERT_EQ(cudaStreamSynchronize(stream.get()), cudaSuccess);
    EXPECT_EQ(compare(lay.download(), lay_img, "layout", 0), "");
    EXPECT_EQ(compare(pk.download(), pk_img, "packed", 0), "");
}

// ---- Memory kinds -------------------------------------------------------------------------

struct KindPair {
    Mem layout, packed;
};

void PrintTo(const KindPair &k, std::ostream *os) {
    *os << mem_name(k.layout) << " layout, " << mem_name(k.packed) << " packed";
}

class GpuMemory : public OnGpu<::testing::TestWithParam<KindPair>> {};

// Each kind of plan between the two memory kinds, aligned and not; through the stream-ordered
// calls too where both kinds are GPU-accessible.
TEST_P(GpuMemory, PackUnpackRanges) {
    const KindPair k = GetParam();
    const auto dbl = L::named(UCXDT_DOUBLE), flt = L::named(UCXDT_FLOAT);
    const Typed types = {
        {L::contiguous(300, L::named(UCXDT_INT32)), 2},                          // contiguous
        {L::vector(50, 3, 7, dbl), 2},                                           // 1 strided level
        {L::subarray({6, 7, 8}, {3, 4, 5}, {1, 2, 3}, UCXDT_ORDER_C, flt), 2},   // 2 levels
        {L::indexed({5, 100, 37, 1, 64}, {0, 7, 200, 150, 400}, dbl), 3},        // block list
        {L::vector(40, 1, 3, L::hindexed({1, 2, 1}, {0, 3, 9}, L::named(UCXDT_BYTE))), 2},  // tiny runs
    };
    const Stream stream;
    std::vector<Placement> setups;
    for (auto [ml, mp] : {Pair{0, 0}, Pair{5, 11}}) {
        Placement s;
        s.layout = k.layout;
        s.packed = k.packed;
        s.mis_layout = ml;
        s.mis_packed = mp;
        setups.push_back(s);
        if (gpu_accessible(k.layout) && gpu_accessible(k.packed)) {
            s.stream = stream.get();
            setups.push_back(s);
        }
    }
    for (const auto &[t, count] : types) expect_case(make_case(t, count), setups, 19);
}

std::string kind_pair_name(const ::testing::TestParamInfo<KindPair> &info) {
    return std::string(mem_name(info.param.layout)) + "_" + mem_name(info.param.packed);
}

INSTANTIATE_TEST_SUITE_P(
    Kinds, GpuMemory,
    ::testing::Values(KindPair{Mem::Device, Mem::Device}, KindPair{Mem::Device, Mem::Pinned},
                      KindPair{Mem::Pinned, Mem::Device}, KindPair{Mem::Device, Mem::Registered},
                      KindPair{Mem::Registered, Mem::Device}, KindPair{Mem::Managed, Mem::Managed},
                      KindPair{Mem::Managed, Mem::Device}, KindPair{Mem::Device, Mem::Managed},
                      KindPair{Mem::Pinned, Mem::Managed}, KindPair{Mem::Device, Mem::Pageable},
                      KindPair{Mem::Pageable, Mem::Device}, KindPair{Mem::Managed, Mem::Pageable},
                      KindPair{Mem::Pageable, Mem::Managed}, KindPair{Mem::Pinned, Mem::Pinned},
                      KindPair{Mem::Pinned, Mem::Pageable}, KindPair{Mem::Pageable, Mem::Pageable}),
    kind_pair_name);

// ---- Staging of pageable memory -----------------------------------------------------------

class GpuStaging : public GpuTest {};

// Pageable memory against a GPU-side buffer, with more data than one staging buffer holds
// (env UCXDT_STAGING_MB, 32 MiB by default; a ctest entry runs this with 1): whole transfers
// and ranges both cross chunk boundaries.
TEST_F(GpuStaging, PageableLargerThanStaging) {
    const int64_t staging = static_cast<int64_t>(env_u64("UCXDT_STAGING_MB", 32)) << 20;
    const int64_t want = staging * 3 / 2;
    // Long runs of wide primitives keep the host-side reference cheap at this size.
    const auto z = L::named(UCXDT_DOUBLE_COMPLEX);
    const std::vector<Case> cases = {
        make_case(L::hvector(want / 992 + 7, 1, 1000, L::contiguous(62, z)), 1),  // strided
        make_case(L::resized(L::hindexed({20, 7, 33}, {0, 400, 600}, z), 0, 1200),
                  want / 960 + 3),  // block list
    };
    using MemPair = std::pair<Mem, Mem>;
    std::vector<Placement> setups;
    for (auto [l, p] : {MemPair{Mem::Device, Mem::Pageable}, MemPair{Mem::Pageable, Mem::Device},
                        MemPair{Mem::Managed, Mem::Pageable}}) {
        Placement s;
        s.layout = l;
        s.packed = p;
        s.mis_layout = 1;
        s.mis_packed = 2;
        s.pieces = 5;
        setups.push_back(s);
    }
    for (const Case &c : cases) {
        const Type t(*c.send);
        ASSERT_GT(t.size() * c.count, staging + staging / 4) << short_desc(*c.send);
        expect_case(c, setups, 23);
    }
}

// ---- Stream-ordered API -------------------------------------------------------------------

class GpuAsync : public GpuTest {};

// Stream-ordered calls refuse pageable memory before they enqueue anything: inside a capture
// the graph stays empty, and no byte of either buffer changes.
TEST_F(GpuAsync, PageableIsUnsupportedAndEnqueuesNothing) {
    const Stream stream;
    const Type strided(*L::vector(8, 2, 3, L::named(UCXDT_INT32)));
    const Type list(*L::indexed({5, 100, 37}, {0, 7, 200}, L::named(UCXDT_DOUBLE)));
    const int64_t bytes = 4096;
    Buffer dev_l(Mem::Device, bytes), dev_p(Mem::Device, bytes);
    Buffer host_l(Mem::Pageable, bytes), host_p(Mem::Pageable, bytes);
    Bytes img_l(bytes), img_p(bytes);
    ucxdt::ref::fill_pattern(img_l.data(), bytes, 31);
    ucxdt::ref::fill_pattern(img_p.data(), bytes, 32);
    dev_l.upload(img_l);
    host_l.upload(img_l);
    dev_p.upload(img_p);
    host_p.upload(img_p);

    for (const Type *t : {&strided, &list}) {
        using Sides = std::pair<Buffer *, Buffer *>;
        for (auto [lay, pk] : {Sides{&host_l, &dev_p}, Sides{&dev_l, &host_p}}) {
            for (int op = 0; op < 4; ++op) {
                SCOPED_TRACE("operation " + std::to_string(op) +
                             (lay == &host_l ? ", pageable layout" : ", pageable packed"));
                for (bool capture : {false, true}) {
                    if (capture) {
                        ASSERT_EQ(cudaStreamBeginCapture(stream.get(), cudaStreamCaptureModeGlobal),
                                  cudaSuccess);
                    }
                    int64_t pos = 3;
                    ucxdt_status_t st = UCXDT_OK;
                    char *l = lay->data() + 64, *p = pk->data() + 64;
                    switch (op) {
                    case 0: st = ucxdt_pack_async(l, 2, t->get(), p, 3000, &pos, stream.get()); break;
                    case 1: st = ucxdt_unpack_async(p, 3000, &pos, l, 2, t->get(), stream.get()); break;
                    case 2: st = ucxdt_pack_range_async(l, 2, t->get(), 5, p, 20, stream.get()); break;
                    case 3: st = ucxdt_unpack_range_async(p, 5, 20, l, 2, t->get(), stream.get()); break;
                    }
                    const std::string msg = ucxdt_last_error();
                    if (capture) {
                        cudaGraph_t g = nullptr;
                        ASSERT_EQ(cudaStreamEndCapture(stream.get(), &g), cudaSuccess)
                            << "the call broke the capture";
                        size_t nodes = 1;
                        EXPECT_EQ(cudaGraphGetNodes(g, nullptr, &nodes), cudaSuccess);
                        EXPECT_EQ(nodes, 0u) << "work was enqueued";
                        cudaGraphDestroy(g);
                    }
                    EXPECT_EQ(st, UCXDT_ERR_UNSUPPORTED);
                    EXPECT_EQ(pos, 3);
                    EXPECT_NE(msg, "");
                }
            }
        }
    }
    ASSERT_EQ(cudaStreamSynchronize(stream.get()), cudaSuccess);
    EXPECT_EQ(compare(dev_l.download(), img_l, "device layout", 0), "");
    EXPECT_EQ(compare(host_l.download(), img_l, "pageable layout", 0), "");
    EXPECT_EQ(compare(dev_p.download(), img_p, "device packed", 0), "");
    EXPECT_EQ(compare(host_p.download(), img_p, "pageable packed", 0), "");
}

// ---- CUDA graphs --------------------------------------------------------------------------

// One type's buffers for a captured graph: source, packed window, range-packed window and
// receive buffer on the device, with what they must hold after a launch.
struct GraphCase {
    L::TypeDescPtr send, recv;
    int64_t count = 1;
    std::unique_ptr<Type> ts, tr;
    int64_t total = 0;
    Geometry gs, gr;
    std::unique_ptr<Buffer> src, pk, pk2, dst;
    Bytes pk_poison, dst_poison;

    GraphCase(L::TypeDescPtr s, int64_t n) : send(std::move(s)), count(n) {
        recv = receiver(send, count, 3);
        ts = std::make_unique<Type>(*send);
        tr = std::make_unique<Type>(*recv);
        total = ts->size() * count;
        Case c;
        c.count = count;
        gs = geometry(c, *send, 0);
        gr = geometry(c, *recv, 0);
        src = std::make_unique<Buffer>(Mem::Device, gs.bytes);
        pk = std::make_unique<Buffer>(Mem::Device, total);
        pk2 = std::make_unique<Buffer>(Mem::Device, total);
        dst = std::make_unique<Buffer>(Mem::Device, gr.bytes);
    }
    // Fills the source from `seed` and poisons the outputs; returns the expected images of
    // pk (and pk2) and dst.
    std::pair<Bytes, Bytes> prepare(uint64_t seed) {
        Bytes img(static_cast<size_t>(gs.bytes));
        ucxdt::ref::fill_pattern(img.data(), gs.bytes, seed);
        Bytes ref(static_cast<size_t>(std::max<int64_t>(total, 1)));
        int64_t pos = 0;
        if (ucxdt_pack(img.data() + gs.origin, count, ts->get(), ref.data(), total, &pos))
            throw std::runtime_error("CPU pack failed");
        Bytes want(static_cast<size_t>(gr.bytes));
        ucxdt::ref::fill_pattern(want.data(), gr.bytes, mix(seed));
        Bytes poison = want;
        const Runs runs = ucxdt::ref::typemap_runs(*recv, count);
        scatter(want, gr.origin, runs, ref, false);
        scatter(poison, gr.origin, runs, ref, true);
        Bytes pk_poison_img(ref.size());
        for (size_t i = 0; i < ref.size(); ++i) pk_poison_img[i] = ~ref[i];
        src->upload(img);
        pk->upload(pk_poison_img);
        pk2->upload(pk_poison_img);
        dst->upload(poison);
        pk_poison = pk_poison_img;
        dst_poison = poison;
        return {ref, want};
    }
    // Enqueues pack, unpack of its result, and pack in two ranges (the later range first).
    std::string enqueue(cudaStream_t s) {
        int64_t pos = 0;
        char *in = src->data() + gs.origin, *out = dst->data() + gr.origin;
        const int64_t half = total / 2;
        CHECK_OK(call("pack_async", [&] {
            return ucxdt_pack_async(in, count, ts->get(), pk->data(), total, &pos, s);
        }));
        pos = 0;
        CHECK_OK(call("unpack_async", [&] {
            return ucxdt_unpack_async(pk->data(), total, &pos, out, count, tr->get(), s);
        }));
        CHECK_OK(call("pack_range_async (second half)", [&] {
            return ucxdt_pack_range_async(in, count, ts->get(), half, pk2->data() + half,
                                          total - half, s);
        }));
        CHECK_OK(call("pack_range_async (first half)", [&] {
            return ucxdt_pack_range_async(in, count, ts->get(), 0, pk2->data(), half, s);
        }));
        return "";
    }
    std::string verify(const std::pair<Bytes, Bytes> &want) {
        Bytes ref = want.first;
        ref.resize(static_cast<size_t>(std::max<int64_t>(total, 1)));
        Bytes got_pk = pk->download(), got_pk2 = pk2->download();
        CHECK_OK(compare(got_pk, ref, "pack_async", 0));
        CHECK_OK(compare(got_pk2, ref, "pack_range_async", 0));
        CHECK_OK(compare(dst->download(), want.second, "unpack_async", gr.origin));
        return "";
    }
};

// Captures the calls of every case into one graph, then launches it twice with different
// source data. Captured (not run) work must leave the buffers alone until the launch.
void capture_and_launch(std::vector<std::unique_ptr<GraphCase>> &cases,
                        unsigned stream_flags = cudaStreamNonBlocking) {
    const Stream stream(0, stream_flags);
    std::vector<std::pair<Bytes, Bytes>> want;
    for (auto &c : cases) want.push_back(c->prepare(101));

    ASSERT_EQ(cudaStreamBeginCapture(stream.get(), cudaStreamCaptureModeGlobal), cudaSuccess);
    std::string err;
    for (auto &c : cases)
        if (err.empty()) err = c->enqueue(stream.get());
    cudaGraph_t graph = nullptr;
    const cudaError_t end = cudaStreamEndCapture(stream.get(), &graph);
    cudaGetLastError();
    std::unique_ptr<CUgraph_st, decltype(&cudaGraphDestroy)> graph_owner(graph, cudaGraphDestroy);
    ASSERT_EQ(err, "");
    ASSERT_EQ(end, cudaSuccess) << "the capture was invalidated: " << cudaGetErrorName(end);

    cudaGraphExec_t exec = nullptr;
    ASSERT_EQ(cudaGraphInstantiate(&exec, graph, 0), cudaSuccess);
    std::unique_ptr<CUgraphExec_st, decltype(&cudaGraphExecDestroy)> exec_owner(
        exec, cudaGraphExecDestroy);
    for (auto &c : cases) {
        EXPECT_EQ(compare(c->pk->download(), c->pk_poison, "before launch: packed", 0), "")
            << short_desc(*c->send);
        EXPECT_EQ(compare(c->dst->download(), c->dst_poison, "before launch: receive", 0), "")
            << short_desc(*c->send);
    }
    for (int launch = 0; launch < 2; ++launch) {
        SCOPED_TRACE("launch " + std::to_string(launch));
        if (launch == 1)
            for (size_t i = 0; i < cases.size(); ++i) want[i] = cases[i]->prepare(202);
        ASSERT_EQ(cudaGraphLaunch(exec, stream.get()), cudaSuccess);
        ASSERT_EQ(cudaStreamSynchronize(stream.get()), cudaSuccess);
        for (size_t i = 0; i < cases.size(); ++i)
            EXPECT_EQ(cases[i]->verify(want[i]), "") << short_desc(*cases[i]->send);
    }
}

class GpuGraph : public GpuTest {};

// Block lists whose first use on the GPU (the upload of their work units or tree) happens
// inside the capture, a contiguous type and a strided one the 2-D copy engine cannot take.
TEST_F(GpuGraph, CaptureAndLaunchTwice) {
    const auto dbl = L::named(UCXDT_DOUBLE), b = L::named(UCXDT_BYTE);
    std::vector<std::unique_ptr<GraphCase>> cases;
    // Fresh types, never used before this test: the first use is inside the capture.
    cases.push_back(std::make_unique<GraphCase>(
        L::resized(L::hindexed({40, 300, 17, 1000, 64}, {0, 4096, 100, 9000, 2000}, b), 0, 12000), 3));
    cases.push_back(std::make_unique<GraphCase>(
        L::vector(300, 1, 3, L::hindexed({1, 2, 1}, {0, 3, 9}, b)), 2));
    cases.push_back(std::make_unique<GraphCase>(L::contiguous(777, dbl), 2));
    cases.push_back(std::make_unique<GraphCase>(L::vector(100, 3, -5, dbl), 2));
    capture_and_launch(cases);
}

// The same on a blocking stream (cudaStreamDefault), which orders with the legacy default
// stream: nothing the engine does during the capture may touch that stream.
TEST_F(GpuGraph, CaptureOnBlockingStream) {
    std::vector<std::unique_ptr<GraphCase>> cases;
    const auto b = L::named(UCXDT_BYTE);
    cases.push_back(std::make_unique<GraphCase>(
        L::resized(L::hindexed({40, 300, 17, 1000, 64}, {0, 4096, 100, 9000, 2000}, b), 0, 12000), 2));
    cases.push_back(std::make_unique<GraphCase>(
        L::vector(300, 1, 3, L::hindexed({1, 2, 1}, {0, 3, 9}, b)), 3));
    capture_and_launch(cases, cudaStreamDefault);
}

// A strided type whose method the cost model picks: in a process of its own (as ctest runs
// each test), its first use, and so the measurement of the copy costs, is inside the capture.
TEST_F(GpuGraph, StridedFirstUseInCapture) {
    std::vector<std::unique_ptr<GraphCase>> cases;
    cases.push_back(std::make_unique<GraphCase>(L::vector(256, 3, 7, L::named(UCXDT_DOUBLE)), 2));
    capture_and_launch(cases);
}

// ---- Two GPUs -------------------------------------------------------------------------------

class GpuMultiDevice : public GpuTest {};

// Buffers on GPU 1 while GPU 0 is current: the calls serve them on GPU 1 (with its own work
// units and internal stream) and leave GPU 0 current (check_case checks after every call).
TEST_F(GpuMultiDevice, BuffersOnSecondGpu) {
    if (devices().count < 2)
        GTEST_SKIP() << "needs 2 GPUs, cudaGetDeviceCount reports " << devices().count;
    const auto dbl = L::named(UCXDT_DOUBLE);
    const Typed types = {
        {L::contiguous(300, dbl), 2},
        {L::vector(50, 3, 7, dbl), 2},
        {L::vector(50, 3, -7, dbl), 2},
        {L::indexed({5, 100, 37, 1, 64}, {0, 7, 200, 150, 400}, dbl), 3},
        {L::vector(40, 1, 3, L::hindexed({1, 2, 1}, {0, 3, 9}, L::named(UCXDT_BYTE))), 2},
    };
    const Stream stream1(1);
    std::vector<Placement> setups;
    using MemPair = std::pair<Mem, Mem>;
    for (auto [l, p] : {MemPair{Mem::Device, Mem::Device}, MemPair{Mem::Device, Mem::Pinned},
                        MemPair{Mem::Managed, Mem::Device}, MemPair{Mem::Device, Mem::Pageable},
                        MemPair{Mem::Pageable, Mem::Device}}) {
        Placement s;
        s.layout = l;
        s.packed = p;
        s.device = 1;
        s.mis_layout = 3;
        s.mis_packed = 1;
        setups.push_back(s);
    }
    Placement async = setups[0];
    async.stream = stream1.get();  // a stream of the buffers' GPU
    setups.push_back(async);
    Placement on0;  // the same types on GPU 0 afterwards: units are cached per device
    setups.push_back(on0);
    ASSERT_EQ(current_device(), 0);
    for (const auto &[t, count] : types) expect_case(make_case(t, count), setups, 29);
    EXPECT_EQ(current_device(), 0);
}

// ---- Where the layout pointer points ----------------------------------------------------

// MPI_BOTTOM: a NULL buffer and displacements that are device addresses, so the layout's data
// is on the GPU though the buffer pointer is not. Shape 0 lowers to a strided plan, shape 1 to
// a block list. "" when pack and unpack move exactly the pieces.
std::string check_bottom(int shape_index) {
    const auto b = L::named(UCXDT_BYTE);
    Buffer a(Mem::Device, 256), c(Mem::Device, 256), pk(Mem::Device, 64);
    Bytes img_a(256), img_c(256);
    ucxdt::ref::fill_pattern(img_a.data(), 256, 41);
    ucxdt::ref::fill_pattern(img_c.data(), 256, 42);
    const auto addr = [](const Buffer &buf, int64_t off) {
        return static_cast<int64_t>(reinterpret_cast<intptr_t>(buf.data())) + off;
    };
    struct Piece {  // bytes [off, off + len) of a or c, in pack order
        bool in_a;
        int64_t off, len;
    };
    const std::vector<std::vector<Piece>> shapes = {
        {{true, 0, 6}, {true, 16, 6}, {true, 32, 6}},
        {{true, 8, 4}, {false, 16, 8}, {true, 40, 3}},
    };
    const auto &shape = shapes.at(static_cast<size_t>(shape_index));
    std::vector<int64_t> lens, disps;
    Bytes want;
    for (const Piece &p : shape) {
        lens.push_back(p.len);
        disps.push_back(addr(p.in_a ? a : c, p.off));
        const Bytes &img = p.in_a ? img_a : img_c;
        want.insert(want.end(), img.begin() + p.off, img.begin() + p.off + p.len);
    }
    const Type t(*L::hindexed(lens, disps, b));
    const int64_t total = ssize(want);
    a.upload(img_a);
    c.upload(img_c);
    pk.upload(Bytes(64, std::byte{0x5a}));
    int64_t pos = 0;
    CHECK_OK(call("pack", [&] { return ucxdt_pack(nullptr, 1, t.get(), pk.data(), 64, &pos); }));
    if (pos != total) return "pack left *position at " + std::to_string(pos);
    Bytes got = pk.download();
    CHECK_OK(compare(Bytes(got.begin(), got.begin() + total), want, "pack", 0));

    // Unpack the complement back: exactly the pieces change.
    Bytes flipped(64);
    for (int64_t i = 0; i < total; ++i)
        flipped[static_cast<size_t>(i)] = ~want[static_cast<size_t>(i)];
    pk.upload(flipped);
    pos = 0;
    CHECK_OK(call("unpack", [&] { return ucxdt_unpack(pk.data(), total, &pos, nullptr, 1, t.get()); }));
    Bytes want_a = img_a, want_c = img_c;
    for (const Piece &p : shape)
        for (int64_t i = 0; i < p.len; ++i) {
            Bytes &w = p.in_a ? want_a : want_c;
            w[static_cast<size_t>(p.off + i)] = ~w[static_cast<size_t>(p.off + i)];
        }
    CHECK_OK(compare(a.download(), want_a, "unpack: a", 0));
    CHECK_OK(compare(c.download(), want_c, "unpack: c", 0));
    return "";
}

// A block list of data from the buffer pointer on (lb = true lb = 0), whose plan keeps a
// displacement of -2^36 apart from the +2^36 of its blocks: the data starts at the pointer,
// the plan's base is far below it. (The relayouts of random types hit the same with a few KB.)
std::string check_base_outside() {
    const int64_t d = int64_t{1} << 36;
    const auto inner = L::hindexed({1, 2, 1}, {d, d + 8, d + 40}, L::named(UCXDT_INT32));
    const auto t = L::resized(L::hindexed({1}, {-d}, L::hvector(3, 1, 200, inner)), 0, 600);
    Case c;
    c.send = c.recv = t;
    c.count = 2;
    c.app_bytes = 1044;  // exactly the data: true extent 444 after one extent of 600
    return check_case(c, Placement{}, 43);
}

// The last suite registered, so it runs last: an engine that tells the memory kind by another
// address than a byte of data takes device memory for host memory here and crashes on it,
// after every other result is out. (A death test would contain the crash, but hangs under
// compute-sanitizer.)
class GpuPointers : public OnGpu<::testing::TestWithParam<int>> {};

TEST_P(GpuPointers, LayoutDataOnDevice) {
    EXPECT_EQ(GetParam() < 2 ? check_bottom(GetParam()) : check_base_outside(), "");
}

INSTANTIATE_TEST_SUITE_P(Kind, GpuPointers, ::testing::Values(0, 1, 2),
                         [](const ::testing::TestParamInfo<int> &info) -> std::string {
                             switch (info.param) {
                             case 0: return "bottom_strided";
                             case 1: return "bottom_block_list";
                             default: return "plan_base_outside_buffer";
                             }
                         });

}  // namespace
