// Whether an MPI point-to-point layer could stand on include/ucxdt/ucxdt_ucp.h alone: the same
// sequences of MPI_Isend, MPI_Issend, MPI_Irecv (MPI_ANY_SOURCE, MPI_ANY_TAG), MPI_Probe,
// MPI_Mprobe, MPI_Mrecv, MPI_Cancel, MPI_Get_count and MPI_Get_elements run once through the
// MPI library and once through `UcxdtP2p`, a small layer on the ucxdt API (its tags carry the
// source rank in their high 32 bits, as Open MPI's pml ucx does with UCP's). Every rank records
// what its calls returned: each status (source, tag, error class, cancelled), the counts and
// elements it gives, the receive buffer's bytes, whether a synchronous send completed before
// its receive; the records of the two runs must be equal line for line.
//
//   mpiexec -n 3 mpi_semantics_<mpi>        (exactly 3 ranks; exit status 0 when they agree)
//
// Ranks: A = 0 and B = 1 send, R = 2 receives. Each scenario is deterministic under MPI-4.1:
// where an ANY_SOURCE receive or probe could match either sender, the other one is held back by
// a message of R's. Every wait is bounded (30 s): a hang is an error, not a stall.
#include "support/worker_address.hpp"

#include <ucxdt/mpi.h>
#include <ucxdt/ucxdt_ucp.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <initializer_list>
#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

constexpr int A = 0, B = 1, R = 2;
constexpr int kGoTag = 900;  // R's messages that let a held-back sender go on

[[noreturn]] void die(const std::string &what) {
    std::fprintf(stderr, "mpi_semantics: %s\n", what.c_str());
    MPI_Abort(MPI_COMM_WORLD, 1);
    std::exit(1);
}

/// A datatype as both layers see it: the MPI handle and its ucxdt import.
struct Dt {
    MPI_Datatype m = MPI_DATATYPE_NULL;
    ucxdt_type_t u = UCXDT_TYPE_NULL;
};

Dt make(MPI_Datatype m) {
    Dt d{m, UCXDT_TYPE_NULL};
    if (m != MPI_BYTE) MPI_Type_commit(&d.m);
    if (ucxdt_type_from_mpi(d.m, &d.u) != UCXDT_OK) die(std::string("ucxdt_type_from_mpi: ") + ucxdt_last_error());
    return d;
}

struct Status {
    int source = -1, tag = -1;
    std::string error;  // "ok", "truncate" or "other"
    bool cancelled = false;
    MPI_Status mpi{};   // MpiP2p
    int64_t bytes = 0;  // UcxdtP2p: packed bytes received
};

/// The calls under test, as MPI defines them; requests and messages are the layer's.
class P2p {
public:
    virtual ~P2p() = default;
    virtual const char *name() const = 0;
    virtual void *isend(const void *buf, int count, const Dt &dt, int dest, int tag, bool sync) = 0;
    virtual void *irecv(void *buf, int count, const Dt &dt, int source, int tag) = 0;
    /// true once `req` completed (it is then freed), with *st for a receive.
    virtual bool test(void *req, Status *st) = 0;
    virtual void cancel(void *req) = 0;
    virtual bool iprobe(int source, int tag, Status *st) = 0;
    virtual void *improbe(int source, int tag, Status *st) = 0;  // the message, or nullptr
    virtual void *imrecv(void *buf, int count, const Dt &dt, void *message) = 0;
    virtual int get_count(const Status &st, const Dt &dt) = 0;  // -1: MPI_UNDEFINED
    virtual int get_elements(const Status &st, const Dt &dt) = 0;
    virtual void progress() = 0;

