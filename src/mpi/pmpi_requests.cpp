// Completion of routed requests (MPI-4.1 3.7.3 - 3.7.5, 3.9): each MPI_Wait* / MPI_Test* call
// goes to the MPI first; for every routed request it reports complete, a receive is unpacked
// from its staging and the staging released (kept, for a persistent request). Requests the
// application frees while active are kept here and tested on later calls, so that their
// staging outlives the transfer; MPI_Finalize waits for them.
#include "pmpi.hpp"

#include <cstdio>
#include <mutex>
#include <unordered_map>
#include <vector>

namespace ucxdt::pmpi {
namespace {

std::mutex requests_mutex;
std::unordered_map<MPI_Request, Pending> &requests() {
    static auto *m = new std::unordered_map<MPI_Request, Pending>;
    return *m;
}
// Freed while active: (the MPI's request, its bookkeeping).
std::vector<std::pair<MPI_Request, Pending>> &orphans() {
    static auto *v = new std::vector<std::pair<MPI_Request, Pending>>;
    return *v;
}

bool routed(MPI_Request key) {
    if (key == MPI_REQUEST_NULL) return false;
    std::lock_guard<std::mutex> lock(requests_mutex);
    return requests().count(key) != 0;
}

// Unpacks a completed receive (enqueued in `batch` when given) and releases staging unless the
// request persists.
int finish(Pending &p, MPI_Status *st, int rc, Batch *batch = nullptr) {
    int cancelled = 0;
    PMPI_Test_cancelled(st, &cancelled);
    if (p.recv && rc == MPI_SUCCESS && !cancelled) {
        MPI_Count got = 0;
        PMPI_Get_elements_x(st, MPI_BYTE, &got);
        if (batch) batch->comm = p.comm;
        rc = batch ? batch->unpack(p.r, p.s.ptr, got, p.buf, p.count) : unpack(p.r, p.s.ptr, got, p.buf, p.count);
        if (rc != MPI_SUCCESS) fail(p.comm, rc);
        else count_op(kRecvs);
    }
    if (!p.persistent) {
        if (batch) batch->release_after(p.s);
        else put_staging(p.s);
        p.s.ptr = nullptr;
    }
    p.active = false;
    return rc;
}

// An orphan that the MPI has completed with (st, rc): finished, and a persistent one freed at
// last, as the application asked.
void retire(MPI_Request &req, Pending &p, MPI_Status *st, int rc) {
    finish(p, st, rc);
    if (p.persistent) {
        put_staging(p.s);
        PMPI_Request_free(&req);
    }
}

// The per-request code of a multiple completion call: MPI_ERR_IN_STATUS puts it in the status.
int code_of(int rc, const MPI_Status *st) { return rc == MPI_ERR_IN_STATUS ? st->MPI_ERROR : rc; }

// Snapshot of the handles before the MPI overwrites completed ones with MPI_REQUEST_NULL; empty
// when none is routed, so that unrouted calls cost one lookup each.
std::vector<MPI_Request> snapshot(int n, const MPI_Request reqs[]) {
    for (int i = 0; i < n; ++i)
        if (routed(reqs[i])) return std::vector<MPI_Request>(reqs, reqs + n);
    return {};
}

// Statuses for the MPI to fill even when the caller ignores them: receives need byte counts.
struct Statuses {
    std::vector<MPI_Status> local;
    MPI_Status *ptr;
    Statuses(int n, MPI_Status *user) : ptr(user) {
        if (user == MPI_STATUSES_IGNORE) {
            local.resize(static_cast<size_t>(n > 0 ? n : 1));
            ptr = local.data();
        }
    }
};

}  // namespace

void track(MPI_Request req, Pending p) {
    std::lock_guard<std::mutex> lock(requests_mutex);
    requests()[req] = std::move(p);
}

// complete(), with a GPU receive's unpack left in `batch` when one is given.
int complete_into(MPI_Request key, MPI_Status *st, int rc, Batch *batch) {
    Pending p;
    {
        std::lock_guard<std::mutex> lock(requests_mutex);
        auto it = requests().find(key);
        if (it == requests().end()) return rc;
        if (it->second.persistent) {
            if (!it->second.active) return rc;  // an inactive persistent request: empty status
            it->second.active = false;
            p = it->second;  // shares staging with the entry, which keeps it
        } else {
            p = std::move(it->second);
            requests().erase(it);
        }
    }
    return finish(p, st, rc, batch);
}

int complete(MPI_Request key, MPI_Status *st, int rc) { return complete_into(key, st, rc, nullptr); }

void progress_orphans() {
    std::lock_guard<std::mutex> lock(requests_mutex);
    auto &o = orphans();
    for (size_t i = 0; i < o.size();) {
        int flag = 0;
        MPI_Status st;
        const int rc = PMPI_Test(&o[i].first, &flag, &st);
        if (!flag) {
            ++i;
            continue;
        }
        retire(o[i].first, o[i].second, &st, rc);
        o[i] = std::move(o.back());
        o.pop_back();
    }
}

}  // namespace ucxdt::pmpi

