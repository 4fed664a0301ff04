// Header-only C++20 RAII wrappers over the ucxdt C API (ucxdt.h).
//
// Units are those of the C API: counts, blocklengths and element displacements in elements of
// the old type; strides and displacements of the h* constructors, lb, extent, sizes, offsets and
// positions in bytes; all int64_t.
//
// Errors: every wrapper that calls a failing C function throws ucxdt::error, which carries the
// status and the C library's message (ucxdt_last_error(), copied at once because it lives only
// until the thread's next ucxdt call). A throwing call changes nothing, as in the C API.
//
// Thread safety: as the C API. Distinct `type` objects may be used from any threads; const
// members of one object may run concurrently; commit(), assignment and destruction of an object
// must not race with any other use of that same object.
#pragma once

#include <ucxdt/ucxdt.h>

#include <cstddef>
#include <cstdint>
#include <span>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace ucxdt {

/// A failed ucxdt call: status() is the C status, what() names the call and the reason.
class error : public std::runtime_error {
public:
    error(ucxdt_status_t status, const std::string &what)
        : std::runtime_error(what), status_(status) {}
    ucxdt_status_t status() const noexcept { return status_; }

private:
    ucxdt_status_t status_;
};

namespace detail {

inline void check(ucxdt_status_t st, const char *call) {
    if (st == UCXDT_OK) return;
    std::string msg = std::string(call) + ": " + ucxdt_status_string(st);
    const char *why = ucxdt_last_error();
    if (why != nullptr && *why != '\0') msg += std::string(": ") + why;
    throw error(st, msg);
}

// The C API takes one `count` for parallel arrays; a size mismatch here would make it read past
// the shorter one, so it is rejected before the call.
inline void check_same_size(size_t a, size_t b, const char *call) {
    if (a != b)
        throw error(UCXDT_ERR_INVALID_PARAM,
                    std::string(call) + ": array arguments differ in length (" +
                        std::to_string(a) + " vs " + std::to_string(b) + ")");
}

}  // namespace detail

/// Plan class and block count of (type, count), see ucxdt_type_plan_info.
struct plan_info {
    ucxdt_plan_class_t plan_class;
    int64_t num_blocks;
};

/// Owns one datatype handle. Move-only; frees the handle when destroyed (predefined handles are
/// never freed). A default-constructed or moved-from object holds UCXDT_TYPE_NULL.
class type {
public:
    type() noexcept = default;
    ~type() { reset(); }
    type(type &&o) noexcept : h_(std::exchange(o.h_, UCXDT_TYPE_NULL)),
                              owned_(std::exchange(o.owned_, false)) {}
    type &operator=(type &&o) noexcept {
        if (this != &o) {
            reset();
            h_ = std::exchange(o.h_, UCXDT_TYPE_NULL);
            owned_ = std::exchange(o.owned_, false);
        }
        return *this;
    }
    type(const type &) = delete;
    type &operator=(const type &) = delete;

    /// Takes ownership of a handle from the C API (nothing is freed if it is predefined).
    static type adopt(ucxdt_type_t h) {
        ucxdt_combiner_t c = UCXDT_COMBINER_NAMED;
        if (h != UCXDT_TYPE_NULL) detail::check(ucxdt_type_combiner(h, &c), "ucxdt_type_combiner");
        return type(h, c != UCXDT_COMBINER_NAMED);
    }

    /// The predefined type; already committed.
    static type primitive(ucxdt_primitive_t p) {
        ucxdt_type_t h = ucxdt_type_primitive(p);
        if (h == UCXDT_TYPE_NULL)
            throw error(UCXDT_ERR_INVALID_PARAM, "ucxdt_type_primitive: primitive out of range");
        return type(h, false);
    }

    // ---- Constructors (MPI-4.1 5.1.2 - 5.1.7); results are not committed. -------------------

