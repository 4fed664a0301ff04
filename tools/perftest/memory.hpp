// ucxdt_perftest (ucxdt_perftest.cpp): memory of each kind, and a layout on one side: type, buffer, reference runs.
// One translation unit includes these headers, in order; their names stay in an anonymous namespace, as
// when they were one file.
#pragma once

#include "perftest/params.hpp"

namespace {

// ---- Memory --------------------------------------------------------------------------------

bool have_gpu() {
    int n = 0;
    return cudaGetDeviceCount(&n) == cudaSuccess && n > 0;
}

struct Mem {
    std::string kind;
    std::byte *p = nullptr;
    int64_t n = 0;
    Mem() = default;
    Mem(const std::string &k, int64_t bytes) : kind(k), n(bytes) {
        const size_t size = static_cast<size_t>(std::max<int64_t>(bytes, 1));
        if (kind == "host") {
            p = static_cast<std::byte *>(std::aligned_alloc(4096, (size + 4095) / 4096 * 4096));
            if (p == nullptr) die("cannot allocate %lld bytes", static_cast<long long>(bytes));
            return;
        }
        if (kind != "cuda" && kind != "cuda-managed")
            die("unknown memory type \"%s\" (host, cuda, cuda-managed)", kind.c_str());
        if (!have_gpu()) die("memory type %s needs a CUDA GPU, and none was found", kind.c_str());
        void *q = nullptr;
        const cudaError_t e =
            kind == "cuda" ? cudaMalloc(&q, size) : cudaMallocManaged(&q, size);
        if (e != cudaSuccess) die("%s allocation: %s", kind.c_str(), cudaGetErrorString(e));
        p = static_cast<std::byte *>(q);
    }
    ~Mem() {
        if (p == nullptr) return;
        if (kind == "host") std::free(p);
        else cudaFree(p);
    }
    Mem(const Mem &) = delete;
    Mem &operator=(const Mem &) = delete;
    Mem(Mem &&o) noexcept { *this = std::move(o); }
    Mem &operator=(Mem &&o) noexcept {
        std::swap(kind, o.kind), std::swap(p, o.p), std::swap(n, o.n);
        return *this;
    }
    void from_host(const std::byte *src) const {
        if (kind == "host") std::memcpy(p, src, static_cast<size_t>(n));
        else if (cudaMemcpy(p, src, static_cast<size_t>(n), cudaMemcpyDefault) != cudaSuccess)
            die("cudaMemcpy to %s failed", kind.c_str());
    }
    void to_host(std::byte *dst) const {
        if (kind == "host") std::memcpy(dst, p, static_cast<size_t>(n));
        else if (cudaMemcpy(dst, p, static_cast<size_t>(n), cudaMemcpyDefault) != cudaSuccess)
            die("cudaMemcpy from %s failed", kind.c_str());
    }
};

// Copy of `bytes` between two buffers of these kinds: the memcpy baseline.
void baseline_copy(void *dst, const void *src, int64_t bytes, bool host) {
    if (host) std::memcpy(dst, src, static_cast<size_t>(bytes));
    // A device-to-device cudaMemcpy may return before the copy is done.
    else cudaMemcpy(dst, src, static_cast<size_t>(bytes), cudaMemcpyDefault), cudaDeviceSynchronize();
}

uint8_t pattern(int64_t off, long iter) {
    uint64_t x = static_cast<uint64_t>(off) * 0x9e3779b97f4a7c15ull + static_cast<uint64_t>(iter);
    x ^= x >> 29;
    return static_cast<uint8_t>(x ^ (x >> 17));
}
uint8_t poison(int64_t off) {
    uint64_t x = static_cast<uint64_t>(off) * 0xbf58476d1ce4e5b9ull + 0x5a5a;
    return static_cast<uint8_t>(x ^ (x >> 31) ^ 0xa5);
}

// ---- A layout on one side: type, buffer, reference runs ------------------------------------

struct Side {
    L::Layout lay;
    ucxdt_type_t type = UCXDT_TYPE_NULL;
    int64_t packed = 0;
    Mem buf;
    std::vector<ucxdt::ref::Block> runs;  // reference walker, computed on first check
    std::vector<uint8_t> in_map;          // 1 where a byte of buf belongs to the type map

