#include "app_load.hpp"

#include <cuda_runtime.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <thread>

namespace {

constexpr int kThreads = 1024;
constexpr size_t kSliceFloat4 = (1 << 20) / sizeof(float4);  // 1 MiB per block

__global__ void __launch_bounds__(kThreads) app_kernel(float4 *buf, int resident) {
    extern __shared__ float4 scratch[];  // sized to keep one block per multiprocessor
    float4 *mine = buf + static_cast<size_t>(blockIdx.x % resident) * kSliceFloat4;
    for (int sweep = 0; sweep < 3; ++sweep) {
        for (size_t i = threadIdx.x; i < kSliceFloat4; i += kThreads) {
            float4 v = mine[i];
#pragma unroll
            for (int k = 0; k < 8; ++k) {
                v.x = v.x * 0.999f + 0.001f, v.y = v.y * 0.999f + 0.001f;
                v.z = v.z * 0.999f + 0.001f, v.w = v.w * 0.999f + 0.001f;
            }
            mine[i] = v;
        }
    }
    if (threadIdx.x == 0) scratch[0] = mine[0];  // the shared memory is used, not optimized out
}

}  // namespace

struct AppLoad::State {
    int device = 0, resident = 0, waves = 1;
    size_t shared = 0;
    float4 *buf = nullptr;
    cudaStream_t stream = nullptr;
    std::thread thread;
    std::atomic<bool> run{false};
    long kernels = 0;
    std::chrono::steady_clock::time_point t0;
};

AppLoad::AppLoad(int percent) : s_(new State) {
    cudaGetDevice(&s_->device);
    cudaDeviceProp prop{};
    if (cudaGetDeviceProperties(&prop, s_->device) != cudaSuccess) {
        error_ = "cudaGetDeviceProperties failed";
        return;
    }
    percent = std::clamp(percent, 1, 100);
    s_->resident = std::max(1, (prop.multiProcessorCount * percent + 50) / 100);
    s_->waves = percent == 100 ? 4 : 1;
    blocks_ = s_->resident * s_->waves;
    s_->shared = std::min<size_t>(prop.sharedMemPerBlockOptin, prop.sharedMemPerMultiprocessor / 2 + 1024);
    if (cudaFuncSetAttribute(app_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                             static_cast<int>(s_->shared)) != cudaSuccess ||
        cudaStreamCreateWithPriority(&s_->stream, cudaStreamNonBlocking, 0) != cudaSuccess ||
        cudaMalloc(&s_->buf, kSliceFloat4 * sizeof(float4) * s_->resident) != cudaSuccess ||
        cudaMemset(s_->buf, 0, kSliceFloat4 * sizeof(float4) * s_->resident) != cudaSuccess) {
        error_ = std::string("CUDA: ") + cudaGetErrorString(cudaGetLastError());
    }
}

AppLoad::~AppLoad() {
    if (s_->thread.joinable()) stop();
    if (s_->stream) cudaStreamSynchronize(s_->stream), cudaStreamDestroy(s_->stream);
    if (s_->buf) cudaFree(s_->buf);
    delete s_;
}

void AppLoad::start() {
    if (!error_.empty() || s_->thread.joinable()) return;
    s_->run = true;
    s_->kernels = 0;
    s_->t0 = std::chrono::steady_clock::now();
    s_->thread = std::thread([s = s_, blocks = blocks_] {
        cudaSetDevice(s->device);
        cudaEvent_t done[2];
        for (cudaEvent_t &e : done) cudaEventCreateWithFlags(&e, cudaEventDisableTiming);
        // Two kernels queued at a time: the GPU never waits for this thread, and stop() waits
        // for at most two.
        for (long i = 0; s->run.load(std::memory_order_relaxed); ++i) {
            cudaEventSynchronize(done[i % 2]);
            app_kernel<<<blocks, kThreads, s->shared, s->stream>>>(s->buf, s->resident);
            cudaEventRecord(done[i % 2], s->stream);
            ++s->kernels;
        }
        cudaStreamSynchronize(s->stream);
        for (cudaEvent_t &e : done) cudaEventDestroy(e);
    });
}

double AppLoad::stop() {
    if (!s_->thread.joinable()) return 0;
    s_->run = false;
    s_->thread.join();
    const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - s_->t0).count();
    return secs > 0 ? static_cast<double>(s_->kernels) / secs : 0;
}

double AppLoad::alone(double seconds) {
    start();
    std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
    return stop();
}
