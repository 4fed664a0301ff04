// ucxdt_perftest: UCP tag bandwidth / latency of derived-datatype messages, modelled on
// ucx_perftest. `ucxdt_perftest [options]` is the server, `ucxdt_perftest [options] <host>` the
// client; the client's parameters travel to the server over a TCP socket, which also carries
// the worker addresses and, at the end, the server's verification result.
//
// Paths: generic = (buffer, count, ucxdt UCP generic datatype) straight to ucp_tag_send_nbx /
// ucp_tag_recv_nbx; packsend = ucxdt_pack into a contiguous buffer, contiguous send, ucxdt_unpack
// on the receiver (the pack and unpack are inside the timed region).
//
// Verification: on checked iterations the sender fills its whole buffer with pattern(offset,
// iteration) and the receiver poisons its own with poison(offset). It then compares ucxdt_pack
// of its receive buffer with the expected stream, which it builds with the reference type-map
// walker from the same pattern, and checks that every byte outside the receive type map kept
// its poison. MB = 2^20 bytes, as ucx_perftest.
//
// A peer that dies or stops answering ends the run with an error naming it (exit status 3):
// the UCP endpoint uses UCP's peer error handling, the out-of-band socket is watched for its
// close while transfers are in flight, and every wait for the peer is bounded by -T.
#include "app_load.hpp"
#include "support/registry.hpp"
#include "support/typemap_walk.hpp"
#include "support/worker_address.hpp"

#include <ucxdt/ucp_generic.h>
#include <ucxdt/ucxdt_rma.h>
#include <ucxdt/ucxdt_ucp.h>
#include <ucxdt/ucxdt.h>

#include <cuda_runtime_api.h>
#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

namespace L = ucxdt::layouts;
using Clock = std::chrono::steady_clock;

constexpr ucp_tag_t kDataTag = 0x1337, kAckTag = 0x1338;

[[noreturn]] void die(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    std::fprintf(stderr, "ucxdt_perftest: error: ");
    std::vfprintf(stderr, fmt, ap);
    std::fprintf(stderr, "\n");
    va_end(ap);
    std::exit(2);
}

double now_s() { return std::chrono::duration<double>(Clock::now().time_since_epoch()).count(); }

// ---- The peer: who it is, and how long we wait for it --------------------------------------

struct Peer {
    std::string name = "?";  // host:port of the other process
    int fd = -1;             // the out-of-band socket; the kernel closes it when the peer dies
    double timeout_s = 30;   // -T: the longest wait for the peer
    // Messages posted, completed or received: counted in the hot loops, timed by watch().
    uint64_t events = 0, seen_events = 0;
    double activity = now_s();  // when `events` last changed, as watch() saw it
    double last_check = 0;      // of the socket, while transfers are in flight
    // Called while this side waits out of band, once UCP is up: UCP progress. UCP completes a
    // send once the transport has its bytes, and TCP may still hold some of them, which only
    // progress sends: a sender that stopped driving UCP at a barrier left its peer waiting for
    // the end of the message (the first generic-path message over TCP, run 31).
    void (*drive)() = nullptr;
    // Where this side is, for the error: the iteration (warm-up ones are negative) and the
    // messages it has in flight.
    bool in_run = false;
    long iter = 0;
    size_t in_flight = 0;
} g_peer;

void abort_ucp();  // force-closes the endpoint of a failed peer (the Ucp below)

// The peer failed or did not answer in time: releases what UCP needs released, exits 3.
[[noreturn]] void die_peer(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    std::fprintf(stderr, "ucxdt_perftest: error: peer %s ", g_peer.name.c_str());
    std::vfprintf(stderr, fmt, ap);
    if (g_peer.in_run)
        std::fprintf(stderr, " (at iteration %ld, %zu message(s) in flight)", g_peer.iter, g_peer.in_flight);
    std::fprintf(stderr, "\n");
    va_end(ap);
    std::fflush(stderr);
    abort_ucp();
    std::exit(3);
}

// ---- Parameters: the client's, mirrored to the server as key=value lines -------------------

struct Params {
    std::string test = "tag_lat", path = "pipeline";
    std::string send_spec = "nas_mg_y", recv_spec;  // recv empty: as send
    std::string send_mem = "host", recv_mem;        // recv empty: as send
    long iters = 1000, warmup = 10;
    long window = 1;  // tag_bw: messages in flight
    int check_all = 0;
    double percentile = 50.0;
    double timeout_s = 30;  // -T, for both processes
    std::string err_mode = "peer";  // -e: UCP's error handling mode of the endpoints
    std::string thread_mode = "single";  // -M: the UCP worker's thread mode

    std::string encode() const {
        char b[64];
        std::snprintf(b, sizeof b, "%.17g", percentile);
        return "test=" + test + "\npath=" + path + "\nsend=" + send_spec + "\nrecv=" + recv_spec +
               "\nsmem=" + send_mem + "\nrmem=" + recv_mem + "\niters=" + std::to_string(iters) +
               "\nwarmup=" + std::to_string(warmup) + "\nwindow=" + std::to_string(window) +
               "\ncheck=" + std::to_string(check_all) +
               "\npct=" + b + "\ntimeout=" + std::to_string(timeout_s) + "\nerrmode=" + err_mode + "\nthreads=" + thread_mode + "\n";
    }
    void decode(const std::string &s) {
        std::map<std::string, std::string> kv;
        size_t pos = 0;
        while (pos < s.size()) {
            const size_t nl = s.find('\n', pos), eq = s.find('=', pos);
            if (nl == std::string::npos || eq > nl) die("bad parameter message from the client");
            kv[s.substr(pos, eq - pos)] = s.substr(eq + 1, nl - eq - 1);
            pos = nl + 1;
        }
        test = kv["test"], path = kv["path"], send_spec = kv["send"], recv_spec = kv["recv"];
        send_mem = kv["smem"], recv_mem = kv["rmem"];
        iters = std::atol(kv["iters"].c_str()), warmup = std::atol(kv["warmup"].c_str());
        window = std::atol(kv["window"].c_str());
        check_all = std::atoi(kv["check"].c_str()), percentile = std::atof(kv["pct"].c_str());
        if (kv.count("timeout")) timeout_s = std::atof(kv["timeout"].c_str());
        if (kv.count("errmode")) err_mode = kv["errmode"];
        if (kv.count("threads")) thread_mode = kv["threads"];
    }
};

struct Options {
    Params p;
    int port = 13337;
    std::string format = "table";
    std::string server;  // empty: this is the server
    int gpu = -1;        // -G: this process's CUDA device; -1: the runtime's default
    int app_pct = 0;     // -A: the application kernels' share of multiprocessors (client)
};

// -A: the application's kernels' rate alone and while the messages flow (kernels per second).
struct AppRates {
    int pct = 0;
    double alone = 0, loaded = 0;
    double slowdown() const { return loaded > 0 ? alone / loaded : 0; }
};

void usage() {
    std::printf(
        "  Usage: ucxdt_perftest [ server-hostname ] [ options ]\n\n"
        "     -t <test>      tag_lat (default), tag_bw, put_bw, get_bw (one-sided, ucxdt_rma.h:\n"
        "                    the client puts its send layout into, or gets it from, the\n"
        "                    server's receive layout; -x pipeline), pack, unpack (pack/unpack:\n"
        "                    one process)\n"
        "     -x <path>      pipeline (ucxdt's datatype-aware rendezvous, ucxdt_ucp.h; default),\n"
        "                    generic (UCP generic datatype), packsend (pack, send contiguous,\n"
        "                    unpack) or sgl (put_bw: UCP's own scatter-gather lists of the\n"
        "                    paired runs, a UCX with UCP_DATATYPE_SGL)\n"
        "     -D <send>[,<recv>]  layouts of sender and receiver (nas_mg_y); equal signatures\n"
        "                    are required. ',' inside a spec's parameters: use ';' to separate\n"
        "                    the two layouts instead. -L lists them; each name it lists,\n"
        "                    size in parentheses, is a spec (\"wrf_x_sa\" alone is its first\n"
        "                    size, 8x8)\n"
        "     -s <size>      the size parameter of the -D layouts that take one (n of\n"
        "                    submatrix/triangular/stair/transpose, count of vector/struct, an\n"
        "                    edge of nas_mg/milc/comb; -L tells which)\n"
        "     -m <send mem>[,<recv mem>]  host (default), cuda, cuda-managed\n"
        "     -n <iters>     timed iterations (1000)\n"
        "     -w <iters>     warm-up iterations (10)\n"
        "     -O <n>         tag_bw, put_bw, get_bw: messages in flight (1); ucx_perftest's tag_bw\n"
        "                    keeps 32 (its -O). Above 1, a message's latency is the time since\n"
        "                    the previous completion, the percentile is over those\n"
        "     -c             verify every timed iteration (default: the first of the run,\n"
        "                    which is the first warm-up one when -w > 0, and one more after\n"
        "                    the timed ones, untimed)\n"
        "     -R <rank>      percentile rank of the latency percentile (50.0)\n"
        "     -p <port>      TCP port for the out-of-band exchange (13337; server: 0 picks a\n"
        "                    free one, which it prints)\n"
        "     -e <mode>      UCP error handling of the endpoints: peer (default; a dead peer\n"
        "                    fails its requests and UCP reports it; sets UCX_MM_ERROR_HANDLING=y\n"
        "                    unless set, without which UCX 1.13 leaves shared memory out) or\n"
        "                    none (UCP's default, as ucx_perftest without -e: every transport,\n"
        "                    CMA too; a dead peer is noticed through the out-of-band socket)\n"
        "     -M <mode>      the UCP workers' thread mode: single (default) or multi (UCP's\n"
        "                    UCS_THREAD_MODE_MULTI, and so ucxdt's worker lock; one thread\n"
        "                    still drives it here)\n"
        "     -T <seconds>   the longest wait for the peer (30): for an answer on the\n"
        "                    out-of-band socket, for the connection, or for any message to\n"
        "                    complete; then the run fails. The client's value applies to the\n"
        "                    server once it has the parameters; the server waits for its\n"
        "                    client without limit. A peer that dies is noticed at once.\n"
        "     -G <gpu>       CUDA device of this process's buffers (default: the current one);\n"
        "                    per process, not sent to the server\n"
        "     -A <percent>   client: an application's kernels occupy this share of its GPU's\n"
        "                    multiprocessors while the messages flow (tools/app_load.hpp);\n"
        "                    their rate is measured alone for 0.5 s first, and the slowdown\n"
        "                    (rate alone / rate with the messages) is reported\n"
        "     -f <format>    table (default), csv, json\n"
        "     -L             list the layouts and exit\n"
        "     -C             print the ucxdt worker configuration in force (the UCXDT_*\n"
        "                    environment, as ucx_info -c prints UCX's) and exit\n"
        "     -h             show this help message\n\n"
        "  Exit status: 0 verified, 1 verification failed, 2 other errors, 3 the peer failed\n"
        "  (died, closed the connection, or did not answer within -T), which the error names.\n");
}