using namespace ucxdt::pmpi;

namespace {
// Marks routed persistent request `req` active, or back inactive; a send's layout is packed into
// its staging in `batch`, as a persistent send reads its buffer at each start (MPI-4.1 3.9).
// Requests that are not routed are the MPI's alone.
int prepare_start(MPI_Request req, Batch *batch) {
    Pending p;
    {
        std::lock_guard<std::mutex> lock(requests_mutex);
        auto it = requests().find(req);
        if (it == requests().end()) return MPI_SUCCESS;
        it->second.active = true;
        p = it->second;
    }
    if (p.recv) return MPI_SUCCESS;
    batch->comm = p.comm;
    const int rc = batch->pack(p.r, p.buf, p.count, p.s.ptr);
    if (rc != MPI_SUCCESS) return fail(p.comm, rc);
    count_op(kSends);
    return MPI_SUCCESS;
}

void unprepare_start(MPI_Request req) {
    std::lock_guard<std::mutex> lock(requests_mutex);
    auto it = requests().find(req);
    if (it != requests().end()) it->second.active = false;
}

// MPI_Start and MPI_Startall: every routed send of the call packs on its GPU's stream and all of
// them are waited for once, before the MPI starts any (one synchronization per call).
int start(int n, MPI_Request reqs[], int (*mpi_start)(int, MPI_Request[])) {
    Batch batch;
    int rc = MPI_SUCCESS;
    int prepared = 0;
    for (; prepared < n && rc == MPI_SUCCESS; ++prepared) rc = prepare_start(reqs[prepared], &batch);
    if (rc == MPI_SUCCESS) rc = batch.wait();
    if (rc != MPI_SUCCESS) {
        // Nothing was started: the requests stay inactive, as after a failed MPI_Startall.
        for (int i = 0; i < prepared; ++i) unprepare_start(reqs[i]);
        return rc;
    }
    return mpi_start(n, reqs);
}
}  // namespace

UCXDT_PMPI_EXPORT int MPI_Start(MPI_Request *req) {
    return start(1, req, [](int, MPI_Request r[]) { return PMPI_Start(&r[0]); });
}

UCXDT_PMPI_EXPORT int MPI_Startall(int n, MPI_Request reqs[]) { return start(n, reqs, PMPI_Startall); }

UCXDT_PMPI_EXPORT int MPI_Wait(MPI_Request *req, MPI_Status *status) {
    progress_orphans();
    const MPI_Request key = *req;
    if (!routed(key)) return PMPI_Wait(req, status);
    MPI_Status local;
    MPI_Status *st = status == MPI_STATUS_IGNORE ? &local : status;
    return complete(key, st, PMPI_Wait(req, st));
}

UCXDT_PMPI_EXPORT int MPI_Test(MPI_Request *req, int *flag, MPI_Status *status) {
    progress_orphans();
    const MPI_Request key = *req;
    if (!routed(key)) return PMPI_Test(req, flag, status);
    MPI_Status local;
    MPI_Status *st = status == MPI_STATUS_IGNORE ? &local : status;
    const int rc = PMPI_Test(req, flag, st);
    return *flag ? complete(key, st, rc) : rc;
}

UCXDT_PMPI_EXPORT int MPI_Waitall(int n, MPI_Request reqs[], MPI_Status statuses[]) {
    progress_orphans();
    const auto keys = snapshot(n, reqs);
    if (keys.empty()) return PMPI_Waitall(n, reqs, statuses);
    Statuses st(n, statuses);
    int rc = PMPI_Waitall(n, reqs, st.ptr);
    Batch batch;
    for (int i = 0; i < n; ++i) {
        const int c = complete_into(keys[i], &st.ptr[i], code_of(rc, &st.ptr[i]), &batch);
        if (c != code_of(rc, &st.ptr[i])) {
            // The MPI succeeded but the unpack did not: report it per status, as MPI does.
            if (rc == MPI_SUCCESS && statuses != MPI_STATUSES_IGNORE)
                for (int j = 0; j < n; ++j) st.ptr[j].MPI_ERROR = MPI_SUCCESS;
            st.ptr[i].MPI_ERROR = c;
            rc = MPI_ERR_IN_STATUS;
        }
    }
    const int f = batch.wait();
    return rc == MPI_SUCCESS ? f : rc;
}

UCXDT_PMPI_EXPORT int MPI_Testall(int n, MPI_Request reqs[], int *flag, MPI_Status statuses[]) {
    progress_orphans();
    const auto keys = snapshot(n, reqs);
    if (keys.empty()) return PMPI_Testall(n, reqs, flag, statuses);
    Statuses st(n, statuses);
    int rc = PMPI_Testall(n, reqs, flag, st.ptr);
    if (!*flag) return rc;
    Batch batch;
    for (int i = 0; i < n; ++i) {
        const int c = complete_into(keys[i], &st.ptr[i], code_of(rc, &st.ptr[i]), &batch);
        if (c != code_of(rc, &st.ptr[i])) {
            st.ptr[i].MPI_ERROR = c;
            rc = MPI_ERR_IN_STATUS;
        }
    }
    const int f = batch.wait();
    return rc == MPI_SUCCESS ? f : rc;
}

