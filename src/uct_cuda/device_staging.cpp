#include "uct_cuda/device_staging.hpp"

#include "base/error.hpp"
#include "uct_cuda/cuda_check.hpp"
#include "uct_cuda/gpu_share.hpp"

namespace ucxdt::cuda {

ucxdt_status_t DeviceStaging::create(int device, int slots, int64_t slot_bytes, DeviceStaging **out) {
    auto *d = new DeviceStaging;
    d->device_ = device;
    d->slots_ = slots;
    d->slot_bytes_ = slot_bytes;
    DeviceGuard g(device);
    ucxdt_status_t st = g.status();
    if (!st) st = create_stream(&d->stream_, "rendezvous");
    if (st) {
        delete d;
        return st;
    }
    *out = d;
    return UCXDT_OK;
}

DeviceStaging::~DeviceStaging() {
    DeviceGuard g(device_);
    if (stream_) cudaStreamSynchronize(stream_), cudaStreamDestroy(stream_);
    for (cudaEvent_t e : events_) cudaEventDestroy(e);
    if (base_) cudaFree(base_);
    cudaGetLastError();
}

ucxdt_status_t DeviceStaging::record(cudaEvent_t *event) {
    DeviceGuard g(device_);
    if (ucxdt_status_t st = g.status()) return st;
    cudaEvent_t e = nullptr;
    if (!events_.empty()) {
        e = events_.back();
        events_.pop_back();
    } else if (ucxdt_status_t st = check(cudaEventCreateWithFlags(&e, cudaEventDisableTiming), "cudaEventCreate")) {
        return st;
    }
    if (ucxdt_status_t st = check(cudaEventRecord(e, stream_), "cudaEventRecord")) {
        events_.push_back(e);
        return st;
    }
    *event = e;
    ++events_out_;
    batch_.stream_busy = true;
    return UCXDT_OK;
}

ucxdt_status_t DeviceStaging::launch_batch(cudaEvent_t *event) {
    DeviceGuard g(device_);
    ucxdt_status_t st = g.status();
    if (!st && !batch_.empty()) st = batch_.launch(stream_);
    batch_.clear();  // a failed launch's copies are dropped with it
    if (!st) st = record(event);
    if (st) cudaStreamSynchronize(stream_);
    return st;
}

void DeviceStaging::synchronize() {
    DeviceGuard g(device_);
    if (!batch_.empty() && !g.status() && batch_.launch(stream_)) clear_error();
    batch_.clear();
    cudaStreamSynchronize(stream_);
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
