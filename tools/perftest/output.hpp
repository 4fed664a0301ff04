// ucxdt_perftest (ucxdt_perftest.cpp): the output: summaries, verification text, table and CSV rows.
// One translation unit includes these headers, in order; their names stay in an anonymous namespace, as
// when they were one file.
#pragma once

#include "perftest/runs.hpp"

namespace {

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
