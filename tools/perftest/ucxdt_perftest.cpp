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
#include "perftest/output.hpp"

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
