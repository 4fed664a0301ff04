// Collectives whose datatypes describe layouts (MPI-4.1 6.7, 6.9, 8.6): the blocks of every peer
// are packed into one staging buffer, the same collective of the MPI moves them as MPI_BYTE with
// byte counts and displacements, and the received blocks are unpacked. A call is taken when some
// block is routed and every other block is contiguous, so that it can be copied as bytes;
// otherwise the MPI has it all. Each rank decides alone, so the MPI must see the same collective
// either way: a rank that routes and one that does not then still match, as their blocks have
// the same signatures (bytes on the wire, as for point-to-point).
#include "pmpi.hpp"

#include "base/address.hpp"

#include <cuda_runtime_api.h>

#include <climits>
#include <cstring>
#include <vector>

namespace ucxdt::pmpi {
namespace {

struct Block {
    const void *buf;  // the application's buffer of this block
    int64_t count;
    MPI_Datatype dt;
};

// How one block gets in and out of staging.
struct Plan {
    bool routed = false;
    Route r;
    int64_t bytes = 0;
    int64_t true_lb = 0;  // plain blocks: their bytes start at buf + true_lb
};

// False when the block is neither routed nor contiguous (count x size bytes in a row).
bool classify(const Block &b, Plan *p) {
    if (b.count == 0) return true;
    if ((p->routed = route(b.buf, b.count, b.dt, &p->r))) {
        p->bytes = p->r.bytes;
        return true;
    }
    MPI_Count size, lb, extent, tlb, textent;
    if (PMPI_Type_size_x(b.dt, &size) != MPI_SUCCESS || PMPI_Type_get_extent_x(b.dt, &lb, &extent) != MPI_SUCCESS ||
        PMPI_Type_get_true_extent_x(b.dt, &tlb, &textent) != MPI_SUCCESS)
        return false;
    if (textent != size || (b.count > 1 && extent != size)) return false;
    p->bytes = static_cast<int64_t>(size) * b.count;
    p->true_lb = tlb;
    // Staged where a routed block of the same memory would be: a GPU's plain blocks are then
    // copied device to device, not through pageable memory.
    p->r.device = gpu_of(at(b.buf, tlb));
    p->r.staging = staging_for(p->r.device, p->bytes);
    return true;
}

void copy_bytes(void *dst, const void *src, int64_t n) {
    if (n == 0) return;
    if (gpu_of(dst) < 0 && gpu_of(src) < 0) std::memcpy(dst, src, static_cast<size_t>(n));
    else cudaMemcpy(dst, src, static_cast<size_t>(n), cudaMemcpyDefault);
}


// One side of the exchange: its blocks' plans, byte counts and offsets, and its staging.
struct Side {
    std::vector<Plan> plans;
    std::vector<int> bytes, offsets;
    Staging s;
    bool any_routed = false;