    Status wait(void *req, const char *what) {
        Status st;
        const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
        while (!test(req, &st)) {
            if (std::chrono::steady_clock::now() > deadline) die(std::string(name()) + ": " + what + " did not complete in 30 s");
            progress();
        }
        return st;
    }
    Status probe(int source, int tag, const char *what) {
        Status st;
        const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
        while (!iprobe(source, tag, &st)) {
            if (std::chrono::steady_clock::now() > deadline) die(std::string(name()) + ": " + what + ": no message in 30 s");
            progress();
        }
        return st;
    }
    void *mprobe(int source, int tag, Status *st, const char *what) {
        const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
        for (;;) {
            if (void *m = improbe(source, tag, st)) return m;
            if (std::chrono::steady_clock::now() > deadline) die(std::string(name()) + ": " + what + ": no message in 30 s");
            progress();
        }
    }
};

std::string error_class(int rc) {
    if (rc == MPI_SUCCESS) return "ok";
    int cls = 0;
    MPI_Error_class(rc, &cls);
    return cls == MPI_ERR_TRUNCATE ? "truncate" : "other";
}

class MpiP2p final : public P2p {
public:
    const char *name() const override { return "MPI"; }
    void *isend(const void *buf, int count, const Dt &dt, int dest, int tag, bool sync) override {
        auto *r = new MPI_Request;
        (sync ? MPI_Issend : MPI_Isend)(buf, count, dt.m, dest, tag, MPI_COMM_WORLD, r);
        return r;
    }
    void *irecv(void *buf, int count, const Dt &dt, int source, int tag) override {
        auto *r = new MPI_Request;
        MPI_Irecv(buf, count, dt.m, source, tag, MPI_COMM_WORLD, r);
        return r;
    }
    bool test(void *req, Status *st) override {
        auto *r = static_cast<MPI_Request *>(req);
        int flag = 0;
        const int rc = MPI_Test(r, &flag, &st->mpi);
        if (!flag && rc == MPI_SUCCESS) return false;
        fill(rc, st);
        delete r;
        return true;
    }
    void cancel(void *req) override { MPI_Cancel(static_cast<MPI_Request *>(req)); }
    bool iprobe(int source, int tag, Status *st) override {
        int flag = 0;
        MPI_Iprobe(source, tag, MPI_COMM_WORLD, &flag, &st->mpi);
        if (flag) fill(MPI_SUCCESS, st);
        return flag != 0;
    }
    void *improbe(int source, int tag, Status *st) override {
        int flag = 0;
        auto *m = new MPI_Message;
        MPI_Improbe(source, tag, MPI_COMM_WORLD, &flag, m, &st->mpi);
        if (!flag) return delete m, nullptr;
        fill(MPI_SUCCESS, st);
        return m;
    }
    void *imrecv(void *buf, int count, const Dt &dt, void *message) override {
        auto *m = static_cast<MPI_Message *>(message);
        auto *r = new MPI_Request;
        MPI_Imrecv(buf, count, dt.m, m, r);
        delete m;
        return r;
    }
    int get_count(const Status &st, const Dt &dt) override {
        int c = 0;
        MPI_Get_count(&st.mpi, dt.m, &c);
        return c == MPI_UNDEFINED ? -1 : c;
    }
    int get_elements(const Status &st, const Dt &dt) override {
        int c = 0;
        MPI_Get_elements(&st.mpi, dt.m, &c);
        return c == MPI_UNDEFINED ? -1 : c;
    }
    void progress() override {
        int flag = 0;
        MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE);
    }

private:
    static void fill(int rc, Status *st) {
        // A failed request's own error is in its status (MPI-4.1 3.7.5), else the return code.
        if (rc == MPI_ERR_IN_STATUS) rc = st->mpi.MPI_ERROR;
        int cancelled = 0;
        MPI_Test_cancelled(&st->mpi, &cancelled);
        st->cancelled = cancelled != 0;
        st->error = error_class(rc);
        st->source = st->mpi.MPI_SOURCE;
        st->tag = st->mpi.MPI_TAG;
    }
};

