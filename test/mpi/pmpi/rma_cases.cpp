// One-sided cases of the PMPI check (MPI-4.1 §12), run with --one-sided: every rank writes into
// its ring successor's window (Case::dst) or reads its predecessor's (Case::src), the origin
// and target datatypes of a case's pair, in each synchronization mode. Accumulates need types
// of one predefined type (§12.3.4), which the case's pair need not be: their case draws a pair
// of one integer primitive from the case's seed. The interposer routes no
// one-sided call; under Open MPI the osc component moves the layouts (osc ucxdt under pml ucxdt).
#include "pmpi_case.hpp"

#include <cstring>

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
// new one attached in between (often at the same address, and as two regions side by side), so
// that an origin must learn the target's new regions rather than reuse what it knew.
void put_dynamic(Case &c) {
    MPI_Win win;
    ok(MPI_Win_create_dynamic(MPI_INFO_NULL, c.comm, &win), "MPI_Win_create_dynamic");
    MpiType st(*c.pair->send), rt(*c.pair->recv);
    Outbox out(*c.pair->send, st.t, c.pair->count, c.data_seed(c.rank));
    for (int round = 0; round < 2; ++round) {
        Inbox in(*c.pair->recv, rt.t, c.pair->count, c.data_seed(c.rank, 2000 + round));
        in.expect(*c.pair->recv, c.pair->count, in.origin, sent_stream(*c.pair->send, c.pair->count, c.data_seed(c.src)));
        // The second round attaches the buffer as two regions side by side: a layout across
        // both is one access to attached memory (MPI-4.1 §12.2.4).
        const int64_t half = round ? in.size() / 2 : in.size();
        ok(MPI_Win_attach(win, in.at(0), half), "MPI_Win_attach");
        if (half < in.size()) ok(MPI_Win_attach(win, in.at(half), in.size() - half), "MPI_Win_attach");
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
        if (half < in.size()) ok(MPI_Win_detach(win, in.at(half)), "MPI_Win_detach");
    }
    MPI_Win_free(&win);
}

// Accumulates need one predefined type throughout (MPI-4.1 §12.3.4): a pair whose type maps
// hold one integer primitive only, drawn from the case's seed (alike on every rank); its
// primitive in *kind. Integers, so that the host's and the GPU's sums agree bit for bit.
// The leaves of a description, entries of no data included: Open MPI checks an accumulate's
// types by their constructors' arguments (ompi_datatype_get_single_predefined_type_from_args),
// so a struct entry of blocklength 0 of another type makes it MPI_ERR_ARG.
void leaves(const L::TypeDesc &d, std::vector<ucxdt_primitive_t> *out) {
    if (d.combiner == UCXDT_COMBINER_NAMED) out->push_back(d.primitive);
    for (const L::TypeDescPtr &child : d.children) leaves(*child, out);
}

bool accumulate_pair(const Case &c, Pair *p, ucxdt_primitive_t *kind) {
    const T::RandomDescLimits limits;
    for (uint64_t k = 0; k < 1000; ++k) {
        *p = random_pair(mix(c.seed, 0xacc, k), limits);
        std::vector<ucxdt_primitive_t> all;
        leaves(*p->send, &all), leaves(*p->recv, &all);
        *kind = all.front();
        bool one = primitives(*p->send, p->count) > 0 && *kind >= UCXDT_INT8 && *kind <= UCXDT_UINT64;
        for (ucxdt_primitive_t q : all) one = one && q == *kind;
        if (one) return true;
    }
    return false;
}

size_t width(ucxdt_primitive_t kind) {
    return kind == UCXDT_INT8 || kind == UCXDT_UINT8     ? 1
           : kind == UCXDT_INT16 || kind == UCXDT_UINT16 ? 2
           : kind == UCXDT_INT32 || kind == UCXDT_UINT32 ? 4
                                                         : 8;
}

// The op a case of `kind` accumulates with: MPI_SUM, but MPI_BXOR on 8- and 16-bit integers,
// whose sums Open MPI's AVX op saturates 16 or 32 elements at a time where the rest wrap
// (open-mpi/ompi#8045, closed as won't fix; Open MPI 5.0.7 here): random data overflows them.
MPI_Op accumulate_op(ucxdt_primitive_t kind) { return width(kind) <= 2 ? MPI_BXOR : MPI_SUM; }

// The packed streams a and b as elements of `kind`, combined by accumulate_op(kind): sums with
// wraparound (two's complement), or exclusive or.
Bytes combine_streams(const Bytes &a, const Bytes &b, ucxdt_primitive_t kind) {
    const size_t w = width(kind);
    Bytes out(a.size());
    for (size_t i = 0; i + w <= a.size(); i += w) {
        uint64_t x = 0, y = 0;
        std::memcpy(&x, a.data() + i, w), std::memcpy(&y, b.data() + i, w);
        const uint64_t z = w <= 2 ? x ^ y : x + y;
        std::memcpy(out.data() + i, &z, w);  // little-endian: the low w bytes
    }
    return out;
}

// MPI_Get_accumulate (MPI_SUM, or accumulate_op's MPI_BXOR) under MPI_Win_lock_all of a random
// integer layout into dst's window of another layout: the window must hold origin op target
// element by element, the result buffer the target as it was. On device memory osc ucxdt
// reduces on the GPU.
void get_accumulate_lock_all(Case &c) {
    Pair p;
    ucxdt_primitive_t kind = UCXDT_INT32;
    if (!accumulate_pair(c, &p, &kind)) return c.fail("no random pair of one integer primitive in 1000 draws");
    MpiType st(*p.send), rt(*p.recv);
    const int count = static_cast<int>(p.count);
    const uint64_t mine = c.data_seed(c.rank, 5000), target_seed = c.data_seed(c.rank, 5001);
    Outbox out(*p.send, st.t, p.count, mine);
    Inbox in(*p.recv, rt.t, p.count, c.data_seed(c.rank, 5002));
    in.preset(*p.recv, p.count, in.origin, target_seed);
    const Bytes before = sent_stream(*p.recv, p.count, target_seed);
    in.expect(*p.recv, p.count, in.origin, combine_streams(sent_stream(*p.send, p.count, c.data_seed(c.src, 5000)), before, kind));
    // The result: dst's target as it was, in this rank's receive layout.
    Inbox result(*p.recv, rt.t, p.count, c.data_seed(c.rank, 5003));
    const Bytes dst_before = sent_stream(*p.recv, p.count, c.data_seed(c.dst, 5001));
    result.expect(*p.recv, p.count, result.origin, dst_before);
    MPI_Win win;
    ok(MPI_Win_create(in.at(0), in.size(), 1, MPI_INFO_NULL, c.comm, &win), "MPI_Win_create");
    ok(MPI_Win_lock_all(0, win), "MPI_Win_lock_all");
    ok(MPI_Get_accumulate(out.ptr(), count, st.t, result.ptr(), count, rt.t, c.dst, in.origin, count, rt.t,
                          accumulate_op(kind), win),
       "MPI_Get_accumulate");
    ok(MPI_Win_unlock_all(win), "MPI_Win_unlock_all");
    ok(MPI_Barrier(c.comm), "MPI_Barrier");
    c.check(in, "MPI_Get_accumulate/lock_all: the target");
    c.check(result, "MPI_Get_accumulate/lock_all: the result");
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
        {"get_accumulate_lock_all", get_accumulate_lock_all, false, false},
    };
}

}  // namespace pmpi
