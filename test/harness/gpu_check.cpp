// The GPU tests' shared harness (gpu_check.hpp): CUDA plumbing, buffers of every memory kind,
// expected images, and the check of a type on the GPU against the CPU engine.
#include "harness/gpu_check.hpp"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>
#include <random>
#include <stdexcept>

namespace ucxdt::testing::gpu {

namespace {

using Ranges = std::vector<std::pair<int64_t, int64_t>>;

// Poisoned bytes on both sides of every window: writes just past a window show there.
constexpr int64_t kSlack = 32;

}  // namespace

int64_t uni(Rng &rng, int64_t a, int64_t b) {
    return std::uniform_int_distribution<int64_t>(a, b)(rng);
}

// ---- CUDA presence and plumbing -----------------------------------------------------------

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

DeviceScope::DeviceScope(int device) : saved_(current_device()) {
    if (device != saved_) must(cudaSetDevice(device), "cudaSetDevice");
}
DeviceScope::~DeviceScope() { cudaSetDevice(saved_); }

Stream::Stream(int device, unsigned flags) {
    DeviceScope on(device);
    must(cudaStreamCreateWithFlags(&s_, flags), "cudaStreamCreateWithFlags");
}
Stream::~Stream() { cudaStreamDestroy(s_); }

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

Buffer::Buffer(Mem kind, int64_t bytes, int device, int64_t pad)
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

Buffer::~Buffer() {
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

void Buffer::upload(const Bytes &image) {
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

Bytes Buffer::download() const {
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

Type::Type(const L::TypeDesc &d) {
    const ucxdt_status_t st = L::build(d, &h_, true);
    if (st != UCXDT_OK)
        throw std::runtime_error("build " + L::to_string(d).substr(0, 300) + ": " +
                                 ucxdt_status_string(st) + " (" + ucxdt_last_error() + ")");
}

Type::~Type() {
    if (h_ != UCXDT_TYPE_NULL) ucxdt_type_free(&h_);
}

int64_t Type::size() const {
    int64_t s = 0;
    ucxdt_type_size(h_, &s);
    return s;
}

// ---- Expected images ----------------------------------------------------------------------

namespace {

std::string hex(std::byte b) {
    char s[8];
    std::snprintf(s, sizeof s, "0x%02x", static_cast<unsigned>(b));
    return s;
}

}  // namespace

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

namespace {

bool touches_twice(Runs runs) {
    std::sort(runs.begin(), runs.end());
    for (size_t i = 1; i < runs.size(); ++i)
        if (runs[i].first < runs[i - 1].first + runs[i - 1].second) return true;
    return false;
}

// [0, total) cut at random multiples of `align` into about `pieces` ranges, a few of them one
// to three `align` long; repeated cuts give zero-length ranges inside the stream, and one at
// each end is added. Shuffled: the engine must not depend on the order in which fragments come.
Ranges make_ranges(int64_t total, int pieces, int64_t align, Rng &rng) {
    std::vector<int64_t> cuts{0, total};
    for (int i = 1; i < pieces; ++i) cuts.push_back(uni(rng, 0, total / align) * align);
    const int64_t c = uni(rng, 0, total / align) * align;
    for (int64_t d : {align, 2 * align, 3 * align})
        if (c + d <= total) cuts.push_back(c + d);
    std::sort(cuts.begin(), cuts.end());
    Ranges out{{0, 0}, {total, 0}};
    for (size_t i = 1; i < cuts.size(); ++i) out.emplace_back(cuts[i - 1], cuts[i] - cuts[i - 1]);
    std::shuffle(out.begin(), out.end(), rng);
    return out;
}

}  // namespace

// ---- The check ------------------------------------------------------------------------------

namespace {

std::string describe(const Placement &s) {
    return std::string("layout ") + mem_name(s.layout) + "+" + std::to_string(s.mis_layout) +
           ", packed " + mem_name(s.packed) + "+" + std::to_string(s.mis_packed) + ", GPU " +
           std::to_string(s.device) + (s.stream ? ", async" : ", sync");
}

}  // namespace

Geometry geometry(const Case &c, const L::TypeDesc &d, int64_t mis) {
    if (c.app_bytes > 0) return {mis + kSlack + c.app_bytes + kSlack, mis + kSlack + c.app_origin};
    const T::BufferSpan sp = T::buffer_span(d, c.count, kSlack);
    // The buffer pointer itself stays inside the allocation (GpuPointers tests other pointers).
    const int64_t lo = std::min<int64_t>(0, sp.origin), hi = std::max(sp.bytes, sp.origin + 1);
    return {mis + hi - lo, mis + sp.origin - lo};
}

namespace {

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

// The stream-ordered calls are complete once their stream is.
std::string finish(const Placement &s) {
    if (!s.stream) return "";
    const cudaError_t e = cudaStreamSynchronize(s.stream);
    return e == cudaSuccess ? "" : std::string("cudaStreamSynchronize: ") + cudaGetErrorName(e);
}

}  // namespace

std::string check_case(const Case &c, const Placement &s, uint64_t seed,
                       ucxdt_gpu_method_t *method_out) {
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
    const Ranges ranges = make_ranges(total, s.pieces, s.cut_align, rng);
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

void expect_case(const Case &c, const std::vector<Placement> &setups, uint64_t seed) {
    for (const Placement &s : setups) {
        const std::string r = check_case(c, s, seed);
        EXPECT_EQ(r, "") << context(c, s);
    }
}

L::TypeDescPtr receiver(const L::TypeDescPtr &send, int64_t count, uint64_t seed) {
    if (!touches_twice(ucxdt::ref::typemap_runs(*send, count))) return send;
    Rng rng(seed);
    return T::relayout(*send, rng);
}

Case make_case(L::TypeDescPtr send, int64_t count, uint64_t seed) {
    Case c;
    c.recv = receiver(send, count, seed);
    c.send = std::move(send);
    c.count = count;
    return c;
}

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

}  // namespace ucxdt::testing::gpu