/// MPI's matching on ucxdt: a UCP tag is (source rank << 32 | MPI tag); MPI_ANY_SOURCE and
/// MPI_ANY_TAG clear their half of the mask. A status is built from ucxdt_tag_recv_info_t,
/// MPI_Get_count and MPI_Get_elements from its packed length (ucxdt_type_get_elements).
class UcxdtP2p final : public P2p {
public:
    UcxdtP2p(int rank, int size) : rank_(rank) { open(size); }
    ~UcxdtP2p() override { close(); }
    const char *name() const override { return "ucxdt"; }

    void *isend(const void *buf, int count, const Dt &dt, int dest, int tag, bool sync) override {
        ucxdt_request_param_t p{};
        p.field_mask = UCXDT_REQUEST_PARAM_FIELD_FLAGS;
        p.flags = sync ? UCXDT_SEND_FLAG_SYNC : 0;
        return req(false, ucxdt_tag_send_nbx(eps_[dest], buf, count, dt.u, tag_of(rank_, tag), &p), "ucxdt_tag_send_nbx");
    }
    void *irecv(void *buf, int count, const Dt &dt, int source, int tag) override {
        ucp_tag_t t = 0, mask = 0;
        match(source, tag, &t, &mask);
        return req(true, ucxdt_tag_recv_nbx(worker_, buf, count, dt.u, t, mask, nullptr), "ucxdt_tag_recv_nbx");
    }
    bool test(void *request, Status *st) override {
        auto *r = static_cast<Req *>(request);
        int s = UCXDT_OK;
        ucxdt_tag_recv_info_t info{};
        if (r->p != nullptr) {
            s = r->recv ? ucxdt_tag_recv_request_test(r->p, &info) : ucxdt_request_check_status(r->p);
            if (s == UCXDT_INPROGRESS) return false;
            ucxdt_request_free(r->p);
        }
        st->cancelled = s == UCXDT_ERR_CANCELED;
        st->error = s == UCXDT_OK || st->cancelled ? "ok" : s == UCXDT_ERR_TRUNCATED ? "truncate" : "other";
        status_of(info, st);
        delete r;
        return true;
    }
    void cancel(void *request) override {
        auto *r = static_cast<Req *>(request);
        if (r->recv && r->p) ucxdt_request_cancel(worker_, r->p);
    }
    bool iprobe(int source, int tag, Status *st) override { return probe_nb(source, tag, 0, st) != nullptr; }
    void *improbe(int source, int tag, Status *st) override { return probe_nb(source, tag, 1, st); }
    void *imrecv(void *buf, int count, const Dt &dt, void *message) override {
        return req(true,
                   ucxdt_tag_msg_recv_nbx(worker_, buf, count, dt.u, static_cast<ucxdt_tag_message_h>(message), nullptr),
                   "ucxdt_tag_msg_recv_nbx");
    }
    int get_count(const Status &st, const Dt &dt) override {
        int64_t size = 0;
        ucxdt_type_size(dt.u, &size);
        return size > 0 && st.bytes % size == 0 ? static_cast<int>(st.bytes / size) : -1;
    }
    int get_elements(const Status &st, const Dt &dt) override {
        int64_t n = 0;
        if (ucxdt_type_get_elements(dt.u, st.bytes, &n) != UCXDT_OK) return -1;
        return static_cast<int>(n);
    }
    void progress() override { ucxdt_worker_progress(worker_); }

private:
    struct Req {
        bool recv;
        ucxdt_status_ptr_t p;
    };
    static ucp_tag_t tag_of(int source, int tag) {
        return static_cast<ucp_tag_t>(static_cast<uint32_t>(source)) << 32 | static_cast<uint32_t>(tag);
    }
    static void match(int source, int tag, ucp_tag_t *t, ucp_tag_t *mask) {
        *t = tag_of(source == MPI_ANY_SOURCE ? 0 : source, tag == MPI_ANY_TAG ? 0 : tag);
        *mask = (source == MPI_ANY_SOURCE ? 0 : 0xffffffff00000000ull) | (tag == MPI_ANY_TAG ? 0 : 0xffffffffull);
    }
    static void status_of(const ucxdt_tag_recv_info_t &info, Status *st) {
        st->source = static_cast<int>(info.sender_tag >> 32);
        st->tag = static_cast<int>(info.sender_tag & 0xffffffffull);
        st->bytes = info.length;
    }
    void *req(bool recv, ucxdt_status_ptr_t p, const char *call) {
        if (UCXDT_PTR_IS_ERR(p)) die(std::string(call) + ": " + ucxdt_last_error());
        return new Req{recv, p};
    }
    void *probe_nb(int source, int tag, int remove, Status *st) {
        ucp_tag_t t = 0, mask = 0;
        match(source, tag, &t, &mask);
        ucxdt_tag_recv_info_t info{};
        ucxdt_tag_message_h m = ucxdt_tag_probe_nb(worker_, t, mask, remove, &info);
        if (m) status_of(info, st), st->error = "ok";
        return m;
    }