// -C: a ucxdt worker on a UCP worker of this process, for its configuration only.
void print_config() {
    ucp_params_t p{};
    p.field_mask = UCP_PARAM_FIELD_FEATURES;
    p.features = UCP_FEATURE_TAG | UCP_FEATURE_AM | UCP_FEATURE_RMA;
    ucp_context_h ctx = nullptr;
    ucp_worker_h worker = nullptr;
    if (ucs_status_t s = ucp_init(&p, nullptr, &ctx); s != UCS_OK) die("ucp_init: %s", ucs_status_string(s));
    ucp_worker_params_t wp{};
    if (ucs_status_t s = ucp_worker_create(ctx, &wp, &worker); s != UCS_OK)
        die("ucp_worker_create: %s", ucs_status_string(s));
    ucxdt_worker_params_t dp{};
    dp.field_mask = UCXDT_WORKER_PARAM_FIELD_UCP_WORKER | UCXDT_WORKER_PARAM_FIELD_UCP_CONTEXT;
    dp.ucp_worker = worker;
    dp.ucp_context = ctx;
    ucxdt_worker_h dw = nullptr;
    if (ucxdt_worker_create(&dp, &dw) != UCXDT_OK) die("ucxdt_worker_create: %s", ucxdt_last_error());
    ucxdt_worker_print_config(dw, stdout);
    ucxdt_worker_destroy(dw);
    ucp_worker_destroy(worker);
    ucp_cleanup(ctx);
}

// Splits "a,b" (or "a;b" when parameters contain commas) into the two sides. A comma inside
// parentheses never splits, so that every name -L lists, "nas_mg_x(514,258,258)" too, is a spec.
void split_pair(const std::string &s, std::string *a, std::string *b) {
    size_t sep = s.find(';');
    if (sep == std::string::npos && s.find(':') == std::string::npos) {
        int depth = 0;
        for (size_t i = 0; i < s.size() && sep == std::string::npos; ++i) {
            if (s[i] == '(') ++depth;
            else if (s[i] == ')') --depth;
            else if (s[i] == ',' && depth == 0) sep = i;
        }
    }
    if (sep == std::string::npos) {
        *a = s, b->clear();
    } else {
        *a = s.substr(0, sep), *b = s.substr(sep + 1);
    }
}

// ---- Memory --------------------------------------------------------------------------------

bool have_gpu() {
    int n = 0;
    return cudaGetDeviceCount(&n) == cudaSuccess && n > 0;
}

struct Mem {
    std::string kind;
    std::byte *p = nullptr;
    int64_t n = 0;
    Mem() = default;
    Mem(const std::string &k, int64_t bytes) : kind(k), n(bytes) {
        const size_t size = static_cast<size_t>(std::max<int64_t>(bytes, 1));
        if (kind == "host") {
            p = static_cast<std::byte *>(std::aligned_alloc(4096, (size + 4095) / 4096 * 4096));
            if (p == nullptr) die("cannot allocate %lld bytes", static_cast<long long>(bytes));
            return;
        }
        if (kind != "cuda" && kind != "cuda-managed")
            die("unknown memory type \"%s\" (host, cuda, cuda-managed)", kind.c_str());
        if (!have_gpu()) die("memory type %s needs a CUDA GPU, and none was found", kind.c_str());
        void *q = nullptr;
        const cudaError_t e =
            kind == "cuda" ? cudaMalloc(&q, size) : cudaMallocManaged(&q, size);
        if (e != cudaSuccess) die("%s allocation: %s", kind.c_str(), cudaGetErrorString(e));
        p = static_cast<std::byte *>(q);
    }
    ~Mem() {
        if (p == nullptr) return;
        if (kind == "host") std::free(p);
        else cudaFree(p);
    }
    Mem(const Mem &) = delete;
    Mem &operator=(const Mem &) = delete;
    Mem(Mem &&o) noexcept { *this = std::move(o); }
    Mem &operator=(Mem &&o) noexcept {
        std::swap(kind, o.kind), std::swap(p, o.p), std::swap(n, o.n);
        return *this;
    }
    void from_host(const std::byte *src) const {
        if (kind == "host") std::memcpy(p, src, static_cast<size_t>(n));
        else if (cudaMemcpy(p, src, static_cast<size_t>(n), cudaMemcpyDefault) != cudaSuccess)
            die("cudaMemcpy to %s failed", kind.c_str());
    }
    void to_host(std::byte *dst) const {
        if (kind == "host") std::memcpy(dst, p, static_cast<size_t>(n));
        else if (cudaMemcpy(dst, p, static_cast<size_t>(n), cudaMemcpyDefault) != cudaSuccess)
            die("cudaMemcpy from %s failed", kind.c_str());
    }
};

// Copy of `bytes` between two buffers of these kinds: the memcpy baseline.
void baseline_copy(void *dst, const void *src, int64_t bytes, bool host) {
    if (host) std::memcpy(dst, src, static_cast<size_t>(bytes));
    // A device-to-device cudaMemcpy may return before the copy is done.
    else cudaMemcpy(dst, src, static_cast<size_t>(bytes), cudaMemcpyDefault), cudaDeviceSynchronize();
}

uint8_t pattern(int64_t off, long iter) {
    uint64_t x = static_cast<uint64_t>(off) * 0x9e3779b97f4a7c15ull + static_cast<uint64_t>(iter);
    x ^= x >> 29;
    return static_cast<uint8_t>(x ^ (x >> 17));
}
uint8_t poison(int64_t off) {
    uint64_t x = static_cast<uint64_t>(off) * 0xbf58476d1ce4e5b9ull + 0x5a5a;
    return static_cast<uint8_t>(x ^ (x >> 31) ^ 0xa5);
}

// ---- A layout on one side: type, buffer, reference runs ------------------------------------

struct Side {
    L::Layout lay;
    ucxdt_type_t type = UCXDT_TYPE_NULL;
    int64_t packed = 0;
    Mem buf;
    std::vector<ucxdt::ref::Block> runs;  // reference walker, computed on first check
    std::vector<uint8_t> in_map;          // 1 where a byte of buf belongs to the type map

    void init(const std::string &spec, const std::string &mem) {
        std::string err;
        if (!L::resolve_layout(spec, &lay, &err)) die("-D %s: %s", spec.c_str(), err.c_str());
        if (L::build(*lay.type, &type, true) != UCXDT_OK)
            die("building %s: %s", lay.name.c_str(), ucxdt_last_error());
        int64_t size = 0;
        ucxdt_type_size(type, &size);
        packed = size * lay.count;
        buf = Mem(mem, lay.buffer_bytes);
    }
    std::byte *origin() const { return buf.p + lay.origin_bytes; }
    void need_runs() {
        if (!in_map.empty() || buf.n == 0) return;
        runs = ucxdt::ref::typemap_runs(*lay.type, lay.count);
        in_map.assign(static_cast<size_t>(buf.n), 0);
        for (const auto &[d, len] : runs)
            std::memset(in_map.data() + lay.origin_bytes + d, 1, static_cast<size_t>(len));
    }
    void fill_pattern(long iter) const {
        std::vector<std::byte> h(static_cast<size_t>(buf.n));
        for (int64_t i = 0; i < buf.n; ++i) h[i] = std::byte{pattern(i, iter)};
        buf.from_host(h.data());
    }
    void fill_poison() const {
        std::vector<std::byte> h(static_cast<size_t>(buf.n));
        for (int64_t i = 0; i < buf.n; ++i) h[i] = std::byte{poison(i)};
        buf.from_host(h.data());
    }
    // The packed stream of this (send) layout over pattern(., iter), by the reference walker.
    std::vector<std::byte> expected_stream(long iter) {
        need_runs();
        std::vector<std::byte> e(static_cast<size_t>(packed));
        int64_t k = 0;
        for (const auto &[d, len] : runs)
            for (int64_t j = 0; j < len; ++j)
                e[k++] = std::byte{pattern(lay.origin_bytes + d + j, iter)};
        return e;
    }
    // "" if ucxdt_pack of buf equals `expect` and every gap byte kept its poison.
    std::string check(const std::vector<std::byte> &expect) {
        need_runs();
        if (static_cast<int64_t>(expect.size()) != packed) return "packed sizes differ";
        std::vector<std::byte> h(static_cast<size_t>(buf.n)), got(static_cast<size_t>(packed));
        buf.to_host(h.data());
        int64_t pos = 0;
        if (ucxdt_pack(h.data() + lay.origin_bytes, lay.count, type, got.data(), packed, &pos) !=
            UCXDT_OK)
            return std::string("ucxdt_pack of the receive buffer: ") + ucxdt_last_error();
        for (int64_t i = 0; i < packed; ++i)
            if (got[i] != expect[i])
                return "packed stream byte " + std::to_string(i) + " is " +
                       std::to_string(static_cast<int>(got[i])) + ", expected " +
                       std::to_string(static_cast<int>(expect[i]));
        for (int64_t i = 0; i < buf.n; ++i)
            if (!in_map[i] && h[i] != std::byte{poison(i)})
                return "gap byte " + std::to_string(i) + " of the receive buffer was overwritten";
        return "";
    }
};

