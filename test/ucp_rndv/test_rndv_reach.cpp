// Which peers share a node with a worker, and which UCX transports join them, as UCX itself has
// it (src/ucp_rndv/ucx_reach.hpp): the node is UCX's system ID, so another network namespace
// of this host (a container's) is this node, and CUDA IPC needs UCX's cuda_ipc in the context.
#include "harness/layout_buffer.hpp"
#include "harness/rndv_support.hpp"
#include "harness/scoped_env.hpp"
#include "harness/two_process.hpp"
#include "ucp_rndv/rndv_worker.hpp"  // the peers a worker knows and how it reached them

#include <ucs/sys/uid.h>
#include <ucxdt/ucxdt_ucp.h>

#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include <sched.h>
#include <unistd.h>

namespace {

namespace L = ucxdt::layouts;
namespace T = ucxdt::testing;
using T::Buffer, T::packed, T::ProcessSide, T::status_name, T::Type, T::UcxdtSide;

constexpr uint64_t kFeatures = UCP_FEATURE_TAG | UCP_FEATURE_AM | UCP_FEATURE_RMA;
// Shared memory, which UCX reaches on one node whatever the network namespaces.
const std::vector<std::pair<const char *, const char *>> kUcxConfig = {{"TLS", "sm,self"}};
const T::RndvConfig kConfig{1024, 65536, 4, 8};
constexpr uint64_t kToParent = 1, kToChild = 2;
constexpr int64_t kPacked = 1 << 20;

const ucxdt::rndv::Worker &internals(ucxdt_worker_h w) { return *reinterpret_cast<const ucxdt::rndv::Worker *>(w); }
const ucxdt::rndv::Ep &internals(ucxdt_ep_h e) { return *reinterpret_cast<const ucxdt::rndv::Ep *>(e); }

// 1 MiB packed in 64 KiB fragments: host staging, which a receiver on the sender's node reads in
// place from the sender's slots.
L::TypeDescPtr message_type() { return L::vector(32768, 4, 6, L::named(UCXDT_DOUBLE)); }

// One message each way between the two processes: its statuses, and check_received's verdict
// on the message that arrived ("" when every byte is right), the peer having sent its buffer of
// pattern `peer_seed`.
struct Exchange {
    int send_status = -1, recv_status = -1;
    std::string received;
};
constexpr uint64_t kChildSeed = 41, kParentSeed = 43;

Exchange exchange(UcxdtSide &x, uint64_t send_tag, uint64_t recv_tag, uint64_t seed, uint64_t peer_seed) {
    const auto t = message_type();
    Type h(*t);
    Buffer src(*t, 1, seed), dst(*t, 1, seed + 1), expect(*t, 1, peer_seed);
    const std::vector<std::byte> poison = dst.bytes;
    ucxdt_status_ptr_t rreq = ucxdt_tag_recv_nbx(x.w, dst.ptr(), 1, h.h, recv_tag, ~0ull, nullptr);
    ucxdt_status_ptr_t sreq = ucxdt_tag_send_nbx(x.ep, src.ptr(), 1, h.h, send_tag, nullptr);
    auto progress = [&] { ucxdt_worker_progress(x.w); };
    Exchange e;
    e.send_status = T::wait_request(sreq, progress, std::chrono::seconds(30));
    e.recv_status = T::wait_request(rreq, progress, std::chrono::seconds(30));
    e.received = T::check_received(*t, 1, dst, poison, packed(*t, expect.ptr(), 1, kPacked), kPacked);
    return e;
}

// What the child tells the parent.
struct ChildReport {
    uint64_t node = 0, process = 0;
    uint8_t peer_known = 0, peer_on_node = 0;
    int32_t send_status = -1, recv_status = -1;
    char received[64] = {};  // check_received's verdict ("" when every byte is right)
};

// Both sides wait for their endpoint's HELLO reply, so that the sender offers its staging to a
// receiver it knows is on its node.
bool wait_peer_known(ucxdt_worker_h w, ucxdt_ep_h e) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (!internals(e).peer_known && std::chrono::steady_clock::now() < deadline) ucxdt_worker_progress(w);
    return internals(e).peer_known;
}

// The child: a network namespace of its own, then one message each way with the parent over
// shared memory. Writes 'n' when it may not make a namespace, else 'y' and a ChildReport.
[[noreturn]] void child_main(int to_child, int to_parent) {
    alarm(60);  // never outlives a parent that failed
    const char made = unshare(CLONE_NEWNET) == 0 ? 'y' : 'n';
    T::write_all(to_parent, &made, 1);
    if (made != 'y') _exit(0);
    ChildReport rep;
    {
        ProcessSide s;
        UcxdtSide x;
        std::vector<char> peer;
        if (!s.init(kFeatures, kUcxConfig).empty()) _exit(2);
        if (!T::write_blob(to_parent, s.address) || !T::read_blob(to_child, &peer)) _exit(3);
        if (!x.open(s, kConfig).empty() || !s.connect(peer).empty() || !T::create_rndv_ep(x.w, s.ep, &x.ep).empty())
            _exit(4);
        const ucxdt::rndv::Worker &w = internals(x.w);
        rep.node = w.node;
        rep.process = w.process;
        rep.peer_known = wait_peer_known(x.w, x.ep);
        rep.peer_on_node = internals(x.ep).peer.node == w.node;
        const Exchange e = exchange(x, kToParent, kToChild, kChildSeed, kParentSeed);
        rep.send_status = e.send_status, rep.recv_status = e.recv_status;
        std::snprintf(rep.received, sizeof rep.received, "%s", e.received.c_str());
        T::write_all(to_parent, &rep, sizeof rep);
        char done = 0;
        T::read_all(to_child, &done, 1);  // the parent has its message: the endpoints may close
    }
    _exit(0);
}

