// Peer failure in the datatype-aware rendezvous (include/ucxdt/ucxdt_ucp.h): a forked peer is
// killed with SIGKILL while a send and a receive with it are mid-pipeline, on host staging and
// on the CUDA IPC path. The survivor's requests must complete with UCXDT_ERR_PEER_FAILURE
// within a bounded time, and the worker must go on serving: a transfer to itself afterwards
// needs every staging slot back in the pools.
#include "harness/layout_buffer.hpp"
#include "harness/rndv_support.hpp"
#include "harness/scoped_env.hpp"
#include "harness/two_process.hpp"
#include "ucp_rndv/rndv_worker.hpp"

#include <ucxdt/ucxdt_ucp.h>

#include <gtest/gtest.h>

#include <chrono>
#include <csignal>
#include <cstring>
#include <string>
#include <vector>

#include <poll.h>

namespace {

namespace L = ucxdt::layouts;
namespace T = ucxdt::testing;
using T::Buffer, T::packed, T::ProcessSide, T::status_name, T::Type, T::UcxdtSide;

constexpr uint64_t kFeatures = UCP_FEATURE_TAG | UCP_FEATURE_AM | UCP_FEATURE_RMA;
// TCP tells of a killed peer at once (its sockets close); self carries the transfer to itself.
const std::vector<std::pair<const char *, const char *>> kUcxConfig = {{"TLS", "tcp,self"}};
// Staging as small as the pipeline: one leaked slot and the later transfer cannot start.
constexpr int64_t kFrag = 4096;
constexpr int kDepth = 2;
constexpr uint64_t kToParent = 1, kToChild = 2, kToSelf = 3;
const T::RndvConfig kConfig{1024, kFrag, kDepth, kDepth};

using UcxConfig = std::vector<std::pair<const char *, const char *>>;

bool readable(int fd) {
    pollfd p{fd, POLLIN, 0};
    return poll(&p, 1, 0) == 1;
}

int wait_request(ucxdt_worker_h w, ucxdt_status_ptr_t req, std::chrono::seconds limit) {
    return T::wait_request(req, [w] { ucxdt_worker_progress(w); }, limit);
}

// The forked peer's side: connected to the parent (addresses through the pipes), with a ucxdt
// endpoint to it; _exit()s with 2-4 when that fails. alarm(): a parent that never kills it must
// not leave it behind.
void child_connect(ProcessSide &s, UcxdtSide &x, int to_child, int to_parent, const UcxConfig &ucx) {
    alarm(120);
    std::vector<char> peer;
    if (!s.init(kFeatures, ucx).empty()) _exit(2);
    if (!T::write_blob(to_parent, s.address) || !T::read_blob(to_child, &peer)) _exit(3);
    if (!x.open(s, kConfig).empty() || !s.connect(peer, x.w).empty() || !T::create_rndv_ep(x.w, s.ep, &x.ep).empty()) _exit(4);
}

// The forked peer reports `code` (0: its transfers are under way) and waits to be killed.
[[noreturn]] void child_stop(int to_child, int to_parent, int code) {
    const char c = static_cast<char>(code);
    T::write_all(to_parent, &c, 1);
    char never;
    T::read_all(to_child, &never, 1);  // blocks until SIGKILL
    _exit(6);
}

// The parent's side of a forked peer: the pipes, the connection, the child's report and its
// kill, and afterwards an endpoint to this worker itself. Kills a child still running, and
// closes what it opened, when it goes.
class ForkedPeer {
public:
    ProcessSide s;
    UcxdtSide x;