// Iterations run from -warmup to iters; 0 to iters - 1 are timed. Verified: the first of the run
// (of the warm-up, when there is one), iteration `iters` (one more message after the timed run),
// and with -c every timed one. By default no check falls inside the timed run, as none falls
// inside ucx_perftest's: a check leaves both GPUs idle for milliseconds, and the first GPU
// operation across NVLink after 50 ms idle took 230-240 us against 33-54 us on two H200s
// (performance-log.md, run 16). Check time inside the timed run (-c, or -w 0) is excluded from it.
bool checked(const Params &p, long it) { return it == -p.warmup || it == p.iters || (p.check_all && it >= 0); }
bool timed(const Params &p, long it) { return it >= 0 && it < p.iters; }

// ---- Out-of-band socket --------------------------------------------------------------------
// Every wait is a poll bounded by -T; `what` says what was awaited, for the error.

void sock_wait(int fd, short events, const char *what) {
    const double deadline = now_s() + g_peer.timeout_s;
    for (;;) {
        const double left = deadline - now_s();
        if (left <= 0) die_peer("did not answer within %g s (-T) %s", g_peer.timeout_s, what);
        pollfd p{fd, events, 0};
        // Driving UCP, it polls without blocking.
        const int r = ::poll(&p, 1, g_peer.drive ? 0 : static_cast<int>(std::min(std::ceil(left * 1000), 60000.0)));
        if (r > 0) return;  // ready, or closed: the send or recv tells which
        if (r < 0 && errno != EINTR) die("out-of-band socket: poll: %s", std::strerror(errno));
        if (g_peer.drive) g_peer.drive();
    }
}
void sock_write(int fd, const void *data, size_t n, const char *what) {
    const char *c = static_cast<const char *>(data);
    while (n > 0) {
        sock_wait(fd, POLLOUT, what);
        const ssize_t w = ::send(fd, c, n, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (w < 0 && (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK)) continue;
        if (w < 0 && (errno == EPIPE || errno == ECONNRESET))
            die_peer("closed the connection (%s) %s", std::strerror(errno), what);
        if (w <= 0) die("out-of-band socket: send failed (%s)", w < 0 ? std::strerror(errno) : "nothing sent");
        c += w, n -= static_cast<size_t>(w);
    }
}
void sock_read(int fd, void *data, size_t n, const char *what) {
    char *c = static_cast<char *>(data);
    while (n > 0) {
        sock_wait(fd, POLLIN, what);
        const ssize_t r = ::recv(fd, c, n, MSG_DONTWAIT);
        if (r < 0 && (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK)) continue;
        if (r == 0) die_peer("closed the connection %s", what);
        if (r < 0 && errno == ECONNRESET) die_peer("closed the connection (%s) %s", std::strerror(errno), what);
        if (r < 0) die("out-of-band socket: %s", std::strerror(errno));
        c += r, n -= static_cast<size_t>(r);
    }
    ++g_peer.events;
}
void send_blob(int fd, const std::string &s, const char *what) {
    const uint64_t n = s.size();
    sock_write(fd, &n, sizeof n, what);
    sock_write(fd, s.data(), s.size(), what);
}
std::string recv_blob(int fd, const char *what) {
    uint64_t n = 0;
    sock_read(fd, &n, sizeof n, what);
    if (n > (1u << 24)) die("out-of-band socket: oversized message");
    std::string s(n, '\0');
    sock_read(fd, s.data(), n, what);
    return s;
}
// While waiting for transfers: dies when nothing happened for -T seconds, or when the socket
// closed. It is idle until the next barrier, and its end (the peer's process is gone) is the
// surest sign of a dead peer on any transport; checked at most every 0.1 s.
void watch() {
    const double t = now_s();
    if (g_peer.events != g_peer.seen_events) g_peer.seen_events = g_peer.events, g_peer.activity = t;
    else if (t - g_peer.activity > g_peer.timeout_s)
        die_peer("did not answer within %g s (-T): no message completed", g_peer.timeout_s);
    if (g_peer.fd < 0 || t - g_peer.last_check < 0.1) return;
    g_peer.last_check = t;
    pollfd p{g_peer.fd, POLLRDHUP, 0};
    if (::poll(&p, 1, 0) == 1 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR)))
        die_peer("closed the connection while transfers were in flight");
}

// The barrier's small writes must leave at once: with Nagle's algorithm one side of a barrier
// waited for the peer's delayed ACK, 40 ms inside the next timed iteration of the other side.
int no_delay(int fd) {
    const int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    return fd;
}

// Waits for one client, without a time limit (a server waits for its client).
int server_accept(int port) {
    const int lfd = ::socket(AF_INET, SOCK_STREAM, 0);
    const int one = 1;
    setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    sockaddr_in a{};
    a.sin_family = AF_INET, a.sin_port = htons(static_cast<uint16_t>(port));
    a.sin_addr.s_addr = INADDR_ANY;
    socklen_t alen = sizeof a;
    if (::bind(lfd, reinterpret_cast<sockaddr *>(&a), sizeof a) != 0 || ::listen(lfd, 1) != 0 ||
        ::getsockname(lfd, reinterpret_cast<sockaddr *>(&a), &alen) != 0)
        die("cannot listen on port %d: %s", port, std::strerror(errno));
    std::fprintf(stderr, "Waiting for connection on port %d...\n", ntohs(a.sin_port));
    int fd;
    sockaddr_in c{};
    socklen_t clen = sizeof c;
    do {
        fd = ::accept(lfd, reinterpret_cast<sockaddr *>(&c), &clen);
    } while (fd < 0 && errno == EINTR);
    ::close(lfd);
    if (fd < 0) die("accept: %s", std::strerror(errno));
    char host[INET_ADDRSTRLEN] = "?";
    inet_ntop(AF_INET, &c.sin_addr, host, sizeof host);
    g_peer.name = std::string(host) + ":" + std::to_string(ntohs(c.sin_port));
    return no_delay(fd);
}

// Connects within -T, retrying while the server may still be starting.
int client_connect(const std::string &host, int port) {
    g_peer.name = host + ":" + std::to_string(port);
    addrinfo hints{}, *res = nullptr;
    hints.ai_family = AF_INET, hints.ai_socktype = SOCK_STREAM;
    if (getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &res) != 0)
        die("cannot resolve %s", host.c_str());
    const double deadline = now_s() + g_peer.timeout_s;
    int fd = -1, err = 0;
    while (fd < 0) {
        fd = ::socket(AF_INET, SOCK_STREAM, 0);
        ::fcntl(fd, F_SETFL, O_NONBLOCK);
        err = ::connect(fd, res->ai_addr, res->ai_addrlen) == 0 ? 0 : errno;
        if (err == EINPROGRESS) {
            pollfd p{fd, POLLOUT, 0};
            const double left = std::max(0.0, deadline - now_s());
            socklen_t len = sizeof err;
            if (::poll(&p, 1, static_cast<int>(std::min(std::ceil(left * 1000), 60000.0))) == 1)
                ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len);
            else
                err = ETIMEDOUT;
        }
        if (err != 0) {
            ::close(fd), fd = -1;
            if (now_s() >= deadline)
                die_peer("did not answer within %g s (-T): cannot connect (%s)", g_peer.timeout_s,
                         std::strerror(err));
            usleep(100000);
        }
    }
    freeaddrinfo(res);
    return no_delay(fd);
}

// ---- UCP -----------------------------------------------------------------------------------

// A message in flight: its ucxdt or UCP request (nullptr: complete).
struct Pending {
    void *req = nullptr;
    bool ucxdt = false;
    const char *what = "";
    Side *unpack = nullptr;  // packsend receive: the layout to unpack the staged bytes into
    long iter = -1;          // tag_bw: its iteration (timed when >= 0)
    double posted = 0;
};

// UCP's statuses of a failed connection (with the peer error handling mode).
bool connection_error(ucs_status_t s) {
    return s == UCS_ERR_CONNECTION_RESET || s == UCS_ERR_ENDPOINT_TIMEOUT || s == UCS_ERR_UNREACHABLE ||
           s == UCS_ERR_REJECTED;
}

struct Ucp {
    ucp_context_h ctx = nullptr;
    ucp_worker_h worker = nullptr;
    ucp_ep_h ep = nullptr;
    ucs_status_t ep_status = UCS_OK;  // what UCP's error handler reported for ep
    ucp_datatype_t send_dt = 0, recv_dt = 0;
    bool have_dt = false;
    ucxdt_worker_h dw = nullptr;  // -x pipeline
    ucxdt_ep_h dep = nullptr;

    static void on_ep_error(void *arg, ucp_ep_h, ucs_status_t status) {
        auto *u = static_cast<Ucp *>(arg);
        if (u->ep_status == UCS_OK) u->ep_status = status;
    }

