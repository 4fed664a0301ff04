#include "yaksa_peer.hpp"

// yaksa.h declares C functions without a C++ guard.
extern "C" {
#include <yaksa/yaksa.h>
}

#include <vector>

namespace ucxdt::bench {

namespace L = ucxdt::layouts;

namespace {

const char *error_name(int rc) {
    switch (rc) {
    case YAKSA_ERR__OUT_OF_MEM: return "out of memory";
    case YAKSA_ERR__INTERNAL: return "internal error";
    case YAKSA_ERR__NOT_SUPPORTED: return "not supported";
    default: return "unknown error";
    }
}

void ok(int rc, const char *call, const L::TypeDesc *d = nullptr) {
    if (rc == YAKSA_SUCCESS) return;
    throw YaksaError(std::string(call) + " failed: " + error_name(rc) + " (" +
                     std::to_string(rc) + ")" + (d ? " for " + L::to_string(*d) : ""));
}

yaksa_type_t primitive(ucxdt_primitive_t p) {
    switch (p) {
    case UCXDT_BYTE: return YAKSA_TYPE__BYTE;
    case UCXDT_CHAR: return YAKSA_TYPE__CHAR;
    case UCXDT_INT8: return YAKSA_TYPE__INT8_T;
    case UCXDT_INT16: return YAKSA_TYPE__INT16_T;
    case UCXDT_INT32: return YAKSA_TYPE__INT32_T;
    case UCXDT_INT64: return YAKSA_TYPE__INT64_T;
    case UCXDT_UINT8: return YAKSA_TYPE__UINT8_T;
    case UCXDT_UINT16: return YAKSA_TYPE__UINT16_T;
    case UCXDT_UINT32: return YAKSA_TYPE__UINT32_T;
    case UCXDT_UINT64: return YAKSA_TYPE__UINT64_T;
    case UCXDT_FLOAT: return YAKSA_TYPE__FLOAT;
    case UCXDT_DOUBLE: return YAKSA_TYPE__DOUBLE;
    case UCXDT_LONG_DOUBLE: return YAKSA_TYPE__LONG_DOUBLE;
    case UCXDT_FLOAT_COMPLEX: return YAKSA_TYPE__C_COMPLEX;
    case UCXDT_DOUBLE_COMPLEX: return YAKSA_TYPE__C_DOUBLE_COMPLEX;
    default: break;
    }
    throw std::invalid_argument("no Yaksa type for primitive " + std::to_string(p));
}

// A type built on the way, freed when the outer one is built (Yaksa keeps its own references).
struct Held {
    yaksa_type_t t = YAKSA_TYPE__NULL;
    bool derived = false;
    Held() = default;
    Held(const Held &) = delete;
    Held &operator=(const Held &) = delete;
    Held(Held &&o) noexcept : t(o.t), derived(o.derived) { o.derived = false; }
    ~Held() {
        if (derived) yaksa_type_free(t);
    }
};

std::vector<intptr_t> ptrs(const std::vector<int64_t> &v) {
    return std::vector<intptr_t>(v.begin(), v.end());
}

Held build(const L::TypeDesc &d) {
    Held out;
    if (d.combiner == UCXDT_COMBINER_NAMED) {
        out.t = primitive(d.primitive);
        return out;
    }
    std::vector<Held> kids;
    for (const auto &c : d.children) kids.push_back(build(*c));
    if (kids.empty() && d.combiner != UCXDT_COMBINER_STRUCT)
        throw std::invalid_argument("no child in " + L::to_string(d));
    const yaksa_type_t old = kids.empty() ? YAKSA_TYPE__NULL : kids[0].t;
    const auto bl = ptrs(d.blocklengths), disp = ptrs(d.displacements);
    const auto n = static_cast<intptr_t>(d.count);
    yaksa_type_t t = YAKSA_TYPE__NULL;
    switch (d.combiner) {
    case UCXDT_COMBINER_CONTIGUOUS:
        ok(yaksa_type_create_contig(n, old, nullptr, &t), "yaksa_type_create_contig", &d);
        break;
    case UCXDT_COMBINER_VECTOR:
        ok(yaksa_type_create_vector(n, d.blocklength, d.stride, old, nullptr, &t),
           "yaksa_type_create_vector", &d);
        break;
    case UCXDT_COMBINER_HVECTOR:
        ok(yaksa_type_create_hvector(n, d.blocklength, d.stride, old, nullptr, &t),
           "yaksa_type_create_hvector", &d);
        break;
    case UCXDT_COMBINER_INDEXED:
        ok(yaksa_type_create_indexed(static_cast<intptr_t>(bl.size()), bl.data(), disp.data(),
                                     old, nullptr, &t),
           "yaksa_type_create_indexed", &d);
        break;
    case UCXDT_COMBINER_HINDEXED:
        ok(yaksa_type_create_hindexed(static_cast<intptr_t>(bl.size()), bl.data(), disp.data(),
                                      old, nullptr, &t),
           "yaksa_type_create_hindexed", &d);
        break;
    case UCXDT_COMBINER_INDEXED_BLOCK:
        ok(yaksa_type_create_indexed_block(static_cast<intptr_t>(disp.size()), d.blocklength,
                                           disp.data(), old, nullptr, &t),
           "yaksa_type_create_indexed_block", &d);
        break;
    case UCXDT_COMBINER_HINDEXED_BLOCK:
        ok(yaksa_type_create_hindexed_block(static_cast<intptr_t>(disp.size()), d.blocklength,
                                            disp.data(), old, nullptr, &t),
           "yaksa_type_create_hindexed_block", &d);
        break;
    case UCXDT_COMBINER_SUBARRAY: {
        const auto sizes = ptrs(d.sizes), subsizes = ptrs(d.subsizes), starts = ptrs(d.starts);
        ok(yaksa_type_create_subarray(static_cast<int>(sizes.size()), sizes.data(),
                                      subsizes.data(), starts.data(),
                                      d.order == UCXDT_ORDER_C ? YAKSA_SUBARRAY_ORDER__C
                                                               : YAKSA_SUBARRAY_ORDER__FORTRAN,
                                      old, nullptr, &t),
           "yaksa_type_create_subarray", &d);
        break;
    }
    case UCXDT_COMBINER_STRUCT: {
        std::vector<yaksa_type_t> types;
        for (const auto &k : kids) types.push_back(k.t);
        ok(yaksa_type_create_struct(static_cast<intptr_t>(types.size()), bl.data(), disp.data(),
                                    types.data(), nullptr, &t),
           "yaksa_type_create_struct", &d);
        break;
    }
    case UCXDT_COMBINER_RESIZED:
        ok(yaksa_type_create_resized(old, d.lb, d.extent, nullptr, &t),
           "yaksa_type_create_resized", &d);
        break;
    case UCXDT_COMBINER_DUP:
        ok(yaksa_type_create_dup(old, nullptr, &t), "yaksa_type_create_dup", &d);
        break;
    default:
        throw std::invalid_argument("unknown combiner " + std::to_string(d.combiner) + " in " +
                                    L::to_string(d));
    }
    out.t = t;
    out.derived = true;
    return out;
}

void check_bytes(uintptr_t got, int64_t want, const char *call) {
    if (static_cast<int64_t>(got) != want)
        throw YaksaError(std::string(call) + " moved " + std::to_string(got) + " bytes of " +
                         std::to_string(want));
}

}  // namespace

Yaksa::Yaksa() { ok(yaksa_init(nullptr), "yaksa_init"); }
Yaksa::~Yaksa() { yaksa_finalize(); }

YaksaType::YaksaType(const L::TypeDesc &desc) {
    Held h = build(desc);
    if (!h.derived) {  // a predefined type: a dup, so that every YaksaType is freed alike
        ok(yaksa_type_create_dup(h.t, nullptr, &h.t), "yaksa_type_create_dup", &desc);
        h.derived = true;
    }
    uintptr_t s = 0;
    ok(yaksa_type_get_size(h.t, &s), "yaksa_type_get_size", &desc);  // h frees the type on throw
    h_ = h.t, size_ = static_cast<int64_t>(s);
    h.derived = false;
}

YaksaType::~YaksaType() { yaksa_type_free(h_); }

void yaksa_pack_on(const void *in, int64_t count, const YaksaType &t, void *out,
                   int64_t out_bytes, cudaStream_t stream) {
    uintptr_t done = 0;
    ok(yaksa_pack_stream(in, static_cast<uintptr_t>(count), t.handle(), 0, out,
                         static_cast<uintptr_t>(out_bytes), &done, nullptr, YAKSA_OP__REPLACE,
                         &stream),
       "yaksa_pack_stream");
    check_bytes(done, count * t.size(), "yaksa_pack_stream");
}

void yaksa_unpack_on(const void *in, int64_t in_bytes, void *out, int64_t count,
                     const YaksaType &t, cudaStream_t stream) {
    uintptr_t done = 0;
    ok(yaksa_unpack_stream(in, static_cast<uintptr_t>(in_bytes), out,
                           static_cast<uintptr_t>(count), t.handle(), 0, &done, nullptr,
                           YAKSA_OP__REPLACE, &stream),
       "yaksa_unpack_stream");
    check_bytes(done, in_bytes, "yaksa_unpack_stream");
}

void yaksa_pack_wait(const void *in, int64_t count, const YaksaType &t, void *out,
                     int64_t out_bytes) {
    uintptr_t done = 0;
    yaksa_request_t req = YAKSA_REQUEST__NULL;
    ok(yaksa_ipack(in, static_cast<uintptr_t>(count), t.handle(), 0, out,
                   static_cast<uintptr_t>(out_bytes), &done, nullptr, YAKSA_OP__REPLACE, &req),
       "yaksa_ipack");
    if (req != YAKSA_REQUEST__NULL) ok(yaksa_request_wait(req), "yaksa_request_wait");
    check_bytes(done, count * t.size(), "yaksa_ipack");
}

void yaksa_unpack_wait(const void *in, int64_t in_bytes, void *out, int64_t count,
                       const YaksaType &t) {
    uintptr_t done = 0;
    yaksa_request_t req = YAKSA_REQUEST__NULL;
    ok(yaksa_iunpack(in, static_cast<uintptr_t>(in_bytes), out, static_cast<uintptr_t>(count),
                     t.handle(), 0, &done, nullptr, YAKSA_OP__REPLACE, &req),
       "yaksa_iunpack");
    if (req != YAKSA_REQUEST__NULL) ok(yaksa_request_wait(req), "yaksa_request_wait");
    check_bytes(done, in_bytes, "yaksa_iunpack");
}

}  // namespace ucxdt::bench