    ~ForkedPeer() {
        if (self_ep_) ucxdt_ep_destroy(self_ep_);
        if (self_) {
            ucp_request_param_t cp{};
            cp.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
            cp.flags = UCP_EP_CLOSE_FLAG_FORCE;
            s.wait(ucp_ep_close_nbx(self_, &cp), std::chrono::seconds(10));
        }
        if (pid_ > 0) kill_child();
        for (int fd : {to_child_[0], to_child_[1], to_parent_[0], to_parent_[1]})
            if (fd >= 0) close(fd);
    }
    /// Forks; the child runs child(to_child, to_parent). False when that failed.
    bool fork_child(void (*child)(int, int)) {
        if (pipe(to_child_) != 0 || pipe(to_parent_) != 0) return false;
        pid_ = fork();
        if (pid_ == 0) child(to_child_[0], to_parent_[1]);
        return pid_ > 0;
    }
    /// "" once this process is connected to the child with a ucxdt endpoint, else what failed.
    std::string connect(const UcxConfig &ucx) {
        std::vector<char> peer;
        if (std::string e = s.init(kFeatures, ucx); !e.empty()) return e;
        if (!T::read_blob(to_parent_[0], &peer) || !T::write_blob(to_child_[1], s.address)) return "no address from the child";
        if (std::string e = x.open(s, kConfig); !e.empty()) return e;
        if (std::string e = s.connect(peer, x.w); !e.empty()) return e;  // ucxdt_ep_params_set_err_handler
        return T::create_rndv_ep(x.w, s.ep, &x.ep);
    }
    /// Serves the child until it reports (60 s at most): its code, -1 when none came.
    int report() {
        const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(60);
        while (!readable(to_parent_[0]) && std::chrono::steady_clock::now() < give_up) ucxdt_worker_progress(x.w);
        char code = -1;
        return readable(to_parent_[0]) && T::read_all(to_parent_[0], &code, 1) ? code : -1;
    }
    /// SIGKILL, then waits for the child (10 s); whether it ended.
    bool kill_child() {
        kill(pid_, SIGKILL);
        const bool ended = T::wait_child(pid_, std::chrono::seconds(10)) != -1;
        pid_ = -1;
        return ended;
    }
    /// Replaces the endpoint to the child by one to this worker itself: "" or what failed.
    std::string self_endpoint(ucxdt_ep_h *ep) {
        ucxdt_ep_destroy(x.ep);
        x.ep = nullptr;
        ucp_ep_params_t p{};
        p.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS;
        p.address = reinterpret_cast<const ucp_address_t *>(s.address.data());
        if (ucp_ep_create(s.w, &p, &self_) != UCS_OK) return "ucp_ep_create to itself";
        if (std::string e = T::create_rndv_ep(x.w, self_, &self_ep_); !e.empty()) return e;
        *ep = self_ep_;
        return "";
    }

private:
    pid_t pid_ = -1;
    int to_child_[2] = {-1, -1}, to_parent_[2] = {-1, -1};
    ucp_ep_h self_ = nullptr;
    ucxdt_ep_h self_ep_ = nullptr;
};

// ---- On the CUDA IPC path ----------------------------------------------------------------
// Each process holds the other's GPU memory when the child is killed: the parent's send packs
// into device staging slots that the child's receive granted (the parent maps the child's
// staging), and the child's send packs into slots that the parent's receive granted (the
// parent's slots are lent). The layouts' runs differ (32 and 16 bytes), so that neither side
// copies run by run or byte for byte: every fragment goes through the receiver's staging.
// 16 MB in 16 KiB fragments, each granted by a message over TCP: far more than the child
// drives before it stops. First in the file: the parent forks before anything here starts CUDA.
const UcxConfig kGpuUcxConfig = {{"TLS", "tcp,cuda_copy,cuda_ipc,self"}};
L::TypeDescPtr gpu_send_type() { return L::vector(524288, 4, 6, L::named(UCXDT_DOUBLE)); }
L::TypeDescPtr gpu_recv_type() { return L::vector(1048576, 2, 3, L::named(UCXDT_DOUBLE)); }
constexpr int64_t kGpuBytes = int64_t{16} << 20;

// Progresses until the endpoint's peer has answered its HELLO (a send chooses CUDA IPC only
// then), for up to 10 s; whether it did.
bool introduced(ucxdt_worker_h w, ucxdt_ep_h ep) {
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (!static_cast<const ucxdt::rndv::Ep *>(ep)->peer_known && std::chrono::steady_clock::now() < until)
        ucxdt_worker_progress(w);
    return static_cast<const ucxdt::rndv::Ep *>(ep)->peer_known;
}

// Bytes of a worker's device staging that are taken (lent to peers or in use).
int64_t lent(const ucxdt::rndv::Worker *w) {
    int64_t bytes = 0;
    for (const auto &[device, g] : w->gpus) bytes += g->taken_bytes();
    return bytes;
}

// Whether each side holds the other's memory: a receive granted the peer a slot, and a send
// mapped a slot the peer granted.
bool holds_peer_memory(const ucxdt::rndv::Worker *w) { return lent(w) > 0 && w->imports->open() > 0; }

[[noreturn]] void gpu_child_main(int to_child, int to_parent) {
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess || n == 0) _exit(7);
    cudaSetDevice(n > 1 ? 1 : 0);  // across the link where there are two GPUs
    ProcessSide s;
    UcxdtSide x;
    child_connect(s, x, to_child, to_parent, kGpuUcxConfig);
    if (!introduced(x.w, x.ep)) _exit(9);
    const auto st = gpu_send_type(), rt = gpu_recv_type();
    Type sh(*st), rh(*rt);
    Buffer src(*st, 1, 11), dst(*rt, 1, 12);
    T::Placed src_at(src, T::Mem::cuda), dst_at(dst, T::Mem::cuda);
    ucxdt_status_ptr_t rreq = ucxdt_tag_recv_nbx(x.w, dst_at.ptr(), 1, rh.h, kToChild, ~0ull, nullptr);
    ucxdt_status_ptr_t sreq = ucxdt_tag_send_nbx(x.ep, src_at.ptr(), 1, sh.h, kToParent, nullptr);
    int code = UCXDT_PTR_IS_PTR(rreq) && UCXDT_PTR_IS_PTR(sreq) ? 0 : 5;
    // Then stop, mid-transfer.
    const auto *w = static_cast<const ucxdt::rndv::Worker *>(x.w);
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (code == 0 && !holds_peer_memory(w)) {
        if (std::chrono::steady_clock::now() > until) code = 8;
        ucxdt_worker_progress(x.w);
    }
    child_stop(to_child, to_parent, code);
}

