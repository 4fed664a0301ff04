// Peer failure in the datatype-aware rendezvous (include/ucxdt/ucxdt_ucp.h): a forked peer is
// killed with SIGKILL while a send and a receive with it are mid-pipeline, on host staging and
// on the CUDA IPC path. The survivor's requests must complete with UCXDT_ERR_PEER_FAILURE
// within a bounded time, and the worker must go on serving: a transfer to itself afterwards
// needs every staging slot back in the pools.
#include "support/layout_buffer.hpp"
#include "support/rndv_support.hpp"
#include "support/scoped_env.hpp"
#include "support/two_process.hpp"
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

// 1 MiB packed in 4 KiB fragments: 256 round trips of READY and ACK, far more than the child
// drives before it stops.
L::TypeDescPtr message_type() { return L::vector(32768, 4, 6, L::named(UCXDT_DOUBLE)); }

// The forked peer: starts a send to the parent and a receive from it, drives them a little,
// says so through `ready_fd`, and then waits to be killed. Never returns.
[[noreturn]] void child_main(int to_child, int to_parent) {
    alarm(120);  // a parent that never kills us must not leave us behind
    int code = 0;
    ProcessSide s;
    UcxdtSide x;
    std::vector<char> peer;
    if (!s.init(kFeatures, kUcxConfig).empty()) _exit(2);
    if (!T::write_blob(to_parent, s.address) || !T::read_blob(to_child, &peer)) _exit(3);
    if (!x.open(s, kConfig).empty() || !s.connect(peer, x.w).empty() || !T::create_rndv_ep(x.w, s.ep, &x.ep).empty()) _exit(4);
    const auto t = message_type();
    Type h(*t);
    Buffer src(*t, 1, 11), dst(*t, 1, 12);
    ucxdt_status_ptr_t rreq = ucxdt_tag_recv_nbx(x.w, dst.ptr(), 1, h.h, kToChild, ~0ull, nullptr);
    ucxdt_status_ptr_t sreq = ucxdt_tag_send_nbx(x.ep, src.ptr(), 1, h.h, kToParent, nullptr);
    if (!UCXDT_PTR_IS_PTR(rreq) || !UCXDT_PTR_IS_PTR(sreq)) code = 5;
    for (int i = 0; i < 30; ++i) {
        ucxdt_worker_progress(x.w);
        usleep(2000);
    }
    const char stalled = static_cast<char>(code);
    T::write_all(to_parent, &stalled, 1);
    char never;
    T::read_all(to_child, &never, 1);  // blocks until SIGKILL
    _exit(6);
}

bool readable(int fd) {
    pollfd p{fd, POLLIN, 0};
    return poll(&p, 1, 0) == 1;
}

int wait_request(ucxdt_worker_h w, ucxdt_status_ptr_t req, std::chrono::seconds limit) {
    return T::wait_request(req, [w] { ucxdt_worker_progress(w); }, limit);
}

// ---- On the CUDA IPC path ----------------------------------------------------------------
// Each process holds the other's GPU memory when the child is killed: the parent's send packs
// into device staging slots that the child's receive granted (the parent maps the child's
// staging), and the child's send packs into slots that the parent's receive granted (the
// parent's slots are lent). The layouts' runs differ (32 and 16 bytes), so that neither side
// copies run by run or byte for byte: every fragment goes through the receiver's staging.
// 16 MB in 16 KiB fragments, each granted by a message over TCP: far more than the child
// drives before it stops. First in the file: the parent forks before anything here starts CUDA.
const std::vector<std::pair<const char *, const char *>> kGpuUcxConfig = {{"TLS", "tcp,cuda_copy,cuda_ipc,self"}};
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

