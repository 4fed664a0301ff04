// The C entry points of include/ucxdt/ucxdt_rma.h: registration, remote keys, and the calls
// that start puts, gets and flushes.
#include "ucp_rma/rma.hpp"

#include "base/error.hpp"
#include "dt/api_util.hpp"
#include "ucp_rndv/packed_rkey.hpp"
#include "cuda/memory_type.hpp"

#include <cstring>
#include <string>

using namespace ucxdt;
using namespace ucxdt::rma;
using rndv::Request;

namespace {

// A request of the worker carrying a one-sided operation's state.
Request *new_op(rndv::Worker *w, bool put, bool flush, const ucxdt_request_param_t *param) {
    Request *r = w->new_request(true, param);
    auto op = std::make_unique<Op>();
    op->rma = &Rma::of(w);
    op->put = put;
    op->flush = flush;
    r->ext = std::move(op);
    return r;
}

ucxdt_status_ptr_t start_op(ucxdt_ep_h ep, bool put, void *origin, int64_t origin_count, ucxdt_type_t origin_type,
                            uint64_t remote, ucxdt_rkey_h rkey, int64_t target_count, ucxdt_type_t target_type,
                            const ucxdt_request_param_t *param) {
    if (!ep) return rndv::error_ptr(fail(UCXDT_ERR_INVALID_PARAM, "ep must not be NULL"));
    if (!rkey || rkey->ep != ep)
        return rndv::error_ptr(fail(UCXDT_ERR_INVALID_PARAM, "rkey must be a remote key unpacked on this ep"));
    rndv::Worker *w = ep->worker;
    rndv::WorkerLock lock(w);
    Request *r = new_op(w, put, false, param);
    Op *op = static_cast<Op *>(r->ext.get());
    const ucxdt_status_t st = guard([&]() -> ucxdt_status_t {
        if (ucxdt_status_t e = rndv::check_flags(r, 0)) return e;
        if (ucxdt_status_t e = rndv::prepare(r, origin, origin_count, origin_type)) return e;
        r->ep = ep;
        if (target_count < 0) return fail(UCXDT_ERR_INVALID_PARAM, "target_count must be >= 0");
        std::shared_ptr<Type> t;
        if (ucxdt_status_t e = resolve(target_type, "target_type", &t)) return e;
        if (ucxdt_status_t e = require_committed(*t, "target_type")) return e;
        if (ucxdt_status_t e = get_plan(*t, target_count, &op->target)) return e;
        // MPI-4.1 12.3: the origin and target type signatures must match. Both types are resolved
        // here already: the handle table is not asked again.
        const Signature so = Signature::repeat(r->type->signature, origin_count), sd = Signature::repeat(t->signature, target_count);
        if (!(so == sd) || r->packed != op->target->packed_size)
            return fail(UCXDT_ERR_TYPE_MISMATCH, "the origin and target type signatures differ");
        if (ucxdt_status_t e = op->rma->start(r, *rkey, remote)) return e;
        if (r->packed == 0) w->complete(r, UCXDT_OK);
        return UCXDT_OK;
    });
    if (st) w->complete(r, st);
    return w->hand_out(r);
}

ucxdt_status_ptr_t start_flush(rndv::Worker *w, rndv::Ep *ep, const ucxdt_request_param_t *param) {
    rndv::WorkerLock lock(w);
    Request *r = new_op(w, false, true, param);
    r->ep = ep;
    if (const ucxdt_status_t e = rndv::check_flags(r, 0)) w->complete(r, e);
    else Rma::of(w).start_flush(r, ep);
    return w->hand_out(r);
}

}  // namespace