    static type contiguous(int64_t count, const type &old) {
        return make([&](ucxdt_type_t *t) { return ucxdt_type_contiguous(count, old.h_, t); },
                    "ucxdt_type_contiguous");
    }
    static type vector(int64_t count, int64_t blocklength, int64_t stride, const type &old) {
        return make([&](ucxdt_type_t *t) {
            return ucxdt_type_vector(count, blocklength, stride, old.h_, t);
        }, "ucxdt_type_vector");
    }
    static type hvector(int64_t count, int64_t blocklength, int64_t stride_bytes, const type &old) {
        return make([&](ucxdt_type_t *t) {
            return ucxdt_type_hvector(count, blocklength, stride_bytes, old.h_, t);
        }, "ucxdt_type_hvector");
    }
    static type indexed(std::span<const int64_t> blocklengths,
                        std::span<const int64_t> displacements, const type &old) {
        detail::check_same_size(blocklengths.size(), displacements.size(), "ucxdt_type_indexed");
        return make([&](ucxdt_type_t *t) {
            return ucxdt_type_indexed(ssize(blocklengths), blocklengths.data(),
                                      displacements.data(), old.h_, t);
        }, "ucxdt_type_indexed");
    }
    static type hindexed(std::span<const int64_t> blocklengths,
                         std::span<const int64_t> displacements_bytes, const type &old) {
        detail::check_same_size(blocklengths.size(), displacements_bytes.size(),
                                "ucxdt_type_hindexed");
        return make([&](ucxdt_type_t *t) {
            return ucxdt_type_hindexed(ssize(blocklengths), blocklengths.data(),
                                       displacements_bytes.data(), old.h_, t);
        }, "ucxdt_type_hindexed");
    }
    static type indexed_block(int64_t blocklength, std::span<const int64_t> displacements,
                              const type &old) {
        return make([&](ucxdt_type_t *t) {
            return ucxdt_type_indexed_block(ssize(displacements), blocklength,
                                            displacements.data(), old.h_, t);
        }, "ucxdt_type_indexed_block");
    }
    static type hindexed_block(int64_t blocklength, std::span<const int64_t> displacements_bytes,
                               const type &old) {
        return make([&](ucxdt_type_t *t) {
            return ucxdt_type_hindexed_block(ssize(displacements_bytes), blocklength,
                                             displacements_bytes.data(), old.h_, t);
        }, "ucxdt_type_hindexed_block");
    }
    static type subarray(std::span<const int64_t> sizes, std::span<const int64_t> subsizes,
                         std::span<const int64_t> starts, ucxdt_order_t order, const type &old) {
        detail::check_same_size(sizes.size(), subsizes.size(), "ucxdt_type_subarray");
        detail::check_same_size(sizes.size(), starts.size(), "ucxdt_type_subarray");
        return make([&](ucxdt_type_t *t) {
            return ucxdt_type_subarray(static_cast<int>(sizes.size()), sizes.data(),
                                       subsizes.data(), starts.data(), order, old.h_, t);
        }, "ucxdt_type_subarray");
    }
    /// MPI_Type_create_struct. Unless a member carries explicit bounds (resized, subarray), the
    /// extent is rounded up to a multiple of the largest primitive alignment (MPI-4.1 5.1.6's
    /// epsilon), so {double, int, int, char} has extent 24 as in C. ucxdt_type_struct in
    /// ucxdt.h says where Open MPI 4.1's padding differs.
    static type structure(std::span<const int64_t> blocklengths,
                          std::span<const int64_t> displacements_bytes,
                          std::span<const type> types) {
        detail::check_same_size(blocklengths.size(), displacements_bytes.size(),
                                "ucxdt_type_struct");
        detail::check_same_size(blocklengths.size(), types.size(), "ucxdt_type_struct");
        std::vector<ucxdt_type_t> handles;
        handles.reserve(types.size());
        for (const type &t : types) handles.push_back(t.h_);
        return make([&](ucxdt_type_t *t) {
            return ucxdt_type_struct(ssize(blocklengths), blocklengths.data(),
                                     displacements_bytes.data(), handles.data(), t);
        }, "ucxdt_type_struct");
    }
    static type resized(const type &old, int64_t lb, int64_t extent) {
        return make([&](ucxdt_type_t *t) { return ucxdt_type_resized(old.h_, lb, extent, t); },
                    "ucxdt_type_resized");
    }
    /// A new handle for the same type, committed if this one is.
    type dup() const {
        return make([&](ucxdt_type_t *t) { return ucxdt_type_dup(h_, t); }, "ucxdt_type_dup");
    }

    // ---- Commit and queries -----------------------------------------------------------------

    /// Commits in place; returns *this so that `auto t = type::vector(...).commit();` works.
    type &commit() & {
        detail::check(ucxdt_type_commit(h_), "ucxdt_type_commit");
        return *this;
    }
    type &&commit() && { return std::move(commit()); }