    void check(ucs_status_t s, const char *what) {
        if (s != UCS_OK) die(std::string(what) + ": " + ucs_status_string(s));
    }
    void open(int size) {
        ucp_params_t cp{};
        cp.field_mask = UCP_PARAM_FIELD_FEATURES;
        cp.features = UCP_FEATURE_TAG | UCP_FEATURE_AM | UCP_FEATURE_RMA;
        ucp_config_t *cfg = nullptr;
        check(ucp_config_read(nullptr, nullptr, &cfg), "ucp_config_read");
        check(ucp_init(&cp, cfg, &ctx_), "ucp_init");
        ucp_config_release(cfg);
        ucp_worker_params_t wp{};
        wp.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
        wp.thread_mode = UCS_THREAD_MODE_SINGLE;
        check(ucp_worker_create(ctx_, &wp, &ucp_worker_), "ucp_worker_create");
        ucxdt_worker_params_t xp{};
        xp.field_mask = UCXDT_WORKER_PARAM_FIELD_UCP_WORKER | UCXDT_WORKER_PARAM_FIELD_UCP_CONTEXT;
        xp.ucp_worker = ucp_worker_;
        xp.ucp_context = ctx_;
        if (ucxdt_worker_create(&xp, &worker_) != UCXDT_OK) die(std::string("ucxdt_worker_create: ") + ucxdt_last_error());
        // Every worker's address to every rank.
        std::string address;
        check(ucxdt::support::worker_address(ucp_worker_, &address), "ucp_worker_query");
        const int len = static_cast<int>(address.size());
        std::vector<int> lens(size), offs(size);
        MPI_Allgather(&len, 1, MPI_INT, lens.data(), 1, MPI_INT, MPI_COMM_WORLD);
        int total = 0;
        for (int i = 0; i < size; ++i) offs[i] = total, total += lens[i];
        std::vector<char> all(total);
        MPI_Allgatherv(address.data(), len, MPI_BYTE, all.data(), lens.data(), offs.data(), MPI_BYTE, MPI_COMM_WORLD);
        ucp_eps_.assign(size, nullptr);
        eps_.assign(size, nullptr);
        for (int i = 0; i < size; ++i) {
            if (i == rank_) continue;
            ucp_ep_params_t ep{};
            ep.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS;
            ep.address = reinterpret_cast<const ucp_address_t *>(all.data() + offs[i]);
            if (ucxdt_ep_params_set_err_handler(&ep, worker_, nullptr, nullptr) != UCXDT_OK) die(ucxdt_last_error());
            check(ucp_ep_create(ucp_worker_, &ep, &ucp_eps_[i]), "ucp_ep_create");
            ucxdt_ep_params_t xe{};
            xe.field_mask = UCXDT_EP_PARAM_FIELD_UCP_EP;
            xe.ucp_ep = ucp_eps_[i];
            if (ucxdt_ep_create(worker_, &xe, &eps_[i]) != UCXDT_OK) die(std::string("ucxdt_ep_create: ") + ucxdt_last_error());
        }
    }
    void close() {
        for (ucxdt_ep_h e : eps_)
            if (e) ucxdt_ep_destroy(e);
        for (ucp_ep_h e : ucp_eps_) {
            if (!e) continue;
            ucp_request_param_t p{};
            p.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
            p.flags = UCP_EP_CLOSE_FLAG_FORCE;
            ucs_status_ptr_t s = ucp_ep_close_nbx(e, &p);
            const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
            while (UCS_PTR_IS_PTR(s) && ucp_request_check_status(s) == UCS_INPROGRESS &&
                   std::chrono::steady_clock::now() < deadline)
                ucxdt_worker_progress(worker_);
            if (UCS_PTR_IS_PTR(s)) ucp_request_free(s);
        }
        ucxdt_worker_destroy(worker_);
        ucp_worker_destroy(ucp_worker_);
        ucp_cleanup(ctx_);
    }

