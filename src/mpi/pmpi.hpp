// The PMPI interposer (libucxdt_pmpi, include/ucxdt/pmpi.h): what its entry points share.
// A (buffer, count, datatype) is *routed* when the datatype was imported into ucxdt at commit,
// its plan for count is not contiguous, and the buffer is GPU memory (host memory too with
// UCXDT_PMPI_HOST=1). A routed send packs into staging and sends the packed bytes as MPI_BYTE;
// a routed receive lands in staging and is unpacked when the MPI completes it. Matching,
// ordering, progress and statuses (byte counts) stay the MPI's.
#pragma once

#define OMPI_SKIP_MPICXX 1
#define MPICH_SKIP_MPICXX 1
#include <mpi.h>

#include <ucxdt/pmpi.h>
#include <ucxdt/ucxdt.h>

#include <cstdint>
#include <memory>
#include <vector>

// The MPI entry points this library defines, the only symbols it exports.
#define UCXDT_PMPI_EXPORT extern "C" __attribute__((visibility("default")))

namespace ucxdt::pmpi {

// ---- Settings (read once) ---------------------------------------------------------------
struct Settings {
    bool route_host;        // UCXDT_PMPI_HOST=y: host buffers through the CPU engine too
    int cuda_aware;         // UCXDT_PMPI_CUDA_AWARE: 1 yes, 0 no, -1 ask the MPI
    int64_t staging_keep;   // UCXDT_PMPI_STAGING_MB: staging kept for reuse, bytes
    int64_t pinned_max;     // UCXDT_PMPI_PINNED_MAX: GPU layouts of at most this many packed
                            // bytes stage in page-locked host memory, CUDA-aware MPI or not
    bool verbose;           // UCXDT_PMPI_VERBOSE=y: counters on stderr at MPI_Finalize
};
const Settings &settings();

/// Whether the MPI moves device memory itself (staging in device memory), asked once.
bool mpi_cuda_aware();

// ---- Counters (ucxdt_pmpi_get_counters) -------------------------------------------------
enum Counter { kSends, kRecvs, kCollectives, kPacks, kFallbacks, kNumCounters };
void count_op(Counter c);
/// Seconds spent packing and unpacking, and in staging allocations (UCXDT_PMPI_VERBOSE).
enum Timer { kPackTime, kUnpackTime, kAllocTime, kNumTimers };
double seconds(Timer t);
void add_time(Timer t, double s);

// ---- Types imported at commit ---------------------------------------------------------------
struct TypeEntry {
    ucxdt_type_t type = nullptr;
    int64_t size = 0;     // bytes of data per element
    int64_t true_lb = 0;  // first data byte of element 0, relative to the buffer
    ~TypeEntry();
};
using TypeRef = std::shared_ptr<const TypeEntry>;
/// The imported type of `dt`, or null (predefined, never committed, or not importable). Holding
/// the reference keeps it alive across MPI_Type_free, as MPI keeps pending operations' types.
TypeRef find_type(MPI_Datatype dt);
void forget_all_types();

// ---- Memory and staging ---------------------------------------------------------------------
enum class Where { kHost, kPinned, kDevice };
struct Staging {
    void *ptr = nullptr;
    int64_t bytes = 0;     // capacity
    Where where = Where::kHost;
    int device = -1;
};
/// Staging of at least `bytes` bytes: reused from the pool, else allocated (never waits: an
/// MPI_Isend must return whatever the peer does, MPI-4.1 3.7). Null ptr on allocation failure.
Staging get_staging(int64_t bytes, Where where, int device);
/// Back to the pool, or freed beyond UCXDT_PMPI_STAGING_MB.
void put_staging(Staging &s);
void release_all_staging();

/// The GPU holding the byte at `p`, or -1 for host memory (or no GPU at all).
int gpu_of(const void *p);
/// Where `bytes` packed bytes of a layout on GPU `device` (-1: host memory) are staged: pageable
/// for host layouts; on a GPU, device memory when the MPI moves device memory itself and the
/// message is over UCXDT_PMPI_PINNED_MAX, else page-locked host memory.
Where staging_for(int device, int64_t bytes);

// ---- Routing --------------------------------------------------------------------------------
struct Route {
    TypeRef type;
    int64_t bytes = 0;  // packed bytes of (count, type)
    Where staging = Where::kHost;
    int device = -1;
    // One contiguous run on a GPU under a CUDA-aware MPI: the MPI can move it as `bytes` bytes
    // from `first` itself, with no staging (point-to-point does so).
    bool contiguous = false;
    const void *first = nullptr;
};
/// Whether (buf, count, dt) goes through ucxdt; fills *r when it does.
bool route(const void *buf, int64_t count, MPI_Datatype dt, Route *r);

/// Packs (buf, count) of r into staging / unpacks `bytes` packed bytes into (buf, count).
/// MPI_SUCCESS or an MPI error class, with ucxdt's message printed.
int pack(const Route &r, const void *buf, int64_t count, void *packed);
int unpack(const Route &r, const void *packed, int64_t bytes, void *buf, int64_t count);
/// The interposer's stream on GPU `device` (made once), or null if none could be.
void *stream_of(int device);

/// Reports `code` through comm's error handler, as the MPI would, and returns it.
int fail(MPI_Comm comm, int code);

// ---- The GPU work of one MPI call -----------------------------------------------------------
/// Packs and unpacks of one call (MPI_Startall, MPI_Waitall, a collective), enqueued on the
/// interposer's stream of each GPU and waited for once. When processes share a GPU every
/// synchronization may wait for the other contexts' turn (about 270 us, docs/performance.md),
/// so a call pays that once instead of once per message. Host layouts are packed at once.
class Batch {
public:
    Batch() = default;
    Batch(const Batch &) = delete;
    Batch &operator=(const Batch &) = delete;
    ~Batch() { wait(); }
    /// pack() / unpack(), enqueued when the layout is on a GPU; MPI_SUCCESS or an error class.
    int pack(const Route &r, const void *buf, int64_t count, void *packed);
    int unpack(const Route &r, const void *packed, int64_t bytes, void *buf, int64_t count);
    /// `s` goes back to the pool once the enqueued work is done.
    void release_after(Staging s);
    /// Waits for the enqueued work and releases the staging: MPI_SUCCESS, or MPI_ERR_INTERN
    /// with the CUDA error printed and reported through comm's error handler.
    int wait();
    MPI_Comm comm = MPI_COMM_NULL;  // whose error handler a failed wait() calls, if any

private:
    void *stream_for(const Route &r);
    std::vector<void *> streams_;
    std::vector<Staging> staging_;
};

// ---- Requests whose completion unpacks or releases staging -----------------------------
struct Pending {
    bool recv = false;
    bool persistent = false;
    bool active = true;     // persistent: started and not yet completed
    Route r;
    Staging s;
    void *buf = nullptr;    // the application's buffer (a send's is only read)
    int64_t count = 0;
    MPI_Comm comm = MPI_COMM_NULL;
};
/// Remembers routed request `req` until it completes (or, persistent, until it is freed).
void track(MPI_Request req, Pending p);
/// Completes the bookkeeping of routed request `key`, which the MPI has just completed with
/// status *st and code rc: unpacks a receive, releases staging. Returns the request's code.
/// A key that is not routed returns rc.
int complete(MPI_Request key, MPI_Status *st, int rc);

}  // namespace ucxdt::pmpi
