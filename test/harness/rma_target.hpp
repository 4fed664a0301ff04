// The target side of one-sided tests across two processes: a forked child that registers a
// region (host or device memory), sends its rkey and address through a pipe, serves its worker
// until told to stop, then checks the region and reports. Every wait of the parent is bounded,
// and each process closes the other's pipe ends, so that a child that dies is an error, not a
// hang. CUDA must not be initialized in the parent before start() (a forked child cannot use
// it then): the child tells whether it has a GPU.
#pragma once

#include "harness/rndv_support.hpp"
#include "harness/two_process.hpp"

#include <ucxdt/ucxdt_rma.h>

#include <cuda_runtime_api.h>

#include <chrono>
#include <csignal>
#include <cstring>
#include <string>
#include <vector>

#include <poll.h>

namespace ucxdt::testing {

using namespace ucxdt::support;  // the harness and its tests speak support/'s descriptions

constexpr uint64_t kRmaFeatures = UCP_FEATURE_TAG | UCP_FEATURE_AM | UCP_FEATURE_RMA;
/// The exit status of a device target without a GPU.
constexpr int kNoGpu = 77;

using UcxConfig = std::vector<std::pair<const char *, const char *>>;

// Both processes: context, worker, and an endpoint to the peer in peer error mode.
inline std::string connect_pair(int in, int out, const UcxConfig &cfg, ProcessSide &s, UcxdtSide &x) {
    std::vector<char> peer;
    if (std::string e = s.init(kRmaFeatures, cfg); !e.empty()) return e;
    if (!write_blob(out, s.address) || !read_blob_within(in, &peer, std::chrono::seconds(60)))
        return "address exchange (the peer is gone or silent)";
    if (std::string e = x.open(s); !e.empty()) return e;
    if (std::string e = s.connect(peer, x.w); !e.empty()) return e;
    return create_rndv_ep(x.w, s.ep, &x.ep);
}

// Registers [region, region + bytes) on x's worker and sends its packed rkey and the region's
// address through `out` (Target::start reads them); false when either fails. The caller
// releases *rkey and unmaps *mem.
inline bool publish_region(UcxdtSide &x, int out, void *region, size_t bytes, ucxdt_mem_h *mem, void **rkey) {
    ucxdt_mem_map_params_t mp{};
    mp.field_mask = UCXDT_MEM_MAP_PARAM_FIELD_ADDRESS | UCXDT_MEM_MAP_PARAM_FIELD_LENGTH;
    mp.address = region;
    mp.length = bytes;
    size_t rkey_len = 0;
    if (ucxdt_mem_map(x.w, &mp, mem) != UCXDT_OK || ucxdt_rkey_pack(*mem, rkey, &rkey_len) != UCXDT_OK) return false;
    std::vector<char> blob(static_cast<char *>(*rkey), static_cast<char *>(*rkey) + rkey_len);
    const uint64_t at = reinterpret_cast<uint64_t>(region);
    blob.insert(blob.end(), reinterpret_cast<const char *>(&at), reinterpret_cast<const char *>(&at) + sizeof at);
    return write_blob(out, blob);
}

// The target: registers `bytes` of memory (host, or device when `device`) filled with 0x5a,
// sends the rkey and the region's address, then serves until the parent writes a byte (or
// goes), then reports check(region bytes). Exits kNoGpu at once for a device region without
// a GPU.
template <typename Check>
[[noreturn]] void target_main(int in, int out, bool device, size_t bytes, const UcxConfig &cfg, Check &&check) {
    alarm(120);  // a parent that never ends us must not leave us behind
    int gpus = 0;
    if (device && (cudaGetDeviceCount(&gpus) != cudaSuccess || gpus == 0)) _exit(kNoGpu);
    ProcessSide s;
    UcxdtSide x;
    if (!connect_pair(in, out, cfg, s, x).empty()) _exit(2);
    std::vector<std::byte> host(bytes, std::byte{0x5a});
    void *region = host.data();
    if (device && (cudaMalloc(&region, bytes) != cudaSuccess || cudaMemcpy(region, host.data(), bytes, cudaMemcpyHostToDevice) != cudaSuccess))
        _exit(3);
    ucxdt_mem_h mem = nullptr;
    void *rkey = nullptr;
    if (!publish_region(x, out, region, bytes, &mem, &rkey)) _exit(4);
    pollfd p{in, POLLIN, 0};
    while (poll(&p, 1, 0) == 0) ucxdt_worker_progress(x.w);
    char go = 0;
    read_all(in, &go, 1);
    if (device && cudaMemcpy(host.data(), region, bytes, cudaMemcpyDeviceToHost) != cudaSuccess) _exit(6);
    const char verdict = check(host);
    write_all(out, &verdict, 1);
    ucxdt_rkey_buffer_release(rkey);
    ucxdt_mem_unmap(mem);
    _exit(0);
}

struct Target {
    pid_t pid = -1;
    int to_child[2] = {-1, -1}, to_parent[2] = {-1, -1};
    ProcessSide s;
    UcxdtSide x;
    ucxdt_rkey_h rkey = nullptr;
    uint64_t region = 0;