    int rank_;
    ucp_context_h ctx_ = nullptr;
    ucp_worker_h ucp_worker_ = nullptr;
    ucxdt_worker_h worker_ = nullptr;
    std::vector<ucp_ep_h> ucp_eps_;
    std::vector<ucxdt_ep_h> eps_;
};

// ---- The scenarios --------------------------------------------------------------------------

struct Types {
    Dt byte, dvec, st, prefix13, prefix3;
};

/// A buffer of `bytes`, filled by `seed`: a sender's data, or a receive's poison.
std::vector<unsigned char> filled(size_t bytes, unsigned seed) {
    std::vector<unsigned char> b(bytes);
    for (size_t i = 0; i < bytes; ++i) b[i] = static_cast<unsigned char>((i * 131 + seed * 29 + 7) % 251);
    return b;
}

uint64_t fnv(const std::vector<unsigned char> &b) {
    uint64_t h = 1469598103934665603ull;
    for (unsigned char c : b) h = (h ^ c) * 1099511628211ull;
    return h;
}

class Run {
public:
    Run(P2p &p, const Types &t, int rank) : p_(p), t_(t), rank_(rank) {}
    std::vector<std::string> log;

    void all() {
        order_any_tag();
        tag_selection();
        any_source();
        probe_counts();
        mprobe_mrecv();
        synchronous();
        cancel();
        truncation();
    }

private:
    // Messages of dvec (8 doubles an element, 16 of extent) from `count` elements.
    std::vector<unsigned char> data(int count, unsigned seed) { return filled(static_cast<size_t>(count) * 128, seed); }
    /// Sends (count, tag, seed) of dvec to `dest` in this order, all posted before any is waited
    /// for: a blocking rendezvous send could wait for a receive that a later message enables.
    void send(int dest, std::initializer_list<std::array<int, 3>> msgs) {
        std::vector<std::vector<unsigned char>> bufs;
        std::vector<void *> reqs;
        for (const auto &m : msgs) {
            bufs.push_back(data(m[0], static_cast<unsigned>(m[2])));
            reqs.push_back(p_.isend(bufs.back().data(), m[0], t_.dvec, dest, m[1], false));
        }
        for (void *r : reqs) p_.wait(r, "a send");
    }
    void go(int dest, int tag) {
        int one = 1;
        p_.wait(p_.isend(&one, 1, t_.byte, dest, tag, false), "a go message");
    }
    void wait_go(int source, int tag) {
        int one = 0;
        p_.wait(p_.irecv(&one, 1, t_.byte, source, tag), "a go message");
    }
    /// The record of a completed receive into `buf` of `dt`.
    void record(const char *what, const Status &st, const Dt &dt, const std::vector<unsigned char> *buf) {
        char line[320];
        if (st.cancelled) {
            std::snprintf(line, sizeof line, "%s: cancelled", what);
        } else if (st.error != "ok") {  // counts of a failed receive are undefined
            std::snprintf(line, sizeof line, "%s: source %d tag %d %s", what, st.source, st.tag, st.error.c_str());
        } else {
            std::snprintf(line, sizeof line, "%s: source %d tag %d %s count %d elements %d bytes %d", what, st.source,
                          st.tag, st.error.c_str(), p_.get_count(st, dt), p_.get_elements(st, dt),
                          p_.get_count(st, t_.byte));
        }
        std::string s = line;
        // A truncated receive's buffer is undefined (MPI-4.1 3.2.5): not compared.
        if (buf && st.error == "ok") s += " data " + std::to_string(fnv(*buf));
        log.push_back(s);
    }
    void note(const std::string &s) { log.push_back(s); }