    // With -e peer, the endpoint in UCP's peer error handling mode, so that a dead peer fails
    // its requests and is reported; with -x pipeline the ucxdt worker is told too (and made
    // first for that).
    void init(int fd, bool pipeline, bool peer_mode, bool multi) {
        ucp_config_t *cfg = nullptr;
        if (ucs_status_t s = ucp_config_read(nullptr, nullptr, &cfg); s != UCS_OK)
            die("ucp_config_read: %s", ucs_status_string(s));
        // UCX 1.13's posix and sysv serve the peer mode only when told to (off by default);
        // without them two processes of one node talk over TCP, several times slower. A
        // setting of the user's stays; a UCX without this setting ignores it.
        if (peer_mode && !std::getenv("UCX_MM_ERROR_HANDLING") && !std::getenv("UCX_POSIX_ERROR_HANDLING") &&
            !std::getenv("UCX_SYSV_ERROR_HANDLING"))
            ucp_config_modify(cfg, "MM_ERROR_HANDLING", "y");
        ucp_params_t p{};
        p.field_mask = UCP_PARAM_FIELD_FEATURES;
        p.features = UCP_FEATURE_TAG | UCP_FEATURE_AM | UCP_FEATURE_RMA;
        const ucs_status_t is = ucp_init(&p, cfg, &ctx);
        ucp_config_release(cfg);
        if (is != UCS_OK) die("ucp_init: %s", ucs_status_string(is));
        ucp_worker_params_t wp{};
        wp.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
        wp.thread_mode = multi ? UCS_THREAD_MODE_MULTI : UCS_THREAD_MODE_SINGLE;
        if (ucs_status_t s = ucp_worker_create(ctx, &wp, &worker); s != UCS_OK)
            die("ucp_worker_create: %s", ucs_status_string(s));
        if (pipeline) {
            ucxdt_worker_params_t dp{};
            dp.field_mask = UCXDT_WORKER_PARAM_FIELD_UCP_WORKER | UCXDT_WORKER_PARAM_FIELD_UCP_CONTEXT;
            dp.ucp_worker = worker;
            dp.ucp_context = ctx;
            if (ucxdt_worker_create(&dp, &dw) != UCXDT_OK) die("ucxdt_worker_create: %s", ucxdt_last_error());
        }
        std::string addr;
        if (ucs_status_t s = ucxdt::testing::worker_address(worker, &addr); s != UCS_OK)
            die("ucp_worker_query: %s", ucs_status_string(s));
        send_blob(fd, addr, "while sending the worker address");
        const std::string peer = recv_blob(fd, "while waiting for its worker address");
        ucp_ep_params_t ep{};
        ep.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS;
        ep.address = reinterpret_cast<const ucp_address_t *>(peer.data());
        if (peer_mode && dw) {
            if (ucxdt_ep_params_set_err_handler(&ep, dw, on_ep_error, this) != UCXDT_OK)
                die("ucxdt_ep_params_set_err_handler: %s", ucxdt_last_error());
        } else if (peer_mode) {
            ep.field_mask |= UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE | UCP_EP_PARAM_FIELD_ERR_HANDLER;
            ep.err_mode = UCP_ERR_HANDLING_MODE_PEER;
            ep.err_handler.cb = on_ep_error;
            ep.err_handler.arg = this;
        }
        if (ucs_status_t s = ucp_ep_create(worker, &ep, &this->ep); s != UCS_OK)
            die("ucp_ep_create: %s", ucs_status_string(s));
        if (dw) {
            ucxdt_ep_params_t epp{};
            epp.field_mask = UCXDT_EP_PARAM_FIELD_UCP_EP;
            epp.ucp_ep = this->ep;
            if (ucxdt_ep_create(dw, &epp, &dep) != UCXDT_OK) die("ucxdt_ep_create: %s", ucxdt_last_error());
        }
    }
    void make_dts(ucxdt_type_t s, ucxdt_type_t r) {
        if (ucxdt_ucp_dt_create(s, &send_dt) != UCS_OK || ucxdt_ucp_dt_create(r, &recv_dt) != UCS_OK)
            die("ucxdt_ucp_dt_create: %s", ucxdt_last_error());
        have_dt = true;
    }
    // Whether message m completed (its request is then freed); dies when it failed.
    bool done(Pending &m) {
        if (m.req == nullptr) return true;
        if (m.ucxdt) {
            if (UCXDT_PTR_IS_ERR(m.req)) fail(m, UCXDT_PTR_STATUS(m.req));
            const int s = ucxdt_request_check_status(m.req);
            if (s == UCXDT_INPROGRESS) return false;
            ucxdt_request_free(m.req);
            if (s != UCXDT_OK) fail(m, static_cast<ucxdt_status_t>(s));
        } else {
            if (UCS_PTR_IS_ERR(m.req)) fail(m, UCS_PTR_STATUS(m.req));
            const ucs_status_t s = ucp_request_check_status(m.req);
            if (s == UCS_INPROGRESS) return false;
            ucp_request_free(m.req);
            if (s != UCS_OK) fail(m, s);
        }
        m.req = nullptr;
        ++g_peer.events;
        return true;
    }
    [[noreturn]] void fail(const Pending &m, ucxdt_status_t s) {
        if (s == UCXDT_ERR_PEER_FAILURE || ep_status != UCS_OK)
            die_peer("failed: %s: %s", m.what, ucxdt_status_string(s));
        die("%s: %s", m.what, ucxdt_status_string(s));
    }
    [[noreturn]] void fail(const Pending &m, ucs_status_t s) {
        if (connection_error(s) || ep_status != UCS_OK) die_peer("failed: %s: %s", m.what, ucs_status_string(s));
        die("%s: %s", m.what, ucs_status_string(s));
    }
    void wait(Pending m) {
        while (!done(m)) progress();
    }
    // Between checks of a request: dies when UCP reported the endpoint failed, and every 64
    // calls watches the peer (a clock read costs about as much as a call that finds no work).
    // The pipeline's worker progresses UCP too.
    void progress() {
        if (ep_status != UCS_OK) die_peer("failed: UCP reports %s on the endpoint", ucs_status_string(ep_status));
        if ((++spins & 63) == 0) watch();
        drive();
    }
    // UCP's progress alone: what the out-of-band waits call (g_peer.drive), bounded by -T there.
    void drive() {
        if (dw) ucxdt_worker_progress(dw);
        else ucp_worker_progress(worker);
    }
    unsigned spins = 0;
    Pending send(const void *buf, size_t count, ucp_datatype_t dt, ucp_tag_t tag) {
        ucp_request_param_t rp{};
        rp.op_attr_mask = UCP_OP_ATTR_FIELD_DATATYPE;
        rp.datatype = dt;
        ++g_peer.events;
        return Pending{ucp_tag_send_nbx(ep, buf, count, tag, &rp), false, "ucp_tag_send_nbx"};
    }
    Pending recv(void *buf, size_t count, ucp_datatype_t dt, ucp_tag_t tag) {
        ucp_request_param_t rp{};
        rp.op_attr_mask = UCP_OP_ATTR_FIELD_DATATYPE;
        rp.datatype = dt;
        ++g_peer.events;
        return Pending{ucp_tag_recv_nbx(worker, buf, count, tag, ~ucp_tag_t(0), &rp), false, "ucp_tag_recv_nbx"};
    }
    // Force: the peer closes its own at the same time, or is gone. Waits at most -T.
    void close_ep() {
        if (ep == nullptr) return;
        ucp_request_param_t rp{};
        rp.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
        rp.flags = UCP_EP_CLOSE_FLAG_FORCE;
        void *r = ucp_ep_close_nbx(ep, &rp);
        ep = nullptr;
        if (r == nullptr || UCS_PTR_IS_ERR(r)) return;
        const double deadline = now_s() + g_peer.timeout_s;
        while (ucp_request_check_status(r) == UCS_INPROGRESS && now_s() < deadline) ucp_worker_progress(worker);
        if (ucp_request_check_status(r) != UCS_INPROGRESS) ucp_request_free(r);
    }
    // In ucxdt_ucp.h's order: the ucxdt endpoint, the UCP endpoint, the ucxdt worker.
    void close() {
        if (dep) ucxdt_ep_destroy(dep), dep = nullptr;
        close_ep();
        if (have_dt) ucxdt_ucp_dt_destroy(send_dt), ucxdt_ucp_dt_destroy(recv_dt), have_dt = false;
        if (dw) ucxdt_worker_destroy(dw), dw = nullptr;
        if (worker != nullptr) ucp_worker_destroy(worker), worker = nullptr;
        if (ctx != nullptr) ucp_cleanup(ctx), ctx = nullptr;
    }
    // The peer failed: its endpoint is released as UCP asks; the process exits next, with
    // requests still posted, so the workers are left to the exit.
    void abandon() {
        if (dep) ucxdt_ep_destroy(dep), dep = nullptr;
        // UCX 1.13 faults when it force-closes an endpoint whose dead peer's emulated GETs left
        // replies pending (ucp_request_memory_dereg from ucp_ep_close_nbx, seen with a
        // get_bw target): a one-sided target leaves the endpoint to the exit instead.
        if (!serving_rma) close_ep();
    }
    bool serving_rma = false;  // a put_bw/get_bw target
};

Ucp *g_ucp = nullptr;
void abort_ucp() {
    Ucp *u = g_ucp;
    g_ucp = nullptr;  // once, even if closing fails again
    if (u) u->abandon();
}