TEST(RndvFaults, GpuPeerKilledHoldingIpcMappingsAndStagingSlots) {
    // Small IPC fragments, in both processes (the child inherits them).
    T::ScopedEnv env{{"UCXDT_IPC_FRAG_SIZE", "16384"}, {"UCXDT_CUDA_IPC", "y"}};
    ForkedPeer f;
    ASSERT_TRUE(f.fork_child(gpu_child_main));
    if (!T::have_gpu()) GTEST_SKIP() << "no GPU";
    ASSERT_EQ(cudaSetDevice(0), cudaSuccess);
    ASSERT_EQ(f.connect(kGpuUcxConfig), "");
    ASSERT_TRUE(introduced(f.x.w, f.x.ep)) << "no HELLO reply from the child in 10 s";
    const auto st = gpu_send_type(), rt = gpu_recv_type();
    Type sh(*st), rh(*rt);
    Buffer src(*st, 1, 21), dst(*rt, 1, 22);
    T::Placed src_at(src, T::Mem::cuda), dst_at(dst, T::Mem::cuda);
    ucxdt_status_ptr_t rreq = ucxdt_tag_recv_nbx(f.x.w, dst_at.ptr(), 1, rh.h, kToParent, ~0ull, nullptr);
    ucxdt_status_ptr_t sreq = ucxdt_tag_send_nbx(f.x.ep, src_at.ptr(), 1, sh.h, kToChild, nullptr);
    ASSERT_TRUE(UCXDT_PTR_IS_PTR(rreq) && UCXDT_PTR_IS_PTR(sreq));
    ASSERT_EQ(f.report(), 0) << "child: 5 = its requests failed to start, 8 = no push in 30 s";
    // The child's grant and its use of ours are on their way.
    auto *w = static_cast<ucxdt::rndv::Worker *>(f.x.w);
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (!holds_peer_memory(w) && std::chrono::steady_clock::now() < until) ucxdt_worker_progress(f.x.w);
    for (int i = 0; i < 1000; ++i) ucxdt_worker_progress(f.x.w);
    ASSERT_EQ(ucxdt_request_check_status(rreq), UCXDT_INPROGRESS) << "the receive ended before the kill";
    ASSERT_EQ(ucxdt_request_check_status(sreq), UCXDT_INPROGRESS) << "the send ended before the kill";
    ASSERT_GT(w->imports->open(), 0u) << "the send never mapped the child's staging (no push)";
    ASSERT_GT(lent(w), 0) << "the receive never granted the child a slot (no push)";

    EXPECT_TRUE(f.kill_child());
    const auto killed = std::chrono::steady_clock::now();
    EXPECT_EQ(status_name(wait_request(f.x.w, rreq, std::chrono::seconds(30))), status_name(UCXDT_ERR_PEER_FAILURE));
    EXPECT_EQ(status_name(wait_request(f.x.w, sreq, std::chrono::seconds(30))), status_name(UCXDT_ERR_PEER_FAILURE));
    EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - killed).count(), 30.0);
    EXPECT_EQ(w->imports->open(), 0u) << "mappings of the dead peer's memory stay open";
    EXPECT_EQ(lent(w), 0) << "device staging slots lent to the dead peer are not back";
    EXPECT_TRUE(w->retired.empty()) << "slots stay retired after their sender died";

    // The worker serves on, through its own device staging: a GPU transfer to itself.
    ucxdt_ep_h self = nullptr;
    ASSERT_EQ(f.self_endpoint(&self), "");
    Buffer into(*rt, 1, 32);
    const std::vector<std::byte> sent = packed(*st, src.ptr(), 1, kGpuBytes), poison = into.bytes;
    T::Placed into_at(into, T::Mem::cuda);
    rreq = ucxdt_tag_recv_nbx(f.x.w, into_at.ptr(), 1, rh.h, kToSelf, ~0ull, nullptr);
    sreq = ucxdt_tag_send_nbx(self, src_at.ptr(), 1, sh.h, kToSelf, nullptr);
    EXPECT_EQ(status_name(wait_request(f.x.w, rreq, std::chrono::seconds(60))), status_name(UCXDT_OK));
    EXPECT_EQ(status_name(wait_request(f.x.w, sreq, std::chrono::seconds(60))), status_name(UCXDT_OK));
    into_at.fetch();
    EXPECT_EQ(T::check_received(*rt, 1, into, poison, sent, kGpuBytes), "");
}

