// Point-to-point cases of the PMPI check: every rank sends to its ring successor (Case::dst)
// and receives from its predecessor (Case::src), through each interposed send, receive,
// probe and completion call.
#include "pmpi_case.hpp"

#include "support/prefix_type.hpp"
#include "support/typemap_walk.hpp"

#include <stdexcept>

namespace pmpi {

namespace {

using Send = int (*)(const void *, int, MPI_Datatype, int, int, MPI_Comm);
using ISend = int (*)(const void *, int, MPI_Datatype, int, int, MPI_Comm, MPI_Request *);

// k messages each way of the case's pair: message m is tagged tag + m, its send buffer holds
// data of slot m and its receive buffer expects the predecessor's data of slot m.
class Ring {
public:
    Ring(Case &c, int k) : st(*c.pair->send), rt(*c.pair->recv), c_(c) {
        for (int m = 0; m < k; ++m) {
            out_.emplace_back(*c.pair->send, st.t, n(), 0);
            in_.emplace_back(*c.pair->recv, rt.t, n(), c.data_seed(c.rank, 1000 + m));
            load(m, m);
        }
    }
    int n() const { return static_cast<int>(c_.pair->count); }
    void *sbuf(int m) { return out_[m].ptr(); }
    void *rbuf(int m) { return in_[m].ptr(); }
    Inbox &inbox(int m) { return in_[m]; }
    // New data for message m: that of `slot` (persistent requests started again).
    void load(int m, uint64_t slot) {
        Outbox &o = out_[m];
        fill_data(o.bytes, o.origin, *c_.pair->send, n(), c_.data_seed(c_.rank, slot));
        o.upload();
        in_[m].reset();
        in_[m].expect(*c_.pair->recv, n(), in_[m].origin,
                      sent_stream(*c_.pair->send, n(), c_.data_seed(c_.src, slot)));
    }
    // Checks message m's buffer and its receive status.
    void check(int m, const MPI_Status &s, const std::string &what) {
        c_.check(in_[m], what);
        c_.check_status(s, c_.src, c_.tag + m, rt.t, n(), what);
    }
    MpiType st, rt;

private:
    Case &c_;
    std::vector<Outbox> out_;
    std::vector<Inbox> in_;
};

// ---- Blocking ---------------------------------------------------------------------------

// Rank 0 sends first and every other rank receives first: a chain that cannot deadlock
// however the send blocks.
void chain(Case &c, Send send, const char *name) {
    Ring r(c, 1);
    auto do_send = [&] { ok(send(r.sbuf(0), r.n(), r.st.t, c.dst, c.tag, c.comm), name); };
    auto do_recv = [&] {
        MPI_Status s;
        ok(MPI_Recv(r.rbuf(0), r.n(), r.rt.t, c.src, c.tag, c.comm, &s), "MPI_Recv");
        r.check(0, s, std::string(name) + "/MPI_Recv");
    };
    if (c.rank == 0) do_send(), do_recv();
    else do_recv(), do_send();
}

void send_recv(Case &c) { chain(c, MPI_Send, "MPI_Send"); }
void ssend_recv(Case &c) { chain(c, MPI_Ssend, "MPI_Ssend"); }

// Ready mode: every receive is posted before the barrier, every send after it.
void rsend(Case &c) {
    Ring r(c, 1);
    MPI_Request q;
    ok(MPI_Irecv(r.rbuf(0), r.n(), r.rt.t, c.src, c.tag, c.comm, &q), "MPI_Irecv");
    ok(MPI_Barrier(c.comm), "MPI_Barrier");
    ok(MPI_Rsend(r.sbuf(0), r.n(), r.st.t, c.dst, c.tag, c.comm), "MPI_Rsend");
    MPI_Status s;
    ok(MPI_Wait(&q, &s), "MPI_Wait");
    r.check(0, s, "MPI_Rsend/MPI_Irecv");
}

void sendrecv(Case &c) {
    Ring r(c, 1);
    MpiType dup(r.rt.t);  // the interposer must know a duplicate too
    MPI_Status s;
    ok(MPI_Sendrecv(r.sbuf(0), r.n(), r.st.t, c.dst, c.tag, r.rbuf(0), r.n(), dup.t, c.src,
                    c.tag, c.comm, &s),
       "MPI_Sendrecv");
    r.check(0, s, "MPI_Sendrecv");
}

// One buffer and one type both ways: the receive type, holding this rank's data; bytes
// outside its type map keep their content.
void sendrecv_replace(Case &c) {
    const L::TypeDesc &d = *c.pair->recv;
    const int n = static_cast<int>(c.pair->count);
    MpiType t(d);
    Inbox in(d, t.t, n, c.data_seed(c.rank, 1000));
    in.preset(d, n, in.origin, c.data_seed(c.rank));
    in.expect(d, n, in.origin, sent_stream(d, n, c.data_seed(c.src)));
    MPI_Status s;
    ok(MPI_Sendrecv_replace(in.ptr(), n, t.t, c.dst, c.tag, c.src, c.tag, c.comm, &s),
       "MPI_Sendrecv_replace");
    c.check(in, "MPI_Sendrecv_replace");
    c.check_status(s, c.src, c.tag, t.t, n, "MPI_Sendrecv_replace");
}

// ---- Nonblocking, completed in each way ----------------------------------------------

// Completes requests q (none inactive), filling the status of each by its index.
using Complete = void (*)(std::vector<MPI_Request> &q, std::vector<MPI_Status> &s);

void wait_all(std::vector<MPI_Request> &q, std::vector<MPI_Status> &s) {
    ok(MPI_Waitall(static_cast<int>(q.size()), q.data(), s.data()), "MPI_Waitall");
}

void wait_any(std::vector<MPI_Request> &q, std::vector<MPI_Status> &s) {
    for (size_t done = 0; done < q.size(); ++done) {
        int i = MPI_UNDEFINED;
        MPI_Status one;
        ok(MPI_Waitany(static_cast<int>(q.size()), q.data(), &i, &one), "MPI_Waitany");
        if (i == MPI_UNDEFINED) throw std::runtime_error("MPI_Waitany: no active request left");
        s[i] = one;
    }
}

// MPI_Waitsome, or MPI_Testsome in a loop: statuses come back in completion order.
template <bool kTest> void some(std::vector<MPI_Request> &q, std::vector<MPI_Status> &s) {
    const int n = static_cast<int>(q.size());
    std::vector<int> idx(q.size());
    std::vector<MPI_Status> out(q.size());
    for (int done = 0; done < n;) {
        int k = 0;
        ok(kTest ? MPI_Testsome(n, q.data(), &k, idx.data(), out.data())
                 : MPI_Waitsome(n, q.data(), &k, idx.data(), out.data()),
           kTest ? "MPI_Testsome" : "MPI_Waitsome");
        if (k == MPI_UNDEFINED) throw std::runtime_error("MPI_*some: no active request left");
        for (int j = 0; j < k; ++j) s[idx[j]] = out[j];
        done += k;
    }
}

void test_all(std::vector<MPI_Request> &q, std::vector<MPI_Status> &s) {
    for (int flag = 0; !flag;)
        ok(MPI_Testall(static_cast<int>(q.size()), q.data(), &flag, s.data()), "MPI_Testall");
}

void test_any(std::vector<MPI_Request> &q, std::vector<MPI_Status> &s) {
    for (size_t done = 0; done < q.size();) {
        int i = MPI_UNDEFINED, flag = 0;
        MPI_Status one;
        ok(MPI_Testany(static_cast<int>(q.size()), q.data(), &i, &flag, &one), "MPI_Testany");
        if (flag && i == MPI_UNDEFINED) throw std::runtime_error("MPI_Testany: none active");
        if (flag) s[i] = one, ++done;
    }
}

// MPI_Test on each request in turn until all have completed.
void test_each(std::vector<MPI_Request> &q, std::vector<MPI_Status> &s) {
    for (size_t done = 0; done < q.size();)
        for (size_t i = 0; i < q.size(); ++i) {
            if (q[i] == MPI_REQUEST_NULL) continue;
            int flag = 0;
            ok(MPI_Test(&q[i], &flag, &s[i]), "MPI_Test");
            done += flag != 0;
        }
}

// Three messages each way, all in flight at once: receives first (before a barrier for the
// ready mode), then sends; then completed by `complete` in whatever order it finds them.
void nonblocking(Case &c, ISend isend, const char *name, Complete complete, const char *how) {
    constexpr int k = 3;
    Ring r(c, k);
    std::vector<MPI_Request> q(2 * k);
    std::vector<MPI_Status> s(2 * k);
    for (int m = 0; m < k; ++m)
        ok(MPI_Irecv(r.rbuf(m), r.n(), r.rt.t, c.src, c.tag + m, c.comm, &q[m]), "MPI_Irecv");
    if (isend == MPI_Irsend) ok(MPI_Barrier(c.comm), "MPI_Barrier");
    for (int m = 0; m < k; ++m)
        ok(isend(r.sbuf(m), r.n(), r.st.t, c.dst, c.tag + m, c.comm, &q[k + m]), name);
    complete(q, s);
    for (int m = 0; m < k; ++m)
        r.check(m, s[m], std::string(name) + "/" + how + " message " + std::to_string(m));
}

void isend_waitall(Case &c) { nonblocking(c, MPI_Isend, "MPI_Isend", wait_all, "MPI_Waitall"); }
void issend_waitany(Case &c) { nonblocking(c, MPI_Issend, "MPI_Issend", wait_any, "MPI_Waitany"); }
void irsend_waitsome(Case &c) {
    nonblocking(c, MPI_Irsend, "MPI_Irsend", some<false>, "MPI_Waitsome");
}
void isend_testall(Case &c) { nonblocking(c, MPI_Isend, "MPI_Isend", test_all, "MPI_Testall"); }
void issend_testany(Case &c) { nonblocking(c, MPI_Issend, "MPI_Issend", test_any, "MPI_Testany"); }
void irsend_testsome(Case &c) {
    nonblocking(c, MPI_Irsend, "MPI_Irsend", some<true>, "MPI_Testsome");
}
void isend_test(Case &c) { nonblocking(c, MPI_Isend, "MPI_Isend", test_each, "MPI_Test"); }

// ---- Persistent ------------------------------------------------------------------------

using SendInit = int (*)(const void *, int, MPI_Datatype, int, int, MPI_Comm, MPI_Request *);

// One persistent send and receive, started three times (Start, Startall, Startall) with new
// data each time, then freed.
void persistent(Case &c, SendInit init, const char *name) {
    Ring r(c, 1);
    MPI_Request q[2];
    ok(MPI_Recv_init(r.rbuf(0), r.n(), r.rt.t, c.src, c.tag, c.comm, &q[0]), "MPI_Recv_init");
    ok(init(r.sbuf(0), r.n(), r.st.t, c.dst, c.tag, c.comm, &q[1]), name);
    for (int round = 0; round < 3; ++round) {
        r.load(0, 100 + round);
        MPI_Status s[2];
        if (round == 0) {
            ok(MPI_Start(&q[0]), "MPI_Start");
            ok(MPI_Start(&q[1]), "MPI_Start");
            ok(MPI_Wait(&q[1], &s[1]), "MPI_Wait");
            ok(MPI_Wait(&q[0], &s[0]), "MPI_Wait");
        } else {
            ok(MPI_Startall(2, q), "MPI_Startall");
            ok(MPI_Waitall(2, q, s), "MPI_Waitall");
        }
        r.check(0, s[0], std::string(name) + "/MPI_Recv_init round " + std::to_string(round));
    }
    ok(MPI_Request_free(&q[0]), "MPI_Request_free");
    ok(MPI_Request_free(&q[1]), "MPI_Request_free");
}

void send_init(Case &c) { persistent(c, MPI_Send_init, "MPI_Send_init"); }
void ssend_init(Case &c) { persistent(c, MPI_Ssend_init, "MPI_Ssend_init"); }

// ---- Matched probes, probes and wildcards ------------------------------------------------

// Each rank's send in flight while it receives by `recv`; then the send completes.
template <class Recv> void with_isend(Case &c, Ring &r, Recv recv) {
    MPI_Request q;
    ok(MPI_Isend(r.sbuf(0), r.n(), r.st.t, c.dst, c.tag, c.comm, &q), "MPI_Isend");
    recv();
    ok(MPI_Wait(&q, MPI_STATUS_IGNORE), "MPI_Wait");
}

void mprobe(Case &c) {
    Ring r(c, 1);
    with_isend(c, r, [&] {
        MPI_Message msg;
        MPI_Status s;
        ok(MPI_Mprobe(c.src, c.tag, c.comm, &msg, &s), "MPI_Mprobe");
        c.check_status(s, c.src, c.tag, r.rt.t, r.n(), "MPI_Mprobe");
        ok(MPI_Mrecv(r.rbuf(0), r.n(), r.rt.t, &msg, &s), "MPI_Mrecv");
        r.check(0, s, "MPI_Mrecv");
    });
}

void improbe(Case &c) {
    Ring r(c, 1);
    with_isend(c, r, [&] {
        MPI_Message msg;
        MPI_Status s;
        for (int flag = 0; !flag;)
            ok(MPI_Improbe(c.src, c.tag, c.comm, &flag, &msg, &s), "MPI_Improbe");
        MPI_Request q;
        ok(MPI_Imrecv(r.rbuf(0), r.n(), r.rt.t, &msg, &q), "MPI_Imrecv");
        ok(MPI_Wait(&q, &s), "MPI_Wait");
        r.check(0, s, "MPI_Imrecv");
    });
}

// MPI_ANY_SOURCE and MPI_ANY_TAG: the status names the sender and its tag. (Every message
// of earlier cases has been received: the driver's barrier ends each case.)
void any_source_tag(Case &c) {
    Ring r(c, 1);
    with_isend(c, r, [&] {
        MPI_Status s;
        ok(MPI_Recv(r.rbuf(0), r.n(), r.rt.t, MPI_ANY_SOURCE, MPI_ANY_TAG, c.comm, &s),
           "MPI_Recv");
        r.check(0, s, "MPI_Recv(MPI_ANY_SOURCE, MPI_ANY_TAG)");
    });
}

// MPI_Probe (or an MPI_Iprobe loop from any source), then a receive of the probed count.
template <bool kIprobe> void probe(Case &c) {
    Ring r(c, 1);
    const char *name = kIprobe ? "MPI_Iprobe" : "MPI_Probe";
    with_isend(c, r, [&] {
        MPI_Status s;
        if (kIprobe)
            for (int flag = 0; !flag;)
                ok(MPI_Iprobe(MPI_ANY_SOURCE, c.tag, c.comm, &flag, &s), name);
        else
            ok(MPI_Probe(c.src, c.tag, c.comm, &s), name);
        c.check_status(s, c.src, c.tag, r.rt.t, r.n(), name);
        int n = 0;
        ok(MPI_Get_count(&s, r.rt.t, &n), "MPI_Get_count");
        if (n == 0) n = r.n();  // a type of no data: any count receives the empty message
        ok(MPI_Recv(r.rbuf(0), n, r.rt.t, s.MPI_SOURCE, s.MPI_TAG, c.comm, &s), "MPI_Recv");
        r.check(0, s, std::string(name) + "/MPI_Recv");
    });
}

// ---- Partial receives --------------------------------------------------------------------

// Fewer elements sent than posted: those arrive at the start of the receive type map, the
// rest of it keeps the poison; MPI_Get_count and MPI_Get_elements say how many.
void partial(Case &c) {
    const Pair &p = *c.pair;
    const int sent = static_cast<int>(p.count), posted = sent + 2;
    MpiType st(*p.send), rt(*p.recv);
    Outbox out(*p.send, st.t, sent, c.data_seed(c.rank));
    Inbox in(*p.recv, rt.t, posted, c.data_seed(c.rank, 1000));
    in.expect(*p.recv, posted, in.origin, sent_stream(*p.send, sent, c.data_seed(c.src)));
    MPI_Request q;
    ok(MPI_Isend(out.ptr(), sent, st.t, c.dst, c.tag, c.comm, &q), "MPI_Isend");
    MPI_Status s;
    ok(MPI_Recv(in.ptr(), posted, rt.t, c.src, c.tag, c.comm, &s), "MPI_Recv");
    ok(MPI_Wait(&q, MPI_STATUS_IGNORE), "MPI_Wait");
    c.check(in, "partial MPI_Recv");
    c.check_status(s, c.src, c.tag, rt.t, sent, "partial MPI_Recv");
    int elements = 0;
    ok(MPI_Get_elements(&s, rt.t, &elements), "MPI_Get_elements");
    if (elements != primitives(*p.recv, sent))
        c.fail("partial MPI_Recv: MPI_Get_elements " + std::to_string(elements) + ", expected " +
               std::to_string(primitives(*p.recv, sent)));
}

// A send that ends within an element of the receive type (where it has two primitives or
// more): MPI_Get_count is MPI_UNDEFINED, MPI_Get_elements the primitives sent. The send type
// is a dense struct of one element, on which no known deviation moves bytes, so the case's
// deviations are those of its pair.
void partial_element(Case &c) {
    const Pair &p = *c.pair;
    const int posted = static_cast<int>(p.count) + 1;
    const int64_t per = primitives(*p.recv, 1);
    if (per == 0) return partial(c);  // nothing to cut
    int64_t k = static_cast<int64_t>(mix(c.seed, 7) % std::min<uint64_t>(per * posted - 1, 200)) + 1;
    if (per > 1 && k % per == 0) --k;
    const L::TypeDescPtr prefix = T::prefix_type(*p.recv, posted, k);
    MpiType st(*prefix), rt(*p.recv);
    Outbox out(*prefix, st.t, 1, c.data_seed(c.rank));
    Inbox in(*p.recv, rt.t, posted, c.data_seed(c.rank, 1000));
    in.expect(*p.recv, posted, in.origin, sent_stream(*prefix, 1, c.data_seed(c.src)));
    MPI_Request q;
    ok(MPI_Isend(out.ptr(), 1, st.t, c.dst, c.tag, c.comm, &q), "MPI_Isend");
    MPI_Status s;
    ok(MPI_Recv(in.ptr(), posted, rt.t, c.src, c.tag, c.comm, &s), "MPI_Recv");
    ok(MPI_Wait(&q, MPI_STATUS_IGNORE), "MPI_Wait");
    const std::string what = "MPI_Recv of " + std::to_string(k) + " primitives (" +
                             std::to_string(per) + " an element)";
    c.check(in, what);
    int n = 0, elements = 0;
    ok(MPI_Get_count(&s, rt.t, &n), "MPI_Get_count");
    ok(MPI_Get_elements(&s, rt.t, &elements), "MPI_Get_elements");
    const int64_t want = k % per == 0 ? k / per : MPI_UNDEFINED;
    if (n != want)
        c.fail(what + ": MPI_Get_count " + std::to_string(n) + ", expected " +
               std::to_string(want));
    if (elements != k)
        c.fail(what + ": MPI_Get_elements " + std::to_string(elements) + ", expected " +
               std::to_string(k));
}

// ---- Cancel and free ---------------------------------------------------------------------

// A receive that nothing matches (a tag no case sends), cancelled: the status says so and
// the buffer keeps its poison. (MPICH 4.0 then reports leaked yaksa handles at exit: its
// cancelled receive keeps a reference to the datatype.)
void cancel(Case &c) {
    Ring r(c, 1);
    r.inbox(0).reset();  // nothing expected
    MPI_Request q;
    ok(MPI_Irecv(r.rbuf(0), r.n(), r.rt.t, c.src, c.tag + Case::kTags - 1, c.comm, &q),
       "MPI_Irecv");
    ok(MPI_Cancel(&q), "MPI_Cancel");
    MPI_Status s;
    ok(MPI_Wait(&q, &s), "MPI_Wait");
    int cancelled = 0;
    ok(MPI_Test_cancelled(&s, &cancelled), "MPI_Test_cancelled");
    if (!cancelled) c.fail("MPI_Cancel of an unmatched receive: MPI_Test_cancelled is false");
    c.check(r.inbox(0), "cancelled MPI_Irecv");
}

// A send freed before it completes: the receive, posted only after the free, still gets it.
void request_free(Case &c) {
    Ring r(c, 1);
    MPI_Request q;
    ok(MPI_Isend(r.sbuf(0), r.n(), r.st.t, c.dst, c.tag, c.comm, &q), "MPI_Isend");
    ok(MPI_Request_free(&q), "MPI_Request_free");
    ok(MPI_Barrier(c.comm), "MPI_Barrier");
    MPI_Status s;
    ok(MPI_Recv(r.rbuf(0), r.n(), r.rt.t, c.src, c.tag, c.comm, &s), "MPI_Recv");
    r.check(0, s, "MPI_Recv of a freed MPI_Isend");
    // Every freed send has been received: only now may its buffer go.
    ok(MPI_Barrier(c.comm), "MPI_Barrier");
}

}  // namespace

std::vector<Mode> p2p_modes() {
    return {
        {"send", send_recv},
        {"ssend", ssend_recv},
        {"rsend", rsend},
        {"sendrecv", sendrecv},
        {"sendrecv_replace", sendrecv_replace, false, true, nullptr, false},
        {"isend_waitall", isend_waitall},
        {"issend_waitany", issend_waitany},
        {"irsend_waitsome", irsend_waitsome},
        {"isend_testall", isend_testall},
        {"issend_testany", issend_testany},
        {"irsend_testsome", irsend_testsome},
        {"isend_test", isend_test},
        {"send_init", send_init},
        {"ssend_init", ssend_init},
        {"mprobe", mprobe},
        {"improbe", improbe},
        {"any_source_tag", any_source_tag},
        {"probe", probe<false>},
        {"iprobe", probe<true>},
        {"partial", partial},
        {"partial_element", partial_element},
        {"cancel", cancel},
        {"request_free", request_free},
    };
}

}  // namespace pmpi
