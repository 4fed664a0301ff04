#include <cuda_runtime.h>

#include "cuda/method.hpp"

#include "base/error.hpp"
#include "cuda/cuda_check.hpp"
#include "cuda/gpu_engine.hpp"
#include "cuda/resources.hpp"
#include "cuda/type_tree.hpp"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <string>
#include <vector>

namespace ucxdt::cuda {

namespace {

// Median of `reps` event-timed runs of `enqueue` on `stream`, after one warm-up, in seconds.
template <typename Enqueue>
ucxdt_status_t time_median(cudaStream_t stream, int reps, Enqueue &&enqueue, double *seconds) {
    cudaEvent_t start, stop;
    if (ucxdt_status_t st = check(cudaEventCreate(&start), "cudaEventCreate")) return st;
    if (ucxdt_status_t st = check(cudaEventCreate(&stop), "cudaEventCreate")) {
        cudaEventDestroy(start);
        return st;
    }
    std::vector<double> t;
    ucxdt_status_t st = enqueue();
    for (int i = 0; i < reps && !st; ++i) {
        float ms = 0;
        cudaEventRecord(start, stream);
        st = enqueue();
        cudaEventRecord(stop, stream);
        if (!st) st = check(cudaEventSynchronize(stop), "cudaEventSynchronize");
        if (!st) st = check(cudaEventElapsedTime(&ms, start, stop), "cudaEventElapsedTime");
        t.push_back(ms * 1e-3);
    }
    cudaEventDestroy(start);
    cudaEventDestroy(stop);
    if (st) return st;
    std::sort(t.begin(), t.end());
    *seconds = t[t.size() / 2];
    return UCXDT_OK;
}

// `rows` runs of `block` bytes, `stride` bytes apart: the plans the calibration times.
Plan strided_plan(int64_t rows, int64_t block, int64_t stride) {
    Plan p;
    p.cls = UCXDT_PLAN_STRIDED;
    p.packed_size = rows * block;
    p.block_len = p.unit_size = block;
    p.dims = {{rows, stride}};
    return p;
}

// Packing into and unpacking out of page-locked host memory (host staging): both methods cross
// the host link, where a 2-D copy pays about 2 ns a row, 16 times its row cost within the GPU (in
// the host-staged rendezvous 32,768 rows of 8 B took 69 us a message), and a kernel a larger fixed
// cost than a copy (4 KiB vectors, 2 x H200: 27.5-29.2 us one way by kernel, 20.8-21.7 by copy,
// UCP's contiguous 19.4-20.2). Two sizes of each method separate the fixed cost from the
// bandwidth, and two row widths of the copy its row cost; each direction is timed, a kernel's
// reads of the host waiting where its writes do not. Left unmeasured (0) when no page-locked
// memory comes.
ucxdt_status_t calibrate_host(cudaStream_t stream, char *src, CopyCosts *c) {
    constexpr int64_t kSmall = 64 << 10, kLarge = 256 << 10, kWide = 4096, kNarrow = 16;
    char *host = nullptr;
    if (cudaHostAlloc(reinterpret_cast<void **>(&host), kLarge, cudaHostAllocPortable) != cudaSuccess) {
        cudaGetLastError();
        return UCXDT_OK;
    }
    // pack: device rows -> packed host bytes; else the reverse, the kernel reading the host.
    auto copy2d = [&](int64_t bytes, int64_t row, bool pack) {
        const size_t width = static_cast<size_t>(row), rows = static_cast<size_t>(bytes / row);
        return check(pack ? cudaMemcpy2DAsync(host, width, src, 2 * width, width, rows, cudaMemcpyDeviceToHost, stream)
                          : cudaMemcpy2DAsync(src, 2 * width, host, width, width, rows, cudaMemcpyHostToDevice, stream),
                     "cudaMemcpy2DAsync (calibration)");
    };
    auto kernel = [&](int64_t bytes, bool pack) {
        const Plan p = strided_plan(bytes / kNarrow, kNarrow, 2 * kNarrow);
        return launch_plan_kernel(p, src, host, 0, bytes, pack, stream, true);
    };
    CopyCosts::HostLink links[2];
    ucxdt_status_t st = UCXDT_OK;
    for (const bool pack : {true, false}) {
        double t_small = 0, t_large = 0, t_narrow = 0, k_small = 0, k_large = 0;
        if (!st) st = time_median(stream, 5, [&] { return copy2d(kSmall, kWide, pack); }, &t_small);
        if (!st) st = time_median(stream, 5, [&] { return copy2d(kLarge, kWide, pack); }, &t_large);
        if (!st) st = time_median(stream, 5, [&] { return copy2d(kSmall, kNarrow, pack); }, &t_narrow);
        if (!st) st = time_median(stream, 5, [&] { return kernel(kSmall, pack); }, &k_small);
        if (!st) st = time_median(stream, 5, [&] { return kernel(kLarge, pack); }, &k_large);
        const double span = static_cast<double>(kLarge - kSmall), small = static_cast<double>(kSmall);
        CopyCosts::HostLink &l = links[pack ? 0 : 1];
        l.copy_byte_seconds = std::max(0.0, (t_large - t_small) / span);
        l.row_seconds = std::max(0.0, (t_narrow - t_small) / static_cast<double>(kSmall / kNarrow - kSmall / kWide));
        l.copy_seconds =
            std::max(0.0, t_small - small * l.copy_byte_seconds - static_cast<double>(kSmall / kWide) * l.row_seconds);
        l.kernel_byte_seconds = std::max(0.0, (k_large - k_small) / span);
        l.kernel_seconds = std::max(0.0, k_small - small * l.kernel_byte_seconds);
    }
    cudaFreeHost(host);
    if (st) return st;
    c->to_host = links[0];
    c->from_host = links[1];
    return UCXDT_OK;
}

ucxdt_status_t calibrate(int device, CopyCosts *c) {
    DeviceGuard guard(device);
    if (ucxdt_status_t st = guard.status()) return st;
    cudaStream_t stream;
    if (ucxdt_status_t st = internal_stream(device, &stream)) return st;
    constexpr int64_t kBytes = 8 << 20;
    char *src = nullptr, *dst = nullptr;
    if (ucxdt_status_t st = check(cudaMalloc(&src, 2 * kBytes), "cudaMalloc (calibration)"))
        return st;
    ucxdt_status_t st = check(cudaMalloc(&dst, kBytes), "cudaMalloc (calibration)");
    // Two shapes of the same bytes separate the per-row cost from the bandwidth. The narrow
    // rows must be short enough that rows, not bytes, bound the copy: on an H200, 8 MiB as
    // 8,192 rows of 1 KiB copies as fast as 64 wide rows (the fitted row cost was 0 +- 0.1 ns,
    // noise), while as 32-byte rows it takes three times as long (0.12 ns a row).
    const int64_t wide_rows = 64, narrow_rows = kBytes / 32, kernel_rows = 8192;
    double t_wide = 0, t_narrow = 0, t_kernel = 0;
    auto copy2d = [&](int64_t rows) {
        const int64_t w = kBytes / rows;
        return check(cudaMemcpy2DAsync(dst, w, src, 2 * w, w, rows, cudaMemcpyDeviceToDevice,
                                       stream),
                     "cudaMemcpy2DAsync (calibration)");
    };
    if (!st) st = time_median(stream, 5, [&] { return copy2d(wide_rows); }, &t_wide);
    if (!st) st = time_median(stream, 5, [&] { return copy2d(narrow_rows); }, &t_narrow);
    if (!st) {
        const Plan p = strided_plan(kernel_rows, kBytes / kernel_rows, 2 * kBytes / kernel_rows);
        st = time_median(stream, 5, [&] {
            return launch_plan_kernel(p, src, dst, 0, kBytes, true, stream);
        }, &t_kernel);
    }
    // A pipeline fragment pays each of its GPU operations from the CPU's side: the launch, the
    // event, and the polls until the event is seen done. Timed by the host clock on a kernel of
    // 256 bytes, whose GPU time is negligible.
    std::vector<double> op;
    cudaEvent_t done = nullptr;
    if (!st) st = check(cudaEventCreateWithFlags(&done, cudaEventDisableTiming), "cudaEventCreate");
    const Plan tiny = strided_plan(32, 8, 16);
    for (int i = 0; i < 12 && !st; ++i) {
        const auto t0 = std::chrono::steady_clock::now();
        st = launch_plan_kernel(tiny, src, dst, 0, tiny.packed_size, true, stream);
        if (!st) st = check(cudaEventRecord(done, stream), "cudaEventRecord");
        cudaError_t q = cudaErrorNotReady;
        while (!st && (q = cudaEventQuery(done)) == cudaErrorNotReady) {}
        if (!st) st = check(q, "cudaEventQuery");
        if (i > 0) op.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    }
    if (done) cudaEventDestroy(done);
    // Without the host link's costs (calibrate_host sets them only once every timing succeeded)
    // the device model decides there: not a failure of the device.
    if (!st && calibrate_host(stream, src, c)) clear_error();
    cudaFree(src);
    cudaFree(dst);
    if (st) return st;
    std::sort(op.begin(), op.end());
    c->op_seconds = op[op.size() / 2];
    c->row_seconds = std::max(0.0, (t_narrow - t_wide) / double(narrow_rows - wide_rows));
    c->copy_bytes_per_s = kBytes / std::max(1e-9, t_wide - wide_rows * c->row_seconds);
    c->kernel_bytes_per_s = kBytes / std::max(1e-9, t_kernel);
    return UCXDT_OK;
}

}  // namespace

ucxdt_status_t device_costs(int device, CopyCosts *out) {
    // A failure is kept too: callers on every send must not calibrate again and again.
    struct Measured {
        ucxdt_status_t status;
        CopyCosts costs;
        std::string error;
    };
    static std::mutex mutex;
    static std::map<int, Measured> measured;  // never erased: its entries stay where they are
    // Each thread keeps its last device's entry: no lock on every send to the same GPU.
    thread_local int last_device = -1;
    thread_local const Measured *last = nullptr;
    if (device != last_device) {
        std::lock_guard lock(mutex);
        auto it = measured.find(device);
        if (it == measured.end()) {
            Measured m{};
            m.status = calibrate(device, &m.costs);
            if (m.status) m.error = std::string("calibration of the GPU's copy methods: ") + ucxdt_last_error();
            it = measured.emplace(device, m).first;
        }
        last = &it->second;
        last_device = device;
    }
    if (last->status) return fail(last->status, last->error.c_str());
    *out = last->costs;
    return UCXDT_OK;
}

namespace {

// Enqueueing one copy or kernel on the CPU (performance-log.md, run 17: 1.6-3.4 us).
constexpr double kCallSeconds = 2e-6;

}  // namespace

ucxdt_status_t choose_method(const Plan &p, int device, Packed where, ucxdt_gpu_method_t *method, bool batched,
                             bool pack) {
    switch (p.cls) {
    case UCXDT_PLAN_CONTIGUOUS: *method = UCXDT_GPU_METHOD_COPY_ENGINE; return UCXDT_OK;
    case UCXDT_PLAN_BLOCK_LIST:
        *method = list_outweighs_data(p) ? UCXDT_GPU_METHOD_POINT_KERNEL
                                         : UCXDT_GPU_METHOD_UNIT_KERNEL;
        return UCXDT_OK;
    case UCXDT_PLAN_STRIDED: break;
    }
    *method = UCXDT_GPU_METHOD_STRIDED_KERNEL;
    // The 2-D copy engine takes the innermost strided level when its rows do not overlap, one
    // call per index of the outer levels.
    if (p.dims.back().stride < p.block_len) return UCXDT_OK;
    int64_t calls = 1;
    for (size_t k = 0; k + 1 < p.dims.size(); ++k) calls *= p.dims[k].count;
    static const char *force = std::getenv("UCXDT_GPU_METHOD");
    if (force && std::strcmp(force, "kernel") == 0) return UCXDT_OK;
    if (force && std::strcmp(force, "copy") == 0) {
        *method = UCXDT_GPU_METHOD_COPY_ENGINE_2D;
        return UCXDT_OK;
    }
    // Without a call cost in the local model, outer levels stay with the kernel there.
    const bool peer = where == Packed::peer;
    if (!peer && calls > 1) return UCXDT_OK;
    CopyCosts c;
    if (ucxdt_status_t st = device_costs(device, &c)) return st;
    const double bytes = static_cast<double>(p.packed_size);
    if (peer) {
        // The link, not the device, bounds both methods, and the copy engines drive it best: on
        // two H200s over NVLink, 2-D copies of V (32 KB rows) into and out of the peer's memory
        // reached 0.99-1.0 of a contiguous copy, strided kernels 0.92-0.93 (performance-log.md,
        // run 12). The engine works on the next row while the link carries the last, so the copy
        // keeps up as long as a row's cost is below its time on the link (the fastest known,
        // NVLink 4 at 450 GB/s one way, is the strictest bound); short rows go to the kernel.
        // With the H200's 0.12 ns a row the bound falls near 52-byte rows (performance-log.md,
        // run 17: in the rendezvous, 1 MiB of 8-byte rows moved at 90-98 GB/s by kernel and 22
        // by copy engine; of 64-byte rows at 114 and 156). Each outer index past the first
        // costs one more call (about 2 us of enqueueing on the CPU). The first is the extra one:
        // batched, the copy's call on top of a kernel launch already paid; alone, the kernel's
        // launch, which costs about a call more than a copy's (a lone 4 KiB vector pulled from a
        // peer H200, host call to event seen done: 10.7 us by kernel, 8.4 by 2-D copy).
        const double rows = static_cast<double>(p.dims.back().count) * static_cast<double>(calls);
        const double first_call_copy = batched ? kCallSeconds : 0, first_call_kernel = batched ? 0 : kCallSeconds;
        if (first_call_copy + rows * c.row_seconds + static_cast<double>(calls - 1) * kCallSeconds <
            first_call_kernel + bytes / kFastestPeerLinkBytesPerS)
            *method = UCXDT_GPU_METHOD_COPY_ENGINE_2D;
        return UCXDT_OK;
    }
    const auto rows = static_cast<double>(p.dims[0].count);
    const CopyCosts::HostLink &link = pack ? c.to_host : c.from_host;
    if (where == Packed::host && link.measured()) {
        // Across the host link the GPU's time decides, a kernel's fixed cost being mostly there,
        // and each direction has its own costs: a kernel's reads wait for the link, its writes do
        // not. Batched, that fixed cost is shared with the launch's other copies or hidden behind
        // running work, while each copy still costs its call on the CPU, which in a window of
        // small messages bounds the rate (performance-log.md, run 24).
        const double t_copy = (batched ? kCallSeconds : 0) + link.copy_seconds + bytes * link.copy_byte_seconds +
                              rows * link.row_seconds;
        const double t_kernel = (batched ? 0 : link.kernel_seconds) + bytes * link.kernel_byte_seconds;
        if (t_copy < t_kernel) *method = UCXDT_GPU_METHOD_COPY_ENGINE_2D;
        return UCXDT_OK;
    }
    const double t_copy = (batched ? kCallSeconds : 0) + rows * c.row_seconds + bytes / c.copy_bytes_per_s;
    const double t_kernel = bytes / c.kernel_bytes_per_s;
    if (t_copy < t_kernel) *method = UCXDT_GPU_METHOD_COPY_ENGINE_2D;
    return UCXDT_OK;
}

}  // namespace ucxdt::cuda