// ---- On host staging -------------------------------------------------------------------------
// 1 MiB packed in 4 KiB fragments: 256 round trips of READY and ACK, far more than the child
// drives before it stops.
L::TypeDescPtr message_type() { return L::vector(32768, 4, 6, L::named(UCXDT_DOUBLE)); }

// The forked peer: starts a send to the parent and a receive from it and drives them a little.
[[noreturn]] void child_main(int to_child, int to_parent) {
    ProcessSide s;
    UcxdtSide x;
    child_connect(s, x, to_child, to_parent, kUcxConfig);
    const auto t = message_type();
    Type h(*t);
    Buffer src(*t, 1, 11), dst(*t, 1, 12);
    ucxdt_status_ptr_t rreq = ucxdt_tag_recv_nbx(x.w, dst.ptr(), 1, h.h, kToChild, ~0ull, nullptr);
    ucxdt_status_ptr_t sreq = ucxdt_tag_send_nbx(x.ep, src.ptr(), 1, h.h, kToParent, nullptr);
    const int code = UCXDT_PTR_IS_PTR(rreq) && UCXDT_PTR_IS_PTR(sreq) ? 0 : 5;
    for (int i = 0; i < 30; ++i) {
        ucxdt_worker_progress(x.w);
        usleep(2000);
    }
    child_stop(to_child, to_parent, code);
}