[[noreturn]] void gpu_child_main(int to_child, int to_parent) {
    alarm(120);
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess || n == 0) _exit(7);
    cudaSetDevice(n > 1 ? 1 : 0);  // across the link where there are two GPUs
    int code = 0;
    ProcessSide s;
    UcxdtSide x;
    std::vector<char> peer;
    if (!s.init(kFeatures, kGpuUcxConfig).empty()) _exit(2);
    if (!T::write_blob(to_parent, s.address) || !T::read_blob(to_child, &peer)) _exit(3);
    if (!x.open(s, kConfig).empty() || !s.connect(peer, x.w).empty() || !T::create_rndv_ep(x.w, s.ep, &x.ep).empty()) _exit(4);
    if (!introduced(x.w, x.ep)) _exit(9);
    const auto st = gpu_send_type(), rt = gpu_recv_type();
    Type sh(*st), rh(*rt);
    Buffer src(*st, 1, 11), dst(*rt, 1, 12);
    T::Placed src_at(src, T::Mem::cuda), dst_at(dst, T::Mem::cuda);
    ucxdt_status_ptr_t rreq = ucxdt_tag_recv_nbx(x.w, dst_at.ptr(), 1, rh.h, kToChild, ~0ull, nullptr);
    ucxdt_status_ptr_t sreq = ucxdt_tag_send_nbx(x.ep, src_at.ptr(), 1, sh.h, kToParent, nullptr);
    if (!UCXDT_PTR_IS_PTR(rreq) || !UCXDT_PTR_IS_PTR(sreq)) code = 5;
    // Until each side holds the other's memory: this receive granted the parent a slot, and
    // this send mapped a slot the parent granted. Then stop, mid-transfer.
    const auto *w = static_cast<const ucxdt::rndv::Worker *>(x.w);
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (code == 0 && !(lent(w) > 0 && w->imports->open() > 0)) {
        if (std::chrono::steady_clock::now() > until) code = 8;
        ucxdt_worker_progress(x.w);
    }
    const char stalled = static_cast<char>(code);
    T::write_all(to_parent, &stalled, 1);
    char never;
    T::read_all(to_child, &never, 1);  // blocks until SIGKILL
    _exit(6);
}

