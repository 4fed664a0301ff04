// OpenSHMEM's strided put and get (include/ucxdt/ucxdt_shmem.h): each side a vector type, made
// once per shape and kept, then ucxdt_put_nbx / ucxdt_get_nbx.
#include "ucp_rma/rma.hpp"

#include "base/error.hpp"

#include <ucxdt/ucxdt_shmem.h>

#include <list>
#include <map>
#include <mutex>
#include <tuple>

namespace ucxdt::rma {
namespace {

// Committed vector types by (nelems, stride in elements, element bytes), least recently used
// first; a type handed to an operation stays valid after eviction (the request holds a dup).
class Shapes {
public:
    ucxdt_status_t get(int64_t n, int64_t stride, int64_t elem, ucxdt_type_t *out) {
        std::lock_guard<std::mutex> lock(m_);
        const Key k{n, stride, elem};
        if (auto it = by_key_.find(k); it != by_key_.end()) {
            order_.splice(order_.end(), order_, it->second);
            *out = it->second->second;
            return UCXDT_OK;
        }
        ucxdt_type_t bytes = UCXDT_TYPE_NULL, v = UCXDT_TYPE_NULL;
        ucxdt_status_t st = ucxdt_type_contiguous(elem, ucxdt_type_primitive(UCXDT_BYTE), &bytes);
        if (!st) st = ucxdt_type_hvector(n, 1, stride * elem, bytes, &v);
        if (!st) st = ucxdt_type_commit(v);
        if (bytes) ucxdt_type_free(&bytes);
        if (st) {
            if (v) ucxdt_type_free(&v);
            return st;
        }
        if (order_.size() >= kCapacity) {
            by_key_.erase(order_.front().first);
            ucxdt_type_free(&order_.front().second);
            order_.pop_front();
        }
        order_.emplace_back(k, v);
        by_key_[k] = std::prev(order_.end());
        *out = v;
        return UCXDT_OK;
    }

private:
    static constexpr size_t kCapacity = 64;
    using Key = std::tuple<int64_t, int64_t, int64_t>;
    std::mutex m_;
    std::list<std::pair<Key, ucxdt_type_t>> order_;
    std::map<Key, std::list<std::pair<Key, ucxdt_type_t>>::iterator> by_key_;
};

Shapes &shapes() {
    static auto *s = new Shapes;  // types stay until exit: requests may hold them
    return *s;
}

// Both sides' types; a zero-element transfer has none to make.
ucxdt_status_t sides(ptrdiff_t dst, ptrdiff_t sst, size_t nelems, size_t elem_size, ucxdt_type_t *d,
                     ucxdt_type_t *s) {
    if (dst == 0 || sst == 0 || elem_size == 0)
        return fail(UCXDT_ERR_INVALID_PARAM, "strides and the element size must not be zero");
    const auto n = static_cast<int64_t>(nelems), e = static_cast<int64_t>(elem_size);
    if (n < 0 || e < 0) return fail(UCXDT_ERR_OVERFLOW, "nelems or elem_size does not fit int64");
    int64_t bytes = 0;
    if (__builtin_mul_overflow(static_cast<int64_t>(dst), e, &bytes) ||
        __builtin_mul_overflow(static_cast<int64_t>(sst), e, &bytes))
        return fail(UCXDT_ERR_OVERFLOW, "a stride in bytes does not fit int64");
    if (ucxdt_status_t st = shapes().get(n, dst, e, d)) return st;
    return shapes().get(n, sst, e, s);
}

}  // namespace
}  // namespace ucxdt::rma

using namespace ucxdt;

extern "C" {

ucxdt_status_ptr_t ucxdt_shmem_iput_nbx(ucxdt_ep_h ep, uint64_t remote_dest, ucxdt_rkey_h rkey, const void *source,
                                        ptrdiff_t dst, ptrdiff_t sst, size_t nelems, size_t elem_size,
                                        const ucxdt_request_param_t *param) {
    ucxdt_type_t d = UCXDT_TYPE_NULL, s = UCXDT_TYPE_NULL;
    if (ucxdt_status_t st = rma::sides(dst, sst, nelems, elem_size, &d, &s)) return rndv::error_ptr(st);
    return ucxdt_put_nbx(ep, source, 1, s, remote_dest, rkey, 1, d, param);
}

ucxdt_status_ptr_t ucxdt_shmem_iget_nbx(ucxdt_ep_h ep, void *dest, uint64_t remote_source, ucxdt_rkey_h rkey,
                                        ptrdiff_t dst, ptrdiff_t sst, size_t nelems, size_t elem_size,
                                        const ucxdt_request_param_t *param) {
    ucxdt_type_t d = UCXDT_TYPE_NULL, s = UCXDT_TYPE_NULL;
    if (ucxdt_status_t st = rma::sides(dst, sst, nelems, elem_size, &d, &s)) return rndv::error_ptr(st);
    return ucxdt_get_nbx(ep, dest, 1, d, remote_source, rkey, 1, s, param);
}

}  // extern "C"