    bool prepare(const std::vector<Block> &blocks) {
        plans.resize(blocks.size());
        int64_t total = 0;
        Where where = Where::kHost;
        int device = -1;
        for (size_t i = 0; i < blocks.size(); ++i) {
            if (!classify(blocks[i], &plans[i])) return false;
            if (plans[i].bytes > INT_MAX || total > INT_MAX - plans[i].bytes) return false;
            bytes.push_back(static_cast<int>(plans[i].bytes));
            offsets.push_back(static_cast<int>(total));
            total += plans[i].bytes;
            any_routed |= plans[i].routed;
            if (plans[i].bytes > 0) {
                // Device staging wins over pinned over pageable: the MPI then moves GPU memory.
                if (static_cast<int>(plans[i].r.staging) > static_cast<int>(where)) {
                    where = plans[i].r.staging;
                    device = plans[i].r.device;
                }
            }
        }
        s = get_staging(total > 0 ? total : 1, where, device);
        return s.ptr != nullptr;
    }
    char *slot(size_t i) const { return static_cast<char *>(s.ptr) + offsets[i]; }
};

// Both enqueue the routed blocks' GPU work in `batch` (one synchronization for the call).
int pack_blocks(const std::vector<Block> &blocks, const Side &side, Batch &batch) {
    for (size_t i = 0; i < blocks.size(); ++i) {
        const Plan &p = side.plans[i];
        if (p.bytes == 0) continue;
        if (p.routed) {
            const int rc = batch.pack(p.r, blocks[i].buf, blocks[i].count, side.slot(i));
            if (rc != MPI_SUCCESS) return rc;
        } else {
            copy_bytes(side.slot(i), at(blocks[i].buf, p.true_lb), p.bytes);
        }
    }
    return MPI_SUCCESS;
}

int unpack_blocks(const std::vector<Block> &blocks, const Side &side, Batch &batch) {
    for (size_t i = 0; i < blocks.size(); ++i) {
        const Plan &p = side.plans[i];
        if (p.bytes == 0) continue;
        void *buf = const_cast<void *>(blocks[i].buf);
        if (p.routed) {
            const int rc = batch.unpack(p.r, side.slot(i), p.bytes, buf, blocks[i].count);
            if (rc != MPI_SUCCESS) return rc;
        } else {
            copy_bytes(at(buf, p.true_lb), side.slot(i), p.bytes);
        }
    }
    return MPI_SUCCESS;
}

// Returns false (nothing done) when the MPI should run the call itself; else *rc is its code.
// `run(s, r)` is the MPI's collective over the packed bytes of the two sides.
template <typename Run>
bool exchange(const std::vector<Block> &send, const std::vector<Block> &recv, MPI_Comm comm, int *rc, Run &&run) {
    Side s, r;
    const bool ok = s.prepare(send) && r.prepare(recv) && (s.any_routed || r.any_routed);
    if (!ok) {
        put_staging(s.s);
        put_staging(r.s);
        return false;
    }
    Batch batch;
    batch.comm = comm;
    *rc = pack_blocks(send, s, batch);
    if (*rc == MPI_SUCCESS) *rc = batch.wait();
    else fail(comm, *rc);
    if (*rc == MPI_SUCCESS && (*rc = run(s, r)) == MPI_SUCCESS) {  // the MPI's own errors went through its handler
        *rc = unpack_blocks(recv, r, batch);
        if (*rc == MPI_SUCCESS) *rc = batch.wait();
        else fail(comm, *rc);
    }
    batch.release_after(s.s);
    batch.release_after(r.s);
    batch.wait();
    if (*rc == MPI_SUCCESS) count_op(kCollectives);
    return true;
}

// MPI_BYTE for each of n blocks, and byte displacements as MPI_Aint (the w-collectives' types).
std::vector<MPI_Datatype> bytes_types(size_t n) { return std::vector<MPI_Datatype>(n, MPI_BYTE); }
std::vector<MPI_Aint> aint(const std::vector<int> &v) { return std::vector<MPI_Aint>(v.begin(), v.end()); }

int comm_size(MPI_Comm comm) {
    int inter = 0, n = 0;
    PMPI_Comm_test_inter(comm, &inter);
    if (inter) return -1;  // intercommunicators are left to the MPI
    PMPI_Comm_size(comm, &n);
    return n;
}

MPI_Aint extent_of(MPI_Datatype dt) {
    MPI_Aint lb, extent;
    PMPI_Type_get_extent(dt, &lb, &extent);
    return extent;
}

// Blocks at buf + displs[i] x unit bytes.
template <typename Count, typename Disp>
std::vector<Block> blocks_of(const void *buf, int n, const Count *counts, const Disp *displs, MPI_Aint unit,
                             const MPI_Datatype *types, MPI_Datatype one_type) {
    std::vector<Block> b(static_cast<size_t>(n));
    for (int i = 0; i < n; ++i)
        b[i] = {at(buf, static_cast<int64_t>(displs[i]) * unit), counts[i], types ? types[i] : one_type};
    return b;
}

// Neighbours of a process topology in the order of the neighbourhood collectives' blocks
// (MPI-4.1 8.6): sources, then destinations; false without a topology.
bool neighbors(MPI_Comm comm, std::vector<int> *sources, std::vector<int> *dests) {
    int topo = MPI_UNDEFINED;
    PMPI_Topo_test(comm, &topo);
    if (topo == MPI_CART) {
        int nd = 0;
        PMPI_Cartdim_get(comm, &nd);
        // Per dimension, the block of displacement -1 first, then +1; both directions name the
        // same pair of ranks, which may be MPI_PROC_NULL at a non-periodic border.
        for (int d = 0; d < nd; ++d) {
            int lo, hi;
            PMPI_Cart_shift(comm, d, 1, &lo, &hi);
            sources->insert(sources->end(), {lo, hi});
            dests->insert(dests->end(), {lo, hi});
        }
        return true;
    }
    if (topo == MPI_GRAPH) {
        int rank = 0, n = 0;
        PMPI_Comm_rank(comm, &rank);
        PMPI_Graph_neighbors_count(comm, rank, &n);
        sources->resize(static_cast<size_t>(n));
        PMPI_Graph_neighbors(comm, rank, n, sources->data());
        *dests = *sources;
        return true;
    }
    if (topo == MPI_DIST_GRAPH) {
        int in = 0, out = 0, weighted = 0;
        PMPI_Dist_graph_neighbors_count(comm, &in, &out, &weighted);
        sources->resize(static_cast<size_t>(in));
        dests->resize(static_cast<size_t>(out));
        PMPI_Dist_graph_neighbors(comm, in, sources->data(), MPI_UNWEIGHTED, out, dests->data(), MPI_UNWEIGHTED);
        return true;
    }
    return false;
}

// Blocks of MPI_PROC_NULL neighbours move nothing: their receive blocks must stay untouched.
void drop_null_peers(std::vector<Block> &blocks, const std::vector<int> &peers) {
    for (size_t i = 0; i < blocks.size(); ++i)
        if (peers[i] == MPI_PROC_NULL) blocks[i].count = 0;
}

}  // namespace
}  // namespace ucxdt::pmpi

