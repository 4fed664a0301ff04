#include "mpi_desc.hpp"

#include <algorithm>
#include <climits>
#include <stdexcept>
#include <string>
#include <vector>

namespace ucxdt::support {

using layouts::TypeDesc;

namespace {

// Frees a non-predefined MPI datatype when it goes out of scope.
struct Owned {
    MPI_Datatype t = MPI_DATATYPE_NULL;
    bool derived = false;
    Owned() = default;
    Owned(const Owned &) = delete;
    Owned &operator=(const Owned &) = delete;
    Owned(Owned &&o) noexcept : t(o.t), derived(o.derived) { o.derived = false; }
    ~Owned() {
        if (derived) MPI_Type_free(&t);
    }
};

int to_int(int64_t v, const TypeDesc &d, const char *what) {
    if (v < INT_MIN || v > INT_MAX)
        throw std::invalid_argument(std::string(what) + " = " + std::to_string(v) +
                                    " does not fit MPI's int in " + layouts::to_string(d));
    return static_cast<int>(v);
}

std::vector<int> to_ints(const std::vector<int64_t> &v, const TypeDesc &d, const char *what) {
    std::vector<int> out;
    out.reserve(v.size());
    for (int64_t x : v) out.push_back(to_int(x, d, what));
    return out;
}

std::vector<MPI_Aint> to_aints(const std::vector<int64_t> &v) {
    return std::vector<MPI_Aint>(v.begin(), v.end());
}

void check(int rc, const TypeDesc &d, const char *call) {
    if (rc == MPI_SUCCESS) return;
    char msg[MPI_MAX_ERROR_STRING] = "";
    int len = 0;
    MPI_Error_string(rc, msg, &len);
    throw std::runtime_error(std::string(call) + " failed (" + msg + ") for " +
                             layouts::to_string(d));
}

void check_sizes(const TypeDesc &d, size_t n, size_t want, const char *what) {
    if (n != want)
        throw std::invalid_argument(std::string(what) + " has " + std::to_string(n) +
                                    " entries, expected " + std::to_string(want) + " in " +
                                    layouts::to_string(d));
}

Owned build(const TypeDesc &d) {
    Owned out;
    if (d.combiner == UCXDT_COMBINER_NAMED) {
        out.t = mpi_primitive(d.primitive);
        return out;
    }
    std::vector<Owned> kids;
    for (const auto &c : d.children) kids.push_back(build(*c));
    // Only a struct of count 0 has no child.
    if (kids.empty() && d.combiner != UCXDT_COMBINER_STRUCT)
        throw std::invalid_argument("no child in " + layouts::to_string(d));
    const MPI_Datatype old = kids.empty() ? MPI_DATATYPE_NULL : kids[0].t;
    const int count = to_int(d.count, d, "count");
    MPI_Datatype t = MPI_DATATYPE_NULL;
    int rc = MPI_SUCCESS;
    const char *call = "";
    switch (d.combiner) {
    case UCXDT_COMBINER_CONTIGUOUS:
        call = "MPI_Type_contiguous";
        rc = MPI_Type_contiguous(count, old, &t);
        break;
    case UCXDT_COMBINER_VECTOR:
        call = "MPI_Type_vector";
        rc = MPI_Type_vector(count, to_int(d.blocklength, d, "blocklength"),
                             to_int(d.stride, d, "stride"), old, &t);
        break;
    case UCXDT_COMBINER_HVECTOR:
        call = "MPI_Type_create_hvector";
        rc = MPI_Type_create_hvector(count, to_int(d.blocklength, d, "blocklength"),
                                     static_cast<MPI_Aint>(d.stride), old, &t);
        break;
    case UCXDT_COMBINER_INDEXED: {
        check_sizes(d, d.blocklengths.size(), d.count, "blocklengths");
        check_sizes(d, d.displacements.size(), d.count, "displacements");
        auto bl = to_ints(d.blocklengths, d, "blocklength");
        auto disp = to_ints(d.displacements, d, "displacement");
        call = "MPI_Type_indexed";
        rc = MPI_Type_indexed(count, bl.data(), disp.data(), old, &t);
        break;
    }
    case UCXDT_COMBINER_HINDEXED: {
        check_sizes(d, d.blocklengths.size(), d.count, "blocklengths");
        check_sizes(d, d.displacements.size(), d.count, "displacements");
        auto bl = to_ints(d.blocklengths, d, "blocklength");
        auto disp = to_aints(d.displacements);
        call = "MPI_Type_create_hindexed";
        rc = MPI_Type_create_hindexed(count, bl.data(), disp.data(), old, &t);
        break;
    }
    case UCXDT_COMBINER_INDEXED_BLOCK: {
        check_sizes(d, d.displacements.size(), d.count, "displacements");
        auto disp = to_ints(d.displacements, d, "displacement");
        call = "MPI_Type_create_indexed_block";
        rc = MPI_Type_create_indexed_block(count, to_int(d.blocklength, d, "blocklength"),
                                           disp.data(), old, &t);
        break;
    }
    case UCXDT_COMBINER_HINDEXED_BLOCK: {
        check_sizes(d, d.displacements.size(), d.count, "displacements");
        auto disp = to_aints(d.displacements);
        call = "MPI_Type_create_hindexed_block";
        rc = MPI_Type_create_hindexed_block(count, to_int(d.blocklength, d, "blocklength"),
                                            disp.data(), old, &t);
        break;
    }
    case UCXDT_COMBINER_SUBARRAY: {
        check_sizes(d, d.subsizes.size(), d.sizes.size(), "subsizes");
        check_sizes(d, d.starts.size(), d.sizes.size(), "starts");
        const int ndims = to_int(static_cast<int64_t>(d.sizes.size()), d, "ndims");
        auto sizes = to_ints(d.sizes, d, "size");
        auto subsizes = to_ints(d.subsizes, d, "subsize");
        auto starts = to_ints(d.starts, d, "start");
        call = "MPI_Type_create_subarray";
        rc = MPI_Type_create_subarray(ndims, sizes.data(), subsizes.data(), starts.data(),
                                      d.order == UCXDT_ORDER_C ? MPI_ORDER_C : MPI_ORDER_FORTRAN,
                                      old, &t);
        break;
    }
    case UCXDT_COMBINER_STRUCT: {
        check_sizes(d, d.blocklengths.size(), d.count, "blocklengths");
        check_sizes(d, d.displacements.size(), d.count, "displacements");
        check_sizes(d, kids.size(), d.count, "children");
        auto bl = to_ints(d.blocklengths, d, "blocklength");
        auto disp = to_aints(d.displacements);
        std::vector<MPI_Datatype> types;
        for (const auto &k : kids) types.push_back(k.t);
        call = "MPI_Type_create_struct";
        rc = MPI_Type_create_struct(count, bl.data(), disp.data(), types.data(), &t);
        break;
    }
    case UCXDT_COMBINER_RESIZED:
        call = "MPI_Type_create_resized";
        rc = MPI_Type_create_resized(old, static_cast<MPI_Aint>(d.lb),
                                     static_cast<MPI_Aint>(d.extent), &t);
        break;
    case UCXDT_COMBINER_DUP:
        call = "MPI_Type_dup";
        rc = MPI_Type_dup(old, &t);
        break;
    default:
        throw std::invalid_argument("unknown combiner " + std::to_string(d.combiner) + " in " +
                                    layouts::to_string(d));
    }
    check(rc, d, call);
    out.t = t;
    out.derived = true;
    return out;
}

}  // namespace

MPI_Datatype mpi_primitive(ucxdt_primitive_t p) {
    switch (p) {
    case UCXDT_BYTE: return MPI_BYTE;
    case UCXDT_CHAR: return MPI_CHAR;
    case UCXDT_INT8: return MPI_INT8_T;
    case UCXDT_INT16: return MPI_INT16_T;
    case UCXDT_INT32: return MPI_INT32_T;
    case UCXDT_INT64: return MPI_INT64_T;
    case UCXDT_UINT8: return MPI_UINT8_T;
    case UCXDT_UINT16: return MPI_UINT16_T;
    case UCXDT_UINT32: return MPI_UINT32_T;
    case UCXDT_UINT64: return MPI_UINT64_T;
    case UCXDT_FLOAT: return MPI_FLOAT;
    case UCXDT_DOUBLE: return MPI_DOUBLE;
    case UCXDT_LONG_DOUBLE: return MPI_LONG_DOUBLE;
    case UCXDT_FLOAT_COMPLEX: return MPI_C_FLOAT_COMPLEX;
    case UCXDT_DOUBLE_COMPLEX: return MPI_C_DOUBLE_COMPLEX;
    default: break;
    }
    throw std::invalid_argument("no MPI datatype for primitive " + std::to_string(p));
}

MPI_Datatype to_mpi(const TypeDesc &desc) {
    Owned o = build(desc);
    MPI_Datatype t = MPI_DATATYPE_NULL;
    if (o.derived) {
        t = o.t;
        o.derived = false;  // ownership passes to the caller
    } else {
        check(MPI_Type_dup(o.t, &t), desc, "MPI_Type_dup");
    }
    const int rc = MPI_Type_commit(&t);
    if (rc != MPI_SUCCESS) {
        MPI_Type_free(&t);
        check(rc, desc, "MPI_Type_commit");
    }
    return t;
}

BufferSpan mpi_span(MPI_Datatype t, int64_t count, int64_t slack) {
    MPI_Count size = 0, lb = 0, extent = 0, true_lb = 0, true_extent = 0;
    MPI_Type_size_x(t, &size);
    MPI_Type_get_extent_x(t, &lb, &extent);
    MPI_Type_get_true_extent_x(t, &true_lb, &true_extent);
    return buffer_span(size, extent, true_lb, true_extent, count, slack);
}

BufferSpan joint_span(const TypeDesc &desc, MPI_Datatype t, int64_t count, int64_t slack) {
    const BufferSpan a = buffer_span(desc, count, slack), b = mpi_span(t, count, slack);
    if (a.bytes == INT64_MAX || b.bytes == INT64_MAX) return {INT64_MAX, 0};
    const int64_t origin = std::max(a.origin, b.origin);
    return {origin + std::max(a.bytes - a.origin, b.bytes - b.origin), origin};
}

}  // namespace ucxdt::support