    /// Packed bytes of one element.
    int64_t size() const {
        int64_t s = 0;
        detail::check(ucxdt_type_size(h_, &s), "ucxdt_type_size");
        return s;
    }
    int64_t lb() const { return bounds().first; }
    int64_t extent() const { return bounds().second; }
    int64_t true_lb() const { return true_bounds().first; }
    int64_t true_extent() const { return true_bounds().second; }
    ucxdt_signature_t signature(int64_t count) const {
        ucxdt_signature_t s{};
        detail::check(ucxdt_type_signature(h_, count, &s), "ucxdt_type_signature");
        return s;
    }
    ucxdt_combiner_t combiner() const {
        ucxdt_combiner_t c{};
        detail::check(ucxdt_type_combiner(h_, &c), "ucxdt_type_combiner");
        return c;
    }
    /// Requires a committed type.
    ucxdt::plan_info plan(int64_t count) const {
        ucxdt::plan_info p{};
        detail::check(ucxdt_type_plan_info(h_, count, &p.plan_class, &p.num_blocks),
                      "ucxdt_type_plan_info");
        return p;
    }

    // ---- Packing (host memory; the type must be committed) ----------------------------------

    /// Bytes ucxdt_pack needs for `count` elements.
    int64_t pack_size(int64_t count) const {
        int64_t s = 0;
        detail::check(ucxdt_pack_size(count, h_, &s), "ucxdt_pack_size");
        return s;
    }
    /// Packs `count` elements from `in` into out[position...]; advances position.
    void pack(const void *in, int64_t count, std::span<std::byte> out, int64_t &position) const {
        detail::check(ucxdt_pack(in, count, h_, out.data(), ssize(out), &position), "ucxdt_pack");
    }
    /// Unpacks `count` elements from in[position...] into `out`; advances position.
    void unpack(std::span<const std::byte> in, int64_t &position, void *out, int64_t count) const {
        detail::check(ucxdt_unpack(in.data(), ssize(in), &position, out, count, h_),
                      "ucxdt_unpack");
    }
    /// Bytes [offset, offset + packed.size()) of the packed stream of (buf, count).
    void pack_range(const void *buf, int64_t count, int64_t offset,
                    std::span<std::byte> packed) const {
        detail::check(ucxdt_pack_range(buf, count, h_, offset, packed.data(), ssize(packed)),
                      "ucxdt_pack_range");
    }
    /// Scatters packed bytes that sit at `offset` of the packed stream of (buf, count).
    void unpack_range(std::span<const std::byte> packed, int64_t offset, void *buf,
                      int64_t count) const {
        detail::check(ucxdt_unpack_range(packed.data(), offset, ssize(packed), buf, count, h_),
                      "ucxdt_unpack_range");
    }

    // ---- Handle access ----------------------------------------------------------------------

    ucxdt_type_t get() const noexcept { return h_; }
    explicit operator bool() const noexcept { return h_ != UCXDT_TYPE_NULL; }
    /// Gives up ownership; the caller frees the returned handle (unless it is predefined).
    ucxdt_type_t release() noexcept {
        owned_ = false;
        return std::exchange(h_, UCXDT_TYPE_NULL);
    }
    /// Frees the owned handle now (destructors must not throw, so a failure is ignored: the
    /// only failures are a handle already freed behind our back or a predefined one).
    void reset() noexcept {
        if (owned_ && h_ != UCXDT_TYPE_NULL) ucxdt_type_free(&h_);
        h_ = UCXDT_TYPE_NULL;
        owned_ = false;
    }

private:
    type(ucxdt_type_t h, bool owned) noexcept : h_(h), owned_(owned) {}

    template <class F> static type make(F &&create, const char *call) {
        ucxdt_type_t t = UCXDT_TYPE_NULL;
        detail::check(create(&t), call);
        return type(t, true);
    }
    template <class T> static int64_t ssize(std::span<T> s) {
        return static_cast<int64_t>(s.size());
    }
    std::pair<int64_t, int64_t> bounds() const {
        int64_t lb = 0, ext = 0;
        detail::check(ucxdt_type_extent(h_, &lb, &ext), "ucxdt_type_extent");
        return {lb, ext};
    }
    std::pair<int64_t, int64_t> true_bounds() const {
        int64_t lb = 0, ext = 0;
        detail::check(ucxdt_type_true_extent(h_, &lb, &ext), "ucxdt_type_true_extent");
        return {lb, ext};
    }

    ucxdt_type_t h_ = UCXDT_TYPE_NULL;
    bool owned_ = false;
};

}  // namespace ucxdt
