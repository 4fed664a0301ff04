// Layout buffers for transfer tests: a committed type from a description, a buffer with slack
// around the type map filled with a pattern, its copy in device memory, the reference packed
// stream, and the check that a receive wrote exactly the map's bytes.
#pragma once

#include "support/app_layouts.hpp"
#include "support/layout_names.hpp"
#include "support/typemap_walk.hpp"
#include "support/random_desc.hpp"

#include <ucxdt/ucxdt.h>

#include <cuda_runtime_api.h>

#include <cstddef>
#include <stdexcept>
#include <cstdint>
#include <string>
#include <vector>

namespace ucxdt::testing {

using namespace ucxdt::support;  // the harness and its tests speak support/'s descriptions

namespace L = ucxdt::layouts;


// A committed ucxdt handle, freed on scope exit.
struct Type {
    ucxdt_type_t h = UCXDT_TYPE_NULL;
    explicit Type(const L::TypeDesc &d) {
        const ucxdt_status_t st = L::build(d, &h, true);
        if (st != UCXDT_OK)
            throw std::runtime_error("build " + L::to_string(d) + ": " + ucxdt_last_error());
    }
    ~Type() { if (h) ucxdt_type_free(&h); }
    Type(const Type &) = delete;
    Type &operator=(const Type &) = delete;
};

// A buffer for count elements of a description, with slack around the type map.
struct Buffer {
    std::vector<std::byte> bytes;
    int64_t origin = 0;
    Buffer(const L::TypeDesc &d, int64_t count, uint64_t seed) {
        const BufferSpan s = buffer_span(d, count, 64);
        bytes.resize(static_cast<size_t>(s.bytes));
        origin = s.origin;
        ucxdt::ref::fill_pattern(bytes.data(), s.bytes, seed);
    }
    std::byte *ptr() { return bytes.data() + origin; }
};

enum class Mem { host, cuda };
inline const char *mem_name(Mem m) { return m == Mem::host ? "host" : "cuda"; }

inline bool have_gpu() {
    static const bool yes = [] {
        int n = 0;
        return cudaGetDeviceCount(&n) == cudaSuccess && n > 0;
    }();
    return yes;
}

// (No list of "the memory kinds here": a test that ran its GPU half only where there is a GPU
// passed without one, the half left out unseen. GPU cases are tests of their own, named Gpu*,
// that GTEST_SKIP without a GPU.)

// A Buffer where a transfer sees it: its own host bytes, or a copy of them in device memory
// that fetch() brings back for the checks.
class Placed {
public:
    Placed(Buffer &b, Mem m) : b_(b) {
        if (m == Mem::host) return;
        if (cudaMalloc(&dev_, b.bytes.size()) != cudaSuccess ||
            cudaMemcpy(dev_, b.bytes.data(), b.bytes.size(), cudaMemcpyHostToDevice) != cudaSuccess)
            throw std::runtime_error("support: device buffer of " + std::to_string(b.bytes.size()) +
                                     " bytes");
    }
    ~Placed() {
        if (dev_) cudaFree(dev_);
    }
    Placed(const Placed &) = delete;
    Placed &operator=(const Placed &) = delete;
    void *ptr() { return dev_ ? static_cast<void *>(static_cast<std::byte *>(dev_) + b_.origin) : b_.ptr(); }
    void fetch() {
        if (dev_ && cudaMemcpy(b_.bytes.data(), dev_, b_.bytes.size(), cudaMemcpyDeviceToHost) != cudaSuccess)
            throw std::runtime_error("support: copy of the device buffer back to the host");
    }

private:
    Buffer &b_;
    void *dev_ = nullptr;
};

inline std::string short_desc(const L::TypeDesc &d) {
    std::string s = L::to_string(d);
    return s.size() > 200 ? s.substr(0, 200) + "..." : s;
}

// Packed stream of (buf, count, type) through the CPU engine.
inline std::vector<std::byte> packed(const L::TypeDesc &d, const std::byte *buf, int64_t count,
                              int64_t bytes) {
    Type t(d);
    std::vector<std::byte> out(static_cast<size_t>(bytes));
    int64_t pos = 0;
    const ucxdt_status_t st = ucxdt_pack(buf, count, t.h, out.data(), bytes, &pos);
    if (st != UCXDT_OK) throw std::runtime_error(std::string("ucxdt_pack: ") + ucxdt_last_error());
    return out;
}

// "" when the receive buffer holds the first `nbytes` of the sent packed stream at the first
// bytes of the receive type map (in type-map order) and the poison at every other byte.
inline std::string check_received(const L::TypeDesc &recv, int64_t count, const Buffer &got,
                           const std::vector<std::byte> &poison,
                           const std::vector<std::byte> &sent_packed, int64_t nbytes) {
    std::vector<bool> in_map(got.bytes.size(), false);
    int64_t seen = 0;
    for (const auto &[disp, len] : ucxdt::ref::typemap_runs(recv, count)) {
        for (int64_t i = 0; i < len && seen < nbytes; ++i, ++seen) {
            const int64_t at = got.origin + disp + i;
            if (at < 0 || at >= static_cast<int64_t>(got.bytes.size()))
                return "support: type map leaves the buffer";
            in_map[static_cast<size_t>(at)] = true;
            if (got.bytes[static_cast<size_t>(at)] != sent_packed[static_cast<size_t>(seen)])
                return "packed byte " + std::to_string(seen) + " (buffer offset " +
                       std::to_string(at - got.origin) + ") differs from the sent data";
        }
    }
    if (seen != nbytes) return "support: receive map shorter than the expected data";
    for (size_t i = 0; i < in_map.size(); ++i)
        if (!in_map[i] && got.bytes[i] != poison[i])
            return "byte at buffer offset " + std::to_string(static_cast<int64_t>(i) - got.origin) +
                   " outside the received data was written";
    return "";
}

}  // namespace ucxdt::testing
