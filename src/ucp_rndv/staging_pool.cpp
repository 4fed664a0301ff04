#include "ucp_rndv/staging_pool.hpp"

#include "ucp_rndv/packed_rkey.hpp"

#include "base/error.hpp"
#include "cuda/topology.hpp"

#include <cuda_runtime_api.h>

#include <cstdlib>
#include <new>
#include <string>

namespace ucxdt::rndv {

ucxdt_status_t StagingPool::create(ucp_context_h ctx, int slots, int64_t slot_bytes, int near_gpu,
                                   StagingPool **out) {
    auto *p = new (std::nothrow) StagingPool;
    if (!p) return fail(UCXDT_ERR_NO_MEMORY, "allocation failed");
    p->ctx_ = ctx;
    p->slot_bytes_ = slot_bytes;
    p->bytes_ = slot_bytes * slots;
    const auto bytes = static_cast<size_t>(p->bytes_);
    // UCP allocates the region where it can (UCX_ALLOC_PRIO: System V or POSIX shared memory
    // first, when such a transport is enabled), so that a receiver on this node can map it and
    // unpack from it in place (PeerStaging); else ordinary pages, registered by address.
    ucp_mem_map_params_t mp{};
    mp.field_mask = UCP_MEM_MAP_PARAM_FIELD_ADDRESS | UCP_MEM_MAP_PARAM_FIELD_LENGTH |
                    UCP_MEM_MAP_PARAM_FIELD_FLAGS | UCP_MEM_MAP_PARAM_FIELD_MEMORY_TYPE;
    mp.address = nullptr;
    mp.length = bytes;
    mp.flags = UCP_MEM_MAP_ALLOCATE;
    mp.memory_type = UCS_MEMORY_TYPE_HOST;
    ucp_mem_attr_t attr{};
    attr.field_mask = UCP_MEM_ATTR_FIELD_ADDRESS;
    if (ucp_mem_map(ctx, &mp, &p->memh_) == UCS_OK) {
        if (ucp_mem_query(p->memh_, &attr) == UCS_OK) p->base_ = static_cast<char *>(attr.address);
        else ucp_mem_unmap(ctx, p->memh_), p->memh_ = nullptr;
    }
    if (!p->base_) {
        p->base_ = p->owned_ = static_cast<char *>(std::aligned_alloc(4096, bytes));
        if (!p->base_) {
            delete p;
            return fail(UCXDT_ERR_NO_MEMORY, "staging: cannot allocate " + std::to_string(bytes) + " bytes");
        }
    }
    // Bound before anything touches the pages. Without a GPU (or if it fails) the region stays
    // pageable, and GPU layouts stage through the synchronous path.
    int gpus = 0;
    if (near_gpu >= 0) p->numa_bound_ = cuda::bind_near_gpu(p->base_, bytes, near_gpu);
    if (cudaGetDeviceCount(&gpus) == cudaSuccess && gpus > 0) {
        // UCX's cuda_copy may have page-locked what UCP allocated (it registers host memory).
        const cudaError_t e = cudaHostRegister(p->base_, bytes, cudaHostRegisterPortable);
        p->registered_ = e == cudaSuccess;
        p->page_locked_ = p->registered_ || e == cudaErrorHostMemoryAlreadyRegistered;
    }
    cudaGetLastError();
    ucs_status_t us = UCS_OK;
    if (!p->memh_) {
        mp.field_mask &= ~static_cast<uint64_t>(UCP_MEM_MAP_PARAM_FIELD_FLAGS);
        mp.address = p->base_;
        us = ucp_mem_map(ctx, &mp, &p->memh_);
    }
    if (us == UCS_OK) us = packed_rkey(ctx, p->memh_, &p->rkey_);
    if (us != UCS_OK) {
        delete p;
        return fail(UCXDT_ERR_UCX, std::string("staging registration: ") + ucs_status_string(us));
    }
    p->free_.reset(slots, staging_level(slot_bytes, 0));
    *out = p;
    return UCXDT_OK;
}

StagingPool::~StagingPool() {
    if (registered_) cudaHostUnregister(base_);
    if (memh_) ucp_mem_unmap(ctx_, memh_);  // frees the region when UCP allocated it
    std::free(owned_);
}

}  // namespace ucxdt::rndv
