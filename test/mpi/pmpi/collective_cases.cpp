// Collective cases of the PMPI check: the all-to-all and all-gather calls with derived types,
// per-peer types (MPI_Alltoallw, MPI_Neighbor_alltoallw on a ring) and blocks placed out of
// order with gaps (the v variants), which the interposer routes; then rooted and nonblocking
// collectives, which it leaves to the MPI and a PML (pml ucxdt) carries.
#include "pmpi_case.hpp"

#include "support/mpi_deviations.hpp"
#include "support/typemap_walk.hpp"

#include <algorithm>
#include <memory>
#include <numeric>

namespace pmpi {

namespace {

// Displacements in elements of blocks of counts[i] elements: disjoint, in a random order,
// with gaps; *total elements hold them all.
std::vector<int> place(const std::vector<int> &counts, uint64_t seed, int *total) {
    T::Rng rng(seed);
    std::vector<size_t> order(counts.size());
    std::iota(order.begin(), order.end(), size_t{0});
    std::shuffle(order.begin(), order.end(), rng);
    std::vector<int> displs(counts.size());
    int at = 0;
    for (size_t i : order) displs[i] = at, at += counts[i] + static_cast<int>(rng() % 2);
    *total = at;
    return displs;
}

int64_t extent(const L::TypeDesc &d) { return ucxdt::ref::type_bounds(d).extent; }

// Per-peer types in one buffer each way: the types of a call like MPI_Alltoallw, whose slot
// j sends `out[j]`'s send type (data of slot j) and receives `in[j]`'s receive type from
// rank from[j] (MPI_PROC_NULL: nothing), which sent it as its slot from_slot[j].
struct PerPeer {
    std::vector<std::unique_ptr<MpiType>> st, rt;
    std::vector<int> scounts, rcounts;
    std::vector<MPI_Datatype> stypes, rtypes;
    Regions so, ri;
    Bytes sbuf;
    std::byte *sptr = nullptr;  // sbuf, or its device copy
    std::shared_ptr<std::byte> sdev;

