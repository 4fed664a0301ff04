// What the one-sided tests share: a registered region of one worker of a pair and its remote
// key on the other.
#pragma once

#include "harness/rndv_support.hpp"
#include "ucp_rma/rma.hpp"

#include <ucxdt/ucxdt_rma.h>

#include <cstdint>
#include <string>

namespace ucxdt::testing {

using namespace ucxdt::support;  // the harness and its tests speak support/'s descriptions

/// The one-sided layer of a ucxdt worker (its only extension, made by its first one-sided call
/// or registration), for its counters and state.
inline const ucxdt::rma::Rma &rma_of(ucxdt_worker_h w) {
    const auto &x = reinterpret_cast<const ucxdt::rndv::Worker *>(w)->extensions;
    return *static_cast<const ucxdt::rma::Rma *>(x.at(0).get());
}

/// [base, base + length) of worker w[1] registered for the other worker, its rkey unpacked on
/// ep[0]; `error` says what failed, if anything.
class Region {
public:
    Region(RndvPair &p, void *base, size_t length) {
        ucxdt_mem_map_params_t mp{};
        mp.field_mask = UCXDT_MEM_MAP_PARAM_FIELD_ADDRESS | UCXDT_MEM_MAP_PARAM_FIELD_LENGTH;
        mp.address = base;
        mp.length = length;
        if (ucxdt_mem_map(p.w[1], &mp, &mem_) != UCXDT_OK) {
            error = std::string("ucxdt_mem_map: ") + ucxdt_last_error();
            return;
        }
        if (ucxdt_rkey_pack(mem_, &packed_, &size_) != UCXDT_OK) {
            error = std::string("ucxdt_rkey_pack: ") + ucxdt_last_error();
            return;
        }
        if (ucxdt_ep_rkey_unpack(p.ep[0], packed_, size_, &rkey) != UCXDT_OK)
            error = std::string("ucxdt_ep_rkey_unpack: ") + ucxdt_last_error();
    }
    ~Region() {
        ucxdt_rkey_destroy(rkey);
        if (packed_) ucxdt_rkey_buffer_release(packed_);
        ucxdt_mem_unmap(mem_);
    }
    Region(const Region &) = delete;
    Region &operator=(const Region &) = delete;
    const void *packed_rkey() const { return packed_; }
    size_t packed_size() const { return size_; }

    ucxdt_rkey_h rkey = nullptr;
    std::string error;

private:
    ucxdt_mem_h mem_ = nullptr;
    void *packed_ = nullptr;
    size_t size_ = 0;
};

inline uint64_t addr(const void *p) { return reinterpret_cast<uint64_t>(p); }

}  // namespace ucxdt::testing