    // Messages from one sender match in send order under MPI_ANY_TAG, eager and rendezvous.
    void order_any_tag() {
        const int counts[] = {2, 1500, 1, 700};
        const int tags[] = {1, 2, 1, 3};
        if (rank_ == A)
            send(R, {{counts[0], tags[0], 10}, {counts[1], tags[1], 11}, {counts[2], tags[2], 12}, {counts[3], tags[3], 13}});
        if (rank_ != R) return;
        std::vector<std::vector<unsigned char>> bufs;
        std::vector<void *> reqs;
        for (int k = 0; k < 4; ++k) bufs.push_back(filled(2000 * 128, 90 + k));
        for (int k = 0; k < 4; ++k) reqs.push_back(p_.irecv(bufs[k].data(), 2000, t_.dvec, A, MPI_ANY_TAG));
        for (int k = 0; k < 4; ++k) record(("order " + std::to_string(k)).c_str(), p_.wait(reqs[k], "order"), t_.dvec, &bufs[k]);
    }

    // A receive of one tag passes over an earlier message of another.
    void tag_selection() {
        if (rank_ == A) send(R, {{3, 7, 20}, {1600, 8, 21}, {4, 7, 22}});
        if (rank_ != R) return;
        for (int tag : {8, 7, 7}) {
            auto buf = filled(2000 * 128, 30 + tag);
            record(("tag " + std::to_string(tag)).c_str(), p_.wait(p_.irecv(buf.data(), 2000, t_.dvec, A, tag), "tag"),
                   t_.dvec, &buf);
        }
    }

    // MPI_ANY_SOURCE reports the sender that matched; A waits until B's message was received.
    void any_source() {
        if (rank_ == B) send(R, {{3, 5, 40}});
        if (rank_ == A) wait_go(R, kGoTag), send(R, {{1500, 5, 41}});
        if (rank_ != R) return;
        auto b1 = filled(2000 * 128, 50), b2 = filled(2000 * 128, 51);
        record("any source 1", p_.wait(p_.irecv(b1.data(), 2000, t_.dvec, MPI_ANY_SOURCE, 5), "any source"), t_.dvec, &b1);
        go(A, kGoTag);
        record("any source 2", p_.wait(p_.irecv(b2.data(), 2000, t_.dvec, MPI_ANY_SOURCE, 5), "any source"), t_.dvec, &b2);
    }

    // MPI_Probe shows source, tag and counts before the receive; messages that end inside an
    // element of the receive type (13 and 3 primitives of {double; int[2]; char}).
    void probe_counts() {
        if (rank_ == A) {
            auto b13 = filled(24 * 3 + 8, 60), b3 = filled(16, 61);
            p_.wait(p_.isend(b13.data(), 1, t_.prefix13, R, 40, false), "prefix send");
            p_.wait(p_.isend(b3.data(), 1, t_.prefix3, R, 41, false), "prefix send");
        }
        if (rank_ != R) return;
        for (int k = 0; k < 2; ++k) {
            const Status pr = p_.probe(MPI_ANY_SOURCE, MPI_ANY_TAG, "probe");
            record(("probe " + std::to_string(k)).c_str(), pr, t_.st, nullptr);
            auto buf = filled(8 * 24, 70 + k);
            record(("probed receive " + std::to_string(k)).c_str(),
                   p_.wait(p_.irecv(buf.data(), 8, t_.st, pr.source, pr.tag), "probed receive"), t_.st, &buf);
        }
    }

