#include "registry.hpp"

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <map>

namespace ucxdt::layouts {

namespace {

using KV = std::map<std::string, std::string>;

// Larger buffers are refused before their sizes can overflow int64; numbers past it are refused
// outright, so that the few sums and products before the buffer checks cannot overflow.
constexpr int64_t kMaxBytes = int64_t{1} << 40;

std::vector<std::string_view> split(std::string_view s, char sep) {
    std::vector<std::string_view> out;
    for (size_t at; (at = s.find(sep)) != std::string_view::npos; s.remove_prefix(at + 1))
        out.push_back(s.substr(0, at));
    out.push_back(s);
    return out;
}

bool to_int(std::string_view s, int64_t *v) {
    const std::string str(s);
    char *end = nullptr;
    errno = 0;
    *v = std::strtoll(str.c_str(), &end, 10);
    return !str.empty() && *end == '\0' && errno == 0 && *v >= -kMaxBytes && *v <= kMaxBytes;
}

bool parse_kv(std::string_view args, KV *kv, std::string *error) {
    if (args.empty()) return true;
    for (std::string_view item : split(args, ',')) {
        const size_t eq = item.find('=');
        if (eq == std::string_view::npos || eq == 0) {
            *error = "expected key=value, got \"" + std::string(item) + "\"";
            return false;
        }
        (*kv)[std::string(item.substr(0, eq))] = std::string(item.substr(eq + 1));
    }
    return true;
}

// Parses the arguments and rejects keys outside `known`, so that a misspelt one is not ignored.
bool parse_kv(std::string_view args, const std::vector<std::string_view> &known, KV *kv,
              std::string *error) {
    if (!parse_kv(args, kv, error)) return false;
    for (const auto &[key, value] : *kv) {
        if (std::find(known.begin(), known.end(), key) != known.end()) continue;
        *error = "unknown key \"" + key + "\" (takes";
        for (std::string_view k : known) (*error += ' ').append(k) += '=';
        *error += ')';
        return false;
    }
    return true;
}

bool get_int(const KV &kv, const char *key, int64_t *v, bool required, std::string *error) {
    const auto it = kv.find(key);
    if (it == kv.end()) {
        if (required) *error = std::string("missing ") + key + "=";
        return !required;
    }
    if (!to_int(it->second, v)) {
        *error = std::string("bad number for ") + key + ": \"" + it->second + "\"";
        return false;
    }
    return true;
}

// A required '/'-separated list, e.g. blocklengths=4/1/2.
bool get_list(const KV &kv, const char *key, std::vector<int64_t> *v, std::string *error) {
    const auto it = kv.find(key);
    if (it == kv.end()) {
        *error = std::string("missing ") + key + "=";
        return false;
    }
    for (std::string_view item : split(it->second, '/')) {
        int64_t x = 0;
        if (!to_int(item, &x)) {
            *error = std::string("bad number in ") + key + ": \"" + std::string(item) + "\"";
            return false;
        }
        v->push_back(x);
    }
    return true;
}

// Exactly n numbers separated by 'x' or ',' (the names write ','), e.g. 100x60x60.
bool parse_dims(std::string_view s, size_t n, std::vector<int64_t> *v, std::string *error) {
    std::string t(s);
    for (char &ch : t)
        if (ch == 'x') ch = ',';
    for (std::string_view item : split(t, ',')) {
        int64_t x = 0;
        if (!to_int(item, &x)) {
            *error = "bad number \"" + std::string(item) + "\" in size \"" + std::string(s) + "\"";
            return false;
        }
        v->push_back(x);
    }
    if (v->size() != n) {
        *error = "size \"" + std::string(s) + "\" needs " + std::to_string(n) + " numbers";
        return false;
    }
    return true;
}

bool get_prim(const KV &kv, ucxdt_primitive_t *p, std::string *error) {
    static const std::map<std::string, ucxdt_primitive_t> names{
        {"byte", UCXDT_BYTE},   {"char", UCXDT_CHAR},   {"int32", UCXDT_INT32},
        {"int64", UCXDT_INT64}, {"float", UCXDT_FLOAT}, {"double", UCXDT_DOUBLE}};
    const auto it = kv.find("type");
    if (it == kv.end()) return true;
    const auto n = names.find(it->second);
    if (n == names.end()) {
        *error = "unknown type \"" + it->second + "\"";
        return false;
    }
    *p = n->second;
    return true;
}

// False with *error unless every value is >= lo.
bool all_at_least(const std::vector<int64_t> &v, int64_t lo, const std::string &what,
                  std::string *error) {
    for (int64_t x : v)
        if (x < lo) {
            *error = what + " must be >= " + std::to_string(lo) + ", got " + std::to_string(x);
            return false;
        }
    return true;
}

// False with *error unless the product of the factors (a buffer size) is at most kMaxBytes.
bool fits(std::initializer_list<int64_t> factors, std::string *error) {
    int64_t bytes = 1;
    for (int64_t f : factors)
        if (__builtin_mul_overflow(bytes, f, &bytes) || bytes > kMaxBytes) {
            *error = "buffer over 1 TiB";
            return false;
        }
    return true;
}

// Buffer size for one element of a type whose data starts at or after offset 0.
bool finish_generic(Layout *l, std::string *error) {
    ucxdt_type_t h = UCXDT_TYPE_NULL;
    if (build(*l->type, &h, false) != UCXDT_OK) {
        *error = std::string("cannot build ") + l->name + ": " + ucxdt_last_error();
        return false;
    }
    int64_t tlb = 0, text = 0, size = 0;
    ucxdt_type_true_extent(h, &tlb, &text);
    ucxdt_type_size(h, &size);
    ucxdt_type_free(&h);
    if (tlb < 0) {
        *error = l->name + ": negative displacements are not supported";
        return false;
    }
    if (tlb + text > kMaxBytes) {
        *error = l->name + ": buffer over 1 TiB";
        return false;
    }
    l->buffer_bytes = tlb + text;
    l->expect_packed = size;
    return true;
}

// The type-constructor specs, with the keys each takes.
const std::map<std::string, std::vector<std::string_view>, std::less<>> kGenericKeys{
    {"vector", {"count", "blocklength", "stride", "type"}},
    {"hvector", {"count", "blocklength", "stride", "type"}},
    {"contig", {"bytes", "count", "type"}},
    {"indexed", {"blocklengths", "displacements", "type"}},
    {"indexed_block", {"blocklength", "displacements", "type"}},
    {"subarray", {"sizes", "subsizes", "starts", "order", "type"}}};

// One element of the type that a type-constructor spec's arguments describe.
bool resolve_generic(const std::string &base, std::string_view args, Layout *l,
                     std::string *error) {
    KV kv;
    ucxdt_primitive_t p = UCXDT_DOUBLE;
    if (!parse_kv(args, kGenericKeys.at(base), &kv, error) || !get_prim(kv, &p, error))
        return false;
    if (base == "vector" || base == "hvector") {
        int64_t c = 0, b = 0, s = 0;
        if (!get_int(kv, "count", &c, true, error) ||
            !get_int(kv, "blocklength", &b, true, error) || !get_int(kv, "stride", &s, true, error))
            return false;
        if (c < 1 || b < 1 || s < 0) {
            *error = base + " needs count >= 1, blocklength >= 1, stride >= 0";
            return false;
        }
        l->type = base == "vector" ? vector(c, b, s, named(p)) : hvector(c, b, s, named(p));
    } else if (base == "contig") {
        int64_t bytes = -1, c = -1;
        if (!get_int(kv, "bytes", &bytes, false, error) || !get_int(kv, "count", &c, false, error))
            return false;
        if ((bytes < 0) == (c < 0)) {
            *error = "contig needs exactly one of bytes= and count=";
            return false;
        }
        l->type = bytes >= 0 ? contiguous(bytes, named(UCXDT_BYTE)) : contiguous(c, named(p));
    } else if (base == "indexed" || base == "indexed_block") {
        std::vector<int64_t> bl, disp;
        int64_t b = 0;
        if ((base == "indexed" ? !get_list(kv, "blocklengths", &bl, error)
                               : !get_int(kv, "blocklength", &b, true, error)) ||
            !get_list(kv, "displacements", &disp, error) ||
            !all_at_least(disp, 0, base + " displacements", error))
            return false;
        if (base == "indexed_block") {
            if (b < 1) {
                *error = "indexed_block needs blocklength >= 1";
                return false;
            }
            l->type = indexed_block(b, disp, named(p));
        } else {
            if (bl.size() != disp.size()) {
                *error = "indexed needs as many blocklengths as displacements (" +
                         std::to_string(bl.size()) + " and " + std::to_string(disp.size()) + ")";
                return false;
            }
            // Zero-length blocks are legal in MPI and a corner worth testing; no data is not.
            if (!all_at_least(bl, 0, "indexed blocklengths", error)) return false;
            if (std::all_of(bl.begin(), bl.end(), [](int64_t x) { return x == 0; })) {
                *error = "indexed needs a blocklength >= 1";
                return false;
            }
            l->type = indexed(bl, disp, named(p));
        }
    } else {  // subarray
        std::vector<int64_t> sizes, sub, starts;
        if (!get_list(kv, "sizes", &sizes, error) || !get_list(kv, "subsizes", &sub, error) ||
            !get_list(kv, "starts", &starts, error))
            return false;
        if (sub.size() != sizes.size() || starts.size() != sizes.size()) {
            *error = "subarray needs as many subsizes and starts as sizes";
            return false;
        }
        if (!all_at_least(sub, 1, "subarray subsizes", error) ||
            !all_at_least(starts, 0, "subarray starts", error))
            return false;
        for (size_t d = 0; d < sizes.size(); ++d)
            if (starts[d] + sub[d] > sizes[d]) {
                *error = "subarray dimension " + std::to_string(d) + ": starts + subsizes = " +
                         std::to_string(starts[d] + sub[d]) + " exceeds sizes = " +
                         std::to_string(sizes[d]);
                return false;
            }
        const auto order = kv.find("order");
        if (order != kv.end() && order->second != "c" && order->second != "fortran") {
            *error = "subarray order must be c or fortran, got \"" + order->second + "\"";
            return false;
        }
        const bool fortran = order != kv.end() && order->second == "fortran";
        l->type = subarray(sizes, sub, starts, fortran ? UCXDT_ORDER_FORTRAN : UCXDT_ORDER_C,
                           named(p));
    }
    return finish_generic(l, error);
}

// Specs whose one parameter is a size: base -> (key, default). The defaults are the pre-built
// sizes, so the bare base names the pre-built layout.
struct OneKey {
    const char *key;
    int64_t fallback;
};
const std::map<std::string, OneKey, std::less<>> kOneKey{
    {"submatrix", {"n", 1000}},  {"triangular", {"n", 1000}},        {"stair", {"n", 1000}},
    {"transpose", {"n", 256}},   {"hpdc16_transpose", {"N", 256}},   {"struct", {"count", 1024}},
    {"tpds14_struct", {"count", 1024}}};

bool resolve_one_key(const std::string &base, const OneKey &k, std::string_view args, Layout *out,
                     std::string *error) {
    KV kv;
    int64_t v = k.fallback;
    if (!parse_kv(args, {k.key}, &kv, error) || !get_int(kv, k.key, &v, false, error))
        return false;
    if (base.ends_with("struct")) {
        if (v < 1) {
            *error = "struct needs count >= 1";
            return false;
        }
        if (!fits({v, 24}, error)) return false;
        *out = struct_layout(v);
        return true;
    }
    if (v < 1 || v > 100000) {
        *error = std::string(k.key) + " must be in [1, 100000]";
        return false;
    }
    if (base.ends_with("transpose")) {
        *out = transpose_layout(v);
    } else {
        auto ls = paper_layouts(v);  // V, T, stairT in that order
        *out = ls[base == "submatrix" ? 0 : base == "triangular" ? 1 : 2];
    }
    return true;
}

// "-x-y,16^3,g1", the form of the Comb names: direction, interior edge, ghost width (default 1).
bool parse_comb(std::string_view args, std::array<int, 3> *dir, int64_t *n, int64_t *g,
                std::string *error) {
    const auto items = split(args, ',');
    const std::string_view d = items[0], ns = items.size() > 1 ? items[1] : "";
    *dir = {0, 0, 0};
    bool ok = (items.size() == 2 || items.size() == 3) && !d.empty() && d.size() % 2 == 0 &&
              ns.ends_with("^3") && to_int(ns.substr(0, ns.size() - 2), n);
    for (size_t i = 0; ok && i < d.size(); i += 2) {
        const size_t axis = std::string_view("xyz").find(d[i + 1]);
        ok = (d[i] == '-' || d[i] == '+') && axis != std::string_view::npos && (*dir)[axis] == 0;
        if (ok) (*dir)[axis] = d[i] == '-' ? -1 : 1;
    }
    *g = 1;
    if (ok && items.size() == 3) ok = items[2].starts_with("g") && to_int(items[2].substr(1), g);
    if (!ok) {
        *error = "comb needs <dir>,<n>^3[,g<g>] with dir made of -x +x -y +y -z +z, each axis "
                 "once (e.g. -x-y,16^3,g1), got \"" + std::string(args) + "\"";
        return false;
    }
    if (*g < 1 || *n < *g) {
        *error = "comb needs n >= g >= 1";
        return false;
    }
    return fits({*n + 2 * *g, *n + 2 * *g, *n + 2 * *g, 8}, error);
}

// `<base>:<args>` for the application layouts that app_layouts.hpp builds at any size: that
// family's layouts. False with *error for a bad size, or for a base that is no such family.
bool resolve_family(const std::string &base, std::string_view args, std::vector<Layout> *family,
                    std::string *error) {
    std::vector<int64_t> d;
    if (base.starts_with("nas_mg_")) {
        if (!parse_dims(args, 3, &d, error)) return false;
        if (!all_at_least(d, 3, "nas_mg D1, D2, D3", error) || !fits({d[0], d[1], d[2], 8}, error))
            return false;
        *family = nas_mg_layouts(d[0], d[1], d[2]);
    } else if (base.starts_with("nas_lu_")) {
        if (!parse_dims(args, 1, &d, error) || !all_at_least(d, 1, "nas_lu N", error) ||
            !fits({d[0] + 2, d[0] + 2, 40}, error))
            return false;
        *family = nas_lu_layouts(d[0]);
    } else if (base == "milc_su3_zdown") {
        if (!parse_dims(args, 4, &d, error) || !all_at_least(d, 1, "milc D2..D5", error) ||
            !fits({d[0], d[1], d[2], d[3], 24}, error))
            return false;
        if (d[0] * d[1] % 2 != 0) {
            *error = "milc needs D2 * D3 even (the type takes half of each z-plane)";
            return false;
        }
        *family = {milc_layout(d[0], d[1], d[2], d[3])};
    } else if (base.starts_with("specfem3d_mt_")) {
        if (!parse_dims(args, 3, &d, error) || !all_at_least(d, 1, "specfem3d DIM1..DIM3", error) ||
            !fits({d[0], d[1], d[2], 4}, error))
            return false;
        *family = specfem_layouts(d[0], d[1], d[2]);
    } else if (base.starts_with("fft2_")) {
        KV kv;
        int64_t big_n = 0, p = 2;  // DDTBench's default NPROCS
        if (!parse_kv(args, {"N", "P"}, &kv, error) || !get_int(kv, "N", &big_n, true, error) ||
            !get_int(kv, "P", &p, false, error))
            return false;
        if (p < 1 || big_n % p != 0 || big_n / p < 2) {
            *error = "fft2 needs P >= 1, N a multiple of P and N / P >= 2";
            return false;
        }
        if (!fits({big_n, big_n / p, 16}, error)) return false;
        *family = fft2_layouts(big_n, p);
    } else if (base.starts_with("comb_")) {
        std::array<int, 3> dir{};
        int64_t n = 0, g = 0;
        if (!parse_comb(args, &dir, &n, &g, error)) return false;
        *family = {comb_layout(base == "comb_send", dir, n, g)};
    } else if (base.size() > 4 && base.starts_with("wrf_") && !wrf_grids(base[4]).empty()) {
        *family = wrf_layouts(base[4], args);
        if (family->empty()) {
            *error = "no WRF " + std::string(1, base[4]) + " config \"" + std::string(args) +
                     "\"; docs/application-layouts.md 2.4 has";
            for (const auto &grid : wrf_grids(base[4])) *error += " " + grid;
            return false;
        }
    }
    for (auto &l : *family)
        if (base_name(l.name) == base) {
            *family = {std::move(l)};
            return true;
        }
    *error = "unknown layout \"" + base + (args.empty() ? "" : ":") + std::string(args) +
             "\" (-L lists them)";
    return false;
}

}  // namespace

std::string base_name(std::string_view name) {
    return std::string(name.substr(0, name.find('(')));
}

bool resolve_layout(std::string_view spec, Layout *out, std::string *error) {
    const size_t colon = spec.find(':');
    const std::string base(spec.substr(0, colon));
    const std::string_view args =
        colon == std::string_view::npos ? std::string_view() : spec.substr(colon + 1);

    if (kGenericKeys.contains(base)) {
        Layout l;
        l.name = std::string(spec);
        l.source = "command line";
        if (!resolve_generic(base, args, &l, error)) return false;
        *out = std::move(l);
        return true;
    }

    const auto all = application_layouts();
    if (const Layout *exact = find_layout(all, spec); exact != nullptr) {
        *out = *exact;
        return true;
    }
    if (const auto k = kOneKey.find(base); k != kOneKey.end())
        return resolve_one_key(base, k->second, args, out, error);
    // A pre-built size keeps the doc's table numbers; any other size is built from formulas.
    std::string size_commas(args);
    for (char &ch : size_commas)
        if (ch == 'x') ch = ',';
    for (const auto &l : all) {
        if (base_name(l.name) != base) continue;
        if (colon == std::string_view::npos || l.name == base + "(" + std::string(args) + ")" ||
            l.name == base + "(" + size_commas + ")") {
            *out = l;
            return true;
        }
    }
    std::vector<Layout> family;
    if (!resolve_family(base, args, &family, error)) return false;
    *out = std::move(family[0]);
    return true;
}

bool apply_size(std::string *spec, int64_t size, std::string *error) {
    if (size < 1) {
        *error = "size must be >= 1";
        return false;
    }
    // The base, and the arguments of any spec form: "<base>:<args>", "<base>(<args>)", "<base>".
    const std::string_view s = *spec;
    const size_t cut = s.find_first_of(":(");
    std::string base(s.substr(0, cut));
    std::string args = cut == std::string_view::npos ? "" : std::string(s.substr(cut + 1));
    if (cut != std::string_view::npos && s[cut] == '(' && s.ends_with(")")) args.pop_back();
    // The papers' layouts by name become the spec whose one parameter is their size.
    static const std::map<std::string, std::string, std::less<>> alias{
        {"hpdc16_V", "submatrix"},     {"hpdc16_T", "triangular"}, {"hpdc16_stairT", "stair"},
        {"hpdc16_transpose", "transpose"}, {"tpds14_struct", "struct"}};
    if (const auto a = alias.find(base); a != alias.end()) base = a->second, args.clear();
    // A bare application base stands for its first pre-built size: keep that one's other
    // parameters (fft2's P, comb's direction and ghost width, specfem's DIM1 and DIM2).
    if (args.empty() && (base.starts_with("fft2_") || base.starts_with("comb_") ||
                         base.starts_with("specfem3d_mt_"))) {
        Layout l;
        if (resolve_layout(base, &l, error)) {
            const size_t open = l.name.find('(');
            args = l.name.substr(open + 1, l.name.size() - open - 2);
        }
    }
    const std::string n = std::to_string(size);
    // Sets key=n among the comma-separated arguments, in place or appended.
    const auto set_key = [&](const std::string &key) {
        std::string out;
        bool found = false;
        for (std::string_view item : split(args, ',')) {
            if (item.empty()) continue;
            if (!out.empty()) out += ',';
            const bool hit = item.starts_with(key + "=");
            out += hit ? key + "=" + n : std::string(item);
            found |= hit;
        }
        if (!found) (out += out.empty() ? "" : ",") += key + "=" + n;
        return out;
    };
    std::string sized;
    if (kOneKey.contains(base)) {
        sized = set_key(kOneKey.at(base).key);
    } else if (base == "vector" || base == "hvector") {
        sized = set_key("count");
    } else if (base == "contig") {
        KV kv;
        parse_kv(args, &kv, error);  // a bad spec fails in resolve_layout below
        sized = set_key(kv.contains("count") ? "count" : "bytes");
    } else if (base.starts_with("nas_mg_")) {
        sized = n + "x" + n + "x" + n;
    } else if (base.starts_with("nas_lu_")) {
        sized = n;
    } else if (base == "milc_su3_zdown") {
        sized = n + "x" + n + "x" + n + "x" + n;
    } else if (base.starts_with("specfem3d_mt_")) {
        std::vector<int64_t> d;
        if (!parse_dims(args, 3, &d, error)) return false;
        sized = std::to_string(d[0]) + "x" + std::to_string(d[1]) + "x" + n;
    } else if (base.starts_with("fft2_")) {
        sized = set_key("N");
    } else if (base.starts_with("comb_")) {
        auto items = split(args, ',');
        if (items.size() < 2) {
            *error = "comb needs <dir>,<n>^3[,g<g>], got \"" + args + "\"";
            return false;
        }
        sized = std::string(items[0]) + "," + n + "^3" +
                (items.size() > 2 ? "," + std::string(items[2]) : "");
    } else {
        *error = "\"" + *spec + "\" takes no size (-s sets the size of submatrix triangular "
                 "stair transpose contig vector hvector struct nas_mg_* nas_lu_* milc_su3_zdown "
                 "specfem3d_mt_* fft2_* comb_*)";
        return false;
    }
    const std::string candidate = base + ":" + sized;
    Layout l;
    if (!resolve_layout(candidate, &l, error)) {
        *error = candidate + ": " + *error;
        return false;
    }
    *spec = candidate;
    return true;
}

std::string list_layouts() {
    std::string s;
    char line[512];
    std::snprintf(line, sizeof line, "%-48s %12s %12s %12s %6s\n", "layout", "packed_B",
                  "extent_B", "buffer_B", "count");
    s += line;
    for (const auto &l : application_layouts()) {
        ucxdt_type_t h = UCXDT_TYPE_NULL;
        int64_t size = -1, lb = 0, ext = -1;
        if (build(*l.type, &h, false) == UCXDT_OK) {
            ucxdt_type_size(h, &size);
            ucxdt_type_extent(h, &lb, &ext);
            ucxdt_type_free(&h);
        }
        std::snprintf(line, sizeof line, "%-48s %12lld %12lld %12lld %6lld\n", l.name.c_str(),
                      static_cast<long long>(size * l.count), static_cast<long long>(ext),
                      static_cast<long long>(l.buffer_bytes), static_cast<long long>(l.count));
        s += line;
    }
    std::string wrf;
    for (char axis : {'x', 'y'}) {
        wrf += std::string(wrf.empty() ? "" : "; ") + axis + ":";
        for (const auto &grid : wrf_grids(axis)) wrf += " " + grid;
    }
    s += "\nparameterized (packed size follows from the parameters):\n"
         "  T is byte char int32 int64 float double (default double); lists are '/'-separated\n"
         "  vector:count=C,blocklength=B,stride=S[,type=T]       stride in elements\n"
         "  hvector:count=C,blocklength=B,stride=S[,type=T]      stride in bytes\n"
         "  contig:bytes=N | contig:count=C[,type=T]\n"
         "  indexed:blocklengths=a/b/..,displacements=x/y/..[,type=T]   displacements in "
         "elements, >= 0\n"
         "  indexed_block:blocklength=B,displacements=x/y/..[,type=T]\n"
         "  subarray:sizes=a/b/..,subsizes=..,starts=..[,order=c|fortran][,type=T]\n"
         "  struct:count=C          TPDS'14 {double; int; int; char} every 24 B "
         "(= tpds14_struct:count=C)\n"
         "  submatrix:n=N | triangular:n=N | stair:n=N       HPDC'16, ld = N + 64; default "
         "N = 1000\n"
         "  transpose:n=N           HPDC'16 transpose of an N x N double matrix "
         "(= hpdc16_transpose:N=N); default N = 256\n"
         "application layouts at any size (<base> alone: the first size listed above):\n"
         "  nas_mg_{x,y,z}:D1xD2xD3                  each >= 3, e.g. nas_mg_y:100x60x60\n"
         "  nas_lu_{x,y}:N                           e.g. nas_lu_y:500\n"
         "  milc_su3_zdown:D2xD3xD4xD5               D2 * D3 even, e.g. 12x12x12x12\n"
         "  specfem3d_mt_{send,recv}:D1xD2xD3        e.g. 3x2x6400\n"
         "  fft2_{gather,scatter}:N=N[,P=P]          P default 2, N / P >= 2 whole\n"
         "  comb_{send,recv}:<dir>,<n>^3[,g<g>]      dir e.g. -x, +y-z, -x-y-z; n >= g\n"
         "  wrf_{x,y}_{vec,sa}:<grid>                the doc's configs, " + wrf + "\n"
         "-s <size> sets: n= of submatrix triangular stair transpose; count= of vector "
         "hvector struct;\n"
         "  count= (if given) or bytes= of contig; D1 = D2 = D3 of nas_mg; N of nas_lu;\n"
         "  D2 = .. = D5 of milc; D3 of specfem3d_mt; N of fft2; n of comb. hpdc16_V/_T/_stairT/\n"
         "  _transpose and tpds14_struct become submatrix/triangular/stair/transpose/struct.\n"
         "  indexed, indexed_block, subarray, wrf_* and the other layouts take no size.\n";
    return s;
}

}  // namespace ucxdt::layouts
