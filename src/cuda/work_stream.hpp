// A stream for the library's GPU work (blocking, like its other internal streams), the
// reusable events that poll its completion, and the kernel copies collected for its next launch.
#pragma once

#include "cuda/launch_batch.hpp"

#include <ucxdt/ucxdt.h>

#include <cuda_runtime_api.h>

#include <vector>

namespace ucxdt::cuda {

/// Not thread safe: its owner's progress serializes it.
class WorkStream {
public:
    /// A stream on `device`; `what` names it in an error.
    static ucxdt_status_t create(int device, const char *what, WorkStream **out);
    ~WorkStream();
    WorkStream(const WorkStream &) = delete;
    WorkStream &operator=(const WorkStream &) = delete;

    int device() const { return device_; }
    cudaStream_t cuda_stream() const { return stream_; }
    /// An event recorded on the stream now (returned with give_event once complete).
    ucxdt_status_t record(cudaEvent_t *event);
    void give_event(cudaEvent_t e) {
        events_.push_back(e);
        batch_.stream_busy = --events_out_ > 0;
    }
    /// Events recorded and not yet given back: the stream's work not yet seen complete.
    int events_out() const { return events_out_; }
    /// Copies collected for the stream's next launch (LaunchBatch).
    LaunchBatch &batch() { return batch_; }
    /// Launches batch() on the stream and records an event behind it (as record() does). On
    /// failure synchronizes the stream, so that nothing launched before still runs.
    ucxdt_status_t launch_batch(cudaEvent_t *event);
    /// Launches batch() and waits for everything on the stream: nothing of it runs after.
    void synchronize();

private:
    WorkStream() = default;
    int device_ = -1;
    cudaStream_t stream_ = nullptr;
    std::vector<cudaEvent_t> events_;
    int events_out_ = 0;
    LaunchBatch batch_;
};

}  // namespace ucxdt::cuda