    // A matched probe removes its message: a receive of the same source and tag takes the next
    // one, and the matched receive takes exactly the probed one, eager and rendezvous.
    void mprobe_mrecv() {
        if (rank_ == A) send(R, {{2, 50, 80}, {1500, 50, 81}, {1700, 51, 82}, {5, 51, 83}});
        if (rank_ != R) return;
        for (int tag : {50, 51}) {
            Status st;
            void *m = p_.mprobe(A, tag, &st, "mprobe");
            record(("mprobe " + std::to_string(tag)).c_str(), st, t_.dvec, nullptr);
            auto next = filled(2000 * 128, 90), first = filled(2000 * 128, 91);
            record(("after mprobe " + std::to_string(tag)).c_str(),
                   p_.wait(p_.irecv(next.data(), 2000, t_.dvec, A, tag), "receive"), t_.dvec, &next);
            record(("mrecv " + std::to_string(tag)).c_str(), p_.wait(p_.imrecv(first.data(), 2000, t_.dvec, m), "mrecv"),
                   t_.dvec, &first);
        }
    }

    // MPI_Issend completes only once a receive matched it: a probe (plain or matched) is not
    // one. A tests its send after R has probed and before R receives.
    void synchronous() {
        const int counts[] = {2, 1500};
        for (int k = 0; k < 2; ++k)
            for (bool matched : {false, true}) {
                const int tag = 60 + 2 * k + (matched ? 1 : 0);
                if (rank_ == A) {
                    auto buf = data(counts[k], 100 + tag);
                    void *s = p_.isend(buf.data(), counts[k], t_.dvec, R, tag, true);
                    wait_go(R, kGoTag + 1);
                    Status st;
                    bool done = false;
                    for (int i = 0; i < 200 && !done; ++i) done = p_.test(s, &st), p_.progress();
                    note("issend " + std::to_string(tag) + (done ? ": completed after a probe" : ": waits after a probe"));
                    go(R, kGoTag + 2);
                    if (!done) p_.wait(s, "issend");
                    note("issend " + std::to_string(tag) + ": completed");
                }
                if (rank_ != R) continue;
                Status st;
                void *m = nullptr;
                if (matched) m = p_.mprobe(A, tag, &st, "mprobe");
                else st = p_.probe(A, tag, "probe");
                go(A, kGoTag + 1);
                wait_go(A, kGoTag + 2);
                auto buf = filled(2000 * 128, 110 + tag);
                void *r = matched ? p_.imrecv(buf.data(), 2000, t_.dvec, m) : p_.irecv(buf.data(), 2000, t_.dvec, A, tag);
                record(("ssend receive " + std::to_string(tag)).c_str(), p_.wait(r, "ssend receive"), t_.dvec, &buf);
            }
    }

    // A receive that matched nothing cancels; one that matched a message already here does not.
    void cancel() {
        if (rank_ == A) send(R, {{2, 71, 120}});
        if (rank_ != R) return;
        auto b1 = filled(256, 121), b2 = filled(256, 122);
        void *r = p_.irecv(b1.data(), 2, t_.dvec, MPI_ANY_SOURCE, 70);
        p_.cancel(r);
        record("cancel unmatched", p_.wait(r, "canceled receive"), t_.dvec, nullptr);
        p_.probe(A, 71, "probe");
        r = p_.irecv(b2.data(), 2, t_.dvec, A, 71);
        p_.cancel(r);
        record("cancel matched", p_.wait(r, "receive"), t_.dvec, &b2);
    }

    // A message longer than its receive: MPI_ERR_TRUNCATE, eager and rendezvous.
    void truncation() {
        if (rank_ == A) send(R, {{20, 80, 130}, {1500, 81, 131}});
        if (rank_ != R) return;
        auto b1 = filled(8 * 128, 132), b2 = filled(700 * 128, 133);
        record("truncated eager", p_.wait(p_.irecv(b1.data(), 8, t_.dvec, A, 80), "truncated"), t_.dvec, nullptr);
        record("truncated rendezvous", p_.wait(p_.irecv(b2.data(), 700, t_.dvec, A, 81), "truncated"), t_.dvec, nullptr);
    }

