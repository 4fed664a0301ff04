#include "staging_pool.hpp"

#include "error.hpp"
#include "uct_cuda/cuda_check.hpp"

#include <cstdlib>
#include <new>

namespace ucxdt::rndv {

ucxdt_status_t StagingPool::create(ucp_context_h ctx, int device, int slots, int64_t slot_bytes,
                                   StagingPool **out) {
    auto *p = new (std::nothrow) StagingPool;
    if (!p) return fail(UCXDT_ERR_NO_MEMORY, "allocation failed");
    p->ctx_ = ctx;
    p->device_ = device;
    p->slot_bytes_ = slot_bytes;
    const int64_t bytes = slot_bytes * slots;
    if (device < 0) {
        p->base_ = static_cast<char *>(std::aligned_alloc(4096, static_cast<size_t>(bytes)));
        if (!p->base_) {
            delete p;
            return fail(UCXDT_ERR_NO_MEMORY, "staging: cannot allocate " + std::to_string(bytes) + " bytes");
        }
        // Page-locked when a GPU is present, so that GPU layouts pack into it with zero copy;
        // without one (or if it fails) it stays pageable and GPU transfers stage through the
        // synchronous path.
        int gpus = 0;
        if (cudaGetDeviceCount(&gpus) == cudaSuccess && gpus > 0)
            p->registered_ = cudaHostRegister(p->base_, static_cast<size_t>(bytes), cudaHostRegisterPortable) == cudaSuccess;
        cudaGetLastError();
    } else {
        cuda::DeviceGuard guard(device);
        ucxdt_status_t st = guard.status();
        if (!st) st = cuda::check(cudaMalloc(reinterpret_cast<void **>(&p->base_), static_cast<size_t>(bytes)), "cudaMalloc (staging)");
        if (st) {
            p->base_ = nullptr;
            delete p;
            return st;
        }
    }
    ucp_mem_map_params_t mp{};
    mp.field_mask = UCP_MEM_MAP_PARAM_FIELD_ADDRESS | UCP_MEM_MAP_PARAM_FIELD_LENGTH |
                    UCP_MEM_MAP_PARAM_FIELD_MEMORY_TYPE;
    mp.address = p->base_;
    mp.length = static_cast<size_t>(bytes);
    mp.memory_type = device < 0 ? UCS_MEMORY_TYPE_HOST : UCS_MEMORY_TYPE_CUDA;
    ucs_status_t us = ucp_mem_map(ctx, &mp, &p->memh_);
    void *rkey = nullptr;
    size_t rkey_len = 0;
    if (us == UCS_OK) us = ucp_rkey_pack(ctx, p->memh_, &rkey, &rkey_len);
    if (us != UCS_OK) {
        delete p;
        return fail(UCXDT_ERR_UCX, std::string("staging registration: ") + ucs_status_string(us));
    }
    p->rkey_.assign(static_cast<char *>(rkey), static_cast<char *>(rkey) + rkey_len);
    ucp_rkey_buffer_release(rkey);
    for (int i = slots - 1; i >= 0; --i) p->free_.push_back(i);
    *out = p;
    return UCXDT_OK;
}

StagingPool::~StagingPool() {
    if (memh_) ucp_mem_unmap(ctx_, memh_);
    if (!base_) return;
    if (device_ < 0) {
        if (registered_) cudaHostUnregister(base_);
        std::free(base_);
    } else {
        cuda::DeviceGuard guard(device_);
        cudaFree(base_);
    }
}

std::vector<int> StagingPool::take(int want) {
    std::vector<int> got;
    while (static_cast<int>(got.size()) < want && !free_.empty()) {
        got.push_back(free_.back());
        free_.pop_back();
    }
    return got;
}

}  // namespace ucxdt::rndv
