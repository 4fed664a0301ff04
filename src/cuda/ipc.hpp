// CUDA IPC for the rendezvous between processes of one node: exporting device memory
// (cudaIpcGetMemHandle of the allocation that holds a pointer, cached by the driver's buffer ID
// so that a freed and reallocated address is exported anew) and importing a peer's memory
// (cudaIpcOpenMemHandle, cached per peer, allocation ID and handle, reference-counted, closed
// when unused entries exceed the cache size or the peer fails, or when the peer's memory they
// map was freed and allocated anew; one driver mapping per allocation and device in the process,
// shared by every worker's imports).
#pragma once

#include <ucxdt/ucxdt.h>

#include <array>
#include <cstdint>
#include <list>
#include <map>
#include <mutex>
#include <string>

namespace ucxdt::cuda {

/// A reference to device memory that travels to a peer. Plain bytes: no CUDA types on the wire.
struct IpcRef {
    char handle[64];       // cudaIpcMemHandle_t of the allocation
    uint64_t base;         // the allocation's address in the exporting process
    uint64_t offset;       // of the referenced byte within the allocation
    uint64_t alloc_bytes;  // size of the allocation
    char device_uuid[16];  // the GPU that holds it (cudaDeviceProp::uuid)
    uint64_t buffer_id;    // the driver's ID of the allocation: a handle's bytes may repeat when
                           // the exporter frees an allocation and gets the same range again
};

/// Whether bytes [lo, hi) from the byte `ref` names lie inside its allocation: a peer's GPU work
/// must not reach past what the exporter named (an RTS or RTR that lies, or a shape that does
/// not fit its reference, would otherwise fault the GPU or read another allocation).
inline bool ipc_covers(const IpcRef &ref, int64_t lo, int64_t hi) {
    const __int128 off = ref.offset;
    return lo <= hi && off + lo >= 0 && off + hi <= static_cast<__int128>(ref.alloc_bytes);
}

/// Whether the memory of `ref` is on GPU `device` of this process (else another GPU's, reached
/// over NVLink or PCIe).
bool ipc_on_device(const IpcRef &ref, int device);

/// Fills `ref` for the device memory at `ptr`. The first export of an allocation sets its
/// CU_POINTER_ATTRIBUTE_SYNC_MEMOPS, which waits for synchronous copies into it still pending:
/// a peer's GPU then sees their bytes. UCXDT_ERR_UNSUPPORTED when the memory cannot be exported
/// (not device memory, or from a pool allocator without legacy IPC); thread-safe.
ucxdt_status_t ipc_export(const void *ptr, IpcRef *ref);

/// Imports peers' memory into this process, on the GPU current at map time. Not thread-safe:
/// one per ucxdt worker.
class IpcImports {
public:
    explicit IpcImports(size_t capacity = 64) : capacity_(capacity) {}
    ~IpcImports();
    IpcImports(const IpcImports &) = delete;
    IpcImports &operator=(const IpcImports &) = delete;

    /// The local address of `ref`'s byte for `device`, held until unmap(). `process` is the
    /// exporting process's identity (ucx_reach.hpp): a mapping another worker of this process
    /// holds of memory that process freed is closed when the driver refuses a new one. With
    /// `same_process` the exporter's address is used as it is (a process cannot open its own
    /// handles); peer access to the exporter's GPU is then enabled when needed.
    ucxdt_status_t map(uint64_t peer, uint64_t process, const IpcRef &ref, int device, bool same_process, char **out);
    /// Drops the hold of one map() of `ref` by `peer`.
    void unmap(uint64_t peer, const IpcRef &ref, int device);
    /// Closes every mapping of `peer` (it failed); the caller made sure the GPU is done with them.
    void forget_peer(uint64_t peer);
    /// Mappings open (held or cached), for tests.
    size_t open() const { return entries_.size(); }

private:
    struct Key {
        uint64_t peer;
        int device;
        uint64_t buffer_id;
        std::array<char, sizeof IpcRef::handle> handle;  // no allocation per map and unmap
        bool operator<(const Key &o) const {
            if (peer != o.peer) return peer < o.peer;
            if (device != o.device) return device < o.device;
            return buffer_id != o.buffer_id ? buffer_id < o.buffer_id : handle < o.handle;
        }
    };
    struct Entry {
        char *base = nullptr;
        int holds = 0;
        std::list<Key>::iterator lru;  // position among entries without holds, when holds == 0
        uint64_t ticket = 0;  // of the process-wide mapping (ipc.cpp)
    };
    static Key key(uint64_t peer, int device, const IpcRef &ref);
    void close(std::map<Key, Entry>::iterator it);
    void trim();
    size_t capacity_;
    std::map<Key, Entry> entries_;
    std::list<Key> idle_;  // unheld entries, least recently used first
};

}  // namespace ucxdt::cuda