extern "C" {

ucxdt_status_t ucxdt_mem_map(ucxdt_worker_h worker, const ucxdt_mem_map_params_t *params, ucxdt_mem_h *memh) {
    rndv::WorkerLock lock(worker);
    return guard([&]() -> ucxdt_status_t {
        if (!worker || !params || !memh) return fail(UCXDT_ERR_INVALID_PARAM, "worker, params and memh must not be NULL");
        const uint64_t need = UCXDT_MEM_MAP_PARAM_FIELD_ADDRESS | UCXDT_MEM_MAP_PARAM_FIELD_LENGTH;
        if ((params->field_mask & need) != need || !params->address || params->length == 0)
            return fail(UCXDT_ERR_INVALID_PARAM, "params must give a non-null address and a length > 0");
        auto m = std::make_unique<ucxdt_mem>();
        m->worker = worker;
        m->address = static_cast<char *>(params->address);
        m->length = params->length;
        m->device = cuda::memory_type(m->address) == cuda::MemoryType::DEVICE;
        if (m->device) {
            // The peer maps the allocation: it must hold the whole region.
            if (cuda::ipc_export(m->address, &m->ipc) == UCXDT_OK) {
                if (m->ipc.offset + m->length > m->ipc.alloc_bytes)
                    return fail(UCXDT_ERR_INVALID_PARAM, "a device region must lie inside one allocation");
                m->has_ipc = true;
            } else {
                clear_error();  // a pool allocation: no CUDA IPC, and so no one-sided access
            }
        }
        // Device regions are reached through CUDA IPC, UCP's RMA where the UCX moves device
        // memory (ucxdt_rma.h) or the target-unpack path: UCP registers them only for the second.
        Rma::of(worker).add_region(m.get());
        if (m->device && !rndv::ucp_rma_on_device()) {
            *memh = m.release();
            return UCXDT_OK;
        }
        ucp_mem_map_params_t mp{};
        mp.field_mask = UCP_MEM_MAP_PARAM_FIELD_ADDRESS | UCP_MEM_MAP_PARAM_FIELD_LENGTH;
        mp.address = m->address;
        mp.length = m->length;
        if (ucs_status_t us = ucp_mem_map(worker->ucp_context, &mp, &m->memh); us != UCS_OK) {
            Rma::of(worker).forget_region(m.get());
            return fail(UCXDT_ERR_UCX, std::string("ucp_mem_map: ") + ucs_status_string(us));
        }
        *memh = m.release();
        return UCXDT_OK;
    });
}

void ucxdt_mem_unmap(ucxdt_mem_h memh) {
    if (!memh) return;
    rndv::WorkerLock lock(memh->worker);
    Rma::of(memh->worker).forget_region(memh);
    if (memh->memh) ucp_mem_unmap(memh->worker->ucp_context, memh->memh);
    delete memh;
}

ucxdt_status_t ucxdt_rkey_pack(ucxdt_mem_h memh, void **rkey_buffer, size_t *size) {
    return guard([&]() -> ucxdt_status_t {
        if (!memh || !rkey_buffer || !size) return fail(UCXDT_ERR_INVALID_PARAM, "memh, rkey_buffer and size must not be NULL");
        std::vector<char> ucp_key;
        if (memh->memh)
            if (ucs_status_t us = rndv::packed_rkey(memh->worker->ucp_context, memh->memh, &ucp_key); us != UCS_OK)
                return fail(UCXDT_ERR_UCX, std::string("packing the UCP remote key: ") + ucs_status_string(us));
        const size_t ucp_len = ucp_key.size();
        RkeyWire k{};
        k.magic = RkeyWire::kMagic;
        k.version = RkeyWire::kVersion;
        k.device = memh->device ? 1 : 0;
        k.address = reinterpret_cast<uint64_t>(memh->address);
        k.length = memh->length;
        k.node = memh->worker->node;
        k.worker_uuid = memh->worker->uuid;
        k.process = memh->worker->process;
        k.has_ipc = memh->has_ipc && memh->worker->cfg.ipc ? 1 : 0;
        k.ipc = memh->ipc;
        k.ucp_rkey_bytes = ucp_len;
        auto *out = static_cast<char *>(std::malloc(sizeof k + ucp_len));
        if (out) {
            std::memcpy(out, &k, sizeof k);
            if (ucp_len) std::memcpy(out + sizeof k, ucp_key.data(), ucp_len);
        }
        if (!out) return fail(UCXDT_ERR_NO_MEMORY, "rkey buffer");
        *rkey_buffer = out;
        *size = sizeof k + ucp_len;
        return UCXDT_OK;
    });
}

void ucxdt_rkey_buffer_release(void *rkey_buffer) { std::free(rkey_buffer); }

ucxdt_status_t ucxdt_ep_rkey_unpack(ucxdt_ep_h ep, const void *rkey_buffer, size_t size, ucxdt_rkey_h *rkey) {
    rndv::WorkerLock lock(ep ? ep->worker : nullptr);
    return guard([&]() -> ucxdt_status_t {
        if (!ep || !rkey_buffer || !rkey) return fail(UCXDT_ERR_INVALID_PARAM, "ep, rkey_buffer and rkey must not be NULL");
        RkeyWire k{};
        if (size < sizeof k) return fail(UCXDT_ERR_INVALID_PARAM, "rkey_buffer is shorter than a ucxdt rkey");
        std::memcpy(&k, rkey_buffer, sizeof k);
        if (k.magic != RkeyWire::kMagic || k.version != RkeyWire::kVersion || k.ucp_rkey_bytes != size - sizeof k)
            return fail(UCXDT_ERR_INVALID_PARAM, "rkey_buffer is not a ucxdt rkey of this version");
        if (k.length == 0 || k.address + k.length < k.address)
            return fail(UCXDT_ERR_INVALID_PARAM, "rkey_buffer names an empty or wrapping region");
        auto out = std::make_unique<ucxdt_rkey>();
        out->ep = ep;
        out->wire = k;
        out->ipc = k.device && k.has_ipc &&
                   ep->worker->ipc_reaches(ep->ucp_ep, k.node, k.process, true);
        if (!k.device && k.ucp_rkey_bytes == 0)  // a device region's is there where UCP reaches it
            return fail(UCXDT_ERR_INVALID_PARAM, "rkey_buffer's host region has no UCP remote key");
        const void *ucp_part = static_cast<const char *>(rkey_buffer) + sizeof k;
        if (k.ucp_rkey_bytes)
            if (ucs_status_t us = ucp_ep_rkey_unpack(ep->ucp_ep, ucp_part, &out->ucp_rkey); us != UCS_OK)
                return fail(UCXDT_ERR_UCX, std::string("ucp_ep_rkey_unpack: ") + ucs_status_string(us));
        *rkey = out.release();
        return UCXDT_OK;
    });
}

void ucxdt_rkey_destroy(ucxdt_rkey_h rkey) {
    if (!rkey) return;
    if (rkey->ucp_rkey) ucp_rkey_destroy(rkey->ucp_rkey);
    delete rkey;
}

ucxdt_status_ptr_t ucxdt_put_nbx(ucxdt_ep_h ep, const void *origin, int64_t origin_count, ucxdt_type_t origin_type,
                                 uint64_t remote_address, ucxdt_rkey_h rkey, int64_t target_count,
                                 ucxdt_type_t target_type, const ucxdt_request_param_t *param) {
    return start_op(ep, true, const_cast<void *>(origin), origin_count, origin_type, remote_address, rkey,
                    target_count, target_type, param);
}

ucxdt_status_ptr_t ucxdt_get_nbx(ucxdt_ep_h ep, void *origin, int64_t origin_count, ucxdt_type_t origin_type,
                                 uint64_t remote_address, ucxdt_rkey_h rkey, int64_t target_count,
                                 ucxdt_type_t target_type, const ucxdt_request_param_t *param) {
    return start_op(ep, false, origin, origin_count, origin_type, remote_address, rkey, target_count, target_type,
                    param);
}

ucxdt_status_ptr_t ucxdt_ep_flush_nbx(ucxdt_ep_h ep, const ucxdt_request_param_t *param) {
    if (!ep) return rndv::error_ptr(fail(UCXDT_ERR_INVALID_PARAM, "ep must not be NULL"));
    return start_flush(ep->worker, ep, param);
}

ucxdt_status_ptr_t ucxdt_worker_flush_nbx(ucxdt_worker_h worker, const ucxdt_request_param_t *param) {
    if (!worker) return rndv::error_ptr(fail(UCXDT_ERR_INVALID_PARAM, "worker must not be NULL"));
    return start_flush(worker, nullptr, param);
}

}  // extern "C"
