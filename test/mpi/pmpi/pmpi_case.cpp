// The PMPI check's cases (pmpi_case.hpp): random type pairs, send buffers filled by seed, and
// the bytes each receive must hold, from the reference walker alone; buffers in host or device
// memory as the run asks.
#include "pmpi_case.hpp"

#include "support/typemap_walk.hpp"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdio>
#include <stdexcept>

namespace pmpi {

namespace {
// Room around each type map for a receive that writes too far.
constexpr int64_t kSlack = 64;
}  // namespace

void ok(int rc, const char *call) {
    if (rc == MPI_SUCCESS) return;
    char msg[MPI_MAX_ERROR_STRING] = "";
    int len = 0;
    MPI_Error_string(rc, msg, &len);
    throw std::runtime_error(std::string(call) + " failed: " + msg);
}

uint64_t mix(uint64_t a, uint64_t b, uint64_t c) {
    uint64_t x = a;
    for (uint64_t v : {b, c}) {
        x ^= v + 0x9E3779B97F4A7C15ull + (x << 6) + (x >> 2);
        x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
        x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
        x ^= x >> 31;
    }
    return x;
}

Pair random_pair(uint64_t seed, const T::RandomDescLimits &limits) {
    T::Rng rng(seed);
    Pair p;
    p.send = T::random_desc(rng, limits);
    p.recv = T::relayout(*p.send, rng);
    p.count = std::uniform_int_distribution<int64_t>(1, 3)(rng);
    return p;
}

int64_t primitives(const L::TypeDesc &d, int64_t count) {
    int64_t n = 0;
    ucxdt::ref::walk_primitives(d, count, [&](int64_t, ucxdt_primitive_t) { ++n; });
    return n;
}

int64_t Regions::add(const L::TypeDesc &d, MPI_Datatype t, int64_t count) {
    const T::BufferSpan s = T::joint_span(d, t, count, kSlack);
    at.push_back(bytes + s.origin);
    bytes += s.bytes;
    return at.back();
}

void fill_data(Bytes &buf, int64_t at, const L::TypeDesc &d, int64_t count, uint64_t seed) {
    const T::BufferSpan s = T::buffer_span(d, count, 0);
    ucxdt::ref::fill_pattern(buf.data() + at - s.origin, s.bytes, seed);
}

Bytes sent_stream(const L::TypeDesc &d, int64_t count, uint64_t seed, int64_t first,
                  int64_t n) {
    const T::BufferSpan s = T::buffer_span(d, count, 0);
    Bytes data(static_cast<size_t>(s.bytes));
    fill_data(data, s.origin, d, count, seed);
    const int64_t extent = ucxdt::ref::type_bounds(d).extent;
    return ucxdt::ref::pack(d, n < 0 ? count - first : n, data.data() + s.origin + first * extent);
}

bool g_device = false;
bool g_managed = false;

std::byte *mpi_buffer(const Bytes &b, std::shared_ptr<std::byte> &keep) {
    if (!g_device && !g_managed) return const_cast<std::byte *>(b.data());
    void *p = nullptr;
    const size_t n = std::max<size_t>(b.size(), 1);
    if ((g_managed ? cudaMallocManaged(&p, n) : cudaMalloc(&p, n)) != cudaSuccess)
        throw std::runtime_error("cudaMalloc of a test buffer failed");
    keep.reset(static_cast<std::byte *>(p), [](std::byte *q) { cudaFree(q); });
    if (cudaMemcpy(p, b.data(), b.size(), cudaMemcpyHostToDevice) != cudaSuccess)
        throw std::runtime_error("cudaMemcpy to a test buffer failed");
    return keep.get();
}

Outbox::Outbox(const L::TypeDesc &d, MPI_Datatype t, int64_t count, uint64_t seed) {
    Regions r;
    origin = r.add(d, t, count);
    bytes.resize(static_cast<size_t>(r.bytes));
    fill_data(bytes, origin, d, count, seed);
    base = mpi_buffer(bytes, dev);
}

Inbox::Inbox(int64_t bytes, uint64_t poison_seed) : poison_(static_cast<size_t>(bytes)) {
    ucxdt::ref::fill_pattern(poison_.data(), bytes, poison_seed);
    want_ = got_ = poison_;
    base_ = mpi_buffer(got_, dev_);
}

void Outbox::upload() {
    if (dev && cudaMemcpy(dev.get(), bytes.data(), bytes.size(), cudaMemcpyHostToDevice) != cudaSuccess)
        throw std::runtime_error("cudaMemcpy to a test buffer failed");
}

void Inbox::upload() {
    if (dev_ && cudaMemcpy(dev_.get(), got_.data(), got_.size(), cudaMemcpyHostToDevice) != cudaSuccess)
        throw std::runtime_error("cudaMemcpy to a test buffer failed");
}

void Inbox::sync() const {
    if (dev_ && cudaMemcpy(got_.data(), dev_.get(), got_.size(), cudaMemcpyDeviceToHost) != cudaSuccess)
        throw std::runtime_error("cudaMemcpy from a test buffer failed");
}

// The region begins at or before the pointer passed (origin >= 0): a window over the buffer then
// reaches the type map with a displacement of origin, never a negative one (rma_cases.cpp).
static int64_t headroom(const T::BufferSpan &sp) { return sp.origin < 0 ? -sp.origin : 0; }

Inbox::Inbox(const L::TypeDesc &d, MPI_Datatype t, int64_t count, uint64_t poison_seed)
    : Inbox(T::joint_span(d, t, count, kSlack).bytes + headroom(T::joint_span(d, t, count, kSlack)), poison_seed) {
    const T::BufferSpan sp = T::joint_span(d, t, count, kSlack);
    origin = sp.origin + headroom(sp);
}

void Inbox::preset(const L::TypeDesc &d, int64_t count, int64_t at, uint64_t seed) {
    fill_data(poison_, at, d, count, seed);
    want_ = got_ = poison_;
    upload();
}

void Inbox::expect(const L::TypeDesc &d, int64_t count, int64_t at, const Bytes &stream,
                   int64_t n) {
    ucxdt::ref::unpack(d, count, stream.data(), n < 0 ? std::ssize(stream) : n,
                       want_.data() + at);
}

void Inbox::reset() {
    want_ = got_ = poison_;
    upload();
}

std::string Inbox::check() const {
    sync();
    for (size_t i = 0; i < got_.size(); ++i) {
        if (got_[i] == want_[i]) continue;
        const char *what = want_[i] == poison_[i]  ? "outside the received data, was written"
                           : got_[i] == poison_[i] ? "of the received data, was not written"
                                                   : "of the received data, differs";
        char buf[200];
        std::snprintf(buf, sizeof buf, "buffer byte %zu of %zu (pointer at %lld) %s: 0x%02x, "
                      "expected 0x%02x", i, got_.size(), static_cast<long long>(origin), what,
                      static_cast<unsigned>(got_[i]), static_cast<unsigned>(want_[i]));
        return buf;
    }
    return "";
}

uint64_t Inbox::digest() const {
    sync();
    uint64_t h = 0xCBF29CE484222325ull;  // FNV-1a
    for (std::byte b : got_) h = (h ^ static_cast<uint64_t>(b)) * 0x100000001B3ull;
    return h;
}

void Case::check(const Inbox &in, const std::string &what) {
    if (const std::string d = in.check(); !d.empty()) fail(what + ": " + d);
    digest = mix(digest, in.digest());
}

void Case::check_status(const MPI_Status &st, int source, int want_tag, MPI_Datatype recv,
                        int64_t count, const std::string &what) {
    if (st.MPI_SOURCE != source)
        fail(what + ": status names source " + std::to_string(st.MPI_SOURCE) + ", not " +
             std::to_string(source));
    if (st.MPI_TAG != want_tag)
        fail(what + ": status names tag " + std::to_string(st.MPI_TAG) + ", not " +
             std::to_string(want_tag));
    MPI_Count size = 0;
    ok(MPI_Type_size_x(recv, &size), "MPI_Type_size_x");
    int n = 0;
    ok(MPI_Get_count(&st, recv, &n), "MPI_Get_count");
    // MPI-4.1 3.2.5: a count of zero for a type of size zero.
    if (n != (size > 0 ? count : 0))
        fail(what + ": MPI_Get_count " + std::to_string(n) + ", expected " +
             std::to_string(count));
}

}  // namespace pmpi
