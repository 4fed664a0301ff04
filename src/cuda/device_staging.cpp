#include "cuda/device_staging.hpp"

#include "base/error.hpp"
#include "cuda/cuda_check.hpp"

#include <algorithm>

namespace ucxdt::cuda {

ucxdt_status_t DeviceStaging::create(int device, int slots, int64_t slot_bytes, int streams, DeviceStaging **out) {
    std::unique_ptr<DeviceStaging> d(new DeviceStaging);
    d->device_ = device;
    d->slots_ = slots;
    d->slot_bytes_ = slot_bytes;
    for (int i = 0; i < std::max(streams, 1); ++i) {
        WorkStream *w = nullptr;
        if (ucxdt_status_t st = WorkStream::create(device, "rendezvous", &w)) return st;
        d->streams_.emplace_back(w);
    }
    *out = d.release();
    return UCXDT_OK;
}

DeviceStaging::~DeviceStaging() {
    streams_.clear();  // each waits for its work, which may use the slots
    DeviceGuard g(device_);
    if (base_) cudaFree(base_);
    cudaGetLastError();
}

void DeviceStaging::synchronize() {
    for (auto &w : streams_) w->synchronize();
}

ucxdt_status_t DeviceStaging::allocate() {
    if (base_) return UCXDT_OK;
    DeviceGuard g(device_);
    if (ucxdt_status_t st = g.status()) return st;
    if (ucxdt_status_t st = check(cudaMalloc(reinterpret_cast<void **>(&base_), static_cast<size_t>(slot_bytes_ * slots_)),
                                  "cudaMalloc (device staging)"))
        return st;
    if (ucxdt_status_t st = ipc_export(base_, &ref_)) {
        cudaFree(base_);
        base_ = nullptr;
        return st;
    }
    free_.reset(slots_, staging_level(slot_bytes_, 0));
    return UCXDT_OK;
}

}  // namespace ucxdt::cuda
