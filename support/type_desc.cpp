#include "type_desc.hpp"

#include <complex>
#include <sstream>

namespace ucxdt::layouts {

namespace {

TypeDescPtr make(TypeDesc d) { return std::make_shared<const TypeDesc>(std::move(d)); }

TypeDesc with_child(ucxdt_combiner_t c, TypeDescPtr old) {
    TypeDesc d;
    d.combiner = c;
    d.children.push_back(std::move(old));
    return d;
}

const char *primitive_name(ucxdt_primitive_t p) {
    static const char *names[] = {"byte",   "char",   "int8",   "int16",  "int32",
                                  "int64",  "uint8",  "uint16", "uint32", "uint64",
                                  "float",  "double", "ldouble", "cfloat", "cdouble"};
    return p < UCXDT_PRIMITIVE_LAST ? names[p] : "?";
}

void join(std::ostringstream &os, const std::vector<int64_t> &v) {
    os << '[';
    for (size_t i = 0; i < v.size(); ++i) os << (i ? "," : "") << v[i];
    os << ']';
}

}  // namespace

int64_t primitive_size(ucxdt_primitive_t p) {
    switch (p) {
    case UCXDT_BYTE: case UCXDT_CHAR: case UCXDT_INT8: case UCXDT_UINT8: return 1;
    case UCXDT_INT16: case UCXDT_UINT16: return 2;
    case UCXDT_INT32: case UCXDT_UINT32: case UCXDT_FLOAT: return 4;
    case UCXDT_INT64: case UCXDT_UINT64: case UCXDT_DOUBLE: return 8;
    case UCXDT_LONG_DOUBLE: return sizeof(long double);
    case UCXDT_FLOAT_COMPLEX: return sizeof(std::complex<float>);
    case UCXDT_DOUBLE_COMPLEX: return sizeof(std::complex<double>);
    default: return 0;
    }
}

TypeDescPtr named(ucxdt_primitive_t p) {
    TypeDesc d;
    d.primitive = p;
    return make(std::move(d));
}

TypeDescPtr contiguous(int64_t count, TypeDescPtr old) {
    auto d = with_child(UCXDT_COMBINER_CONTIGUOUS, std::move(old));
    d.count = count;
    return make(std::move(d));
}

TypeDescPtr vector(int64_t count, int64_t blocklength, int64_t stride, TypeDescPtr old) {
    auto d = with_child(UCXDT_COMBINER_VECTOR, std::move(old));
    d.count = count, d.blocklength = blocklength, d.stride = stride;
    return make(std::move(d));
}

TypeDescPtr hvector(int64_t count, int64_t blocklength, int64_t stride_bytes, TypeDescPtr old) {
    auto d = with_child(UCXDT_COMBINER_HVECTOR, std::move(old));
    d.count = count, d.blocklength = blocklength, d.stride = stride_bytes;
    return make(std::move(d));
}

TypeDescPtr indexed(std::vector<int64_t> bl, std::vector<int64_t> disp, TypeDescPtr old) {
    auto d = with_child(UCXDT_COMBINER_INDEXED, std::move(old));
    d.count = static_cast<int64_t>(bl.size());
    d.blocklengths = std::move(bl), d.displacements = std::move(disp);
    return make(std::move(d));
}

TypeDescPtr hindexed(std::vector<int64_t> bl, std::vector<int64_t> disp, TypeDescPtr old) {
    auto d = with_child(UCXDT_COMBINER_HINDEXED, std::move(old));
    d.count = static_cast<int64_t>(bl.size());
    d.blocklengths = std::move(bl), d.displacements = std::move(disp);
    return make(std::move(d));
}

TypeDescPtr indexed_block(int64_t blocklength, std::vector<int64_t> disp, TypeDescPtr old) {
    auto d = with_child(UCXDT_COMBINER_INDEXED_BLOCK, std::move(old));
    d.count = static_cast<int64_t>(disp.size());
    d.blocklength = blocklength, d.displacements = std::move(disp);
    return make(std::move(d));
}

TypeDescPtr hindexed_block(int64_t blocklength, std::vector<int64_t> disp, TypeDescPtr old) {
    auto d = with_child(UCXDT_COMBINER_HINDEXED_BLOCK, std::move(old));
    d.count = static_cast<int64_t>(disp.size());
    d.blocklength = blocklength, d.displacements = std::move(disp);
    return make(std::move(d));
}

TypeDescPtr subarray(std::vector<int64_t> sizes, std::vector<int64_t> subsizes,
                     std::vector<int64_t> starts, ucxdt_order_t order, TypeDescPtr old) {
    auto d = with_child(UCXDT_COMBINER_SUBARRAY, std::move(old));
    d.sizes = std::move(sizes), d.subsizes = std::move(subsizes), d.starts = std::move(starts);
    d.order = order;
    return make(std::move(d));
}

TypeDescPtr structure(std::vector<int64_t> bl, std::vector<int64_t> disp,
                      std::vector<TypeDescPtr> types) {
    TypeDesc d;
    d.combiner = UCXDT_COMBINER_STRUCT;
    d.count = static_cast<int64_t>(bl.size());
    d.blocklengths = std::move(bl), d.displacements = std::move(disp);
    d.children = std::move(types);
    return make(std::move(d));
}

TypeDescPtr resized(TypeDescPtr old, int64_t lb, int64_t extent) {
    auto d = with_child(UCXDT_COMBINER_RESIZED, std::move(old));
    d.lb = lb, d.extent = extent;
    return make(std::move(d));
}

TypeDescPtr dup(TypeDescPtr old) { return make(with_child(UCXDT_COMBINER_DUP, std::move(old))); }

ucxdt_status_t build(const TypeDesc &d, ucxdt_type_t *type, bool commit) {
    if (d.combiner == UCXDT_COMBINER_NAMED) {
        ucxdt_type_t t = ucxdt_type_primitive(d.primitive);
        if (t == UCXDT_TYPE_NULL) return UCXDT_ERR_INVALID_PARAM;
        *type = t;
        return UCXDT_OK;
    }
    std::vector<ucxdt_type_t> kids;
    ucxdt_status_t st = UCXDT_OK;
    for (const auto &c : d.children) {
        ucxdt_type_t k = UCXDT_TYPE_NULL;
        st = build(*c, &k, false);
        if (st != UCXDT_OK) break;
        kids.push_back(k);
    }
    ucxdt_type_t t = UCXDT_TYPE_NULL;
    if (st == UCXDT_OK) {
        ucxdt_type_t old = kids.empty() ? UCXDT_TYPE_NULL : kids[0];
        switch (d.combiner) {
        case UCXDT_COMBINER_CONTIGUOUS: st = ucxdt_type_contiguous(d.count, old, &t); break;
        case UCXDT_COMBINER_VECTOR:
            st = ucxdt_type_vector(d.count, d.blocklength, d.stride, old, &t);
            break;
        case UCXDT_COMBINER_HVECTOR:
            st = ucxdt_type_hvector(d.count, d.blocklength, d.stride, old, &t);
            break;
        case UCXDT_COMBINER_INDEXED:
            st = ucxdt_type_indexed(d.count, d.blocklengths.data(), d.displacements.data(), old,
                                    &t);
            break;
        case UCXDT_COMBINER_HINDEXED:
            st = ucxdt_type_hindexed(d.count, d.blocklengths.data(), d.displacements.data(),
                                     old, &t);
            break;
        case UCXDT_COMBINER_INDEXED_BLOCK:
            st = ucxdt_type_indexed_block(d.count, d.blocklength, d.displacements.data(), old,
                                          &t);
            break;
        case UCXDT_COMBINER_HINDEXED_BLOCK:
            st = ucxdt_type_hindexed_block(d.count, d.blocklength, d.displacements.data(), old,
                                           &t);
            break;
        case UCXDT_COMBINER_SUBARRAY:
            st = ucxdt_type_subarray(static_cast<int>(d.sizes.size()), d.sizes.data(),
                                     d.subsizes.data(), d.starts.data(), d.order, old, &t);
            break;
        case UCXDT_COMBINER_STRUCT:
            st = ucxdt_type_struct(d.count, d.blocklengths.data(), d.displacements.data(),
                                   kids.data(), &t);
            break;
        case UCXDT_COMBINER_RESIZED: st = ucxdt_type_resized(old, d.lb, d.extent, &t); break;
        case UCXDT_COMBINER_DUP: st = ucxdt_type_dup(old, &t); break;
        default: st = UCXDT_ERR_INVALID_PARAM; break;
        }
    }
    for (auto &k : kids) {
        ucxdt_combiner_t c;
        if (ucxdt_type_combiner(k, &c) == UCXDT_OK && c != UCXDT_COMBINER_NAMED) ucxdt_type_free(&k);
    }
    if (st == UCXDT_OK && commit) {
        st = ucxdt_type_commit(t);
        if (st != UCXDT_OK) ucxdt_type_free(&t);
    }
    if (st == UCXDT_OK) *type = t;
    return st;
}

std::string to_string(const TypeDesc &d) {
    std::ostringstream os;
    auto child = [&](size_t i) { return to_string(*d.children.at(i)); };
    switch (d.combiner) {
    case UCXDT_COMBINER_NAMED: os << primitive_name(d.primitive); break;
    case UCXDT_COMBINER_CONTIGUOUS: os << "contig(" << d.count << "," << child(0) << ")"; break;
    case UCXDT_COMBINER_VECTOR:
    case UCXDT_COMBINER_HVECTOR:
        os << (d.combiner == UCXDT_COMBINER_VECTOR ? "vector(" : "hvector(") << d.count << ","
           << d.blocklength << "," << d.stride << "," << child(0) << ")";
        break;
    case UCXDT_COMBINER_INDEXED:
    case UCXDT_COMBINER_HINDEXED:
        os << (d.combiner == UCXDT_COMBINER_INDEXED ? "indexed(" : "hindexed(");
        join(os, d.blocklengths), os << ",", join(os, d.displacements);
        os << "," << child(0) << ")";
        break;
    case UCXDT_COMBINER_INDEXED_BLOCK:
    case UCXDT_COMBINER_HINDEXED_BLOCK:
        os << (d.combiner == UCXDT_COMBINER_INDEXED_BLOCK ? "indexed_block(" : "hindexed_block(")
           << d.blocklength << ",";
        join(os, d.displacements);
        os << "," << child(0) << ")";
        break;
    case UCXDT_COMBINER_SUBARRAY:
        os << "subarray(";
        join(os, d.sizes), os << ",", join(os, d.subsizes), os << ",", join(os, d.starts);
        os << "," << (d.order == UCXDT_ORDER_C ? "C" : "F") << "," << child(0) << ")";
        break;
    case UCXDT_COMBINER_STRUCT:
        os << "struct(";
        join(os, d.blocklengths), os << ",", join(os, d.displacements), os << ",[";
        for (size_t i = 0; i < d.children.size(); ++i) os << (i ? "," : "") << child(i);
        os << "])";
        break;
    case UCXDT_COMBINER_RESIZED:
        os << "resized(" << child(0) << "," << d.lb << "," << d.extent << ")";
        break;
    case UCXDT_COMBINER_DUP: os << "dup(" << child(0) << ")"; break;
    }
    return os.str();
}

}  // namespace ucxdt::layouts