// One message of side `s` in either direction, on the chosen path, posted. `stage` is the
// contiguous buffer of the packsend path (messages in flight share it: they carry equal bytes).
Pending post_send(Ucp &u, const Params &p, Side &s, ucp_datatype_t dt, const Mem &stage) {
    ++g_peer.events;
    if (p.path == "pipeline")
        return Pending{ucxdt_tag_send_nbx(u.dep, s.origin(), s.lay.count, s.type, kDataTag, nullptr), true,
                       "ucxdt_tag_send_nbx"};
    if (p.path == "generic") return u.send(s.origin(), static_cast<size_t>(s.lay.count), dt, kDataTag);
    int64_t pos = 0;
    if (ucxdt_pack(s.origin(), s.lay.count, s.type, stage.p, stage.n, &pos) != UCXDT_OK)
        die("ucxdt_pack: %s", ucxdt_last_error());
    return u.send(stage.p, static_cast<size_t>(s.packed), ucp_dt_make_contig(1), kDataTag);
}
Pending post_recv(Ucp &u, const Params &p, Side &s, ucp_datatype_t dt, const Mem &stage) {
    ++g_peer.events;
    if (p.path == "pipeline")
        return Pending{ucxdt_tag_recv_nbx(u.dw, s.origin(), s.lay.count, s.type, kDataTag, ~ucp_tag_t(0), nullptr),
                       true, "ucxdt_tag_recv_nbx"};
    if (p.path == "generic") return u.recv(s.origin(), static_cast<size_t>(s.lay.count), dt, kDataTag);
    Pending m = u.recv(stage.p, static_cast<size_t>(s.packed), ucp_dt_make_contig(1), kDataTag);
    m.unpack = &s;
    return m;
}
// Whether m completed, then (packsend) unpacked.
bool reap(Ucp &u, Pending &m, const Mem &stage) {
    if (!u.done(m)) return false;
    int64_t pos = 0;
    if (m.unpack && ucxdt_unpack(stage.p, stage.n, &pos, m.unpack->origin(), m.unpack->lay.count,
                                 m.unpack->type) != UCXDT_OK)
        die("ucxdt_unpack: %s", ucxdt_last_error());
    m.unpack = nullptr;
    return true;
}
void finish(Ucp &u, Pending m, const Mem &stage) {
    g_peer.in_flight = 1;
    while (!reap(u, m, stage)) u.progress();
    g_peer.in_flight = 0;
}
void send_side(Ucp &u, const Params &p, Side &s, ucp_datatype_t dt, const Mem &stage) {
    finish(u, post_send(u, p, s, dt, stage), stage);
}
void recv_side(Ucp &u, const Params &p, Side &s, ucp_datatype_t dt, const Mem &stage) {
    finish(u, post_recv(u, p, s, dt, stage), stage);
}

// ---- Results -------------------------------------------------------------------------------

struct Result {
    std::vector<double> lat_us;    // one-way time of each timed iteration
    double overall_us = 0;         // one-way wall time per iteration, checks excluded
    double baseline_us = -1;       // pack/unpack: memcpy of the packed bytes
    long checks = 0;
    std::string failure;           // "" when every check passed
};

struct Progress {
    double last = now_s();
    void tick(long it, long total) {
        if (now_s() - last < 2.0) return;
        last = now_s();
        std::fprintf(stderr, "[ucxdt_perftest] %ld/%ld iterations\n", it, total);
    }
};

void record_failure(const Params &p, Result &r, long it, const std::string &e) {
    if (!e.empty() && r.failure.empty())
        r.failure = "iteration " + std::to_string(it) + (it == p.iters ? " (untimed, after the timed run)" : "") + ": " + e;
}

// Both processes at the same point, through the out-of-band socket. Around a checked
// iteration, so that neither side's timed transfer waits for the other's checking.
void barrier(int fd) {
    send_blob(fd, "b", "at a barrier");
    recv_blob(fd, "at a barrier");
}

// The operations in flight of a bandwidth test, as in ucx_perftest: a timed one takes from its
// post, or from the previous completion when it was posted before that (a full window): in
// steady state, the interval between completions. `complete(m)` waits for m to finish.
struct Window {
    std::deque<Pending> flight;
    double last_done = 0;
    template <typename Complete>
    void reap_oldest(Result &r, Complete &&complete) {
        Pending &m = flight.front();
        g_peer.in_flight = flight.size();
        complete(m);
        const double t = now_s();
        if (m.iter >= 0) r.lat_us.push_back((t - std::max(m.posted, last_done)) * 1e6);
        last_done = t;
        flight.pop_front();
    }
    template <typename Complete>
    void drain(Result &r, Complete &&complete) {
        while (!flight.empty()) reap_oldest(r, complete);
    }
    // Room for one more of at most `window` in flight, then m posted at `posted` as iteration i.
    template <typename Complete>
    void add(long window, Result &r, Complete &&complete, const std::function<Pending()> &post, long iter) {
        while (static_cast<long>(flight.size()) >= window) reap_oldest(r, complete);
        const double posted = now_s();
        flight.push_back(post());
        flight.back().iter = iter, flight.back().posted = posted;
        g_peer.in_flight = flight.size();
    }
};

// Client of tag_bw: the sender. Server: the receiver. Up to p.window messages are in flight on
// each side, as in ucx_perftest (all from, or into, the one buffer); a checked iteration first
// lets the window drain, then runs alone between barriers, untimed apart from its transfer.
void run_bw(Ucp &u, int fd, const Params &p, Side &snd, Side &rcv, bool client, Result &r) {
    Mem stage(client ? snd.buf.kind : rcv.buf.kind, snd.packed);
    Progress prog;
    double excluded = 0, t_start = 0, t_end = 0;
    Window win;
    auto complete = [&](Pending &m) {
        while (!reap(u, m, stage)) u.progress();
    };
    auto drain = [&] { win.drain(r, complete); };
    for (long i = -p.warmup; i <= p.iters; ++i) {
        g_peer.in_run = true, g_peer.iter = i;
        if (i == 0) drain(), t_start = win.last_done = now_s();
        if (i == p.iters) {
            // The timed run ends when the receiver has every message.
            drain();
            uint64_t ack = 0;
            if (client) u.wait(u.recv(&ack, sizeof ack, ucp_dt_make_contig(1), kAckTag));
            else u.wait(u.send(&ack, sizeof ack, ucp_dt_make_contig(1), kAckTag));
            t_end = now_s();
        }
        const bool chk = checked(p, i);
        if (chk) {
            drain();
            const double t0 = now_s();
            if (client) snd.fill_pattern(i);
            else rcv.fill_poison();
            barrier(fd);
            if (timed(p, i)) excluded += now_s() - t0;
        }
        win.add(p.window, r, complete, [&] {
            return client ? post_send(u, p, snd, u.send_dt, stage) : post_recv(u, p, rcv, u.recv_dt, stage);
        }, timed(p, i) ? i : -1);
        if (chk) {
            drain();
            const double t1 = now_s();
            if (!client) {
                record_failure(p, r, i, rcv.check(snd.expected_stream(i)));
                ++r.checks;
            }
            barrier(fd);
            if (timed(p, i)) excluded += now_s() - t1;
        }
        if (client && timed(p, i)) prog.tick(i + 1, p.iters);
    }
    drain();
    r.overall_us = (t_end - t_start - excluded) * 1e6 / static_cast<double>(p.iters);
}

// The peer's next out-of-band message, driving UCP meanwhile: a one-sided target serves the
// origin's operations (puts and UCP's emulated GETs over TCP) only from its own progress.
std::string recv_blob_serving(Ucp &u, int fd, const char *what) {
    pollfd pf{fd, POLLIN, 0};
    while (::poll(&pf, 1, 0) == 0) {
        // A target completes nothing of its own: waiting is its work. A dead origin still shows
        // as the socket's hang-up (watch()), and the origin watches its own operations.
        ++g_peer.events;
        u.progress();
    }
    return recv_blob(fd, what);
}

// -x sgl (a UCX with UCP_DATATYPE_SGL: master after 1.22): the same puts through UCP's own
// scatter-gather lists, one ucp_put_nbx per operation whose local and remote lists pair the
// origin's runs with the target's one to one (split wherever a run of either side ends), from a
// registered origin: over cuda_ipc one cuMemcpyBatchAsync per list. (Gets: see main's check.)
// It is what SGL can express of a layout pair, at UCP's best, for comparison with ucxdt_rma.h.
#ifdef ucp_dt_make_sgl
constexpr bool kHaveSgl = true;
struct SglOp {
    std::vector<void *> local;
    std::vector<uint64_t> remote;
    std::vector<size_t> lengths;
    std::vector<ucp_mem_h> memhs;
    std::vector<ucp_rkey_h> rkeys;
    ucp_dt_local_sgl_t l{};
    ucp_dt_remote_sgl_t r{};

    SglOp(Side &origin, ucp_mem_h memh, Side &target, uint64_t remote_origin, ucp_rkey_h rkey) {
        origin.need_runs(), target.need_runs();
        const auto &a = origin.runs, &b = target.runs;
        size_t i = 0, j = 0;
        int64_t ai = 0, bj = 0;  // bytes of a[i] and b[j] already paired
        while (i < a.size() && j < b.size()) {
            const int64_t n = std::min(a[i].second - ai, b[j].second - bj);
            local.push_back(origin.origin() + a[i].first + ai);
            remote.push_back(remote_origin + static_cast<uint64_t>(b[j].first + bj));
            lengths.push_back(static_cast<size_t>(n));
            ai += n, bj += n;
            if (ai == a[i].second) ++i, ai = 0;
            if (bj == b[j].second) ++j, bj = 0;
        }
        memhs.assign(local.size(), memh);
        rkeys.assign(local.size(), rkey);
        l.field_mask = UCP_DT_LOCAL_SGL_FIELD_BUFFERS | UCP_DT_LOCAL_SGL_FIELD_LENGTHS | UCP_DT_LOCAL_SGL_FIELD_MEMHS;
        l.buffers = local.data(), l.lengths = lengths.data(), l.memhs = memhs.data();
        r.field_mask = UCP_DT_REMOTE_SGL_FIELD_REMOTE_ADDRS | UCP_DT_REMOTE_SGL_FIELD_LENGTHS |
                       UCP_DT_REMOTE_SGL_FIELD_RKEYS;
        r.remote_addrs = remote.data(), r.lengths = lengths.data(), r.rkeys = rkeys.data();
    }
    Pending post(Ucp &u) const {
        ucp_request_param_t rp{};
        rp.op_attr_mask = UCP_OP_ATTR_FIELD_DATATYPE | UCP_OP_ATTR_FIELD_REMOTE_DATATYPE | UCP_OP_ATTR_FIELD_REMOTE |
                          UCP_OP_ATTR_FIELD_REMOTE_COUNT;
        rp.datatype = rp.remote_datatype = ucp_dt_make_sgl();
        rp.remote = &r;
        rp.remote_count = local.size();
        return Pending{ucp_put_nbx(u.ep, &l, local.size(), UCP_REMOTE_ADDR_INVALID, UCP_RKEY_INVALID, &rp), false,
                       "ucp_put_nbx (SGL)"};
    }
};
#else
constexpr bool kHaveSgl = false;
#endif