using namespace ucxdt::pmpi;

UCXDT_PMPI_EXPORT int MPI_Alltoallw(const void *sendbuf, const int sendcounts[], const int sdispls[],
                                    const MPI_Datatype sendtypes[], void *recvbuf, const int recvcounts[],
                                    const int rdispls[], const MPI_Datatype recvtypes[], MPI_Comm comm) {
    const int n = comm_size(comm);
    int rc = MPI_SUCCESS;
    if (n > 0) {
        const auto recv = blocks_of(recvbuf, n, recvcounts, rdispls, 1, recvtypes, MPI_DATATYPE_NULL);
        // MPI_IN_PLACE: what is sent comes from the receive layout, packed before it is overwritten.
        const auto send = sendbuf == MPI_IN_PLACE ? recv
                                                  : blocks_of(sendbuf, n, sendcounts, sdispls, 1, sendtypes,
                                                              MPI_DATATYPE_NULL);
        if (exchange(send, recv, comm, &rc, [&](Side &s, Side &r) {
                const auto types = bytes_types(static_cast<size_t>(n));
                return PMPI_Alltoallw(s.s.ptr, s.bytes.data(), s.offsets.data(), types.data(), r.s.ptr,
                                      r.bytes.data(), r.offsets.data(), types.data(), comm);
            }))
            return rc;
    }
    return PMPI_Alltoallw(sendbuf, sendcounts, sdispls, sendtypes, recvbuf, recvcounts, rdispls, recvtypes, comm);
}

UCXDT_PMPI_EXPORT int MPI_Alltoallv(const void *sendbuf, const int sendcounts[], const int sdispls[],
                                    MPI_Datatype sendtype, void *recvbuf, const int recvcounts[], const int rdispls[],
                                    MPI_Datatype recvtype, MPI_Comm comm) {
    const int n = comm_size(comm);
    int rc = MPI_SUCCESS;
    if (n > 0) {
        const auto recv = blocks_of(recvbuf, n, recvcounts, rdispls, extent_of(recvtype), nullptr, recvtype);
        const auto send = sendbuf == MPI_IN_PLACE
                              ? recv
                              : blocks_of(sendbuf, n, sendcounts, sdispls, extent_of(sendtype), nullptr, sendtype);
        if (exchange(send, recv, comm, &rc, [&](Side &s, Side &r) {
                return PMPI_Alltoallv(s.s.ptr, s.bytes.data(), s.offsets.data(), MPI_BYTE, r.s.ptr, r.bytes.data(),
                                      r.offsets.data(), MPI_BYTE, comm);
            }))
            return rc;
    }
    return PMPI_Alltoallv(sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts, rdispls, recvtype, comm);
}

UCXDT_PMPI_EXPORT int MPI_Alltoall(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                                   int recvcount, MPI_Datatype recvtype, MPI_Comm comm) {
    const int n = comm_size(comm);
    int rc = MPI_SUCCESS;
    if (n > 0) {
        const std::vector<int> rcounts(static_cast<size_t>(n), recvcount), scounts(static_cast<size_t>(n), sendcount);
        std::vector<int64_t> rdispls(static_cast<size_t>(n)), sdispls(static_cast<size_t>(n));
        for (int i = 0; i < n; ++i) {
            rdispls[i] = int64_t{i} * recvcount;
            sdispls[i] = int64_t{i} * sendcount;
        }
        const auto recv = blocks_of(recvbuf, n, rcounts.data(), rdispls.data(), extent_of(recvtype), nullptr, recvtype);
        const auto send = sendbuf == MPI_IN_PLACE ? recv
                                                  : blocks_of(sendbuf, n, scounts.data(), sdispls.data(),
                                                              extent_of(sendtype), nullptr, sendtype);
        // Every block has the packed size of (count, type) on each side.
        if (exchange(send, recv, comm, &rc, [&](Side &s, Side &r) {
                return PMPI_Alltoall(s.s.ptr, s.bytes[0], MPI_BYTE, r.s.ptr, r.bytes[0], MPI_BYTE, comm);
            }))
            return rc;
    }
    return PMPI_Alltoall(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm);
}

