// ucxdt_packbench (ucxdt_packbench.cpp): the output: tables, CSV and the plots' data.
// One translation unit includes these headers, in order; their names stay in an anonymous namespace, as
// when they were one file.
#pragma once

#include "packbench/small_messages.hpp"

namespace {

// ---- Output ----------------------------------------------------------------------------------

std::string num(double v, int digits = 1) {
    if (std::isnan(v)) return "-";
    char b[64];
    std::snprintf(b, sizeof b, "%.*f", digits, v);
    return b;
}

std::string csv_quote(const std::string &s) {
    std::string o = "\"";
    for (char c : s) o += c == '"' ? std::string("\"\"") : std::string(1, c);
    return o + "\"";
}

std::string json_str(const std::string &s) {
    std::string o = "\"";
    for (char c : s) {
        if (c == '"' || c == '\\') o += '\\', o += c;
        else if (static_cast<unsigned char>(c) < 0x20) o += ' ';
        else o += c;
    }
    return o + "\"";
}

std::string json_num(double v) {
    if (std::isnan(v) || std::isinf(v)) return "null";
    char b[64];
    std::snprintf(b, sizeof b, "%.6g", v);
    return b;
}

// Ratio of two rates, or NaN where either is missing.
double ratio(double a, double b) {
    return (std::isnan(a) || std::isnan(b) || b == 0) ? kNaN : a / b;
}

// One output column: its name and its CSV and JSON renderings of a row.
struct Field {
    const char *name;
    std::function<std::string(const Row &)> csv, json;
};

Field text(const char *name, std::string Row::*m) {
    return {name, [m](const Row &r) { return csv_quote(r.*m); },
            [m](const Row &r) { return json_str(r.*m); }};
}

Field integer(const char *name, int64_t Row::*m) {
    return {name, [m](const Row &r) { return std::to_string(r.*m); },
            [m](const Row &r) { return std::to_string(r.*m); }};
}

// Missing values are empty in CSV and null in JSON.
Field real(const char *name, std::function<double(const Row &)> f, int digits) {
    return {name, [f, digits](const Row &r) { return std::isnan(f(r)) ? "" : num(f(r), digits); },
            [f](const Row &r) { return json_num(f(r)); }};
}

Field real(const char *name, double Row::*m, int digits) {
    return real(name, [m](const Row &r) { return r.*m; }, digits);
}

const std::vector<Field> &fields() {
    static const std::vector<Field> f = {
        text("section", &Row::section),
        text("layout", &Row::name),
        integer("count", &Row::count),
        integer("packed_bytes", &Row::packed),
        integer("blocks", &Row::blocks),
        text("plan", &Row::plan),
        text("gpu_method", &Row::method),
        real("pack_GBps", &Row::pack_gbs, 2),
        real("unpack_GBps", &Row::unpack_gbs, 2),
        real("memcpy_GBps", &Row::memcpy_gbs, 2),
        real("pack_vs_memcpy", [](const Row &r) { return ratio(r.pack_gbs, r.memcpy_gbs); }, 3),
        real("unpack_vs_memcpy", [](const Row &r) { return ratio(r.unpack_gbs, r.memcpy_gbs); }, 3),
        real("memcpy2d_GBps", &Row::memcpy2d_gbs, 2),
        real("per_block_GBps", &Row::per_block_gbs, 3),
        real("sector_read_bytes", &Row::sectors_read_bytes, 0),
        real("sector_bound_GBps", &Row::bound_gbs, 2),
        real("pack_vs_bound", [](const Row &r) { return ratio(r.pack_gbs, r.bound_gbs); }, 3),
        real("unpack_vs_bound", [](const Row &r) { return ratio(r.unpack_gbs, r.bound_gbs); }, 3),
        real("first_use_us", &Row::first_use_us, 1),
        real("cached_us", &Row::cached_us, 1),
        real("pack_us", &Row::pack_us, 2),
        real("unpack_us", &Row::unpack_us, 2),
        real("memcpy_us", &Row::memcpy_us, 2),
        real("pack_call_us", &Row::pack_call_us, 2),
        real("memcpy_call_us", &Row::memcpy_call_us, 2),
        real("e2e_pack_us", &Row::e2e_pack_us, 2),
        real("e2e_async_us", &Row::e2e_async_us, 2),
        real("e2e_memcpy_us", &Row::e2e_memcpy_us, 2),
#ifdef UCXDT_PACKBENCH_YAKSA
        real("yaksa_pack_GBps", &Row::yaksa_pack_gbs, 2),
        real("yaksa_unpack_GBps", &Row::yaksa_unpack_gbs, 2),
        real("yaksa_pack_vs_memcpy",
             [](const Row &r) { return ratio(r.yaksa_pack_gbs, r.memcpy_gbs); }, 3),
        real("yaksa_unpack_vs_memcpy",
             [](const Row &r) { return ratio(r.yaksa_unpack_gbs, r.memcpy_gbs); }, 3),
        real("pack_vs_yaksa", [](const Row &r) { return ratio(r.pack_gbs, r.yaksa_pack_gbs); }, 3),
        real("unpack_vs_yaksa",
             [](const Row &r) { return ratio(r.unpack_gbs, r.yaksa_unpack_gbs); }, 3),
        real("yaksa_e2e_us", &Row::yaksa_e2e_us, 2),
        real("yaksa_pack_call_us", &Row::yaksa_pack_call_us, 2),
        text("yaksa_verified", &Row::yaksa_verified),
#endif
        integer("slots", &Row::slots),
        {"verified", [](const Row &r) { return std::string(r.verified ? "yes" : "no"); },
         [](const Row &r) { return std::string(r.verified ? "true" : "false"); }},
        text("note", &Row::note),
    };
    return f;
}

void write_csv(const std::string &path, const std::vector<Row> &rows) {
    std::ofstream f(path);
    const auto &fs = fields();
    for (size_t k = 0; k < fs.size(); ++k) f << (k ? "," : "") << fs[k].name;
    f << "\n";
    for (const auto &r : rows) {
        for (size_t k = 0; k < fs.size(); ++k) f << (k ? "," : "") << fs[k].csv(r);
        f << "\n";
    }
    if (!f) throw BenchError("cannot write " + path);
}

void write_json(const std::string &path, const std::vector<Row> &rows, const Gpu &g,
                const Options &opt, const std::vector<std::string> &skipped, int failures) {
    std::ofstream f(path);
    f << "{\n  \"device\": " << json_str(g.name) << ",\n  \"l2_bytes\": " << g.l2_bytes
      << ",\n  \"peak_memcpy_GBps\": " << json_num(g.peak_memcpy_gbs)
      << ",\n  \"dram_read_plus_write_GBps\": " << json_num(2 * g.peak_memcpy_gbs)
      << ",\n  \"iterations\": " << opt.iterations << ",\n  \"warmup\": " << opt.warmup
      << ",\n  \"failures\": " << failures << ",\n  \"skipped\": [";
    for (size_t i = 0; i < skipped.size(); ++i) f << (i ? ", " : "") << json_str(skipped[i]);
    f << "],\n  \"results\": [\n";
    const auto &fs = fields();
    for (size_t i = 0; i < rows.size(); ++i) {
        f << "    {";
        for (size_t k = 0; k < fs.size(); ++k)
            f << (k ? ", " : "") << json_str(fs[k].name) << ": " << fs[k].json(rows[i]);
        f << "}" << (i + 1 < rows.size() ? "," : "") << "\n";
    }
    f << "  ]\n}\n";
    if (!f) throw BenchError("cannot write " + path);
}

std::string mb(int64_t bytes) { return num(static_cast<double>(bytes) / 1e6, 2); }

void print_layout_table(const std::vector<Row> &rows) {
    int w = 6;
    for (const auto &r : rows) w = std::max(w, static_cast<int>(r.name.size()));
    std::printf("\n%-*s %9s %9s %-10s %-14s %8s %8s %8s %5s %5s %8s %8s %8s %5s %s\n", w, "layout",
                "packed MB", "blocks", "plan", "method", "pack", "unpack", "memcpy", "p/m", "u/m",
                "2D", "perblk", "bound", "p/bnd", "(GB/s)");
    for (const auto &r : rows) {
        if (r.section != "layout") continue;
        std::printf("%-*s %9s %9lld %-10s %-14s %8s %8s %8s %5s %5s %8s %8s %8s %5s%s\n", w,
                    r.name.c_str(), mb(r.packed).c_str(), static_cast<long long>(r.blocks),
                    r.plan.c_str(), r.method.c_str(), num(r.pack_gbs).c_str(),
                    num(r.unpack_gbs).c_str(), num(r.memcpy_gbs).c_str(),
                    num(ratio(r.pack_gbs, r.memcpy_gbs), 2).c_str(),
                    num(ratio(r.unpack_gbs, r.memcpy_gbs), 2).c_str(), num(r.memcpy2d_gbs).c_str(),
                    num(r.per_block_gbs, 2).c_str(), num(r.bound_gbs).c_str(),
                    num(ratio(r.pack_gbs, r.bound_gbs), 2).c_str(),
                    r.verified ? "" : "  NOT VERIFIED");
    }
    bool any = false;
    for (const auto &r : rows) any = any || !std::isnan(r.first_use_us);
    if (any) {
        std::printf("\n%-*s %9s %12s %10s %8s\n", w, "block list: first use", "packed MB",
                    "first use us", "cached us", "ratio");
        for (const auto &r : rows)
            if (!std::isnan(r.first_use_us))
                std::printf("%-*s %9s %12s %10s %8s\n", w, r.name.c_str(), mb(r.packed).c_str(),
                            num(r.first_use_us).c_str(), num(r.cached_us).c_str(),
                            num(ratio(r.first_use_us, r.cached_us), 1).c_str());
    }
}

void print_small_table(const std::vector<Row> &rows) {
    bool any = false;
    for (const auto &r : rows) any = any || r.section == "small";
    if (!any) return;
    std::printf("\n%-22s %8s %7s %-10s %-14s %9s %9s %9s %8s  (host clock, call to completion)\n",
                "small message", "bytes", "blocks", "plan", "method", "pack us", "async us",
                "memcpy us", "pack/mc");
    for (const auto &r : rows)
        if (r.section == "small")
            std::printf("%-22s %8lld %7lld %-10s %-14s %9s %9s %9s %8s%s\n", r.name.c_str(),
                        static_cast<long long>(r.packed), static_cast<long long>(r.blocks),
                        r.plan.c_str(), r.method.c_str(), num(r.e2e_pack_us, 2).c_str(),
                        num(r.e2e_async_us, 2).c_str(), num(r.e2e_memcpy_us, 2).c_str(),
                        num(ratio(r.e2e_pack_us, r.e2e_memcpy_us), 2).c_str(),
                        r.verified ? "" : "  NOT VERIFIED");
}

#ifdef UCXDT_PACKBENCH_YAKSA
// ucxdt against Yaksa on each layout, both as ratios to cudaMemcpy of the packed bytes, and the
// small messages end to end.
void print_yaksa_table(const std::vector<Row> &rows) {
    int w = 6;
    for (const auto &r : rows) w = std::max(w, static_cast<int>(r.name.size()));
    std::printf("\n%-*s %9s %7s %7s %7s %7s %7s %7s %7s %7s %7s %7s %7s %s\n", w, "layout vs Yaksa",
                "packed MB", "pack", "y.pack", "unpack", "y.unpk", "p/m", "y.p/m", "u/m", "y.u/m",
                "call", "y.call", "mc.call",
                "(GB/s; ratios to memcpy; host us of the enqueuing pack call)");
    for (const auto &r : rows) {
        if (r.section != "layout") continue;
        std::printf("%-*s %9s %7s %7s %7s %7s %7s %7s %7s %7s %7s %7s %7s%s\n", w, r.name.c_str(),
                    mb(r.packed).c_str(), num(r.pack_gbs).c_str(), num(r.yaksa_pack_gbs).c_str(),
                    num(r.unpack_gbs).c_str(), num(r.yaksa_unpack_gbs).c_str(),
                    num(ratio(r.pack_gbs, r.memcpy_gbs), 2).c_str(),
                    num(ratio(r.yaksa_pack_gbs, r.memcpy_gbs), 2).c_str(),
                    num(ratio(r.unpack_gbs, r.memcpy_gbs), 2).c_str(),
                    num(ratio(r.yaksa_unpack_gbs, r.memcpy_gbs), 2).c_str(),
                    num(r.pack_call_us, 2).c_str(), num(r.yaksa_pack_call_us, 2).c_str(),
                    num(r.memcpy_call_us, 2).c_str(),
                    r.yaksa_verified == "no" ? "  YAKSA NOT VERIFIED" : "");
    }
    std::printf("\n%-22s %8s %9s %9s %9s  (host clock, call to completion)\n", "small vs Yaksa",
                "bytes", "ucxdt us", "yaksa us", "memcpy us");
    for (const auto &r : rows)
        if (r.section == "small")
            std::printf("%-22s %8lld %9s %9s %9s\n", r.name.c_str(),
                        static_cast<long long>(r.packed), num(r.e2e_pack_us, 2).c_str(),
                        num(r.yaksa_e2e_us, 2).c_str(), num(r.e2e_memcpy_us, 2).c_str());
}
#endif

bool selected(const std::string &name, const Options &opt) {
    if (opt.filters.empty()) return true;
    return std::any_of(opt.filters.begin(), opt.filters.end(),
                       [&](const std::string &f) { return name.find(f) != std::string::npos; });
}

}  // namespace