TEST(RndvFaults, PeerKilledMidPipelineFailsItsRequestsAndTheWorkerServesOn) {
    ForkedPeer f;
    ASSERT_TRUE(f.fork_child(child_main));
    ASSERT_EQ(f.connect(kUcxConfig), "");
    const auto t = message_type();
    Type h(*t);
    Buffer src(*t, 1, 21), dst(*t, 1, 22);
    ucxdt_status_ptr_t rreq = ucxdt_tag_recv_nbx(f.x.w, dst.ptr(), 1, h.h, kToParent, ~0ull, nullptr);
    ucxdt_status_ptr_t sreq = ucxdt_tag_send_nbx(f.x.ep, src.ptr(), 1, h.h, kToChild, nullptr);
    ASSERT_TRUE(UCXDT_PTR_IS_PTR(rreq) && UCXDT_PTR_IS_PTR(sreq));

    // Serve the child until it stops, then a little longer: both transfers are mid-pipeline.
    ASSERT_EQ(f.report(), 0) << "child: 5 = its requests failed to start";
    for (int i = 0; i < 1000; ++i) ucxdt_worker_progress(f.x.w);
    ASSERT_EQ(ucxdt_request_check_status(rreq), UCXDT_INPROGRESS) << "the receive ended before the kill";
    ASSERT_EQ(ucxdt_request_check_status(sreq), UCXDT_INPROGRESS) << "the send ended before the kill";

    EXPECT_TRUE(f.kill_child());
    const auto killed = std::chrono::steady_clock::now();
    EXPECT_EQ(status_name(wait_request(f.x.w, rreq, std::chrono::seconds(30))), status_name(UCXDT_ERR_PEER_FAILURE));
    EXPECT_EQ(status_name(wait_request(f.x.w, sreq, std::chrono::seconds(30))), status_name(UCXDT_ERR_PEER_FAILURE));
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - killed).count();
    EXPECT_LT(seconds, 30.0);
    EXPECT_NE(f.s.ep_error, UCS_OK) << "UCP did not report the endpoint's failure";
    RecordProperty("seconds_to_fail", std::to_string(seconds));

    // The worker serves on: a transfer through an endpoint to itself, which needs the staging
    // slots of both pools (as many as the pipeline depth) back.
    ucxdt_ep_h self = nullptr;
    ASSERT_EQ(f.self_endpoint(&self), "");
    Buffer again(*t, 1, 31), into(*t, 1, 32);
    const std::vector<std::byte> sent = packed(*t, again.ptr(), 1, 1 << 20), poison = into.bytes;
    rreq = ucxdt_tag_recv_nbx(f.x.w, into.ptr(), 1, h.h, kToSelf, ~0ull, nullptr);
    sreq = ucxdt_tag_send_nbx(self, again.ptr(), 1, h.h, kToSelf, nullptr);
    EXPECT_EQ(status_name(wait_request(f.x.w, rreq, std::chrono::seconds(60))), status_name(UCXDT_OK));
    EXPECT_EQ(status_name(wait_request(f.x.w, sreq, std::chrono::seconds(60))), status_name(UCXDT_OK));
    EXPECT_EQ(T::check_received(*t, 1, into, poison, sent, 1 << 20), "");
}

// ucxdt_ep_params_set_err_handler: the fields it fills, the parameters it refuses (leaving them
// as they were), and a handler that fails the worker's requests through the endpoint and then
// calls the user's. UCP's call of the handler is simulated on an endpoint to this worker, whose
// rendezvous send then waits for an RTR that no receive will send.
struct Seen {
    int calls = 0;
    ucp_ep_h ep = nullptr;
    ucs_status_t status = UCS_OK;
};
void note_error(void *arg, ucp_ep_h ep, ucs_status_t status) {
    auto *seen = static_cast<Seen *>(arg);
    ++seen->calls, seen->ep = ep, seen->status = status;
}