TEST(RndvFaults, GpuPeerKilledHoldingIpcMappingsAndStagingSlots) {
    // Small IPC fragments, in both processes (the child inherits them).
    T::ScopedEnv env{{"UCXDT_IPC_FRAG_SIZE", "16384"}, {"UCXDT_CUDA_IPC", "y"}};
    int to_child[2], to_parent[2];
    ASSERT_EQ(pipe(to_child), 0);
    ASSERT_EQ(pipe(to_parent), 0);
    const pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) gpu_child_main(to_child[0], to_parent[1]);
    if (!T::have_gpu()) {
        kill(pid, SIGKILL);
        T::wait_child(pid, std::chrono::seconds(10));
        for (int fd : {to_child[0], to_child[1], to_parent[0], to_parent[1]}) close(fd);
        GTEST_SKIP() << "no GPU";
    }
    ASSERT_EQ(cudaSetDevice(0), cudaSuccess);
    ProcessSide s;
    UcxdtSide x;
    std::vector<char> peer;
    ASSERT_EQ(s.init(kFeatures, kGpuUcxConfig), "");
    ASSERT_TRUE(T::read_blob(to_parent[0], &peer) && T::write_blob(to_child[1], s.address));
    ASSERT_EQ(x.open(s, kConfig), "");
    ASSERT_EQ(s.connect(peer, x.w), "");
    ASSERT_EQ(T::create_rndv_ep(x.w, s.ep, &x.ep), "");
    ASSERT_TRUE(introduced(x.w, x.ep)) << "no HELLO reply from the child in 10 s";
    const auto st = gpu_send_type(), rt = gpu_recv_type();
    Type sh(*st), rh(*rt);
    Buffer src(*st, 1, 21), dst(*rt, 1, 22);
    T::Placed src_at(src, T::Mem::cuda), dst_at(dst, T::Mem::cuda);
    ucxdt_status_ptr_t rreq = ucxdt_tag_recv_nbx(x.w, dst_at.ptr(), 1, rh.h, kToParent, ~0ull, nullptr);
    ucxdt_status_ptr_t sreq = ucxdt_tag_send_nbx(x.ep, src_at.ptr(), 1, sh.h, kToChild, nullptr);
    ASSERT_TRUE(UCXDT_PTR_IS_PTR(rreq) && UCXDT_PTR_IS_PTR(sreq));

    const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (!readable(to_parent[0]) && std::chrono::steady_clock::now() < give_up) ucxdt_worker_progress(x.w);
    char child_code = -1;
    ASSERT_TRUE(T::read_all(to_parent[0], &child_code, 1)) << "the child did not report";
    ASSERT_EQ(child_code, 0) << "child: 5 = its requests failed to start, 8 = no push in 30 s";
    // The child's grant and its use of ours are on their way: once both are here, so is the
    // parent's hold of the child's memory and the child's of the parent's.
    auto *w = static_cast<ucxdt::rndv::Worker *>(x.w);
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (!(lent(w) > 0 && w->imports->open() > 0) && std::chrono::steady_clock::now() < until)
        ucxdt_worker_progress(x.w);
    for (int i = 0; i < 1000; ++i) ucxdt_worker_progress(x.w);
    ASSERT_EQ(ucxdt_request_check_status(rreq), UCXDT_INPROGRESS) << "the receive ended before the kill";
    ASSERT_EQ(ucxdt_request_check_status(sreq), UCXDT_INPROGRESS) << "the send ended before the kill";
    ASSERT_GT(w->imports->open(), 0u) << "the send never mapped the child's staging (no push)";
    ASSERT_GT(lent(w), 0) << "the receive never granted the child a slot (no push)";

    kill(pid, SIGKILL);
    EXPECT_NE(T::wait_child(pid, std::chrono::seconds(10)), -1);
    const auto killed = std::chrono::steady_clock::now();
    EXPECT_EQ(status_name(wait_request(x.w, rreq, std::chrono::seconds(30))), status_name(UCXDT_ERR_PEER_FAILURE));
    EXPECT_EQ(status_name(wait_request(x.w, sreq, std::chrono::seconds(30))), status_name(UCXDT_ERR_PEER_FAILURE));
    EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - killed).count(), 30.0);
    EXPECT_EQ(w->imports->open(), 0u) << "mappings of the dead peer's memory stay open";
    EXPECT_EQ(lent(w), 0) << "device staging slots lent to the dead peer are not back";
    EXPECT_TRUE(w->retired.empty()) << "slots stay retired after their sender died";

    // The worker serves on, through its own device staging: a GPU transfer to itself.
    ucxdt_ep_destroy(x.ep);
    x.ep = nullptr;
    ucp_ep_h self = nullptr;
    ucp_ep_params_t ep_params{};
    ep_params.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS;
    ep_params.address = reinterpret_cast<const ucp_address_t *>(s.address.data());
    ASSERT_EQ(ucp_ep_create(s.w, &ep_params, &self), UCS_OK);
    ucxdt_ep_h self_ep = nullptr;
    ASSERT_EQ(T::create_rndv_ep(x.w, self, &self_ep), "");
    Buffer into(*rt, 1, 32);
    const std::vector<std::byte> sent = packed(*st, src.ptr(), 1, kGpuBytes), poison = into.bytes;
    T::Placed into_at(into, T::Mem::cuda);
    rreq = ucxdt_tag_recv_nbx(x.w, into_at.ptr(), 1, rh.h, kToSelf, ~0ull, nullptr);
    sreq = ucxdt_tag_send_nbx(self_ep, src_at.ptr(), 1, sh.h, kToSelf, nullptr);
    EXPECT_EQ(status_name(wait_request(x.w, rreq, std::chrono::seconds(60))), status_name(UCXDT_OK));
    EXPECT_EQ(status_name(wait_request(x.w, sreq, std::chrono::seconds(60))), status_name(UCXDT_OK));
    into_at.fetch();
    EXPECT_EQ(T::check_received(*rt, 1, into, poison, sent, kGpuBytes), "");
    ucxdt_ep_destroy(self_ep);
    ucp_request_param_t cp{};
    cp.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
    cp.flags = UCP_EP_CLOSE_FLAG_FORCE;
    s.wait(ucp_ep_close_nbx(self, &cp), std::chrono::seconds(10));
    for (int fd : {to_child[0], to_child[1], to_parent[0], to_parent[1]}) close(fd);
}

