#include "cuda/driver.hpp"

#include <cuda_runtime_api.h>

namespace ucxdt::cuda {

namespace {

template <typename Fn>
void look_up(const char *name, Fn *out) {
    cudaDriverEntryPointQueryResult q{};
    void *fn = nullptr;
    if (cudaGetDriverEntryPointByVersion(name, &fn, 12000, cudaEnableDefault, &q) == cudaSuccess &&
        q == cudaDriverEntryPointSuccess)
        *out = reinterpret_cast<Fn>(fn);
}

}  // namespace

const Driver &driver() {
    static const Driver d = [] {
        Driver x;
        look_up("cuMemGetAddressRange", &x.get_address_range);
        look_up("cuPointerGetAttribute", &x.pointer_attribute);
        look_up("cuPointerGetAttributes", &x.pointer_attributes);
        look_up("cuPointerSetAttribute", &x.set_pointer_attribute);
        cudaGetLastError();
        return x;
    }();
    return d;
}

}  // namespace ucxdt::cuda
