#include "driver.hpp"

#include <cuda_runtime_api.h>

namespace ucxdt::cuda {

namespace {

template <typename Fn>
void find(const char *name, Fn *out) {
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
        find("cuMemGetAddressRange", &x.get_address_range);
        find("cuPointerGetAttribute", &x.pointer_attribute);
        find("cuDeviceGetAttribute", &x.device_attribute);
        find("cuStreamWriteValue64", &x.stream_write_value64);
        cudaGetLastError();
        return x;
    }();
    return d;
}

}  // namespace ucxdt::cuda