// A buffer registered with UCP (-x sgl), and its packed rkey.
ucp_mem_h ucp_register(Ucp &u, const Mem &m, std::string *rkey) {
    ucp_mem_map_params_t mp{};
    mp.field_mask = UCP_MEM_MAP_PARAM_FIELD_ADDRESS | UCP_MEM_MAP_PARAM_FIELD_LENGTH;
    mp.address = m.p;
    mp.length = static_cast<size_t>(std::max<int64_t>(m.n, 1));
    ucp_mem_h memh = nullptr;
    if (ucs_status_t s = ucp_mem_map(u.ctx, &mp, &memh); s != UCS_OK) die("ucp_mem_map: %s", ucs_status_string(s));
    if (rkey) {
        void *buf = nullptr;
        size_t len = 0;
        if (ucs_status_t s = ucp_rkey_pack(u.ctx, memh, &buf, &len); s != UCS_OK)
            die("ucp_rkey_pack: %s", ucs_status_string(s));
        rkey->assign(static_cast<const char *>(buf), len);
        ucp_rkey_buffer_release(buf);
    }
    return memh;
}

// put_bw / get_bw (ucxdt_rma.h with -x pipeline; UCP's SGL with -x sgl): the client is the
// origin with the send layout; the server is the target, which registers the buffer of the
// receive layout, sends its rkey and serves. Up to p.window operations are in flight, all on the
// one target layout; the timed run ends with a flush of the endpoint (the puts are then at the
// target). A checked iteration drains and flushes, then runs alone between barriers: the target
// checks a put, the origin a get.
void run_rma(Ucp &u, int fd, const Params &p, Side &snd, Side &rcv, bool client, Result &r) {
    const bool put = p.test == "put_bw", sgl = p.path == "sgl";
    if (!client) {
        u.serving_rma = true;
        ucxdt_mem_h mem = nullptr;
        ucp_mem_h ucp_mem = nullptr;
        std::string rkey;
        if (sgl) {
            ucp_mem = ucp_register(u, rcv.buf, &rkey);
        } else {
            ucxdt_mem_map_params_t mp{};
            mp.field_mask = UCXDT_MEM_MAP_PARAM_FIELD_ADDRESS | UCXDT_MEM_MAP_PARAM_FIELD_LENGTH;
            mp.address = rcv.buf.p;
            mp.length = static_cast<size_t>(rcv.buf.n);
            void *buf = nullptr;
            size_t len = 0;
            if (ucxdt_mem_map(u.dw, &mp, &mem) != UCXDT_OK || ucxdt_rkey_pack(mem, &buf, &len) != UCXDT_OK)
                die("registering the target: %s", ucxdt_last_error());
            rkey.assign(static_cast<const char *>(buf), len);
            ucxdt_rkey_buffer_release(buf);
        }
        const auto at = reinterpret_cast<uint64_t>(rcv.origin());
        send_blob(fd, rkey + std::string(reinterpret_cast<const char *>(&at), sizeof at), "while sending the rkey");
        for (long i = -p.warmup; i <= p.iters; ++i) {
            g_peer.in_run = true, g_peer.iter = i;
            if (!checked(p, i)) continue;
            if (put) rcv.fill_poison();
            else rcv.fill_pattern(i);
            send_blob(fd, "b", "at a barrier"), recv_blob_serving(u, fd, "at a barrier");  // ready
            send_blob(fd, "b", "at a barrier"), recv_blob_serving(u, fd, "at a barrier");  // the origin is done
            if (put) {
                record_failure(p, r, i, rcv.check(snd.expected_stream(i)));
                ++r.checks;
            }
            send_blob(fd, "b", "at a barrier"), recv_blob_serving(u, fd, "at a barrier");
        }
        if (mem) ucxdt_mem_unmap(mem);
        if (ucp_mem) ucp_mem_unmap(u.ctx, ucp_mem);
        return;
    }
    const std::string blob = recv_blob(fd, "while waiting for the target's rkey");
    uint64_t remote = 0;
    if (blob.size() <= sizeof remote) die("the target's rkey message is too short");
    std::memcpy(&remote, blob.data() + blob.size() - sizeof remote, sizeof remote);
    ucxdt_rkey_h rkey = nullptr;
    ucp_rkey_h ucp_rkey = nullptr;
    ucp_mem_h origin_mem = nullptr;
    std::function<Pending()> post;
    std::function<Pending()> flush;
#ifdef ucp_dt_make_sgl
    std::unique_ptr<SglOp> op;
#endif
    if (sgl) {
#ifdef ucp_dt_make_sgl
        if (ucs_status_t s = ucp_ep_rkey_unpack(u.ep, blob.data(), &ucp_rkey); s != UCS_OK)
            die("ucp_ep_rkey_unpack: %s", ucs_status_string(s));
        origin_mem = ucp_register(u, snd.buf, nullptr);
        op = std::make_unique<SglOp>(snd, origin_mem, rcv, remote, ucp_rkey);
        post = [&] { return op->post(u); };
        flush = [&] {
            ucp_request_param_t fp{};
            return Pending{ucp_ep_flush_nbx(u.ep, &fp), false, "ucp_ep_flush_nbx"};
        };
#endif
    } else {
        if (ucxdt_ep_rkey_unpack(u.dep, blob.data(), blob.size() - sizeof remote, &rkey) != UCXDT_OK)
            die("ucxdt_ep_rkey_unpack: %s", ucxdt_last_error());
        post = [&] {
            return put ? Pending{ucxdt_put_nbx(u.dep, snd.origin(), snd.lay.count, snd.type, remote, rkey,
                                               rcv.lay.count, rcv.type, nullptr),
                                 true, "ucxdt_put_nbx"}
                       : Pending{ucxdt_get_nbx(u.dep, snd.origin(), snd.lay.count, snd.type, remote, rkey,
                                               rcv.lay.count, rcv.type, nullptr),
                                 true, "ucxdt_get_nbx"};
        };
        flush = [&] { return Pending{ucxdt_ep_flush_nbx(u.dep, nullptr), true, "ucxdt_ep_flush_nbx"}; };
    }
    Progress prog;
    double excluded = 0, t_start = 0, t_end = 0;
    Window win;
    auto complete = [&](Pending &m) { u.wait(m); };
    auto drain_and_flush = [&] {
        win.drain(r, complete);
        u.wait(flush());
    };
    for (long i = -p.warmup; i <= p.iters; ++i) {
        g_peer.in_run = true, g_peer.iter = i;
        if (i == 0) drain_and_flush(), t_start = win.last_done = now_s();
        if (i == p.iters) drain_and_flush(), t_end = now_s();
        const bool chk = checked(p, i);
        if (chk) {
            drain_and_flush();
            const double t0 = now_s();
            if (put) snd.fill_pattern(i);
            else snd.fill_poison();
            barrier(fd);
            if (timed(p, i)) excluded += now_s() - t0;
        }
        win.add(p.window, r, complete, [&] {
            ++g_peer.events;
            return post();
        }, timed(p, i) ? i : -1);
        if (chk) {
            drain_and_flush();
            const double t1 = now_s();
            barrier(fd);
            if (!put) {
                record_failure(p, r, i, snd.check(rcv.expected_stream(i)));
                ++r.checks;
            }
            barrier(fd);
            if (timed(p, i)) excluded += now_s() - t1;
        }
        if (timed(p, i)) prog.tick(i + 1, p.iters);
    }
    drain_and_flush();
    if (rkey) ucxdt_rkey_destroy(rkey);
    if (ucp_rkey) ucp_rkey_destroy(ucp_rkey);
    if (origin_mem) ucp_mem_unmap(u.ctx, origin_mem);
    r.overall_us = (t_end - t_start - excluded) * 1e6 / static_cast<double>(p.iters);
}

// tag_lat: the client sends its layout, the server receives into its layout and echoes it
// back from there; the client receives the echo into a second buffer of its layout.
void run_lat(Ucp &u, int fd, const Params &p, Side &snd, Side &rcv, Side *echo, bool client,
             Result &r) {
    Mem stage(client ? snd.buf.kind : rcv.buf.kind, snd.packed);
    Progress prog;
    double excluded = 0, t_start = 0, t_end = 0;
    for (long i = -p.warmup; i <= p.iters; ++i) {
        g_peer.in_run = true, g_peer.iter = i;
        if (i == 0) t_start = now_s();
        if (i == p.iters) t_end = now_s();
        const bool chk = checked(p, i);
        double t0 = now_s();
        if (chk) {
            if (client) snd.fill_pattern(i), echo->fill_poison();
            else rcv.fill_poison();
            barrier(fd);
            const double t1 = now_s();
            if (timed(p, i)) excluded += t1 - t0;
            t0 = t1;
        }
        if (client) {
            send_side(u, p, snd, u.send_dt, stage);
            recv_side(u, p, *echo, u.send_dt, stage);
        } else {
            recv_side(u, p, rcv, u.recv_dt, stage);
            send_side(u, p, rcv, u.recv_dt, stage);
        }
        const double t1 = now_s();
        if (timed(p, i)) r.lat_us.push_back((t1 - t0) * 1e6 / 2);
        if (chk) {
            const auto expect = snd.expected_stream(i);
            record_failure(p, r, i, client ? echo->check(expect) : rcv.check(expect));
            ++r.checks;
            barrier(fd);
            if (timed(p, i)) excluded += now_s() - t1;
        }
        if (client && timed(p, i)) prog.tick(i + 1, p.iters);
    }
    r.overall_us = (t_end - t_start - excluded) * 1e6 / static_cast<double>(p.iters) / 2;
}

