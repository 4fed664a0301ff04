// Collectives whose datatypes describe layouts (MPI-4.1 6.7, 6.9, 8.6): the blocks of every peer
// are packed into one staging buffer, the MPI's own collective moves them as MPI_BYTE with byte
// counts and displacements (MPI_Alltoallv, MPI_Allgatherv, MPI_Neighbor_alltoallv), and the
// received blocks are unpacked. A call is taken when some block is routed and every other block
// is contiguous, so that it can be copied as bytes; otherwise the MPI has it all.
#include "pmpi.hpp"

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
    return true;
}

void copy_bytes(void *dst, const void *src, int64_t n) {
    if (n == 0) return;
    if (gpu_of(dst) < 0 && gpu_of(src) < 0) std::memcpy(dst, src, static_cast<size_t>(n));
    else cudaMemcpy(dst, src, static_cast<size_t>(n), cudaMemcpyDefault);
}

const char *at(const void *buf, int64_t off) {
    return reinterpret_cast<const char *>(reinterpret_cast<uintptr_t>(buf) + static_cast<uintptr_t>(off));
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
            if (plans[i].routed) {
                any_routed = true;
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

int pack_blocks(const std::vector<Block> &blocks, const Side &side) {
    for (size_t i = 0; i < blocks.size(); ++i) {
        const Plan &p = side.plans[i];
        if (p.bytes == 0) continue;
        if (p.routed) {
            const int rc = pack(p.r, blocks[i].buf, blocks[i].count, side.slot(i));
            if (rc != MPI_SUCCESS) return rc;
        } else {
            copy_bytes(side.slot(i), at(blocks[i].buf, p.true_lb), p.bytes);
        }
    }
    return MPI_SUCCESS;
}

int unpack_blocks(const std::vector<Block> &blocks, const Side &side) {
    for (size_t i = 0; i < blocks.size(); ++i) {
        const Plan &p = side.plans[i];
        if (p.bytes == 0) continue;
        void *buf = const_cast<void *>(blocks[i].buf);
        if (p.routed) {
            const int rc = unpack(p.r, side.slot(i), p.bytes, buf, blocks[i].count);
            if (rc != MPI_SUCCESS) return rc;
        } else {
            copy_bytes(const_cast<char *>(at(buf, p.true_lb)), side.slot(i), p.bytes);
        }
    }
    return MPI_SUCCESS;
}

enum class Kind { kAlltoallv, kAllgatherv, kNeighbor };

// Returns false (nothing done) when the MPI should run the call itself; else *rc is its code.
bool exchange(const std::vector<Block> &send, const std::vector<Block> &recv, Kind kind, MPI_Comm comm, int *rc) {
    Side s, r;
    const bool ok = s.prepare(send) && r.prepare(recv) && (s.any_routed || r.any_routed);
    if (!ok) {
        put_staging(s.s);
        put_staging(r.s);
        return false;
    }
    *rc = pack_blocks(send, s);
    if (*rc != MPI_SUCCESS) {
        fail(comm, *rc);
    } else {
        // An error of the MPI's own call has been through the handler already.
        switch (kind) {
        case Kind::kAlltoallv:
            *rc = PMPI_Alltoallv(s.s.ptr, s.bytes.data(), s.offsets.data(), MPI_BYTE, r.s.ptr, r.bytes.data(),
                                 r.offsets.data(), MPI_BYTE, comm);
            break;
        case Kind::kAllgatherv:
            *rc = PMPI_Allgatherv(s.s.ptr, s.bytes[0], MPI_BYTE, r.s.ptr, r.bytes.data(), r.offsets.data(), MPI_BYTE,
                                  comm);
            break;
        case Kind::kNeighbor:
            *rc = PMPI_Neighbor_alltoallv(s.s.ptr, s.bytes.data(), s.offsets.data(), MPI_BYTE, r.s.ptr, r.bytes.data(),
                                          r.offsets.data(), MPI_BYTE, comm);
            break;
        }
        if (*rc == MPI_SUCCESS && (*rc = unpack_blocks(recv, r)) != MPI_SUCCESS) fail(comm, *rc);
    }
    put_staging(s.s);
    put_staging(r.s);
    if (*rc == MPI_SUCCESS) count_op(kCollectives);
    return true;
}

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

// Neighbours of a process topology (MPI-4.1 8.6): (sources, destinations), or false.
bool neighbor_counts(MPI_Comm comm, int *in, int *out) {
    int topo = MPI_UNDEFINED, rank = 0;
    PMPI_Topo_test(comm, &topo);
    if (topo == MPI_CART) {
        int nd = 0;
        PMPI_Cartdim_get(comm, &nd);
        *in = *out = 2 * nd;
        return true;
    }
    if (topo == MPI_GRAPH) {
        PMPI_Comm_rank(comm, &rank);
        PMPI_Graph_neighbors_count(comm, rank, in);
        *out = *in;
        return true;
    }
    if (topo == MPI_DIST_GRAPH) {
        int weighted = 0;
        PMPI_Dist_graph_neighbors_count(comm, in, out, &weighted);
        return true;
    }
    return false;
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
        if (exchange(send, recv, Kind::kAlltoallv, comm, &rc)) return rc;
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
        if (exchange(send, recv, Kind::kAlltoallv, comm, &rc)) return rc;
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
        if (exchange(send, recv, Kind::kAlltoallv, comm, &rc)) return rc;
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
        if (exchange(send, recv, Kind::kAllgatherv, comm, &rc)) return rc;
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
        if (exchange(send, recv, Kind::kAllgatherv, comm, &rc)) return rc;
    }
    return PMPI_Allgather(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm);
}

UCXDT_PMPI_EXPORT int MPI_Neighbor_alltoallw(const void *sendbuf, const int sendcounts[], const MPI_Aint sdispls[],
                                             const MPI_Datatype sendtypes[], void *recvbuf, const int recvcounts[],
                                             const MPI_Aint rdispls[], const MPI_Datatype recvtypes[],
                                             MPI_Comm comm) {
    int in = 0, out = 0, rc = MPI_SUCCESS;
    if (neighbor_counts(comm, &in, &out)) {
        const auto send = blocks_of(sendbuf, out, sendcounts, sdispls, 1, sendtypes, MPI_DATATYPE_NULL);
        const auto recv = blocks_of(recvbuf, in, recvcounts, rdispls, 1, recvtypes, MPI_DATATYPE_NULL);
        if (exchange(send, recv, Kind::kNeighbor, comm, &rc)) return rc;
    }
    return PMPI_Neighbor_alltoallw(sendbuf, sendcounts, sdispls, sendtypes, recvbuf, recvcounts, rdispls, recvtypes,
                                   comm);
}
