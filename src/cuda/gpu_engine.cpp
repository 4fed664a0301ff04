#include "cuda/gpu_engine.hpp"

#include "cuda/cuda_check.hpp"
#include "dt/address_order.hpp"
#include "base/address.hpp"
#include "base/error.hpp"
#include "kernels/pack_kernels.hpp"
#include "cuda/launch_batch.hpp"
#include "cuda/memory_type.hpp"
#include "cuda/method.hpp"
#include "cuda/type_tree.hpp"
#include "cuda/unit_cache.hpp"

#include <algorithm>
#include <cstdlib>
#include <initializer_list>
#include <vector>

namespace ucxdt::cuda {

namespace {

using kernels::kMaxDims;

kernels::Dims to_dims(const std::vector<Plan::Dim> &dims, size_t first) {
    kernels::Dims d;
    d.n = static_cast<int>(dims.size() - first);
    for (int k = 0; k < d.n; ++k) {
        d.count[k] = kernels::FastDiv(static_cast<uint64_t>(dims[first + k].count));
        d.stride[k] = dims[first + k].stride;
    }
    return d;
}

// A window [offset, end) of a plan, cut at the leading dims [0, first): calls
// launch(base, first, offset, end, packed) once per index of those dims that the window
// touches, with `base` that index's first byte and the offsets relative to its packed bytes
// (once, unchanged, when first == 0). A template, not a std::function: the callers' lambdas
// capture more than std::function stores without a heap allocation, paid on every call.
template <typename Launch>
ucxdt_status_t for_each_leading(const Plan &p, size_t first, int64_t offset, int64_t end, char *packed,
                                const Launch &launch) {
    if (first == 0) return launch(p.base, 0, offset, end, packed);
    int64_t inner_bytes = p.unit_size;  // packed bytes per index of the leading dims
    for (size_t k = first; k < p.dims.size(); ++k) inner_bytes *= p.dims[k].count;
    for (int64_t o = offset / inner_bytes; o * inner_bytes < end; ++o) {
        int64_t disp = 0, rest = o;
        for (size_t k = first; k-- > 0;) {
            disp += rest % p.dims[k].count * p.dims[k].stride;
            rest /= p.dims[k].count;
        }
        const int64_t lo = std::max(offset, o * inner_bytes);
        const int64_t hi = std::min(end, (o + 1) * inner_bytes);
        if (ucxdt_status_t st = launch(p.base + disp, first, lo - o * inner_bytes,
                                       hi - o * inner_bytes, packed + (lo - offset)))
            return st;
    }
    return UCXDT_OK;
}

// The kernels take at most kMaxDims dims: the leading ones beyond that are walked here (rare:
// subarrays of many dimensions).
template <typename Launch>
ucxdt_status_t split_dims(const Plan &p, int64_t offset, int64_t end, char *packed, const Launch &launch) {
    const size_t first = p.dims.size() > static_cast<size_t>(kMaxDims) ? p.dims.size() - kMaxDims : 0;
    return for_each_leading(p, first, offset, end, packed, launch);
}

// The widest power of two up to 16 that divides every value.
int widest_dividing(std::initializer_list<int64_t> values) {
    int v = 16;
    for (int64_t x : values)
        while (v > 1 && x % v != 0) v /= 2;
    return v;
}

// One strided level of short runs that lie densely: the tile kernel moves words on both
// sides through shared memory, where per-run accesses would be one or a few bytes wide.
bool dense_short_runs(const Plan &p) {
    if (p.dims.size() != 1) return false;
    const int64_t s = p.dims[0].stride, len = p.block_len;
    return len < 64 && s >= len && s <= 4 * len && s <= 256;
}

// The widest access dividing every run start and length of a one-dim window [offset, end)
// and both buffers: the tile kernel's unit, and what sends short runs to it over the host link.
int tile_width(const Plan &p, const char *layout, const char *packed, int64_t offset, int64_t end) {
    return widest_dividing({p.block_len, p.dims[0].stride, p.base, offset, end, reinterpret_cast<intptr_t>(layout),
                            reinterpret_cast<intptr_t>(packed)});
}

constexpr int64_t kTileBytes = 12 << 10;  // shared memory per block for a tile's span
constexpr int64_t kMinTiles = 512;         // about four per multiprocessor of an H100

// batch: the arguments go there instead, for a batched launch.
ucxdt_status_t tile_kernel(const Plan &p, char *layout, char *packed, int64_t offset,
                           int64_t length, bool pack, cudaStream_t stream, LaunchBatch *batch = nullptr) {
    kernels::TileArgs a;
    a.layout = layout;
    a.packed = packed;
    a.base = p.base;
    a.stride = p.dims[0].stride;
    a.block_len = p.block_len;
    a.len_div = kernels::FastDiv(static_cast<uint64_t>(p.block_len));
    a.offset = offset;
    a.end = offset + length;
    a.first_run = offset / p.block_len;
    a.runs = (a.end - 1) / p.block_len - a.first_run + 1;
    // As many runs as the shared buffer holds, but enough tiles to give every
    // multiprocessor a few when the window is small.
    const int64_t max_runs = (kTileBytes - p.block_len) / a.stride + 1;
    a.runs_per_tile = std::clamp<int64_t>(a.runs / kMinTiles, 32, max_runs);
    const int u = tile_width(p, layout, packed, offset, a.end);
    a.unit = u >= 8 ? 8 : u >= 4 ? 4 : 1;
    a.pack = pack;
    if (batch) return batch->tiles.push_back(a), UCXDT_OK;
    return check(kernels::launch_tiles(a, stream), "tile pack kernel launch");
}

// The last two dims of p a transposed pair (kernels::TransposeArgs), each long enough to fill
// most of a 32 x 32 tile, on buffers and a window aligned to the run.
bool transposed_pair(const Plan &p, const char *layout, const char *packed, int64_t offset, int64_t end) {
    constexpr int64_t kMinSide = 16;
    const size_t n = p.dims.size();
    const int64_t e = p.block_len;
    if (n < 2 || n - 2 > static_cast<size_t>(kMaxDims) || (e != 4 && e != 8 && e != 16)) return false;
    if (p.dims[n - 2].stride != e || p.dims[n - 2].count < kMinSide || p.dims[n - 1].count < kMinSide)
        return false;
    int v = widest_dividing({e, p.base, offset, end, reinterpret_cast<intptr_t>(layout),
                             reinterpret_cast<intptr_t>(packed)});
    for (const Plan::Dim &d : p.dims) v = std::min(v, widest_dividing({d.stride}));
    return v >= e;
}

// batch: as tile_kernel's.
ucxdt_status_t transpose_kernel(const Plan &p, char *layout, char *packed, int64_t offset,
                                int64_t length, bool pack, cudaStream_t stream, LaunchBatch *batch = nullptr) {
    const size_t n = p.dims.size();
    kernels::TransposeArgs a;
    a.layout = layout;
    a.packed = packed;
    a.base = p.base;
    a.lead = to_dims(std::vector<Plan::Dim>(p.dims.begin(), p.dims.end() - 2), 0);
    a.rows = kernels::FastDiv(static_cast<uint64_t>(p.dims[n - 2].count));
    a.cols = p.dims[n - 1].count;
    a.elem = p.block_len;
    a.col_stride = p.dims[n - 1].stride;
    a.offset = offset;
    a.end = offset + length;
    a.pack = pack;
    if (batch) return batch->transposes.push_back(a), UCXDT_OK;
    return check(kernels::launch_transpose(a, stream), "transpose pack kernel launch");
}

// The strided kernel's arguments for packed bytes [lo, hi) of one index of p's leading dims
// [0, first), whose runs start at `base`; `pk` holds those packed bytes, or, with `second`
// (a strided plan of the same runs, all of its dims), is the buffer of that second layout.
// host_link: pk is page-locked host memory. alone: launched by itself, not in a batch.
kernels::StridedArgs strided_args(const Plan &p, char *layout, char *pk, int64_t base, size_t first, int64_t lo,
                                  int64_t hi, bool pack, bool host_link, const Plan *second, bool alone) {
    kernels::StridedArgs a;
    a.layout = layout;
    a.packed = pk;
    a.base = base;
    a.dims = to_dims(p.dims, first);
    a.block_len = p.block_len;
    a.offset = lo;
    a.end = hi;
    a.pack = pack;
    if (second) {
        a.packed_dims = to_dims(second->dims, 0);
        a.packed_base = second->base;
    }
    // The widest access that every run start, length and both buffers allow.
    int v = widest_dividing({p.block_len, base, lo, hi, reinterpret_cast<intptr_t>(layout),
                             reinterpret_cast<intptr_t>(pk), a.packed_base});
    for (int k = 0; k < a.dims.n; ++k) v = std::min(v, widest_dividing({a.dims.stride[k]}));
    for (int k = 0; k < a.packed_dims.n; ++k) v = std::min(v, widest_dividing({a.packed_dims.stride[k]}));
    // Long misaligned runs do better finding their alignment per piece than bytewise.
    a.vec = (v < 4 && p.block_len >= 64) ? 0 : v;
    // A lane takes at least 32 bytes (4 accesses) of a run, so short runs get one thread
    // each (several in flight, kernels/strided_kernel.cu) and long runs up to a warp. Across
    // the host link a run gets a lane per access instead: a warp's accesses to the packed side
    // are then contiguous, where a lane per 64-byte run made each of them a transfer of its own
    // (performance-log.md, run 28).
    const int64_t per_lane = a.vec ? a.vec : 16;
    const int64_t lane_bytes = std::max<int64_t>(4 * per_lane, 32);
    const int64_t group_bytes = host_link ? per_lane : lane_bytes;
    while (a.lanes_log2 < 5 && (group_bytes << a.lanes_log2) < p.block_len) ++a.lanes_log2;
    const int64_t max_piece = (lane_bytes << a.lanes_log2) * 2;
    a.piece = std::min(p.block_len, max_piece);
    const int64_t r0 = lo / p.block_len, r1 = (hi - 1) / p.block_len;
    auto items_of = [&](int64_t piece, int64_t *first_item) {
        const int64_t ipr = (p.block_len + piece - 1) / piece;
        *first_item = r0 * ipr + (lo - r0 * p.block_len) / piece;
        return r1 * ipr + (hi - 1 - r1 * p.block_len) / piece - *first_item + 1;
    };
    // A small window in long runs would leave most SMs idle (ncu: 64 blocks, 12% of
    // warps active for 1-2 MB): cut smaller pieces, down to four accesses per lane,
    // until about 2^18 threads (an H100's 132 SMs x 2048) have work. Fewer accesses per
    // lane, or wider groups, were slower (4-D subarray: 0.95 -> 0.76 of memcpy).
    constexpr int64_t kFillThreads = int64_t{1} << 18;
    int64_t item0;
    while ((items_of(a.piece, &item0) << a.lanes_log2) < kFillThreads &&
           a.piece > (lane_bytes << a.lanes_log2))
        a.piece = (a.piece / 2 + per_lane - 1) / per_lane * per_lane;
    const int64_t items = items_of(a.piece, &item0), ipr = (p.block_len + a.piece - 1) / a.piece;
    // Still too few threads for long runs: a thread per piece of two vectors where the packed
    // side allows the double width (else one), as Yaksa gives a thread per element. On 1 MB of
    // 4 KiB runs the groups made 1,024 warps of some 200 instructions, mostly a dependent chain
    // of index arithmetic that no other warp hid: 0.1-0.25 us more GPU time than a thread per
    // 16 packed bytes (performance-log.md, run 42). Not in a batch, whose kernel takes the
    // narrowest vector of its rows, nor across the host link, which the groups are chosen for.
    // UCXDT_GPU_NO_PIECES=1 keeps the groups (comparisons, and their tests at small windows).
    static const bool pieces_off = std::getenv("UCXDT_GPU_NO_PIECES") != nullptr;
    if (alone && !host_link && !pieces_off && a.vec > 0 &&
        !kernels::one_run_per_thread(a.vec, a.lanes_log2, static_cast<uint64_t>(ipr)) &&
        (items << a.lanes_log2) < kFillThreads) {
        const bool wide = !second && a.vec <= 8 &&
                          widest_dividing({p.block_len, lo, hi, reinterpret_cast<intptr_t>(pk)}) >= 2 * a.vec;
        a.thread_vectors = wide ? 2 : 1;
        a.lanes_log2 = 0;
        a.piece = a.thread_vectors * int64_t{a.vec};
        a.ipr = kernels::FastDiv(static_cast<uint64_t>(p.block_len / a.piece));
        a.first_item = static_cast<uint64_t>(lo / a.piece);
        a.items = static_cast<uint64_t>((hi - lo) / a.piece);
        return a;
    }
    a.ipr = kernels::FastDiv(static_cast<uint64_t>(ipr));
    a.items = static_cast<uint64_t>(items);
    a.first_item = static_cast<uint64_t>(item0);
    return a;
}

// The tile and transpose kernels are for bandwidth. A small message of a window is bound by its
// launch instead, which the strided kernel shares with the window's other copies: there it
// takes messages up to this many packed bytes (performance-log.md, run 25: a window of 4 KiB
// vectors of 16-byte runs launched a tile kernel per message, when tile kernels launched alone).
constexpr int64_t kSharedLaunchBytes = 64 << 10;

enum class StridedKernel { tiles, transpose, runs };

// host_link: the packed side is page-locked host memory. There the link, not the layout's
// sectors, bounds the copy, and the tile kernel lost at every size measured up to 1 MiB for
// runs the strided kernel moves 8 or 16 bytes at a time (performance-log.md, run 26). Runs
// only 1, 2 or 4 bytes wide at a time (struct's 17, SPECFEM3D's 12) crossed the link in as
// many narrow writes and took 35-40 us a message (run 27): those take the tile kernel, whose
// packed side moves in 16-byte vectors, and which shares the window's launch (run 28).
StridedKernel strided_kernel_for(const Plan &p, const char *layout, const char *packed, int64_t offset,
                                 int64_t length, bool batched, bool host_link) {
    static const bool tiles_off = std::getenv("UCXDT_GPU_NO_TILES") != nullptr;
    if (tiles_off) return StridedKernel::runs;
    if (host_link)
        return dense_short_runs(p) && tile_width(p, layout, packed, offset, offset + length) < 8
                   ? StridedKernel::tiles
                   : StridedKernel::runs;
    if (batched && length <= kSharedLaunchBytes) return StridedKernel::runs;
    if (dense_short_runs(p)) return StridedKernel::tiles;
    if (transposed_pair(p, layout, packed, offset, offset + length)) return StridedKernel::transpose;
    return StridedKernel::runs;
}

// k: strided_kernel_for's choice. host_link: as strided_args'. batch: the kernel's arguments go
// there instead.
ucxdt_status_t strided_kernel(const Plan &p, char *layout, char *packed, int64_t offset, int64_t length,
                              bool pack, cudaStream_t stream, StridedKernel k, bool host_link,
                              LaunchBatch *batch = nullptr) {
    switch (k) {
    case StridedKernel::tiles: return tile_kernel(p, layout, packed, offset, length, pack, stream, batch);
    case StridedKernel::transpose: return transpose_kernel(p, layout, packed, offset, length, pack, stream, batch);
    case StridedKernel::runs: break;
    }
    return split_dims(p, offset, offset + length, packed,
                      [&](int64_t base, size_t first, int64_t lo, int64_t hi, char *pk) {
        const kernels::StridedArgs a = strided_args(p, layout, pk, base, first, lo, hi, pack, host_link, nullptr, !batch);
        if (batch) return batch->strided.push_back(a), UCXDT_OK;
        return check(kernels::launch_strided(a, stream), "strided pack kernel launch");
    });
}

// Work items [first_item, last_item) of the window [offset, offset + length), on units `u`.
ucxdt_status_t unit_launch(const Plan &p, const DeviceUnits &u, char *layout, char *packed,
                           int64_t offset, int64_t length, bool pack, cudaStream_t stream,
                           uint64_t first_item, uint64_t last_item, char *twin,
                           std::vector<kernels::UnitArgs> *sink) {
    const uint64_t n = u.count;
    return split_dims(p, offset, offset + length, packed,
                      [&](int64_t base, size_t first, int64_t lo, int64_t hi, char *pk) {
        kernels::UnitArgs a;
        a.layout = layout;
        a.packed = pk;
        a.base = base;
        a.dims = to_dims(p.dims, first);
        a.units = u.device;
        a.nunits = kernels::FastDiv(n);
        a.unit_size = p.unit_size;
        a.offset = lo;
        a.end = hi;
        a.lanes_log2 = u.lanes_log2;
        a.pack = pack;
        a.twin = twin;
        // With one outer index, items are units and the last item bounds the units cut so far.
        const uint64_t filled = p.dims.empty() ? std::min<uint64_t>(last_item, n) : n;
        const int64_t o0 = lo / p.unit_size, o1 = (hi - 1) / p.unit_size;
        const uint64_t w0 = std::max(
            static_cast<uint64_t>(o0) * n + unit_at(u, lo - o0 * p.unit_size, filled), first_item);
        const uint64_t w1 = std::min(
            static_cast<uint64_t>(o1) * n + unit_at(u, hi - 1 - o1 * p.unit_size, filled) + 1,
            last_item);
        if (w0 >= w1) return UCXDT_OK;
        a.first_item = w0;
        a.items = w1 - w0;
        if (sink) return sink->push_back(a), UCXDT_OK;
        return check(kernels::launch_units(a, stream), "work-unit pack kernel launch");
    });
}

// twin: see kernels::UnitArgs (then `packed` is unused). batch: the launches' arguments go
// there instead, for a batched launch once the units are on the device.
ucxdt_status_t unit_kernel(const Plan &p, char *layout, char *packed, int64_t offset,
                           int64_t length, bool pack, int device, cudaStream_t stream,
                           char *twin = nullptr, LaunchBatch *batch = nullptr) {
    std::shared_ptr<const DeviceUnits> units;
    bool fresh = false, chunked = false;
    // With one outer index, work item i is unit i: the first use can pack each chunk of
    // units as soon as it is uploaded.
    ChunkReady on_chunk;
    if (p.dims.empty())
        on_chunk = [&](const DeviceUnits &u, uint64_t first, uint64_t last) {
            chunked = true;
            return unit_launch(p, u, layout, packed, offset, length, pack, stream, first, last, twin, nullptr);
        };
    if (ucxdt_status_t st = device_units(p, device, &stream, on_chunk, &units, &fresh)) return st;
    hold_for_graphs(stream, units);
    if (chunked) return UCXDT_OK;
    if (ucxdt_status_t st = wait_ready(*units, stream)) return st;
    if (batch) batch->holds.push_back(units);
    return unit_launch(p, *units, layout, packed, offset, length, pack, stream, 0, UINT64_MAX, twin,
                       batch ? &batch->units : nullptr);
}

// twin, batch: as unit_kernel's.
ucxdt_status_t point_kernel(const Plan &p, char *layout, char *packed, int64_t offset,
                            int64_t length, bool pack, int device, cudaStream_t stream,
                            char *twin = nullptr, LaunchBatch *batch = nullptr) {
    std::shared_ptr<const DeviceTree> tree;
    if (ucxdt_status_t st = device_tree(p, device, &tree)) return st;
    hold_for_graphs(stream, tree);
    if (batch) batch->holds.push_back(tree);
    return split_dims(p, offset, offset + length, packed,
                      [&](int64_t base, size_t first, int64_t lo, int64_t hi, char *pk) {
        kernels::PointArgs a;
        a.layout = layout;
        a.packed = pk;
        a.base = base;
        a.dims = to_dims(p.dims, first);
        a.nodes = tree->nodes;
        a.entries = tree->entries;
        a.num_nodes = tree->num_nodes;
        a.num_entries = tree->num_entries;
        a.unit_size = kernels::FastDiv(static_cast<uint64_t>(p.unit_size));
        a.offset = lo;
        a.end = hi;
        a.pack = pack;
        a.twin = twin;
        int vec = widest_dividing({tree->align, base, lo, hi, reinterpret_cast<intptr_t>(layout),
                                   reinterpret_cast<intptr_t>(twin ? twin : pk)});
        for (int k = 0; k < a.dims.n; ++k) vec = std::min(vec, widest_dividing({a.dims.stride[k]}));
        a.vec = vec;
        if (batch) return batch->points.push_back(a), UCXDT_OK;
        return check(kernels::launch_point(a, stream), "point-based pack kernel launch");
    });
}

// Rows of bl bytes every `stride` bytes from layout + base, packed bytes [offset, end): whole
// rows through one cudaMemcpy2DAsync, partial rows at the window's ends through 1-D copies.
ucxdt_status_t copy_rows(int64_t bl, int64_t stride, int64_t base, char *layout, char *packed, int64_t offset,
                         int64_t end, bool pack, cudaStream_t stream) {
    for (int64_t pos = offset; pos < end;) {
        const int64_t r = pos / bl, within = pos - r * bl;
        char *lay = at(layout, base + r * stride + within);
        char *pk = packed + (pos - offset);
        cudaError_t err;
        int64_t n;
        if (within != 0 || end - pos < bl) {
            n = std::min(bl - within, end - pos);
            err = cudaMemcpyAsync(pack ? pk : lay, pack ? lay : pk, static_cast<size_t>(n),
                                  cudaMemcpyDefault, stream);
        } else {
            const int64_t rows = (end - pos) / bl;
            n = rows * bl;
            err = pack ? cudaMemcpy2DAsync(pk, bl, lay, stride, bl, rows, cudaMemcpyDefault, stream)
                       : cudaMemcpy2DAsync(lay, stride, pk, bl, bl, rows, cudaMemcpyDefault, stream);
        }
        if (ucxdt_status_t st = check(err, "cudaMemcpy2DAsync / cudaMemcpyAsync")) return st;
        pos += n;
    }
    return UCXDT_OK;
}

// The innermost dimension's rows through copy_rows, once per index of the outer dims that the
// window touches (within one, rows are evenly spaced).
ucxdt_status_t copy_2d(const Plan &p, char *layout, char *packed, int64_t offset, int64_t length,
                       bool pack, cudaStream_t stream) {
    return for_each_leading(p, p.dims.size() - 1, offset, offset + length, packed,
                            [&](int64_t base, size_t, int64_t lo, int64_t hi, char *pk) {
        return copy_rows(p.block_len, p.dims.back().stride, base, layout, pk, lo, hi, pack, stream);
    });
}

}  // namespace

ucxdt_status_t launch_plan_kernel(const Plan &p, char *layout, char *packed, int64_t offset,
                                  int64_t length, bool pack, cudaStream_t stream, bool host_link) {
    if (length == 0) return UCXDT_OK;
    if (p.cls == UCXDT_PLAN_CONTIGUOUS) {
        char *lay = at(layout, p.base + offset);
        return check(cudaMemcpyAsync(pack ? packed : lay, pack ? lay : packed,
                                     static_cast<size_t>(length), cudaMemcpyDefault, stream),
                     "cudaMemcpyAsync");
    }
    return strided_kernel(p, layout, packed, offset, length, pack, stream,
                          strided_kernel_for(p, layout, packed, offset, length, false, host_link), host_link);
}

bool strided_pair(const Plan &from, const Plan &to) {
    return from.cls == UCXDT_PLAN_STRIDED && to.cls == UCXDT_PLAN_STRIDED && from.block_len == to.block_len &&
           from.packed_size == to.packed_size && from.dims.size() <= static_cast<size_t>(kMaxDims) &&
           to.dims.size() <= static_cast<size_t>(kMaxDims);
}

ucxdt_status_t copy_layouts_async(const Plan &from_plan, char *from_buf, const Plan &to_plan, char *to_buf,
                                  int device, cudaStream_t stream, bool peer, LaunchBatch *batch) {
    if (!strided_pair(from_plan, to_plan))
        return fail(UCXDT_ERR_INVALID_PARAM, "a layout-to-layout copy needs two strided plans of equal runs");
    if (from_plan.packed_size == 0) return UCXDT_OK;
    // The same layout on both sides takes each byte to its own displacement, so the runs may go
    // in address order: neighbours in memory move together (the packed order of a transpose's
    // columns reads and writes 8 bytes a row apart: 0.15 of a device copy on one H200), and a
    // type that covers its span whole is one copy.
    Plan ordered;
    const bool same = same_shape(from_plan, to_plan) && address_ordered(from_plan, &ordered);
    const Plan &from = same ? ordered : from_plan, &to = same ? ordered : to_plan;
    if (from.cls == UCXDT_PLAN_CONTIGUOUS)
        return check(cudaMemcpyAsync(at(to_buf, from.base), at(from_buf, from.base), static_cast<size_t>(from.packed_size),
                                     cudaMemcpyDefault, stream),
                     "cudaMemcpyAsync (a layout into itself, in address order)");
    // One level on each side, rows apart: one 2-D copy, where the method model picks the copy
    // engine for `from` (the rule that prices rows across the link). Not in a batch: there the
    // receiver's CPU bounds a window of pulls, and one kernel for several copies beat a 2-D copy
    // each (1 MiB V pulled on two H200s: 1.18 of UCP's contiguous rate against 0.91-0.94).
    if (!batch && from.dims.size() == 1 && to.dims.size() == 1 && to.dims[0].stride >= to.block_len) {
        ucxdt_gpu_method_t method;
        if (ucxdt_status_t st = choose_method(from, device, peer ? Packed::peer : Packed::device, &method)) return st;
        if (method == UCXDT_GPU_METHOD_COPY_ENGINE_2D)
            return check(cudaMemcpy2DAsync(at(to_buf, to.base), static_cast<size_t>(to.dims[0].stride),
                                           at(from_buf, from.base), static_cast<size_t>(from.dims[0].stride),
                                           static_cast<size_t>(from.block_len),
                                           static_cast<size_t>(from.dims[0].count), cudaMemcpyDefault, stream),
                         "cudaMemcpy2DAsync (layout to layout)");
    }
    // The strided kernel, "packing" into the second layout: run i of `from` goes to run i of `to`.
    const kernels::StridedArgs a = strided_args(from, from_buf, to_buf, from.base, 0, 0, from.packed_size, true, false, &to, !batch);
    if (batch) return batch->strided.push_back(a), UCXDT_OK;
    return check(kernels::launch_strided(a, stream), "strided layout-to-layout kernel launch");
}

ucxdt_status_t copy_same_layout_async(const Plan &p, char *from_buf, char *to_buf, int device,
                                      cudaStream_t stream, LaunchBatch *batch) {
    if (p.cls == UCXDT_PLAN_STRIDED)  // in address order (copy_layouts_async)
        return copy_layouts_async(p, from_buf, p, to_buf, device, stream, true, batch);
    if (p.cls != UCXDT_PLAN_BLOCK_LIST)
        return fail(UCXDT_ERR_INVALID_PARAM, "a same-layout copy takes a block-list or strided plan");
    if (p.packed_size == 0) return UCXDT_OK;
    ucxdt_gpu_method_t method;
    if (ucxdt_status_t st = choose_method(p, device, Packed::peer, &method, batch != nullptr)) return st;
    // The whole packed stream as one window, every byte to its own displacement from to_buf
    // (which also stands, unused, for the packed buffer).
    if (method == UCXDT_GPU_METHOD_POINT_KERNEL)
        return point_kernel(p, from_buf, to_buf, 0, p.packed_size, true, device, stream, to_buf, batch);
    return unit_kernel(p, from_buf, to_buf, 0, p.packed_size, true, device, stream, to_buf, batch);
}

// Page-locked host memory on the packed side (staging) prices rows across the host link, for
// the plans that one 2-D copy could move; elsewhere it is served as device memory.
bool prices_host_link(const Plan &p) { return p.cls == UCXDT_PLAN_STRIDED && p.dims.size() == 1; }

Packed packed_side(const Plan &p, MemoryType packed, bool peer) {
    if (peer) return Packed::peer;
    return packed == MemoryType::HOST_PINNED && prices_host_link(p) ? Packed::host : Packed::device;
}

ucxdt_status_t transfer_async(const Plan &p, char *layout, char *packed, int64_t offset,
                              int64_t length, bool pack, int device, cudaStream_t stream, bool peer,
                              LaunchBatch *batch) {
    if (length == 0) return UCXDT_OK;
    // The pointer query only where its answer matters.
    const MemoryType m = !peer && prices_host_link(p) ? memory_type(packed) : MemoryType::DEVICE;
    return transfer_async(p, layout, packed, offset, length, pack, device, stream, packed_side(p, m, peer), batch);
}

ucxdt_status_t transfer_async(const Plan &p, char *layout, char *packed, int64_t offset,
                              int64_t length, bool pack, int device, cudaStream_t stream, Packed where,
                              LaunchBatch *batch) {
    if (length == 0) return UCXDT_OK;
    // A kernel shares its launch when there is a batch. Across the host link its fixed cost is
    // paid once a launch and overlaps running work: it counts as shared only when it is (the
    // first message on an idle stream pays it alone).
    const StridedKernel kernel = p.cls != UCXDT_PLAN_STRIDED ? StridedKernel::runs
        : strided_kernel_for(p, layout, packed, offset, length, batch != nullptr, where == Packed::host);
    const bool batched = batch && (where != Packed::host || batch->shares_launch());
    ucxdt_gpu_method_t method;
    if (ucxdt_status_t st = choose_method(p, device, where, &method, batched, pack)) return st;
    switch (method) {
    case UCXDT_GPU_METHOD_COPY_ENGINE:
        return launch_plan_kernel(p, layout, packed, offset, length, pack, stream);
    case UCXDT_GPU_METHOD_STRIDED_KERNEL:
        return strided_kernel(p, layout, packed, offset, length, pack, stream, kernel, where == Packed::host, batch);
    case UCXDT_GPU_METHOD_COPY_ENGINE_2D:
        return copy_2d(p, layout, packed, offset, length, pack, stream);
    case UCXDT_GPU_METHOD_UNIT_KERNEL:
        return unit_kernel(p, layout, packed, offset, length, pack, device, stream, nullptr, batch);
    case UCXDT_GPU_METHOD_POINT_KERNEL:
        return point_kernel(p, layout, packed, offset, length, pack, device, stream, nullptr, batch);
    }
    return UCXDT_OK;
}

}  // namespace ucxdt::cuda