// pack / unpack: one process; the engine against a plain copy of the packed bytes.
void run_local(const Params &p, Side &snd, Side &rcv, Result &r) {
    const bool pack = p.test == "pack";
    Side &s = pack ? snd : rcv;
    Mem packed(s.buf.kind, s.packed), copy_src(s.buf.kind, s.packed);
    const bool host = s.buf.kind == "host";
    auto op = [&] {
        int64_t pos = 0;
        const ucxdt_status_t st =
            pack ? ucxdt_pack(s.origin(), s.lay.count, s.type, packed.p, packed.n, &pos)
                 : ucxdt_unpack(packed.p, packed.n, &pos, s.origin(), s.lay.count, s.type);
        if (st != UCXDT_OK) die("%s: %s", pack ? "ucxdt_pack" : "ucxdt_unpack", ucxdt_last_error());
    };
    Progress prog;
    double excluded = 0, t_start = 0, t_end = 0;
    std::vector<std::byte> expect;  // outside the loop: freeing it is not the engine's time
    for (long i = -p.warmup; i <= p.iters; ++i) {
        if (i == 0) t_start = now_s();
        if (i == p.iters) t_end = now_s();
        const bool chk = checked(p, i);
        double t0 = now_s();
        if (chk) {
            expect = snd.expected_stream(i);
            if (pack) {
                s.fill_pattern(i);
            } else {  // the stream of the send layout, unpacked into the receive layout
                s.fill_poison();
                packed.from_host(expect.data());
            }
            const double t1 = now_s();
            if (timed(p, i)) excluded += t1 - t0;
            t0 = t1;
        }
        op();
        const double t1 = now_s();
        if (timed(p, i)) r.lat_us.push_back((t1 - t0) * 1e6);
        if (chk) {
            std::string e;
            if (pack) {
                std::vector<std::byte> got(static_cast<size_t>(s.packed));
                packed.to_host(got.data());
                if (got != expect) e = "packed stream differs from the reference walker's";
            } else {
                e = s.check(expect);
            }
            record_failure(p, r, i, e);
            ++r.checks;
            if (timed(p, i)) excluded += now_s() - t1;
        }
        if (timed(p, i)) prog.tick(i + 1, p.iters);
    }
    r.overall_us = (t_end - t_start - excluded) * 1e6 / static_cast<double>(p.iters);
    // Baseline: the same number of bytes by memcpy / cudaMemcpy, median of the iterations.
    std::vector<double> b;
    const long n = std::max<long>(1, std::min<long>(p.iters, 1000));
    for (long i = 0; i < n; ++i) {
        const double t0 = now_s();
        baseline_copy(packed.p, copy_src.p, s.packed, host);
        b.push_back((now_s() - t0) * 1e6);
    }
    std::sort(b.begin(), b.end());
    r.baseline_us = b[b.size() / 2];
}

// ---- Output --------------------------------------------------------------------------------

struct Summary {
    double pct_us, avg_us, overall_us, bw_avg, bw_overall, mr_avg, mr_overall;
};

Summary summarize(const Params &p, const Result &r, int64_t bytes) {
    std::vector<double> v = r.lat_us;
    std::sort(v.begin(), v.end());
    Summary s{};
    const size_t k = std::min(v.size() - 1, static_cast<size_t>(p.percentile / 100.0 * v.size()));
    s.pct_us = v[k];
    double sum = 0;
    for (double x : v) sum += x;
    s.avg_us = sum / static_cast<double>(v.size());
    s.overall_us = r.overall_us;
    const double mb = static_cast<double>(bytes) / (1 << 20);
    s.bw_avg = mb / (s.avg_us * 1e-6), s.bw_overall = mb / (s.overall_us * 1e-6);
    s.mr_avg = 1e6 / s.avg_us, s.mr_overall = 1e6 / s.overall_us;
    return s;
}

std::string verified_text(const Params &p, const Result &r, long peer_checks) {
    char b[512];
    const std::string which = p.check_all ? "first, every timed and a final untimed iteration"
                                   : "first and a final untimed iteration";
    if (p.test == "pack" || p.test == "unpack")
        std::snprintf(b, sizeof b, "%s (%ld checks against the reference type-map walker)",
                      which.c_str(), r.checks);
    else
        std::snprintf(b, sizeof b,
                      "%s: packed stream and receive-buffer gaps (%ld checks here, %ld on the "
                      "server)",
                      which.c_str(), r.checks, peer_checks);
    return b;
}

void print(const Options &o, const Side &snd, const Side &rcv, const Result &r, bool ok,
           const std::string &verified, const AppRates &app) {
    const Params &p = o.p;
    const Summary s = summarize(p, r, snd.packed);
    const bool local = p.test == "pack" || p.test == "unpack";
    const std::string rmem = rcv.buf.kind;
    if (o.format == "csv") {
        std::printf("test,path,send_layout,recv_layout,send_mem,recv_mem,packed_bytes,iterations,"
                    "lat_us_p50,lat_us_avg,lat_us_overall,bw_MBps_avg,bw_MBps_overall,"
                    "msg_rate_avg,memcpy_us,verified,lat_us_max,max_iteration,window,app_sms_pct,"
                    "app_kernels_per_s_alone,app_kernels_per_s,app_slowdown\n");
        // The slowest iteration and its index: one slow iteration moves the averages.
        const auto slowest = std::max_element(r.lat_us.begin(), r.lat_us.end());
        const double max_us = slowest == r.lat_us.end() ? 0 : *slowest;
        const long max_it = slowest == r.lat_us.end() ? -1 : static_cast<long>(slowest - r.lat_us.begin());
        std::printf("%s,%s,\"%s\",\"%s\",%s,%s,%lld,%ld,%.3f,%.3f,%.3f,%.2f,%.2f,%.0f,%.3f,%s,%.3f,%ld,%ld,%d,%.1f,%.1f,%.3f\n",
                    p.test.c_str(), local ? "-" : p.path.c_str(), snd.lay.name.c_str(),
                    rcv.lay.name.c_str(), snd.buf.kind.c_str(), rmem.c_str(),
                    static_cast<long long>(snd.packed), p.iters, s.pct_us, s.avg_us, s.overall_us,
                    s.bw_avg, s.bw_overall, s.mr_avg, r.baseline_us, ok ? "yes" : "no", max_us, max_it,
                    p.window, app.pct, app.alone, app.loaded, app.slowdown());
        return;
    }
    if (o.format == "json") {
        std::printf("{\"test\":\"%s\",\"path\":\"%s\",\"send_layout\":\"%s\",\"recv_layout\":"
                    "\"%s\",\"send_mem\":\"%s\",\"recv_mem\":\"%s\",\"packed_bytes\":%lld,"
                    "\"iterations\":%ld,\"window\":%ld,\"percentile\":%.1f,\"lat_us_pct\":%.3f,"
                    "\"lat_us_avg\":%.3f,\"lat_us_overall\":%.3f,\"bw_MBps_avg\":%.2f,"
                    "\"bw_MBps_overall\":%.2f,\"msg_rate_avg\":%.0f,\"msg_rate_overall\":%.0f,"
                    "\"memcpy_us\":%.3f,\"verified\":%s,\"verification\":\"%s\"}\n",
                    p.test.c_str(), local ? "-" : p.path.c_str(), snd.lay.name.c_str(),
                    rcv.lay.name.c_str(), snd.buf.kind.c_str(), rmem.c_str(),
                    static_cast<long long>(snd.packed), p.iters, p.window, p.percentile, s.pct_us, s.avg_us,
                    s.overall_us, s.bw_avg, s.bw_overall, s.mr_avg, s.mr_overall, r.baseline_us,
                    ok ? "true" : "false", verified.c_str());
        return;
    }
    std::printf("+------------------------------------------------------------------------------"
                "-----------+\n");
    std::printf("| test: %-8s path: %-8s send: %s [%s]\n", p.test.c_str(),
                local ? "-" : p.path.c_str(), snd.lay.name.c_str(), snd.buf.kind.c_str());
    std::printf("| packed: %lld B%*s recv: %s [%s]%s\n", static_cast<long long>(snd.packed), 10, "",
                rcv.lay.name.c_str(), rmem.c_str(),
                p.window > 1 ? (", window " + std::to_string(p.window)).c_str() : "");
    std::printf("+--------------+--------------+------------------------------+-----------------"
                "----+-----------------------+\n");
    std::printf("|              |              | %s |   bandwidth (MB/s)  |  message rate "
                "(msg/s) |\n",
                p.test == "tag_lat" ? "       latency (usec)       " : "      overhead (usec)       ");
    std::printf("+--------------+--------------+----------+---------+---------+----------+-----"
                "-----+-----------+-----------+\n");
    std::printf("|    Stage     | # iterations | %4.1f%%ile | average | overall |  average |  "
                "overall |  average  |  overall  |\n",
                p.percentile);
    std::printf("+--------------+--------------+----------+---------+---------+----------+-----"
                "-----+-----------+-----------+\n");
    std::printf("Final:         %14ld %10.3f %9.3f %9.3f %10.2f %10.2f %11.0f %11.0f\n", p.iters,
                s.pct_us, s.avg_us, s.overall_us, s.bw_avg, s.bw_overall, s.mr_avg, s.mr_overall);
    if (local)
        std::printf("memcpy of the %lld packed bytes (%s): %.3f usec, %.2f MB/s\n",
                    static_cast<long long>(snd.packed), snd.buf.kind.c_str(), r.baseline_us,
                    static_cast<double>(snd.packed) / (1 << 20) / (r.baseline_us * 1e-6));
    if (app.pct > 0)
        std::printf("application kernels on %d%% of the multiprocessors: %.1f/s alone, %.1f/s with "
                    "the messages (slowdown %.3f)\n",
                    app.pct, app.alone, app.loaded, app.slowdown());
    std::printf("%s %s\n", ok ? "verified:" : "VERIFICATION FAILED:", verified.c_str());
}

}  // namespace