UCXDT_PMPI_EXPORT int MPI_Waitany(int n, MPI_Request reqs[], int *index, MPI_Status *status) {
    progress_orphans();
    const auto keys = snapshot(n, reqs);
    if (keys.empty()) return PMPI_Waitany(n, reqs, index, status);
    MPI_Status local;
    MPI_Status *st = status == MPI_STATUS_IGNORE ? &local : status;
    const int rc = PMPI_Waitany(n, reqs, index, st);
    return *index == MPI_UNDEFINED ? rc : complete(keys[*index], st, rc);
}

UCXDT_PMPI_EXPORT int MPI_Testany(int n, MPI_Request reqs[], int *index, int *flag, MPI_Status *status) {
    progress_orphans();
    const auto keys = snapshot(n, reqs);
    if (keys.empty()) return PMPI_Testany(n, reqs, index, flag, status);
    MPI_Status local;
    MPI_Status *st = status == MPI_STATUS_IGNORE ? &local : status;
    const int rc = PMPI_Testany(n, reqs, index, flag, st);
    return (*flag && *index != MPI_UNDEFINED) ? complete(keys[*index], st, rc) : rc;
}

namespace {
template <typename Call>
int some(int n, MPI_Request reqs[], int *outcount, int indices[], MPI_Status statuses[], Call &&call) {
    progress_orphans();
    const auto keys = snapshot(n, reqs);
    if (keys.empty()) return call(statuses);
    Statuses st(n, statuses);
    int rc = call(st.ptr);
    if (*outcount == MPI_UNDEFINED) return rc;
    Batch batch;
    for (int k = 0; k < *outcount; ++k) {
        const int i = indices[k];
        const int c = complete_into(keys[i], &st.ptr[k], code_of(rc, &st.ptr[k]), &batch);
        if (c != code_of(rc, &st.ptr[k])) {
            st.ptr[k].MPI_ERROR = c;
            rc = MPI_ERR_IN_STATUS;
        }
    }
    const int f = batch.wait();
    return rc == MPI_SUCCESS ? f : rc;
}
}  // namespace

UCXDT_PMPI_EXPORT int MPI_Waitsome(int n, MPI_Request reqs[], int *outcount, int indices[], MPI_Status statuses[]) {
    return some(n, reqs, outcount, indices, statuses,
                [&](MPI_Status *st) { return PMPI_Waitsome(n, reqs, outcount, indices, st); });
}

UCXDT_PMPI_EXPORT int MPI_Testsome(int n, MPI_Request reqs[], int *outcount, int indices[], MPI_Status statuses[]) {
    return some(n, reqs, outcount, indices, statuses,
                [&](MPI_Status *st) { return PMPI_Testsome(n, reqs, outcount, indices, st); });
}

UCXDT_PMPI_EXPORT int MPI_Request_free(MPI_Request *req) {
    Pending p;
    {
        std::lock_guard<std::mutex> lock(requests_mutex);
        auto it = requests().find(*req);
        if (it == requests().end()) return PMPI_Request_free(req);
        p = std::move(it->second);
        requests().erase(it);
        if (p.active) {
            // Still moving data: MPI completes it in the background (MPI-4.1 3.7.3), and so do we.
            orphans().emplace_back(*req, std::move(p));
            *req = MPI_REQUEST_NULL;
            return MPI_SUCCESS;
        }
    }
    put_staging(p.s);  // an inactive persistent request
    return PMPI_Request_free(req);
}

UCXDT_PMPI_EXPORT int MPI_Finalize(void) {
    {
        std::lock_guard<std::mutex> lock(requests_mutex);
        for (auto &[req, p] : orphans()) {
            MPI_Status st;
            const int rc = PMPI_Wait(&req, &st);
            retire(req, p, &st, rc);
        }
        orphans().clear();
        // Persistent requests the application never freed: their staging goes with MPI.
        for (auto &[req, p] : requests())
            if (p.persistent) put_staging(p.s);
        requests().clear();
    }
    forget_all_types();
    release_all_staging();
    if (settings().verbose) {
        ucxdt_pmpi_counters_t c;
        ucxdt_pmpi_get_counters(&c);
        std::fprintf(stderr,
                     "ucxdt_pmpi: sends %llu, receives %llu, collectives %llu, packs %llu, fallbacks %llu; "
                     "seconds packing %.6f, unpacking %.6f, allocating staging %.6f\n",
                     (unsigned long long)c.sends, (unsigned long long)c.recvs, (unsigned long long)c.collectives,
                     (unsigned long long)c.packs, (unsigned long long)c.fallbacks, seconds(kPackTime),
                     seconds(kUnpackTime), seconds(kAllocTime));
    }
    return PMPI_Finalize();
}
