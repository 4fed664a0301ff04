#include "cuda/work_stream.hpp"

#include "base/error.hpp"
#include "cuda/cuda_check.hpp"
#include "cuda/gpu_share.hpp"

namespace ucxdt::cuda {

ucxdt_status_t WorkStream::create(int device, const char *what, WorkStream **out) {
    auto *w = new WorkStream;
    w->device_ = device;
    DeviceGuard g(device);
    ucxdt_status_t st = g.status();
    if (!st) st = create_stream(&w->stream_, what);
    if (st) {
        delete w;
        return st;
    }
    *out = w;
    return UCXDT_OK;
}

WorkStream::~WorkStream() {
    DeviceGuard g(device_);
    if (stream_) cudaStreamSynchronize(stream_), cudaStreamDestroy(stream_);
    for (cudaEvent_t e : events_) cudaEventDestroy(e);
    cudaGetLastError();
}

ucxdt_status_t WorkStream::record(cudaEvent_t *event) {
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

ucxdt_status_t WorkStream::launch_batch(cudaEvent_t *event) {
    DeviceGuard g(device_);
    ucxdt_status_t st = g.status();
    if (!st && !batch_.empty()) st = batch_.launch(stream_);
    batch_.clear();  // a failed launch's copies are dropped with it
    if (!st) st = record(event);
    if (st) cudaStreamSynchronize(stream_);
    return st;
}

void WorkStream::synchronize() {
    DeviceGuard g(device_);
    if (!batch_.empty() && !g.status() && batch_.launch(stream_)) clear_error();
    batch_.clear();
    cudaStreamSynchronize(stream_);
}

}  // namespace ucxdt::cuda
