// ucxdt_perftest (ucxdt_perftest.cpp): the runs: bandwidth and latency windows, one-sided, local pack and unpack; their results.
// One translation unit includes these headers, in order; their names stay in an anonymous namespace, as
// when they were one file.
#pragma once

#include "perftest/ucp_session.hpp"

namespace {

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

}  // namespace
