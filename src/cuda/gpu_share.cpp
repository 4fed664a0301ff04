#include "cuda/gpu_share.hpp"

#include "kernels/pack_kernels.hpp"
#include "cuda/cuda_check.hpp"

#include <cstdlib>
#include <cstring>
#include <string>

namespace ucxdt::cuda {

StreamPriority stream_priority() {
    static const StreamPriority p = [] {
        const char *s = std::getenv("UCXDT_GPU_STREAM_PRIORITY");
        if (s && std::strcmp(s, "normal") == 0) return StreamPriority::NORMAL;
        if (s && std::strcmp(s, "low") == 0) return StreamPriority::LOW;
        return StreamPriority::HIGH;
    }();
    return p;
}

int cuda_priority(StreamPriority p) {
    if (p == StreamPriority::NORMAL) return 0;
    int least = 0, greatest = 0;
    if (cudaDeviceGetStreamPriorityRange(&least, &greatest) != cudaSuccess) {
        cudaGetLastError();
        return 0;
    }
    return p == StreamPriority::HIGH ? greatest : least;
}

ucxdt_status_t create_stream(cudaStream_t *stream, const char *what) {
    return check(cudaStreamCreateWithPriority(stream, cudaStreamDefault, cuda_priority(stream_priority())),
                 (std::string("cudaStreamCreateWithPriority (") + what + ")").c_str());
}

std::string sharing_settings() {
    static const char *const names[] = {"high", "normal", "low"};
    return std::string("UCXDT_GPU_STREAM_PRIORITY=") + names[static_cast<int>(stream_priority())] +
           "\nUCXDT_GPU_SMS=" + std::to_string(kernels::sm_bound()) + "\n";
}

}  // namespace ucxdt::cuda
