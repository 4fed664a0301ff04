// ucxdt_perftest (ucxdt_perftest.cpp): the parameters: the client's, mirrored to the server as key=value lines; usage.
// One translation unit includes these headers, in order; their names stay in an anonymous namespace, as
// when they were one file.
#pragma once

#include "perftest/common.hpp"

namespace {

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

}  // namespace