    /// "" once the target's rkey is unpacked; else what failed (no_gpu() tells a device target
    /// that found no GPU).
    template <typename Check>
    std::string start(bool device, size_t bytes, const UcxConfig &cfg, Check &&check) {
        return spawn(cfg, [&](int in, int out) { target_main(in, out, device, bytes, cfg, check); });
    }

    /// start() with a child of the test's own: child(in, out) never returns, and does what
    /// target_main does up to sending its rkey blob.
    template <typename Child>
    std::string spawn(const UcxConfig &cfg, Child &&child) {
        if (pipe(to_child) || pipe(to_parent)) return "pipe";
        std::signal(SIGPIPE, SIG_IGN);  // a write to a child that is gone fails instead of killing us
        pid = fork();
        if (pid < 0) return "fork";
        if (pid == 0) {
            close(to_child[1]), close(to_parent[0]);
            child(to_child[0], to_parent[1]);
            _exit(9);  // not reached
        }
        // The child's ends, so that its death reads as end of file here.
        close(to_child[0]), close(to_parent[1]);
        to_child[0] = to_parent[1] = -1;
        if (std::string e = connect_pair(to_parent[0], to_child[1], cfg, s, x); !e.empty()) return ended(e);
        std::vector<char> blob;
        if (!read_blob_within(to_parent[0], &blob, std::chrono::seconds(60)) || blob.size() < sizeof region)
            return ended("the target sent no rkey");
        std::memcpy(&region, blob.data() + blob.size() - sizeof region, sizeof region);
        if (ucxdt_ep_rkey_unpack(x.ep, blob.data(), blob.size() - sizeof region, &rkey) != UCXDT_OK)
            return std::string("ucxdt_ep_rkey_unpack: ") + ucxdt_last_error();
        return "";
    }
    bool no_gpu() const { return exit_status >= 0 && WIFEXITED(exit_status) && WEXITSTATUS(exit_status) == kNoGpu; }
    int exit_status = -1;  // the child's wait status once it ended during start()

    // Tells the target to check, and returns its verdict (0: good), or -1.
    int verdict() {
        const char go = 1;
        char v = -1;
        if (!write_all(to_child[1], &go, 1)) return -1;
        const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(60);
        pollfd p{to_parent[0], POLLIN, 0};
        while (poll(&p, 1, 0) == 0 && std::chrono::steady_clock::now() < until) ucxdt_worker_progress(x.w);
        return read_all(to_parent[0], &v, 1) ? v : -1;
    }

private:
    // A failure of start(): the child's status once it is gone (killed if it lingers).
    std::string ended(const std::string &what) {
        exit_status = wait_child(pid, std::chrono::seconds(10));
        pid = -1;
        return what;
    }

public:
    ~Target() {
        ucxdt_rkey_destroy(rkey);
        if (pid > 0) wait_child(pid, std::chrono::seconds(10));
        for (int fd : {to_child[0], to_child[1], to_parent[0], to_parent[1]})
            if (fd >= 0) close(fd);
    }
};

}  // namespace ucxdt::testing