UCXDT_PMPI_EXPORT int MPI_Allgatherv(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                                     const int recvcounts[], const int displs[], MPI_Datatype recvtype,
                                     MPI_Comm comm) {
    const int n = comm_size(comm);
    int rc = MPI_SUCCESS;
    if (n > 0) {
        int rank = 0;
        PMPI_Comm_rank(comm, &rank);
        const auto recv = blocks_of(recvbuf, n, recvcounts, displs, extent_of(recvtype), nullptr, recvtype);
        // MPI_IN_PLACE: this rank's contribution already sits in its block of the receive layout.
        const std::vector<Block> send{sendbuf == MPI_IN_PLACE ? recv[rank] : Block{sendbuf, sendcount, sendtype}};
        if (exchange(send, recv, comm, &rc, [&](Side &s, Side &r) {
                return PMPI_Allgatherv(s.s.ptr, s.bytes[0], MPI_BYTE, r.s.ptr, r.bytes.data(), r.offsets.data(),
                                       MPI_BYTE, comm);
            }))
            return rc;
    }
    return PMPI_Allgatherv(sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype, comm);
}

UCXDT_PMPI_EXPORT int MPI_Allgather(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                                    int recvcount, MPI_Datatype recvtype, MPI_Comm comm) {
    const int n = comm_size(comm);
    int rc = MPI_SUCCESS;
    if (n > 0) {
        int rank = 0;
        PMPI_Comm_rank(comm, &rank);
        const std::vector<int> counts(static_cast<size_t>(n), recvcount);
        std::vector<int64_t> displs(static_cast<size_t>(n));
        for (int i = 0; i < n; ++i) displs[i] = int64_t{i} * recvcount;
        const auto recv = blocks_of(recvbuf, n, counts.data(), displs.data(), extent_of(recvtype), nullptr, recvtype);
        const std::vector<Block> send{sendbuf == MPI_IN_PLACE ? recv[rank] : Block{sendbuf, sendcount, sendtype}};
        if (exchange(send, recv, comm, &rc, [&](Side &s, Side &r) {
                return PMPI_Allgather(s.s.ptr, s.bytes[0], MPI_BYTE, r.s.ptr, r.bytes[0], MPI_BYTE, comm);
            }))
            return rc;
    }
    return PMPI_Allgather(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm);
}

UCXDT_PMPI_EXPORT int MPI_Neighbor_alltoallw(const void *sendbuf, const int sendcounts[], const MPI_Aint sdispls[],
                                             const MPI_Datatype sendtypes[], void *recvbuf, const int recvcounts[],
                                             const MPI_Aint rdispls[], const MPI_Datatype recvtypes[],
                                             MPI_Comm comm) {
    std::vector<int> sources, dests;
    int rc = MPI_SUCCESS;
    if (neighbors(comm, &sources, &dests)) {
        const int in = static_cast<int>(sources.size()), out = static_cast<int>(dests.size());
        auto send = blocks_of(sendbuf, out, sendcounts, sdispls, 1, sendtypes, MPI_DATATYPE_NULL);
        auto recv = blocks_of(recvbuf, in, recvcounts, rdispls, 1, recvtypes, MPI_DATATYPE_NULL);
        drop_null_peers(send, dests);
        drop_null_peers(recv, sources);
        if (exchange(send, recv, comm, &rc, [&](Side &s, Side &r) {
                const auto stypes = bytes_types(s.bytes.size()), rtypes = bytes_types(r.bytes.size());
                const auto sdisp = aint(s.offsets), rdisp = aint(r.offsets);
                return PMPI_Neighbor_alltoallw(s.s.ptr, s.bytes.data(), sdisp.data(), stypes.data(), r.s.ptr,
                                               r.bytes.data(), rdisp.data(), rtypes.data(), comm);
            }))
            return rc;
    }
    return PMPI_Neighbor_alltoallw(sendbuf, sendcounts, sdispls, sendtypes, recvbuf, recvcounts, rdispls, recvtypes,
                                   comm);
}
