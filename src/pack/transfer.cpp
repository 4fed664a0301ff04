#include "pack/transfer.hpp"

#include "base/address.hpp"
#include "dt/cpu_engine.hpp"
#include "base/error.hpp"
#include "cuda/cuda_check.hpp"
#include "cuda/gpu_engine.hpp"
#include "cuda/memory_type.hpp"
#include "cuda/resources.hpp"

#include <algorithm>

namespace ucxdt {

namespace {

using cuda::MemoryType;

bool gpu_accessible(MemoryType m) { return m != MemoryType::HOST; }

// Pageable packed buffer, layout on the GPU: the kernel packs chunks into device staging and
// the copy engine moves each to the host (and the reverse for unpack).
ucxdt_status_t via_device_staging(const Plan &p, char *layout, char *packed, int64_t offset,
                                  int64_t length, bool pack, int device, cudaStream_t stream) {
    cuda::Staging staging(device);
    if (ucxdt_status_t st = staging.status()) return st;
    char *buf = staging.device_buffer();
    for (int64_t done = 0; done < length;) {
        const int64_t n = std::min(staging.bytes(), length - done);
        ucxdt_status_t st = UCXDT_OK;
        if (pack) {
            st = cuda::transfer_async(p, layout, buf, offset + done, n, true, device, stream);
            if (!st) st = cuda::check(cudaMemcpyAsync(packed + done, buf, n, cudaMemcpyDefault, stream),
                                      "cudaMemcpyAsync (device staging to host)");
        } else {
            st = cuda::check(cudaMemcpyAsync(buf, packed + done, n, cudaMemcpyDefault, stream),
                             "cudaMemcpyAsync (host to device staging)");
            if (!st) st = cuda::transfer_async(p, layout, buf, offset + done, n, false, device, stream);
        }
        // The next chunk reuses the staging buffer, and the pageable side may go out of scope.
        if (!st) st = cuda::check(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
        if (st) return st;
        done += n;
    }
    return UCXDT_OK;
}

// Pageable layout buffer, packed buffer on the GPU: the CPU engine packs chunks into pinned
// staging and the copy engine moves each to the device (and the reverse for unpack).
ucxdt_status_t via_host_staging(const Plan &p, char *layout, char *packed, int64_t offset,
                                int64_t length, bool pack, int device, cudaStream_t stream) {
    cuda::Staging staging(device);
    if (ucxdt_status_t st = staging.status()) return st;
    char *buf = staging.host_buffer();
    for (int64_t done = 0; done < length;) {
        const int64_t n = std::min(staging.bytes(), length - done);
        ucxdt_status_t st;
        if (pack) {
            cpu::pack(p, layout, offset + done, n, buf);
            st = cuda::check(cudaMemcpyAsync(packed + done, buf, n, cudaMemcpyDefault, stream),
                             "cudaMemcpyAsync (host staging to device)");
            if (!st) st = cuda::check(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
        } else {
            st = cuda::check(cudaMemcpyAsync(buf, packed + done, n, cudaMemcpyDefault, stream),
                             "cudaMemcpyAsync (device to host staging)");
            if (!st) st = cuda::check(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
            if (!st) cpu::unpack(p, layout, offset + done, n, buf);
        }
        if (st) return st;
        done += n;
    }
    return UCXDT_OK;
}

}  // namespace

int layout_gpu(const Plan &p, const void *buf) {
    if (p.packed_size == 0) return -1;  // no data byte to look at
    int device = -1;
    return cuda::is_gpu(cuda::memory_type(at(buf, first_data_byte(p)), &device)) ? device : -1;
}

ucxdt_status_t transfer(const Plan &p, char *layout, char *packed, int64_t offset, int64_t length,
                        bool pack, const cudaStream_t *stream, bool peer) {
    if (length == 0) return UCXDT_OK;
    // The layout side is classified by its first data byte: the buffer pointer may be NULL
    // with absolute displacements (MPI_BOTTOM), and the plan's origin need not be in memory.
    int dev_l = -1, dev_p = -1;
    const MemoryType ml = cuda::memory_type(at(layout, first_data_byte(p)), &dev_l);
    const MemoryType mp = cuda::memory_type(packed, &dev_p);
    if (!stream && !cuda::is_gpu(ml) && !cuda::is_gpu(mp)) {
        if (pack) cpu::pack(p, layout, offset, length, packed);
        else cpu::unpack(p, layout, offset, length, packed);
        return UCXDT_OK;
    }
    if (stream && (!gpu_accessible(ml) || !gpu_accessible(mp)))
        return fail(UCXDT_ERR_UNSUPPORTED,
                    std::string(gpu_accessible(ml) ? "the packed buffer" : "the layout buffer") +
                        " is pageable host memory, which stream-ordered calls cannot use "
                        "(register it with cudaHostRegister, or use the synchronous call)");
    int device = cuda::is_gpu(ml) ? dev_l : cuda::is_gpu(mp) ? dev_p : -1;
    if (device < 0)
        if (ucxdt_status_t st = cuda::check(cudaGetDevice(&device), "cudaGetDevice")) return st;
    // The layout on one GPU and the packed bytes on another: a peer transfer over the link.
    peer = peer || (cuda::is_gpu(ml) && cuda::is_gpu(mp) && dev_l != dev_p);
    cuda::DeviceGuard guard(device);
    if (ucxdt_status_t st = guard.status()) return st;
    if (stream)  // packed classified above: no second pointer query
        return cuda::transfer_async(p, layout, packed, offset, length, pack, device, *stream,
                                    cuda::packed_side(p, mp, peer));

    cudaStream_t internal;
    if (ucxdt_status_t st = cuda::internal_stream(device, &internal)) return st;
    if (!gpu_accessible(mp))
        return via_device_staging(p, layout, packed, offset, length, pack, device, internal);
    if (!gpu_accessible(ml))
        return via_host_staging(p, layout, packed, offset, length, pack, device, internal);
    if (ucxdt_status_t st = cuda::transfer_async(p, layout, packed, offset, length, pack, device,
                                                 internal, peer))
        return st;
    return cuda::check(cudaStreamSynchronize(internal), "cudaStreamSynchronize");
}

ucxdt_status_t transfer_on_gpu(const Plan &p, char *layout, char *packed, int64_t offset, int64_t length,
                               bool pack, int device, cudaStream_t stream, bool peer, cuda::LaunchBatch *batch) {
    if (length == 0) return UCXDT_OK;
    cuda::DeviceGuard guard(device);
    if (ucxdt_status_t st = guard.status()) return st;
    return cuda::transfer_async(p, layout, packed, offset, length, pack, device, stream, peer, batch);
}

}  // namespace ucxdt
