#include "registry.hpp"

#include <cstdio>
#include <cstdlib>
#include <map>

namespace ucxdt::layouts {

namespace {

bool parse_kv(std::string_view args, std::map<std::string, std::string> *kv, std::string *error) {
    while (!args.empty()) {
        const size_t comma = args.find(',');
        const std::string_view item = args.substr(0, comma);
        const size_t eq = item.find('=');
        if (eq == std::string_view::npos || eq == 0) {
            *error = "expected key=value, got \"" + std::string(item) + "\"";
            return false;
        }
        (*kv)[std::string(item.substr(0, eq))] = std::string(item.substr(eq + 1));
        args = comma == std::string_view::npos ? std::string_view() : args.substr(comma + 1);
    }
    return true;
}

bool get_int(const std::map<std::string, std::string> &kv, const char *key, int64_t *v,
             bool required, std::string *error) {
    const auto it = kv.find(key);
    if (it == kv.end()) {
        if (required) *error = std::string("missing ") + key + "=";
        return !required;
    }
    char *end = nullptr;
    *v = std::strtoll(it->second.c_str(), &end, 10);
    if (it->second.empty() || *end != '\0') {
        *error = std::string("bad number for ") + key + ": \"" + it->second + "\"";
        return false;
    }
    return true;
}

bool get_prim(const std::map<std::string, std::string> &kv, ucxdt_primitive_t *p,
              std::string *error) {
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
    l->buffer_bytes = tlb + text;
    l->expect_packed = size;
    return true;
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

    if (base == "vector" || base == "contig") {
        std::map<std::string, std::string> kv;
        if (!parse_kv(args, &kv, error)) return false;
        ucxdt_primitive_t p = UCXDT_DOUBLE;
        if (!get_prim(kv, &p, error)) return false;
        Layout l;
        l.name = std::string(spec);
        l.source = "command line";
        if (base == "vector") {
            int64_t c = 0, b = 0, s = 0;
            if (!get_int(kv, "count", &c, true, error) ||
                !get_int(kv, "blocklength", &b, true, error) ||
                !get_int(kv, "stride", &s, true, error))
                return false;
            if (c < 1 || b < 1 || s < 0) {
                *error = "vector needs count >= 1, blocklength >= 1, stride >= 0";
                return false;
            }
            l.type = vector(c, b, s, named(p));
        } else {
            int64_t bytes = -1, c = -1;
            if (!get_int(kv, "bytes", &bytes, false, error) ||
                !get_int(kv, "count", &c, false, error))
                return false;
            if ((bytes < 0) == (c < 0)) {
                *error = "contig needs exactly one of bytes= and count=";
                return false;
            }
            l.type = bytes >= 0 ? contiguous(bytes, named(UCXDT_BYTE)) : contiguous(c, named(p));
        }
        if (!finish_generic(&l, error)) return false;
        *out = std::move(l);
        return true;
    }

    if (base == "submatrix" || base == "triangular" || base == "stair") {
        std::map<std::string, std::string> kv;
        if (!parse_kv(args, &kv, error)) return false;
        int64_t n = 1000;
        if (!get_int(kv, "n", &n, false, error)) return false;
        if (n < 1 || n > 100000) {
            *error = "n must be in [1, 100000]";
            return false;
        }
        auto ls = paper_layouts(n);  // V, T, stairT in that order
        *out = ls[base == "submatrix" ? 0 : base == "triangular" ? 1 : 2];
        return true;
    }

    const auto all = application_layouts();
    if (const Layout *exact = find_layout(all, spec); exact != nullptr) {
        *out = *exact;
        return true;
    }
    std::string size(args);
    std::string size_commas = size;
    for (char &ch : size_commas)
        if (ch == 'x') ch = ',';
    for (const auto &l : all) {
        if (base_name(l.name) != base) continue;
        if (colon == std::string_view::npos || l.name == base + "(" + size + ")" ||
            l.name == base + "(" + size_commas + ")") {
            *out = l;
            return true;
        }
    }
    *error = "unknown layout \"" + std::string(spec) + "\" (-L lists them)";
    return false;
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
    s += "\nparameterized (packed size follows from the parameters):\n"
         "  vector:count=C,blocklength=B,stride=S[,type=T]   (T: byte char int32 int64 float "
         "double; default double)\n"
         "  contig:bytes=N | contig:count=C[,type=T]\n"
         "  submatrix:n=N | triangular:n=N | stair:n=N       (HPDC'16, ld = N + 64; default "
         "N = 1000)\n"
         "  <base>:<size>  e.g. nas_mg_y:514x258x258, wrf_x_vec:8x8, fft2_scatter:N=1536,P=2\n";
    return s;
}

}  // namespace ucxdt::layouts