TEST(RndvFaults, PeerKilledMidPipelineFailsItsRequestsAndTheWorkerServesOn) {
    int to_child[2], to_parent[2];
    ASSERT_EQ(pipe(to_child), 0);
    ASSERT_EQ(pipe(to_parent), 0);
    const pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) child_main(to_child[0], to_parent[1]);

    ProcessSide s;
    UcxdtSide x;
    std::vector<char> peer;
    ASSERT_EQ(s.init(kFeatures, kUcxConfig), "");
    ASSERT_TRUE(T::read_blob(to_parent[0], &peer) && T::write_blob(to_child[1], s.address));
    ASSERT_EQ(x.open(s, kConfig), "");
    ASSERT_EQ(s.connect(peer, x.w), "");  // ucxdt_ep_params_set_err_handler
    ASSERT_EQ(T::create_rndv_ep(x.w, s.ep, &x.ep), "");

    const auto t = message_type();
    Type h(*t);
    Buffer src(*t, 1, 21), dst(*t, 1, 22);
    ucxdt_status_ptr_t rreq = ucxdt_tag_recv_nbx(x.w, dst.ptr(), 1, h.h, kToParent, ~0ull, nullptr);
    ucxdt_status_ptr_t sreq = ucxdt_tag_send_nbx(x.ep, src.ptr(), 1, h.h, kToChild, nullptr);
    ASSERT_TRUE(UCXDT_PTR_IS_PTR(rreq) && UCXDT_PTR_IS_PTR(sreq));

    // Serve the child until it stops, then a little longer: both transfers are mid-pipeline.
    const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (!readable(to_parent[0]) && std::chrono::steady_clock::now() < give_up) ucxdt_worker_progress(x.w);
    char child_code = -1;
    ASSERT_TRUE(T::read_all(to_parent[0], &child_code, 1)) << "the child did not report";
    ASSERT_EQ(child_code, 0) << "child: 5 = its requests failed to start";
    for (int i = 0; i < 1000; ++i) ucxdt_worker_progress(x.w);
    ASSERT_EQ(ucxdt_request_check_status(rreq), UCXDT_INPROGRESS) << "the receive ended before the kill";
    ASSERT_EQ(ucxdt_request_check_status(sreq), UCXDT_INPROGRESS) << "the send ended before the kill";

    kill(pid, SIGKILL);
    EXPECT_NE(T::wait_child(pid, std::chrono::seconds(10)), -1);
    const auto killed = std::chrono::steady_clock::now();
    EXPECT_EQ(status_name(wait_request(x.w, rreq, std::chrono::seconds(30))), status_name(UCXDT_ERR_PEER_FAILURE));
    EXPECT_EQ(status_name(wait_request(x.w, sreq, std::chrono::seconds(30))), status_name(UCXDT_ERR_PEER_FAILURE));
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - killed).count();
    EXPECT_LT(seconds, 30.0);
    EXPECT_NE(s.ep_error, UCS_OK) << "UCP did not report the endpoint's failure";
    RecordProperty("seconds_to_fail", std::to_string(seconds));

    // The worker serves on: a transfer through an endpoint to itself, which needs the staging
    // slots of both pools (as many as the pipeline depth) back.
    ucxdt_ep_destroy(x.ep);
    x.ep = nullptr;
    ucp_ep_h self = nullptr;
    ucp_ep_params_t ep_params{};
    ep_params.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS;
    ep_params.address = reinterpret_cast<const ucp_address_t *>(s.address.data());
    ASSERT_EQ(ucp_ep_create(s.w, &ep_params, &self), UCS_OK);
    ucxdt_ep_h self_ep = nullptr;
    ASSERT_EQ(T::create_rndv_ep(x.w, self, &self_ep), "");
    Buffer again(*t, 1, 31), into(*t, 1, 32);
    const std::vector<std::byte> sent = packed(*t, again.ptr(), 1, 1 << 20), poison = into.bytes;
    rreq = ucxdt_tag_recv_nbx(x.w, into.ptr(), 1, h.h, kToSelf, ~0ull, nullptr);
    sreq = ucxdt_tag_send_nbx(self_ep, again.ptr(), 1, h.h, kToSelf, nullptr);
    EXPECT_EQ(status_name(wait_request(x.w, rreq, std::chrono::seconds(60))), status_name(UCXDT_OK));
    EXPECT_EQ(status_name(wait_request(x.w, sreq, std::chrono::seconds(60))), status_name(UCXDT_OK));
    EXPECT_EQ(T::check_received(*t, 1, into, poison, sent, 1 << 20), "");
    ucxdt_ep_destroy(self_ep);
    ucp_request_param_t cp{};
    cp.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
    cp.flags = UCP_EP_CLOSE_FLAG_FORCE;
    s.wait(ucp_ep_close_nbx(self, &cp), std::chrono::seconds(10));
    for (int fd : {to_child[0], to_child[1], to_parent[0], to_parent[1]}) close(fd);
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