    P2p &p_;
    const Types &t_;
    int rank_;
};

}  // namespace

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank = 0, size = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size != 3) {
        if (rank == 0) std::fprintf(stderr, "mpi_semantics: needs exactly 3 ranks, got %d\n", size);
        MPI_Finalize();
        return 2;
    }
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);

    Types t;
    t.byte = make(MPI_BYTE);
    MPI_Datatype v, s, p13, p3;
    MPI_Type_vector(4, 2, 3, MPI_DOUBLE, &v);  // 8 doubles of 12
    MPI_Datatype tmp;
    const int sbl[] = {1, 2, 1};
    const MPI_Aint sdisp[] = {0, 8, 16};
    const MPI_Datatype stypes[] = {MPI_DOUBLE, MPI_INT, MPI_CHAR};
    MPI_Type_create_struct(3, sbl, sdisp, stypes, &tmp);
    MPI_Type_create_resized(tmp, 0, 24, &s);
    MPI_Type_free(&tmp);
    const int bl13[] = {3, 1};
    const MPI_Aint d13[] = {0, 72};
    const MPI_Datatype t13[] = {s, MPI_DOUBLE};
    MPI_Type_create_struct(2, bl13, d13, t13, &p13);  // 13 primitives of s's type map
    const int bl3[] = {1, 2};
    const MPI_Aint d3[] = {0, 8};
    const MPI_Datatype tt3[] = {MPI_DOUBLE, MPI_INT};
    MPI_Type_create_struct(2, bl3, d3, tt3, &p3);  // 3 primitives
    t.dvec = make(v), t.st = make(s), t.prefix13 = make(p13), t.prefix3 = make(p3);

    MpiP2p mpi;
    Run by_mpi(mpi, t, rank);
    by_mpi.all();
    MPI_Barrier(MPI_COMM_WORLD);

    std::vector<std::string> ucxdt_log;
    {
        UcxdtP2p ux(rank, size);
        MPI_Barrier(MPI_COMM_WORLD);  // every endpoint exists before the first message
        Run by_ucxdt(ux, t, rank);
        by_ucxdt.all();
        ucxdt_log = by_ucxdt.log;
        // Nothing is left in flight towards a peer that closes its endpoints.
        const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(200);
        while (std::chrono::steady_clock::now() < until) ux.progress();
        MPI_Barrier(MPI_COMM_WORLD);
    }

    int bad = 0;
    const size_t n = std::max(by_mpi.log.size(), ucxdt_log.size());
    for (size_t i = 0; i < n; ++i) {
        const std::string a = i < by_mpi.log.size() ? by_mpi.log[i] : "(none)";
        const std::string b = i < ucxdt_log.size() ? ucxdt_log[i] : "(none)";
        if (a == b) {
            std::printf("rank %d agree  %s\n", rank, a.c_str());
        } else {
            std::printf("rank %d DIFFER MPI:   %s\nrank %d        ucxdt: %s\n", rank, a.c_str(), rank, b.c_str());
            bad = 1;
        }
    }
    if (by_mpi.log.empty() && rank != B) bad = 1;  // A and R record something in every run
    int any = 0;
    MPI_Allreduce(&bad, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    for (Dt *d : {&t.byte, &t.dvec, &t.st, &t.prefix13, &t.prefix3}) {
        ucxdt_type_free(&d->u);
        if (d->m != MPI_BYTE) MPI_Type_free(&d->m);
    }
    if (rank == 0) std::printf("mpi_semantics: %s\n", any ? "the runs DIFFER" : "MPI and ucxdt agree");
    MPI_Finalize();
    return any ? 1 : 0;
}
