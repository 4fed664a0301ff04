#include "cuda/ipc.hpp"

#include "cuda/cuda_check.hpp"
#include "cuda/driver.hpp"
#include "cuda/memory_type.hpp"

#include <cuda.h>
#include <cuda_runtime_api.h>

#include <cstring>
#include <unordered_map>

namespace ucxdt::cuda {

namespace {

// Exports by allocation base; an entry is valid while the allocation there has the same
// buffer ID (a freed and reallocated range gets a new ID and a new handle).
struct ExportCache {
    std::mutex mutex;
    struct Entry {
        unsigned long long buffer_id;
        IpcRef ref;
    };
    std::unordered_map<uint64_t, Entry> by_base;
};

ExportCache &export_cache() {
    static auto *c = new ExportCache;  // never destroyed: exports may happen during exit
    return *c;
}

// The UUID of GPU `device`, which names it across processes (ordinals depend on
// CUDA_VISIBLE_DEVICES); zeros when it cannot be told.
cudaUUID_t device_uuid(int device) {
    static std::mutex mutex;
    static std::unordered_map<int, cudaUUID_t> known;
    std::lock_guard<std::mutex> lock(mutex);
    auto it = known.find(device);
    if (it == known.end()) {
        cudaDeviceProp prop{};
        if (cudaGetDeviceProperties(&prop, device) != cudaSuccess) cudaGetLastError();
        it = known.emplace(device, prop.uuid).first;
    }
    return it->second;
}

}  // namespace

ucxdt_status_t ipc_export(const void *ptr, IpcRef *ref) {
    const Driver &d = driver();
    if (!d.get_address_range || !d.pointer_attribute || !d.set_pointer_attribute)
        return fail(UCXDT_ERR_UNSUPPORTED, "CUDA IPC: the driver entry points are not available");
    CUdeviceptr base = 0;
    size_t bytes = 0;
    unsigned long long id = 0;
    const auto p = reinterpret_cast<CUdeviceptr>(ptr);
    if (d.get_address_range(&base, &bytes, p) != CUDA_SUCCESS ||
        d.pointer_attribute(&id, CU_POINTER_ATTRIBUTE_BUFFER_ID, p) != CUDA_SUCCESS)
        return fail(UCXDT_ERR_UNSUPPORTED, "CUDA IPC: not device memory of this process");
    ExportCache &c = export_cache();
    std::lock_guard<std::mutex> lock(c.mutex);
    auto it = c.by_base.find(base);
    if (it == c.by_base.end() || it->second.buffer_id != id) {
        // A peer's GPU reads or writes this memory unordered with our streams, and a synchronous
        // copy into device memory (cudaMemcpy from pageable host memory, cudaMemset) may return
        // before its bytes land ("API synchronization behavior", CUDA runtime guide): the peer
        // then moved the bytes from before it. Setting SYNC_MEMOPS waits for such copies still
        // pending and makes later ones complete before they return, as Open MPI's CUDA IPC
        // registration does. Work the application enqueued on streams stays its own to finish
        // before the call (MPI's rule for the buffer it hands over).
        const unsigned int sync_memops = 1;
        if (d.set_pointer_attribute(&sync_memops, CU_POINTER_ATTRIBUTE_SYNC_MEMOPS, base) != CUDA_SUCCESS)
            return fail(UCXDT_ERR_UNSUPPORTED, "CUDA IPC: cuPointerSetAttribute(SYNC_MEMOPS) refused this memory");
        cudaIpcMemHandle_t h{};
        const cudaError_t err = cudaIpcGetMemHandle(&h, reinterpret_cast<void *>(base));
        if (err != cudaSuccess) {
            cudaGetLastError();
            return fail(UCXDT_ERR_UNSUPPORTED, std::string("CUDA IPC: cudaIpcGetMemHandle: ") +
                                                   cudaGetErrorString(err) +
                                                   " (memory from cudaMallocAsync pools cannot be exported this way)");
        }
        ExportCache::Entry e{id, {}};
        static_assert(sizeof h == sizeof e.ref.handle);
        std::memcpy(e.ref.handle, &h, sizeof h);
        int owner = -1;
        if (memory_type(ptr, &owner) == MemoryType::DEVICE) {
            const cudaUUID_t u = device_uuid(owner);
            static_assert(sizeof u == sizeof e.ref.device_uuid);
            std::memcpy(e.ref.device_uuid, &u, sizeof u);
        }
        e.ref.base = base;
        e.ref.alloc_bytes = bytes;
        e.ref.buffer_id = id;
        it = c.by_base.insert_or_assign(base, e).first;
    }
    *ref = it->second.ref;
    ref->offset = p - base;
    return UCXDT_OK;
}

bool ipc_on_device(const IpcRef &ref, int device) {
    const cudaUUID_t u = device_uuid(device);
    return std::memcmp(&u, ref.device_uuid, sizeof u) == 0;
}

namespace {

// The mappings this process has open, by what the driver maps once per process: an exported
// allocation (its handle and buffer ID) on a device. Several ucxdt workers of one process (an MPI
// library's point-to-point and one-sided components) import the same peer memory, and the driver
// refuses a second cudaIpcOpenMemHandle of it (cudaErrorAlreadyMapped): they share the mapping,
// which closes with its last user.
struct OpenKey {
    int device;
    uint64_t buffer_id;
    std::array<char, sizeof IpcRef::handle> handle;
    bool operator<(const OpenKey &o) const {
        if (device != o.device) return device < o.device;
        return buffer_id != o.buffer_id ? buffer_id < o.buffer_id : handle < o.handle;
    }
};
struct Opened {
    void *base;
    int users;
    uint64_t ticket;                          // what its users hold: a closed mapping's address
                                              // may be the driver's again for another
    uint64_t process, peer_base, peer_bytes;  // the exporting process, its allocation's range
};
struct OpenTable {
    std::mutex mutex;
    std::map<OpenKey, Opened> by_key;
    std::map<uint64_t, OpenKey> by_ticket;
    uint64_t next_ticket = 1;
};
OpenTable &open_table() {
    static OpenTable *t = new OpenTable;  // never destroyed: workers may close mappings at exit
    return *t;
}

// cudaIpcOpenMemHandle of ref's allocation on the current device, or the mapping open already.
// The driver refuses a second mapping of memory `process` freed and allocated anew while the old
// one is open: one that another worker of this process still caches is closed then, its users
// notwithstanding (none can use it: its memory is gone), and the open tried again.
cudaError_t open_shared(int device, uint64_t process, const IpcRef &ref, void **base, uint64_t *ticket) {
    OpenKey k{device, ref.buffer_id, {}};
    std::memcpy(k.handle.data(), ref.handle, sizeof ref.handle);
    OpenTable &t = open_table();
    std::lock_guard<std::mutex> lock(t.mutex);
    auto it = t.by_key.find(k);
    if (it != t.by_key.end()) {
        ++it->second.users;
        *base = it->second.base;
        *ticket = it->second.ticket;
        return cudaSuccess;
    }
    cudaIpcMemHandle_t h{};
    std::memcpy(&h, ref.handle, sizeof h);
    cudaError_t err = cudaIpcOpenMemHandle(base, h, cudaIpcMemLazyEnablePeerAccess);
    if (err == cudaErrorAlreadyMapped) {
        size_t closed = 0;
        for (auto o = t.by_key.begin(); o != t.by_key.end();) {
            auto next = std::next(o);
            const Opened &e = o->second;
            if (o->first.device == device && e.process == process && e.peer_base < ref.base + ref.alloc_bytes &&
                ref.base < e.peer_base + e.peer_bytes) {
                cudaIpcCloseMemHandle(e.base);
                t.by_ticket.erase(e.ticket);
                t.by_key.erase(o);
                ++closed;
            }
            o = next;
        }
        cudaGetLastError();
        if (closed) err = cudaIpcOpenMemHandle(base, h, cudaIpcMemLazyEnablePeerAccess);
    }
    if (err != cudaSuccess) return err;
    *ticket = t.next_ticket++;
    t.by_key.emplace(k, Opened{*base, 1, *ticket, process, ref.base, ref.alloc_bytes});
    t.by_ticket.emplace(*ticket, k);
    return cudaSuccess;
}

// Drops one user of the mapping of `ticket` (open_shared's); the last closes it (on the current
// device). A mapping closed as stale already is not closed again.
void close_shared(uint64_t ticket) {
    OpenTable &t = open_table();
    std::lock_guard<std::mutex> lock(t.mutex);
    auto b = t.by_ticket.find(ticket);
    if (b == t.by_ticket.end()) return;
    auto k = t.by_key.find(b->second);
    if (--k->second.users > 0) return;
    cudaIpcCloseMemHandle(k->second.base);
    cudaGetLastError();
    t.by_key.erase(k);
    t.by_ticket.erase(b);
}

}  // namespace

IpcImports::Key IpcImports::key(uint64_t peer, int device, const IpcRef &ref) {
    Key k{peer, device, ref.buffer_id, {}};
    std::memcpy(k.handle.data(), ref.handle, sizeof ref.handle);
    return k;
}

IpcImports::~IpcImports() {
    while (!entries_.empty()) close(entries_.begin());
}

void IpcImports::close(std::map<Key, Entry>::iterator it) {
    if (it->second.holds == 0) idle_.erase(it->second.lru);
    DeviceGuard g(it->first.device);
    close_shared(it->second.ticket);
    entries_.erase(it);
}

void IpcImports::trim() {
    while (idle_.size() > capacity_) close(entries_.find(idle_.front()));
}

ucxdt_status_t IpcImports::map(uint64_t peer, uint64_t process, const IpcRef &ref, int device, bool same_process, char **out) {
    if (same_process) {
        // The exporter's address is ours; a kernel on another GPU needs peer access to it.
        int owner = -1;
        if (memory_type(reinterpret_cast<void *>(ref.base), &owner) != MemoryType::DEVICE) owner = -1;
        if (owner >= 0 && owner != device) {
            DeviceGuard g(device);
            const cudaError_t err = cudaDeviceEnablePeerAccess(owner, 0);
            if (err != cudaSuccess && err != cudaErrorPeerAccessAlreadyEnabled)
                return check(err, "cudaDeviceEnablePeerAccess");
            cudaGetLastError();
        }
        *out = reinterpret_cast<char *>(ref.base + ref.offset);
        return UCXDT_OK;
    }
    const Key k = key(peer, device, ref);
    auto it = entries_.find(k);
    if (it == entries_.end()) {
        DeviceGuard g(device);
        if (ucxdt_status_t st = g.status()) return st;
        void *base = nullptr;
        uint64_t ticket = 0;
        // open_shared closes a mapping, ours or another worker's, of memory the peer freed and
        // allocated anew, which the driver would not map twice.
        const cudaError_t err = open_shared(device, process, ref, &base, &ticket);
        if (ucxdt_status_t st = check(err, "cudaIpcOpenMemHandle (the peer's memory)")) return st;
        it = entries_.emplace(k, Entry{static_cast<char *>(base), 0, {}, ticket}).first;
    } else if (it->second.holds == 0) {
        idle_.erase(it->second.lru);
    }
    ++it->second.holds;
    *out = it->second.base + ref.offset;
    return UCXDT_OK;
}

void IpcImports::unmap(uint64_t peer, const IpcRef &ref, int device) {
    auto it = entries_.find(key(peer, device, ref));
    if (it == entries_.end() || it->second.holds == 0) return;
    if (--it->second.holds == 0) it->second.lru = idle_.insert(idle_.end(), it->first);
    trim();
}

void IpcImports::forget_peer(uint64_t peer) {
    for (auto it = entries_.begin(); it != entries_.end();) {
        auto next = std::next(it);
        if (it->first.peer == peer) close(it);  // held ones are not in idle_: close() knows
        it = next;
    }
}

}  // namespace ucxdt::cuda