    PerPeer(Case &c, const std::vector<const Pair *> &out, const std::vector<const Pair *> &in) {
        for (size_t j = 0; j < out.size(); ++j) {
            st.push_back(std::make_unique<MpiType>(*out[j]->send));
            rt.push_back(std::make_unique<MpiType>(*in[j]->recv));
            scounts.push_back(static_cast<int>(out[j]->count));
            rcounts.push_back(static_cast<int>(in[j]->count));
            stypes.push_back(st[j]->t), rtypes.push_back(rt[j]->t);
            so.add(*out[j]->send, st[j]->t, out[j]->count);
            ri.add(*in[j]->recv, rt[j]->t, in[j]->count);
        }
        sbuf.resize(static_cast<size_t>(so.bytes));
        for (size_t j = 0; j < out.size(); ++j)
            fill_data(sbuf, so.at[j], *out[j]->send, out[j]->count, c.data_seed(c.rank, j));
        sptr = mpi_buffer(sbuf, sdev);
    }
    // The receive buffer, expecting in slot j what rank from[j] sent as its slot from_slot[j].
    Inbox inbox(Case &c, const std::vector<const Pair *> &in, const std::vector<int> &from,
                const std::vector<int> &from_slot) {
        Inbox box(ri.bytes, c.data_seed(c.rank, 1000));
        for (size_t j = 0; j < in.size(); ++j)
            if (from[j] != MPI_PROC_NULL)
                box.expect(*in[j]->recv, in[j]->count, ri.at[j],
                           sent_stream(*in[j]->send, in[j]->count,
                                       c.data_seed(from[j], from_slot[j])));
        return box;
    }
};

// Waits for a nonblocking collective's request, or throws naming the call.
void wait(MPI_Request *req, const char *call) { ok(MPI_Wait(req, MPI_STATUS_IGNORE), call); }

// Slot p sends to and receives from rank p, each pair of ranks with its own types; as
// MPI_Ialltoallw and a wait when `nonblocking`.
void alltoallw_any(Case &c, bool nonblocking) {
    std::vector<const Pair *> out, in;
    std::vector<int> from, from_slot;
    for (int p = 0; p < c.size; ++p) {
        out.push_back(&(*c.peers)[c.rank][p]), in.push_back(&(*c.peers)[p][c.rank]);
        from.push_back(p), from_slot.push_back(c.rank);
    }
    PerPeer io(c, out, in);
    Inbox box = io.inbox(c, in, from, from_slot);
    const std::vector<int> sd(io.so.at.begin(), io.so.at.end()),
        rd(io.ri.at.begin(), io.ri.at.end());
    const char *call = nonblocking ? "MPI_Ialltoallw" : "MPI_Alltoallw";
    if (nonblocking) {
        MPI_Request req;
        ok(MPI_Ialltoallw(io.sptr, io.scounts.data(), sd.data(), io.stypes.data(), box.at(0),
                          io.rcounts.data(), rd.data(), io.rtypes.data(), c.comm, &req),
           call);
        wait(&req, call);
    } else {
        ok(MPI_Alltoallw(io.sptr, io.scounts.data(), sd.data(), io.stypes.data(), box.at(0),
                         io.rcounts.data(), rd.data(), io.rtypes.data(), c.comm),
           call);
    }
    c.check(box, call);
}
void alltoallw(Case &c) { alltoallw_any(c, false); }
void ialltoallw(Case &c) { alltoallw_any(c, true); }

// A ring as a 1-D Cartesian topology, periodic from 3 ranks on (with 2, both neighbours
// would be the same rank, which the standard leaves ambiguous): slot 0 is the neighbour
// below, slot 1 the one above; what a rank sends up arrives as its upper neighbour's slot 0.
// Rank s's types towards slot j are peers[s][j]. MPI_Ineighbor_alltoallw when `nonblocking`.
void neighbor_alltoallw_any(Case &c, bool nonblocking) {
    MPI_Comm cart;
    const int dims[1] = {c.size}, periods[1] = {c.size > 2};
    ok(MPI_Cart_create(c.comm, 1, dims, periods, 0, &cart), "MPI_Cart_create");
    int lo = MPI_PROC_NULL, hi = MPI_PROC_NULL;
    ok(MPI_Cart_shift(cart, 0, 1, &lo, &hi), "MPI_Cart_shift");
    const std::vector<int> from = {lo, hi}, from_slot = {1, 0};
    std::vector<const Pair *> out, in;
    for (int j = 0; j < 2; ++j) {
        out.push_back(&(*c.peers)[c.rank][j]);
        in.push_back(from[j] == MPI_PROC_NULL ? out.back() : &(*c.peers)[from[j]][from_slot[j]]);
    }
    PerPeer io(c, out, in);
    Inbox box = io.inbox(c, in, from, from_slot);
    const std::vector<MPI_Aint> sd(io.so.at.begin(), io.so.at.end()),
        rd(io.ri.at.begin(), io.ri.at.end());
    const char *call = nonblocking ? "MPI_Ineighbor_alltoallw" : "MPI_Neighbor_alltoallw";
    if (nonblocking) {
        MPI_Request req;
        ok(MPI_Ineighbor_alltoallw(io.sptr, io.scounts.data(), sd.data(), io.stypes.data(),
                                   box.at(0), io.rcounts.data(), rd.data(), io.rtypes.data(),
                                   cart, &req),
           call);
        wait(&req, call);
    } else {
        ok(MPI_Neighbor_alltoallw(io.sptr, io.scounts.data(), sd.data(), io.stypes.data(),
                                  box.at(0), io.rcounts.data(), rd.data(), io.rtypes.data(), cart),
           call);
    }
    ok(MPI_Comm_free(&cart), "MPI_Comm_free");
    c.check(box, call);
}
void neighbor_alltoallw(Case &c) { neighbor_alltoallw_any(c, false); }
void ineighbor_alltoallw(Case &c) { neighbor_alltoallw_any(c, true); }

// Block p of count elements to and from rank p, one type pair for all.
void alltoall(Case &c) {
    const Pair &p = *c.pair;
    const int n = c.size, k = static_cast<int>(p.count);
    MpiType st(*p.send), rt(*p.recv);
    Outbox out(*p.send, st.t, n * k, c.data_seed(c.rank));
    Inbox in(*p.recv, rt.t, n * k, c.data_seed(c.rank, 1000));
    for (int s = 0; s < n; ++s)
        in.expect(*p.recv, k, in.origin + s * k * extent(*p.recv),
                  sent_stream(*p.send, n * k, c.data_seed(s), c.rank * k, k));
    ok(MPI_Alltoall(out.ptr(), k, st.t, in.ptr(), k, rt.t, c.comm), "MPI_Alltoall");
    c.check(in, "MPI_Alltoall");
}

// Counts of 0 to 3 elements between each pair of ranks, blocks placed by place().
void alltoallv(Case &c) {
    const Pair &p = *c.pair;
    const int n = c.size;
    auto count = [&](int s, int d) { return static_cast<int>(mix(c.seed, s, d) % 4); };
    auto send_layout = [&](int s, std::vector<int> *counts, int *total) {
        for (int d = 0; d < n; ++d) counts->push_back(count(s, d));
        return place(*counts, mix(c.seed, s, 1), total);
    };
    std::vector<int> scounts, rcounts;
    int stotal = 0, rtotal = 0;
    const std::vector<int> sdispls = send_layout(c.rank, &scounts, &stotal);
    for (int s = 0; s < n; ++s) rcounts.push_back(count(s, c.rank));
    const std::vector<int> rdispls = place(rcounts, mix(c.seed, c.rank, 2), &rtotal);
    MpiType st(*p.send), rt(*p.recv);
    Outbox out(*p.send, st.t, stotal, c.data_seed(c.rank));
    Inbox in(*p.recv, rt.t, rtotal, c.data_seed(c.rank, 1000));
    for (int s = 0; s < n; ++s) {
        std::vector<int> counts;
        int total = 0;
        const std::vector<int> displs = send_layout(s, &counts, &total);
        in.expect(*p.recv, rcounts[s], in.origin + rdispls[s] * extent(*p.recv),
                  sent_stream(*p.send, total, c.data_seed(s), displs[c.rank], rcounts[s]));
    }
    ok(MPI_Alltoallv(out.ptr(), scounts.data(), sdispls.data(), st.t, in.ptr(), rcounts.data(),
                     rdispls.data(), rt.t, c.comm),
       "MPI_Alltoallv");
    c.check(in, "MPI_Alltoallv");
}

// Every rank's count elements, in rank order; received through a duplicate of the type.
// MPI_Iallgather and a wait when `nonblocking`.
void allgather_any(Case &c, bool nonblocking) {
    const Pair &p = *c.pair;
    const int n = c.size, k = static_cast<int>(p.count);
    MpiType st(*p.send), rt(*p.recv), dup(rt.t);
    Outbox out(*p.send, st.t, k, c.data_seed(c.rank));
    Inbox in(*p.recv, rt.t, n * k, c.data_seed(c.rank, 1000));
    for (int s = 0; s < n; ++s)
        in.expect(*p.recv, k, in.origin + s * k * extent(*p.recv),
                  sent_stream(*p.send, k, c.data_seed(s)));
    const char *call = nonblocking ? "MPI_Iallgather" : "MPI_Allgather";
    if (nonblocking) {
        MPI_Request req;
        ok(MPI_Iallgather(out.ptr(), k, st.t, in.ptr(), k, dup.t, c.comm, &req), call);
        wait(&req, call);
    } else {
        ok(MPI_Allgather(out.ptr(), k, st.t, in.ptr(), k, dup.t, c.comm), call);
    }
    c.check(in, call);
}
void allgather(Case &c) { allgather_any(c, false); }
void iallgather(Case &c) { allgather_any(c, true); }

// Rank s contributes 0 to 3 elements, placed by place().
void allgatherv(Case &c) {
    const Pair &p = *c.pair;
    const int n = c.size;
    std::vector<int> counts;
    for (int s = 0; s < n; ++s) counts.push_back(static_cast<int>(mix(c.seed, s) % 4));
    int total = 0;
    const std::vector<int> displs = place(counts, mix(c.seed, 3), &total);
    MpiType st(*p.send), rt(*p.recv);
    Outbox out(*p.send, st.t, counts[c.rank], c.data_seed(c.rank));
    Inbox in(*p.recv, rt.t, total, c.data_seed(c.rank, 1000));
    for (int s = 0; s < n; ++s)
        in.expect(*p.recv, counts[s], in.origin + displs[s] * extent(*p.recv),
                  sent_stream(*p.send, counts[s], c.data_seed(s)));
    ok(MPI_Allgatherv(out.ptr(), counts[c.rank], st.t, in.ptr(), counts.data(), displs.data(),
                      rt.t, c.comm),
       "MPI_Allgatherv");
    c.check(in, "MPI_Allgatherv");
}

// The root of a rooted case: any rank, drawn from the case's seed.
int root_of(const Case &c) { return static_cast<int>(mix(c.seed, 7) % static_cast<uint64_t>(c.size)); }

// count elements from the root to every rank, received as the receive type (whose signature
// is the send type's); MPI_Ibcast and a wait when `nonblocking`. The root's buffer is its
// send type; it receives nothing.
void bcast_any(Case &c, bool nonblocking) {
    const Pair &p = *c.pair;
    const int root = root_of(c), k = static_cast<int>(p.count);
    const char *call = nonblocking ? "MPI_Ibcast" : "MPI_Bcast";
    if (c.rank == root) {
        MpiType st(*p.send);
        Outbox out(*p.send, st.t, k, c.data_seed(root));
        if (nonblocking) {
            MPI_Request req;
            ok(MPI_Ibcast(out.ptr(), k, st.t, root, c.comm, &req), call);
            wait(&req, call);
        } else {
            ok(MPI_Bcast(out.ptr(), k, st.t, root, c.comm), call);
        }
        return;
    }
    MpiType rt(*p.recv);
    Inbox in(*p.recv, rt.t, k, c.data_seed(c.rank, 1000));
    in.expect(*p.recv, k, in.origin, sent_stream(*p.send, k, c.data_seed(root)));
    if (nonblocking) {
        MPI_Request req;
        ok(MPI_Ibcast(in.ptr(), k, rt.t, root, c.comm, &req), call);
        wait(&req, call);
    } else {
        ok(MPI_Bcast(in.ptr(), k, rt.t, root, c.comm), call);
    }
    c.check(in, call);
}
void bcast(Case &c) { bcast_any(c, false); }
void ibcast(Case &c) { bcast_any(c, true); }

// Every rank's count elements to the root, in rank order (the root's own block through
// MPI's local copy of send type to receive type).
void gather(Case &c) {
    const Pair &p = *c.pair;
    const int root = root_of(c), n = c.size, k = static_cast<int>(p.count);
    MpiType st(*p.send), rt(*p.recv);
    Outbox out(*p.send, st.t, k, c.data_seed(c.rank));
    if (c.rank != root) {
        ok(MPI_Gather(out.ptr(), k, st.t, nullptr, 0, MPI_DATATYPE_NULL, root, c.comm), "MPI_Gather");
        return;
    }
    Inbox in(*p.recv, rt.t, n * k, c.data_seed(c.rank, 1000));
    for (int s = 0; s < n; ++s)
        in.expect(*p.recv, k, in.origin + s * k * extent(*p.recv), sent_stream(*p.send, k, c.data_seed(s)));
    ok(MPI_Gather(out.ptr(), k, st.t, in.ptr(), k, rt.t, root, c.comm), "MPI_Gather");
    c.check(in, "MPI_Gather");
}

// Block s of the root's n * count elements to rank s.
void scatter(Case &c) {
    const Pair &p = *c.pair;
    const int root = root_of(c), n = c.size, k = static_cast<int>(p.count);
    MpiType st(*p.send), rt(*p.recv);
    Inbox in(*p.recv, rt.t, k, c.data_seed(c.rank, 1000));
    in.expect(*p.recv, k, in.origin, sent_stream(*p.send, n * k, c.data_seed(root), c.rank * k, k));
    if (c.rank == root) {
        Outbox out(*p.send, st.t, n * k, c.data_seed(root));
        ok(MPI_Scatter(out.ptr(), k, st.t, in.ptr(), k, rt.t, root, c.comm), "MPI_Scatter");
    } else {
        ok(MPI_Scatter(nullptr, 0, MPI_DATATYPE_NULL, in.ptr(), k, rt.t, root, c.comm), "MPI_Scatter");
    }
    c.check(in, "MPI_Scatter");
}

// Open MPI 5.0.7 sizes a block by its type's span, true extent + (count - 1) x extent, in
// places: libnbc's Ialltoallw and Ineighbor_alltoallw leave out a block whose span is not
// positive, however many bytes it holds (the sender skips a message its peer waits for), and
// the binomial MPI_Gather of a root other than 0 fails (MPI_ERR_INTERN) to allocate its
// temporary buffer. A negative extent makes the span of enough elements negative.
const char *nonpositive_span(const Pair &p) {
    static const bool open_mpi = T::mpi_identity().flavor == T::MpiIdentity::Flavor::open_mpi;
    if (!open_mpi) return nullptr;
    for (const L::TypeDescPtr &d : {p.send, p.recv}) {
        const auto b = ucxdt::ref::type_bounds(*d);
        if (p.count > 0 && (b.extent < 0 || b.true_extent + (p.count - 1) * b.extent <= 0))
            return "openmpi-nonpositive-span";
    }
    return nullptr;
}

}  // namespace

std::vector<Mode> collective_modes() {
    return {
        {"alltoallw", alltoallw, true},
        {"alltoall", alltoall},
        {"alltoallv", alltoallv},
        {"allgather", allgather},
        {"allgatherv", allgatherv},
        {"neighbor_alltoallw", neighbor_alltoallw, true},
        // Left to the MPI by the interposer:
        {"bcast", bcast, false, false},
        {"ibcast", ibcast, false, false},
        {"gather", gather, false, false, nonpositive_span},
        {"scatter", scatter, false, false, nonpositive_span},
        {"iallgather", iallgather, false, false},
        {"ialltoallw", ialltoallw, true, false, nonpositive_span},
        {"ineighbor_alltoallw", ineighbor_alltoallw, true, false, nonpositive_span},
    };
}

}  // namespace pmpi