TEST(RndvFaults, EpParamsSetErrHandler) {
    ProcessSide s;
    UcxdtSide x;
    ASSERT_EQ(s.init(kFeatures, kUcxConfig), "");
    ASSERT_EQ(x.open(s, kConfig), "");
    Seen seen;

    ucp_ep_params_t p{};
    p.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS;
    p.address = reinterpret_cast<const ucp_address_t *>(s.address.data());
    const auto refused = [&](ucp_ep_params_t q, ucxdt_worker_h w) {
        const ucp_ep_params_t before = q;
        const ucxdt_status_t st = ucxdt_ep_params_set_err_handler(&q, w, note_error, &seen);
        EXPECT_EQ(std::memcmp(&q, &before, sizeof q), 0) << "refused parameters were changed";
        return status_name(st);
    };
    EXPECT_EQ(status_name(ucxdt_ep_params_set_err_handler(nullptr, x.w, note_error, &seen)),
              status_name(UCXDT_ERR_INVALID_PARAM));
    EXPECT_EQ(refused(p, nullptr), status_name(UCXDT_ERR_INVALID_PARAM));
    ucp_ep_params_t q = p;
    q.field_mask |= UCP_EP_PARAM_FIELD_USER_DATA;
    EXPECT_EQ(refused(q, x.w), status_name(UCXDT_ERR_INVALID_PARAM)) << "user_data would replace the handler's argument";
    q = p;
    q.field_mask |= UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE;
    q.err_mode = UCP_ERR_HANDLING_MODE_NONE;
    EXPECT_EQ(refused(q, x.w), status_name(UCXDT_ERR_INVALID_PARAM)) << "an explicit err_mode NONE";
    q = p;
    q.field_mask |= UCP_EP_PARAM_FIELD_ERR_HANDLER;
    q.err_handler.cb = note_error;
    EXPECT_EQ(refused(q, x.w), status_name(UCXDT_ERR_INVALID_PARAM)) << "a handler of the caller's own";

    ASSERT_EQ(status_name(ucxdt_ep_params_set_err_handler(&p, x.w, note_error, &seen)), status_name(UCXDT_OK));
    EXPECT_EQ(p.field_mask, UCP_EP_PARAM_FIELD_REMOTE_ADDRESS | UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE |
                                UCP_EP_PARAM_FIELD_ERR_HANDLER);
    EXPECT_EQ(p.err_mode, UCP_ERR_HANDLING_MODE_PEER);
    ASSERT_NE(p.err_handler.cb, nullptr);
    EXPECT_EQ(p.address, reinterpret_cast<const ucp_address_t *>(s.address.data()));
    const ucp_err_handler_t first = p.err_handler;
    ASSERT_EQ(ucxdt_ep_params_set_err_handler(&p, x.w, note_error, &seen), UCXDT_OK) << "setting it again";
    EXPECT_TRUE(p.err_handler.cb == first.cb && p.err_handler.arg == first.arg) << "one record per (cb, arg)";

    ASSERT_EQ(ucp_ep_create(s.w, &p, &s.ep), UCS_OK);
    ASSERT_EQ(T::create_rndv_ep(x.w, s.ep, &x.ep), "");
    const auto t = message_type();
    Type h(*t);
    Buffer src(*t, 1, 41);
    ucxdt_status_ptr_t sreq = ucxdt_tag_send_nbx(x.ep, src.ptr(), 1, h.h, kToSelf, nullptr);
    ASSERT_TRUE(UCXDT_PTR_IS_PTR(sreq));
    for (int i = 0; i < 1000; ++i) ucxdt_worker_progress(x.w);
    ASSERT_EQ(ucxdt_request_check_status(sreq), UCXDT_INPROGRESS) << "the send ended without an RTR";
    EXPECT_EQ(seen.calls, 0) << "UCP reported an error on a healthy endpoint";

    p.err_handler.cb(p.err_handler.arg, s.ep, UCS_ERR_CONNECTION_RESET);  // as UCP would
    EXPECT_EQ(seen.calls, 1);
    EXPECT_EQ(seen.ep, s.ep);
    EXPECT_EQ(seen.status, UCS_ERR_CONNECTION_RESET);
    EXPECT_EQ(status_name(wait_request(x.w, sreq, std::chrono::seconds(10))), status_name(UCXDT_ERR_PEER_FAILURE));
    // The RTS that nothing matched, taken off UCP's unexpected queue.
    ucp_tag_recv_info_t info{};
    if (ucp_tag_message_h msg = ucp_tag_probe_nb(s.w, kToSelf, ~0ull, 1, &info)) {
        std::vector<char> rts(info.length);
        ucp_request_param_t rp{};
        EXPECT_EQ(s.wait(ucp_tag_msg_recv_nbx(s.w, rts.data(), rts.size(), msg, &rp)), UCS_OK);
    }
}

}  // namespace