    void init(const std::string &spec, const std::string &mem) {
        std::string err;
        if (!L::resolve_layout(spec, &lay, &err)) die("-D %s: %s", spec.c_str(), err.c_str());
        if (L::build(*lay.type, &type, true) != UCXDT_OK)
            die("building %s: %s", lay.name.c_str(), ucxdt_last_error());
        int64_t size = 0;
        ucxdt_type_size(type, &size);
        packed = size * lay.count;
        buf = Mem(mem, lay.buffer_bytes);
    }
    std::byte *origin() const { return buf.p + lay.origin_bytes; }
    void need_runs() {
        if (!in_map.empty() || buf.n == 0) return;
        runs = ucxdt::ref::typemap_runs(*lay.type, lay.count);
        in_map.assign(static_cast<size_t>(buf.n), 0);
        for (const auto &[d, len] : runs)
            std::memset(in_map.data() + lay.origin_bytes + d, 1, static_cast<size_t>(len));
    }
    void fill_pattern(long iter) const {
        std::vector<std::byte> h(static_cast<size_t>(buf.n));
        for (int64_t i = 0; i < buf.n; ++i) h[i] = std::byte{pattern(i, iter)};
        buf.from_host(h.data());
    }
    void fill_poison() const {
        std::vector<std::byte> h(static_cast<size_t>(buf.n));
        for (int64_t i = 0; i < buf.n; ++i) h[i] = std::byte{poison(i)};
        buf.from_host(h.data());
    }
    // The packed stream of this (send) layout over pattern(., iter), by the reference walker.
    std::vector<std::byte> expected_stream(long iter) {
        need_runs();
        std::vector<std::byte> e(static_cast<size_t>(packed));
        int64_t k = 0;
        for (const auto &[d, len] : runs)
            for (int64_t j = 0; j < len; ++j)
                e[k++] = std::byte{pattern(lay.origin_bytes + d + j, iter)};
        return e;
    }
    // "" if ucxdt_pack of buf equals `expect` and every gap byte kept its poison.
    std::string check(const std::vector<std::byte> &expect) {
        need_runs();
        if (static_cast<int64_t>(expect.size()) != packed) return "packed sizes differ";
        std::vector<std::byte> h(static_cast<size_t>(buf.n)), got(static_cast<size_t>(packed));
        buf.to_host(h.data());
        int64_t pos = 0;
        if (ucxdt_pack(h.data() + lay.origin_bytes, lay.count, type, got.data(), packed, &pos) !=
            UCXDT_OK)
            return std::string("ucxdt_pack of the receive buffer: ") + ucxdt_last_error();
        for (int64_t i = 0; i < packed; ++i)
            if (got[i] != expect[i])
                return "packed stream byte " + std::to_string(i) + " is " +
                       std::to_string(static_cast<int>(got[i])) + ", expected " +
                       std::to_string(static_cast<int>(expect[i]));
        for (int64_t i = 0; i < buf.n; ++i)
            if (!in_map[i] && h[i] != std::byte{poison(i)})
                return "gap byte " + std::to_string(i) + " of the receive buffer was overwritten";
        return "";
    }
};

// Iterations run from -warmup to iters; 0 to iters - 1 are timed. Verified: the first of the run
// (of the warm-up, when there is one), iteration `iters` (one more message after the timed run),
// and with -c every timed one. By default no check falls inside the timed run, as none falls
// inside ucx_perftest's: a check leaves both GPUs idle for milliseconds, and the first GPU
// operation across NVLink after 50 ms idle took 230-240 us against 33-54 us on two H200s
// (performance-log.md, run 16). Check time inside the timed run (-c, or -w 0) is excluded from it.
bool checked(const Params &p, long it) { return it == -p.warmup || it == p.iters || (p.check_all && it >= 0); }
bool timed(const Params &p, long it) { return it >= 0 && it < p.iters; }

}  // namespace