// Two processes of this host in different network namespaces are one node, as they are to UCX
// (its shared memory and cuda_ipc compare the boot ID): each worker's node is UCX's system ID,
// each knows the other as on its node, and a receiver unpacks host-staged fragments in place
// from the sender's shared staging. The process identities differ though the child forked.
TEST(RndvReach, AnotherNetworkNamespaceOfThisHostIsThisNode) {
    int to_child[2], to_parent[2];
    ASSERT_EQ(pipe(to_child), 0);
    ASSERT_EQ(pipe(to_parent), 0);
    const pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) child_main(to_child[0], to_parent[1]);

    char made = 0;
    ASSERT_TRUE(T::readable_within(to_parent[0], std::chrono::seconds(30)) && T::read_all(to_parent[0], &made, 1));
    if (made != 'y') {
        T::wait_child(pid, std::chrono::seconds(10));
        GTEST_SKIP() << "this process may not make a network namespace (unshare(CLONE_NEWNET))";
    }
    ChildReport rep;
    {
        ProcessSide s;
        UcxdtSide x;
        std::vector<char> peer;
        ASSERT_EQ(s.init(kFeatures, kUcxConfig), "");
        ASSERT_TRUE(T::read_blob_within(to_parent[0], &peer, std::chrono::seconds(30)));
        ASSERT_TRUE(T::write_blob(to_child[1], s.address));
        ASSERT_EQ(x.open(s, kConfig), "");
        ASSERT_EQ(s.connect(peer), "");
        ASSERT_EQ(T::create_rndv_ep(x.w, s.ep, &x.ep), "");
        ASSERT_TRUE(wait_peer_known(x.w, x.ep)) << "no HELLO reply from the child within 20 s";

        const Exchange e = exchange(x, kToChild, kToParent, kParentSeed, kChildSeed);
        EXPECT_EQ(status_name(e.send_status), status_name(UCXDT_OK));
        EXPECT_EQ(status_name(e.recv_status), status_name(UCXDT_OK));
        EXPECT_EQ(e.received, "");
        auto progress = [&] { ucxdt_worker_progress(x.w); };

        // The child's report comes once its own transfers ended; the parent serves meanwhile.
        const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(40);
        while (!T::readable_within(to_parent[0], std::chrono::seconds(0)) && std::chrono::steady_clock::now() < deadline)
            progress();
        ASSERT_TRUE(T::read_all(to_parent[0], &rep, sizeof rep)) << "the child did not report";
        const char done = 1;
        T::write_all(to_child[1], &done, 1);

        const ucxdt::rndv::Worker &w = internals(x.w);
        EXPECT_EQ(w.node, ucs_get_system_id()) << "the worker's node is not UCX's";
        EXPECT_EQ(rep.node, w.node) << "another network namespace of this host counted as another node";
        EXPECT_NE(rep.process, w.process) << "a forked child passed for its parent";
        EXPECT_TRUE(internals(x.ep).peer.node == w.node) << "the parent does not see the child on its node";
        EXPECT_TRUE(rep.peer_known && rep.peer_on_node) << "the child does not see the parent on its node";
        EXPECT_GT(w.host_frags.in_place, 0u) << "the child's fragments were not read in place from its staging";
        EXPECT_EQ(w.host_frags.am, 0u) << "fragments were copied as active messages across one node";
    }
    EXPECT_EQ(T::wait_child(pid, std::chrono::seconds(20)), 0) << "the child failed or hung";
    EXPECT_EQ(status_name(rep.send_status), status_name(UCXDT_OK));
    EXPECT_EQ(status_name(rep.recv_status), status_name(UCXDT_OK));
    EXPECT_STREQ(rep.received, "");
}

// The transports a worker goes by are those UCX_TLS left its context, as UCX lists them; without
// cuda_ipc among them, ucxdt's CUDA IPC is off whatever UCXDT_CUDA_IPC says.
TEST(RndvReach, WorkerReportsTheTransportsOfItsContext) {
    auto transports = [](const std::string &config) {
        const std::string key = "# UCX transports of the context:";
        const size_t at = config.find(key);
        if (at == std::string::npos) return std::string("(no line)");
        return config.substr(at + key.size(), config.find('\n', at) - at - key.size()) + " ";
    };
    {
        T::ScopedEnv env{{"UCX_TLS", "tcp"}, {"UCXDT_CUDA_IPC", "y"}};
        const std::string c = T::worker_config(kConfig);
        const std::string tls = transports(c);
        EXPECT_NE(tls.find(" tcp "), std::string::npos) << c;
        for (const char *absent : {" posix ", " sysv ", " cma ", " cuda_ipc ", " cuda_copy "})
            EXPECT_EQ(tls.find(absent), std::string::npos) << absent << "listed under UCX_TLS=tcp:" << tls;
        EXPECT_NE(c.find("UCXDT_CUDA_IPC=n\n"), std::string::npos) << "CUDA IPC on without UCX's cuda_ipc:\n" << c;
    }
    {
        T::ScopedEnv env{{"UCX_TLS", "posix,self"}};
        const std::string tls = transports(T::worker_config(kConfig));
        EXPECT_NE(tls.find(" posix "), std::string::npos) << tls;
        EXPECT_NE(tls.find(" self "), std::string::npos) << tls;
        EXPECT_EQ(tls.find(" tcp "), std::string::npos) << tls;
    }
}

}  // namespace