int main(int argc, char **argv) {
    Options o;
    std::string dspec, mspec;
    int64_t size = -1;
    for (int c; (c = getopt(argc, argv, "t:x:D:s:m:n:w:O:cR:p:T:e:M:G:A:f:LCh")) != -1;) {
        switch (c) {
        case 't': o.p.test = optarg; break;
        case 'x': o.p.path = optarg; break;
        case 'D': dspec = optarg; break;
        case 's': size = std::atoll(optarg); break;
        case 'm': mspec = optarg; break;
        case 'n': o.p.iters = std::atol(optarg); break;
        case 'w': o.p.warmup = std::atol(optarg); break;
        case 'O': o.p.window = std::atol(optarg); break;
        case 'c': o.p.check_all = 1; break;
        case 'R': o.p.percentile = std::atof(optarg); break;
        case 'p': o.port = std::atoi(optarg); break;
        case 'T': o.p.timeout_s = std::atof(optarg); break;
        case 'e': o.p.err_mode = optarg; break;
        case 'M': o.p.thread_mode = optarg; break;
        case 'G': o.gpu = std::atoi(optarg); break;
        case 'A': o.app_pct = std::atoi(optarg); break;
        case 'f': o.format = optarg; break;
        case 'L': std::fputs(L::list_layouts().c_str(), stdout); return 0;
        case 'C': print_config(); return 0;
        case 'h': usage(); return 0;
        default: usage(); return 2;
        }
    }
    if (optind + 1 == argc) o.server = argv[optind];
    else if (optind != argc) return usage(), 2;
    if (!dspec.empty()) split_pair(dspec, &o.p.send_spec, &o.p.recv_spec);
    if (size >= 0) {
        std::string error;
        for (std::string *spec : {&o.p.send_spec, &o.p.recv_spec})
            if (!spec->empty() && !L::apply_size(spec, size, &error))
                die("-s %lld: %s", static_cast<long long>(size), error.c_str());
    }
    if (!mspec.empty()) {
        const size_t comma = mspec.find(',');
        o.p.send_mem = mspec.substr(0, comma);
        o.p.recv_mem = comma == std::string::npos ? "" : mspec.substr(comma + 1);
    }
    if (!(o.p.timeout_s > 0)) die("-T must be > 0 seconds");
    g_peer.timeout_s = o.p.timeout_s;
    if (o.format != "table" && o.format != "csv" && o.format != "json")
        die("-f %s: expected table, csv or json", o.format.c_str());
    // Before UCP and any buffer: UCX's CUDA transports bind to the current device.
    if (o.gpu >= 0 && cudaSetDevice(o.gpu) != cudaSuccess)
        die("-G %d: no such CUDA device", o.gpu);
    if (o.app_pct < 0 || o.app_pct > 100) die("-A %d: expected a percentage of 1 to 100", o.app_pct);
    if (o.app_pct > 0 && !have_gpu()) die("-A: no CUDA device for the application's kernels");

    const bool local = o.p.test == "pack" || o.p.test == "unpack";
    int fd = -1;
    const bool client = local || !o.server.empty();
    if (!local && o.server.empty()) {  // server: everything but the port comes from the client
        fd = server_accept(o.port);
        o.p.decode(recv_blob(fd, "while waiting for the parameters"));
        g_peer.timeout_s = o.p.timeout_s;
    }
    Params &p = o.p;
    if (p.recv_spec.empty()) p.recv_spec = p.send_spec;
    if (p.recv_mem.empty()) p.recv_mem = p.send_mem;
    const bool rma = p.test == "put_bw" || p.test == "get_bw";
    if (p.test != "tag_lat" && p.test != "tag_bw" && !rma && !local)
        die("-t %s: expected tag_lat, tag_bw, put_bw, get_bw, pack or unpack", p.test.c_str());
    if (rma && p.path != "pipeline" && p.path != "sgl")
        die("-t %s: one-sided tests run on -x pipeline or sgl", p.test.c_str());
    // UCX master of 2026-08-21 has an SGL protocol for puts only (rma/put_offload.c): its
    // ucp_get_nbx takes the rkey argument, which SGL sets to UCP_RKEY_INVALID, and faults.
    if (p.path == "sgl" && p.test != "put_bw") die("-x sgl: put_bw only (UCP has no SGL protocol for gets)");
    if (p.path == "sgl" && !kHaveSgl)
        die("-x sgl: this UCX has no UCP_DATATYPE_SGL (UCX master after 1.22 adds it)");
    if (p.path != "generic" && p.path != "packsend" && p.path != "pipeline" && p.path != "sgl")
        die("-x %s: expected generic, pipeline, packsend or sgl", p.path.c_str());
    if (p.iters < 1 || p.warmup < 0 || p.window < 1) die("-n and -O must be >= 1 and -w >= 0");
    if (p.window > 1 && p.test != "tag_bw" && !rma) die("-O applies to tag_bw, put_bw and get_bw only");
    if (p.percentile < 0 || p.percentile > 100) die("-R must be in [0, 100]");
    if (!(p.timeout_s > 0)) die("-T must be > 0 seconds");
    if (p.err_mode != "peer" && p.err_mode != "none") die("-e %s: expected peer or none", p.err_mode.c_str());
    if (p.thread_mode != "single" && p.thread_mode != "multi") die("-M %s: expected single or multi", p.thread_mode.c_str());

    // Both sides build both layouts: the receiver needs the sender's to know what to expect.
    Side snd, rcv, echo;
    snd.init(p.send_spec, p.send_mem);
    rcv.init(p.recv_spec, p.recv_mem);
    ucxdt_signature_t ss{}, rs{};
    ucxdt_type_signature(snd.type, snd.lay.count, &ss);
    ucxdt_type_signature(rcv.type, rcv.lay.count, &rs);
    if (ss.hash != rs.hash || ss.length != rs.length)
        die("type signatures differ: send %s (%lld primitives, %lld B) cannot be received as "
            "%s (%lld primitives, %lld B); the layouts must carry the same primitives in the "
            "same order",
            snd.lay.name.c_str(), static_cast<long long>(ss.length),
            static_cast<long long>(snd.packed), rcv.lay.name.c_str(),
            static_cast<long long>(rs.length), static_cast<long long>(rcv.packed));
    if (snd.packed == 0) die("the layouts carry no data");

    Result r;
    long peer_checks = 0;
    std::string peer_failure;
    AppRates app;
    std::unique_ptr<AppLoad> load;
    const auto load_start = [&] {  // the client's application kernels, measured alone first
        if (!client || o.app_pct == 0) return;
        load = std::make_unique<AppLoad>(o.app_pct);
        if (!load->error().empty()) die("-A: %s", load->error().c_str());
        app.pct = o.app_pct;
        app.alone = load->alone(0.5);
        load->start();
    };
    const auto load_stop = [&] {
        if (load) app.loaded = load->stop();
    };
    if (local) {
        load_start();
        run_local(p, snd, rcv, r);
        load_stop();
    } else {
        if (client) {
            fd = client_connect(o.server, o.port);
            send_blob(fd, p.encode(), "while sending the parameters");
        }
        g_peer.fd = fd;
        Ucp u;
        g_ucp = &u;
        u.init(fd, p.path == "pipeline", p.err_mode == "peer", p.thread_mode == "multi");
        if (p.path == "generic") u.make_dts(snd.type, rcv.type);
        g_peer.drive = [] { if (g_ucp) g_ucp->drive(); };
        // Both endpoints exist before any data.
        send_blob(fd, "ready", "while connecting"), recv_blob(fd, "while connecting");
        if (p.test == "tag_lat" && client) echo.init(p.send_spec, p.send_mem);
        load_start();
        if (p.test == "tag_bw") run_bw(u, fd, p, snd, rcv, client, r);
        else if (rma) run_rma(u, fd, p, snd, rcv, client, r);
        else run_lat(u, fd, p, snd, rcv, client ? &echo : nullptr, client, r);
        load_stop();
        // The server reports its checks; then both tear down.
        if (client) {
            const std::string rep = recv_blob(fd, "while waiting for its verification report");
            peer_checks = std::atol(rep.c_str());
            const size_t nl = rep.find('\n');
            if (nl != std::string::npos) peer_failure = rep.substr(nl + 1);
        } else {
            send_blob(fd, std::to_string(r.checks) + "\n" + r.failure, "while sending the verification report");
        }
        send_blob(fd, "done", "at the end"), recv_blob(fd, "at the end");
        g_ucp = nullptr, g_peer.fd = -1, g_peer.drive = nullptr;
        u.close();
        ::close(fd);
    }

    if (!r.failure.empty())
        std::fprintf(stderr, "ucxdt_perftest: VERIFICATION FAILED (%s side) at %s\n",
                     client ? "client" : "server", r.failure.c_str());
    if (!peer_failure.empty())
        std::fprintf(stderr, "ucxdt_perftest: VERIFICATION FAILED (server side) at %s\n",
                     peer_failure.c_str());
    const bool ok = r.failure.empty() && peer_failure.empty();
    if (client) print(o, snd, rcv, r, ok, verified_text(p, r, peer_checks), app);
    else
        std::fprintf(stderr, "server: %s, %ld checks\n", ok ? "verified" : "verification failed",
                     r.checks);
    return ok ? 0 : 1;
}
