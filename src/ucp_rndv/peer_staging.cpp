#include "ucp_rndv/peer_staging.hpp"

#include <cuda_runtime_api.h>

namespace ucxdt::rndv {

PeerStaging::~PeerStaging() {
    for (auto &[sender, g] : regions_) release(g);
}

void PeerStaging::release(Region &g) {
    if (g.registered) cudaHostUnregister(g.local);
    if (g.rkey) ucp_rkey_destroy(g.rkey);  // detaches the segment
    g = Region{};
}

char *PeerStaging::map(ucp_ep_h ep, uint64_t sender, uint64_t base, int64_t bytes, const std::vector<char> &rkey,
                       bool for_gpu) {
    auto it = regions_.find(sender);
    if (it != regions_.end() && (it->second.base != base || it->second.bytes != bytes)) {
        release(it->second);  // a worker keeps one region: not expected, but then map the new one
        regions_.erase(it);
        it = regions_.end();
    }
    if (it == regions_.end()) {
        Region g;
        g.base = base;
        g.bytes = bytes;
        void *local = nullptr;
        if (!rkey.empty() && ucp_ep_rkey_unpack(ep, rkey.data(), &g.rkey) == UCS_OK &&
            ucp_rkey_ptr(g.rkey, base, &local) == UCS_OK)
            g.local = static_cast<char *>(local);
        else if (g.rkey)
            ucp_rkey_destroy(g.rkey), g.rkey = nullptr;
        it = regions_.emplace(sender, g).first;
    }
    Region &g = it->second;
    if (!g.local) return nullptr;
    if (for_gpu && !g.page_locked) {
        if (g.register_failed) return nullptr;
        // Kernels read the slots with zero copy, as they read our own page-locked staging.
        const cudaError_t e = cudaHostRegister(g.local, static_cast<size_t>(g.bytes), cudaHostRegisterPortable);
        cudaGetLastError();
        g.registered = e == cudaSuccess;
        g.page_locked = g.registered || e == cudaErrorHostMemoryAlreadyRegistered;
        if (!g.page_locked) return g.register_failed = true, nullptr;
    }
    return g.local;
}

void PeerStaging::forget(uint64_t sender) {
    const auto it = regions_.find(sender);
    if (it == regions_.end()) return;
    release(it->second);
    regions_.erase(it);
}

}  // namespace ucxdt::rndv