namespace {

// ucxdt_tag_recv_peer_failed ends the unmatched receives that wait for one peer only: the tag
// bits 8-15 stand for the source, as an MPI layer's tag holds it. A receive from source 1 ends
// with UCXDT_ERR_PEER_FAILURE; one from source 2, and one from any source, stay posted and then
// take their messages. Receives posted to UCP (no plain_tag_bit) and receives the worker matches
// itself (plain_tag_bit) alike.
TEST(RndvFaults, ReceivesWaitingForAFailedPeerEnd) {
    for (const int plain_bit : {-1, 40}) {
        const std::string what = plain_bit < 0 ? "receives posted to UCP" : "receives matched by the worker";
        T::RndvConfig c = kConfig;
        c.plain_bit = plain_bit;
        T::RndvPair p{c, std::chrono::seconds(20)};
        ASSERT_EQ(p.error, "") << what;
        for (int i = 0; i < 200; ++i) p.progress();  // the HELLOs
        const auto t = L::vector(64, 1, 2, L::named(UCXDT_DOUBLE));
        Type h(*t);
        Buffer src(*t, 1, 11), from1(*t, 1, 12), from2(*t, 1, 13), any(*t, 1, 14);
        constexpr ucp_tag_t kSource = 0xff00;
        ucxdt_status_ptr_t r1 = ucxdt_tag_recv_nbx(p.w[1], from1.ptr(), 1, h.h, 0x0105, ~0ull, nullptr);
        ucxdt_status_ptr_t r2 = ucxdt_tag_recv_nbx(p.w[1], from2.ptr(), 1, h.h, 0x0205, ~0ull, nullptr);
        ucxdt_status_ptr_t ra = ucxdt_tag_recv_nbx(p.w[1], any.ptr(), 1, h.h, 0x0006, ~kSource, nullptr);
        for (ucxdt_status_ptr_t r : {r1, r2, ra}) ASSERT_FALSE(UCXDT_PTR_IS_ERR(r) || r == nullptr) << what;
        EXPECT_EQ(ucxdt_tag_recv_peer_failed(p.w[1], 0x0100, kSource), 1u) << what;
        EXPECT_EQ(status_name(p.wait(r1)), status_name(UCXDT_ERR_PEER_FAILURE)) << what;
        for (int i = 0; i < 200; ++i) p.progress();
        EXPECT_EQ(ucxdt_request_check_status(r2), UCXDT_INPROGRESS) << what << ": another source's receive ended";
        EXPECT_EQ(ucxdt_request_check_status(ra), UCXDT_INPROGRESS) << what << ": an any-source receive ended";
        EXPECT_EQ(ucxdt_tag_recv_peer_failed(p.w[1], 0x0100, kSource), 0u) << what << ": ended twice";
        const int64_t bytes = 64 * 8;
        ucxdt_status_ptr_t s2 = ucxdt_tag_send_nbx(p.ep[0], src.ptr(), 1, h.h, 0x0205, nullptr);
        ucxdt_status_ptr_t sa = ucxdt_tag_send_nbx(p.ep[0], src.ptr(), 1, h.h, 0x0306, nullptr);
        EXPECT_EQ(status_name(p.wait(r2)), status_name(UCXDT_OK)) << what;
        EXPECT_EQ(status_name(p.wait(ra)), status_name(UCXDT_OK)) << what;
        EXPECT_EQ(status_name(p.wait(s2)), status_name(UCXDT_OK)) << what;
        EXPECT_EQ(status_name(p.wait(sa)), status_name(UCXDT_OK)) << what;
        const std::vector<std::byte> sent = packed(*t, src.ptr(), 1, bytes);
        EXPECT_EQ(T::check_received(*t, 1, from2, Buffer(*t, 1, 13).bytes, sent, bytes), "") << what;
        EXPECT_EQ(T::check_received(*t, 1, any, Buffer(*t, 1, 14).bytes, sent, bytes), "") << what;
    }
}

}  // namespace
