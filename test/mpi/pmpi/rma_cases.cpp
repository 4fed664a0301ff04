// One-sided cases of the PMPI check (MPI-4.1 §12), run with --one-sided: every rank writes into
// its ring successor's window (Case::dst) or reads its predecessor's (Case::src), the origin
// and target datatypes of a case's pair, in each synchronization mode. (Accumulates need types
// of one predefined type, §12.3.4, which random pairs are not.) The interposer routes no
// one-sided call; under Open MPI the osc component moves the layouts (osc ucxdt under pml ucxdt).
#include "pmpi_case.hpp"

namespace pmpi {

namespace {

// A window over an Inbox of the receive type: each rank's target, checked after the epoch; disp
// is the displacement of its type map.
struct Target {
    Target(Case &c) : rt(*c.pair->recv), in(*c.pair->recv, rt.t, c.pair->count, c.data_seed(c.rank, 2000)) {
        // An Inbox begins at or before its type map's pointer (origin >= 0): only a dynamic
        // window takes a negative displacement (MPI-4.1 §12.3).
        disp = in.origin;
        ok(MPI_Win_create(in.at(0), in.size(), 1, MPI_INFO_NULL, c.comm, &win), "MPI_Win_create");
        in.expect(*c.pair->recv, c.pair->count, in.origin, sent_stream(*c.pair->send, c.pair->count, c.data_seed(c.src)));
    }
    ~Target() { MPI_Win_free(&win); }
    MpiType rt;
    Inbox in;
    MPI_Aint disp = 0;
    MPI_Win win = MPI_WIN_NULL;
};

int n(const Case &c) { return static_cast<int>(c.pair->count); }

// Fence epochs: the put lands in dst's window, which every rank checks after the closing fence.
void put_fence(Case &c) {
    Target t(c);
    MpiType st(*c.pair->send);
    Outbox out(*c.pair->send, st.t, c.pair->count, c.data_seed(c.rank));
    ok(MPI_Win_fence(0, t.win), "MPI_Win_fence");
    ok(MPI_Put(out.ptr(), n(c), st.t, c.dst, t.disp, n(c), t.rt.t, t.win), "MPI_Put");
    ok(MPI_Win_fence(0, t.win), "MPI_Win_fence");
    c.check(t.in, "MPI_Put/fence");
}

// General active target: each rank exposes its window to src and accesses dst's.
void put_pscw(Case &c) {
    Target t(c);
    MpiType st(*c.pair->send);
    Outbox out(*c.pair->send, st.t, c.pair->count, c.data_seed(c.rank));
    MPI_Group all, from, to;
    ok(MPI_Comm_group(c.comm, &all), "MPI_Comm_group");
    ok(MPI_Group_incl(all, 1, &c.src, &from), "MPI_Group_incl");
    ok(MPI_Group_incl(all, 1, &c.dst, &to), "MPI_Group_incl");
    ok(MPI_Win_post(from, 0, t.win), "MPI_Win_post");
    ok(MPI_Win_start(to, 0, t.win), "MPI_Win_start");
    ok(MPI_Put(out.ptr(), n(c), st.t, c.dst, t.disp, n(c), t.rt.t, t.win), "MPI_Put");
    ok(MPI_Win_complete(t.win), "MPI_Win_complete");
    ok(MPI_Win_wait(t.win), "MPI_Win_wait");
    MPI_Group_free(&from), MPI_Group_free(&to), MPI_Group_free(&all);
    c.check(t.in, "MPI_Put/PSCW");
}

// MPI_Rput under an exclusive lock of dst (request-based calls need a passive-target epoch,
// MPI-4.1 §12.3.5): its request completes at the origin, the unlock at the target.
void rput_lock(Case &c) {
    Target t(c);
    MpiType st(*c.pair->send);
    Outbox out(*c.pair->send, st.t, c.pair->count, c.data_seed(c.rank));
    ok(MPI_Barrier(c.comm), "MPI_Barrier");
    ok(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, c.dst, 0, t.win), "MPI_Win_lock");
    MPI_Request q;
    ok(MPI_Rput(out.ptr(), n(c), st.t, c.dst, t.disp, n(c), t.rt.t, t.win, &q), "MPI_Rput");
    ok(MPI_Wait(&q, MPI_STATUS_IGNORE), "MPI_Wait");
    ok(MPI_Win_unlock(c.dst, t.win), "MPI_Win_unlock");
    ok(MPI_Barrier(c.comm), "MPI_Barrier");
    c.check(t.in, "MPI_Rput/lock");
}

// MPI_Rget under MPI_Win_lock_all: each rank reads src's data, exposed in a window of the send
// type, into its own receive type.
void rget_lock_all(Case &c) {
    MpiType st(*c.pair->send), rt(*c.pair->recv);
    Outbox data(*c.pair->send, st.t, c.pair->count, c.data_seed(c.rank));
    Inbox in(*c.pair->recv, rt.t, c.pair->count, c.data_seed(c.rank, 3000));
    in.expect(*c.pair->recv, c.pair->count, in.origin, sent_stream(*c.pair->send, c.pair->count, c.data_seed(c.src)));
    if (data.origin < 0) {  // room before the pointer, so that the displacement is not negative
        data.bytes.insert(data.bytes.begin(), static_cast<size_t>(-data.origin), std::byte{0});
        data.origin = 0;
        data.base = mpi_buffer(data.bytes, data.dev);
    }
    MPI_Win win;
    ok(MPI_Win_create(data.base, static_cast<MPI_Aint>(data.bytes.size()), 1, MPI_INFO_NULL, c.comm, &win),
       "MPI_Win_create");
    ok(MPI_Win_lock_all(0, win), "MPI_Win_lock_all");
    MPI_Request q;
    ok(MPI_Rget(in.ptr(), n(c), rt.t, c.src, data.origin, n(c), st.t, win, &q), "MPI_Rget");
    ok(MPI_Wait(&q, MPI_STATUS_IGNORE), "MPI_Wait");
    ok(MPI_Win_unlock_all(win), "MPI_Win_unlock_all");
    c.check(in, "MPI_Rget/lock_all");
    ok(MPI_Barrier(c.comm), "MPI_Barrier");  // no window is freed while a peer reads it
    MPI_Win_free(&win);
}

// A dynamic window (MPI-4.1 §12.2.4): each rank attaches an Inbox, tells src its address, and
// every rank puts into dst's under MPI_Win_lock_all. Twice, with the first region detached and a
// new one attached in between (often at the same address), so that an origin must learn the
// target's new region rather than reuse what it knew.
void put_dynamic(Case &c) {
    MPI_Win win;
    ok(MPI_Win_create_dynamic(MPI_INFO_NULL, c.comm, &win), "MPI_Win_create_dynamic");
    MpiType st(*c.pair->send), rt(*c.pair->recv);
    Outbox out(*c.pair->send, st.t, c.pair->count, c.data_seed(c.rank));
    for (int round = 0; round < 2; ++round) {
        Inbox in(*c.pair->recv, rt.t, c.pair->count, c.data_seed(c.rank, 2000 + round));
        in.expect(*c.pair->recv, c.pair->count, in.origin, sent_stream(*c.pair->send, c.pair->count, c.data_seed(c.src)));
        ok(MPI_Win_attach(win, in.at(0), in.size()), "MPI_Win_attach");
        MPI_Aint mine = 0, theirs = 0;
        ok(MPI_Get_address(in.ptr(), &mine), "MPI_Get_address");
        ok(MPI_Sendrecv(&mine, 1, MPI_AINT, c.src, 7, &theirs, 1, MPI_AINT, c.dst, 7, c.comm, MPI_STATUS_IGNORE),
           "MPI_Sendrecv");
        ok(MPI_Win_lock_all(0, win), "MPI_Win_lock_all");
        ok(MPI_Put(out.ptr(), n(c), st.t, c.dst, theirs, n(c), rt.t, win), "MPI_Put");
        ok(MPI_Win_unlock_all(win), "MPI_Win_unlock_all");
        ok(MPI_Barrier(c.comm), "MPI_Barrier");  // every put into this rank's region is done
        c.check(in, round ? "MPI_Put/dynamic, attached again" : "MPI_Put/dynamic");
        ok(MPI_Win_detach(win, in.at(0)), "MPI_Win_detach");
    }
    MPI_Win_free(&win);
}

}  // namespace

std::vector<Mode> one_sided_modes() {
    // Not interposed; carried by the MPI's one-sided component (via_pml: on device memory,
    // osc ucxdt under pml ucxdt).
    return {
        {"put_fence", put_fence, false, false},
        {"rget_lock_all", rget_lock_all, false, false},
        {"put_pscw", put_pscw, false, false},
        {"rput_lock", rput_lock, false, false},
        {"put_dynamic", put_dynamic, false, false},
    };
}

}  // namespace pmpi
