#include "device_staging.hpp"

#include "cuda_check.hpp"
#include "driver.hpp"

#include <string>

namespace ucxdt::cuda {

ucxdt_status_t DeviceStaging::create(int device, int slots, int64_t slot_bytes, bool flags, DeviceStaging **out) {
    auto *d = new DeviceStaging;
    d->device_ = device;
    d->slots_ = slots;
    d->slot_bytes_ = slot_bytes;
    DeviceGuard g(device);
    ucxdt_status_t st = g.status();
    if (!st) st = check(cudaStreamCreateWithFlags(&d->stream_, cudaStreamDefault), "cudaStreamCreate (rendezvous)");
    if (st) {
        delete d;
        return st;
    }
    const Driver &drv = driver();
    int ops = 0;
    if (flags && drv.stream_write_value64 && drv.device_attribute &&
        drv.device_attribute(&ops, CU_DEVICE_ATTRIBUTE_CAN_USE_64_BIT_STREAM_MEM_OPS, device) == CUDA_SUCCESS && ops) {
        void *host = nullptr, *dev = nullptr;
        if (cudaHostAlloc(&host, sizeof(uint64_t), cudaHostAllocMapped | cudaHostAllocPortable) == cudaSuccess) {
            if (cudaHostGetDevicePointer(&dev, host, 0) == cudaSuccess) {
                d->flag_ = static_cast<volatile uint64_t *>(host);
                *d->flag_ = 0;
                d->flag_dev_ = reinterpret_cast<CUdeviceptr>(dev);
            } else {
                cudaFreeHost(host);
            }
        }
        cudaGetLastError();  // events then
    }
    *out = d;
    return UCXDT_OK;
}

DeviceStaging::~DeviceStaging() {
    DeviceGuard g(device_);
    if (stream_) cudaStreamSynchronize(stream_), cudaStreamDestroy(stream_);
    for (const auto &m : events_) cudaEventDestroy(m.second);
    for (cudaEvent_t e : spare_) cudaEventDestroy(e);
    if (flag_) cudaFreeHost(const_cast<uint64_t *>(flag_));
    if (base_) cudaFree(base_);
    cudaGetLastError();
}

ucxdt_status_t DeviceStaging::mark(uint64_t *ticket) {
    DeviceGuard g(device_);
    if (ucxdt_status_t st = g.status()) return st;
    if (flag_) {
        // Default flags: the write waits for the stream's earlier work and fences its writes.
        const CUresult r = driver().stream_write_value64(stream_, flag_dev_, marked_ + 1, 0);
        if (r != CUDA_SUCCESS)
            return fail(UCXDT_ERR_CUDA, "cuStreamWriteValue64 (rendezvous): CUresult " + std::to_string(r));
        *ticket = ++marked_;
        return UCXDT_OK;
    }
    cudaEvent_t e = nullptr;
    if (!spare_.empty()) {
        e = spare_.back();
        spare_.pop_back();
    } else if (ucxdt_status_t st = check(cudaEventCreateWithFlags(&e, cudaEventDisableTiming), "cudaEventCreate")) {
        return st;
    }
    if (ucxdt_status_t st = check(cudaEventRecord(e, stream_), "cudaEventRecord")) {
        spare_.push_back(e);
        return st;
    }
    events_.emplace_back(++marked_, e);
    *ticket = marked_;
    return UCXDT_OK;
}

bool DeviceStaging::reached(uint64_t ticket, ucxdt_status_t *status) {
    *status = UCXDT_OK;
    if (ticket <= reached_) return true;
    if (flag_) {
        const uint64_t v = __atomic_load_n(flag_, __ATOMIC_ACQUIRE);
        if (v > reached_) reached_ = v;
        if (ticket <= reached_) return true;
        const auto now = std::chrono::steady_clock::now();
        if (now - asked_ < std::chrono::milliseconds(1)) return false;
        asked_ = now;
        const cudaError_t e = cudaStreamQuery(stream_);
        if (e == cudaErrorNotReady) return false;
        if (e != cudaSuccess) return *status = check(e, "GPU work of the rendezvous"), true;
        reached_ = marked_;  // the stream ran everything, its last write included
        return true;
    }
    // Events of one stream complete in order: query the oldest until one is pending.
    while (!events_.empty() && events_.front().first <= ticket) {
        const cudaError_t e = cudaEventQuery(events_.front().second);
        if (e == cudaErrorNotReady) return false;
        if (e != cudaSuccess) return *status = check(e, "GPU work of the rendezvous"), true;
        reached_ = events_.front().first;
        spare_.push_back(events_.front().second);
        events_.pop_front();
    }
    return true;
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
    free_.reset(slots_);
    return UCXDT_OK;
}

}  // namespace ucxdt::cuda
