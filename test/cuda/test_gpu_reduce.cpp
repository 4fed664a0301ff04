// ucxdt_reduce_local_async: every op MPI defines on each primitive, on device, managed and
// pinned memory, against the same op computed on the host (MPI_Reduce_local's definition,
// MPI-4.1 §6.9.2, §6.9.7); the ops MPI leaves undefined, and bad arguments, refused before
// anything is enqueued. The argument checks run without a GPU; the rest skip there.
#include "harness/gpu_check.hpp"

#include <complex>
#include <cstring>
#include <string>
#include <type_traits>
#include <vector>

namespace {

using namespace ucxdt::testing::gpu;

constexpr ucxdt_op_t kAllOps[] = {UCXDT_OP_SUM,  UCXDT_OP_PROD, UCXDT_OP_MIN,  UCXDT_OP_MAX,  UCXDT_OP_LAND,
                                  UCXDT_OP_LOR,  UCXDT_OP_LXOR, UCXDT_OP_BAND, UCXDT_OP_BOR,  UCXDT_OP_BXOR};

template <typename T>
T apply_int(ucxdt_op_t op, T a, T b) {
    switch (op) {
    case UCXDT_OP_SUM: return T(a + b);
    case UCXDT_OP_PROD: return T(a * b);
    case UCXDT_OP_MIN: return b < a ? b : a;
    case UCXDT_OP_MAX: return b > a ? b : a;
    case UCXDT_OP_LAND: return T((a != 0) && (b != 0));
    case UCXDT_OP_LOR: return T((a != 0) || (b != 0));
    case UCXDT_OP_LXOR: return T((a != 0) != (b != 0));
    case UCXDT_OP_BAND: return T(a & b);
    case UCXDT_OP_BOR: return T(a | b);
    default: return T(a ^ b);
    }
}

template <typename T>
T apply_float(ucxdt_op_t op, T a, T b) {
    switch (op) {
    case UCXDT_OP_SUM: return a + b;
    case UCXDT_OP_PROD: return a * b;
    case UCXDT_OP_MIN: return b < a ? b : a;
    default: return b > a ? b : a;
    }
}

template <typename T>
std::complex<T> apply_complex(ucxdt_op_t op, std::complex<T> a, std::complex<T> b) {
    return op == UCXDT_OP_SUM ? a + b : a * b;
}

// Whether MPI defines op on primitive, as ucxdt_cuda.h lists it.
bool defined(ucxdt_primitive_t p, ucxdt_op_t op) {
    const bool bitwise = op == UCXDT_OP_BAND || op == UCXDT_OP_BOR || op == UCXDT_OP_BXOR;
    switch (p) {
    case UCXDT_INT8: case UCXDT_INT16: case UCXDT_INT32: case UCXDT_INT64:
    case UCXDT_UINT8: case UCXDT_UINT16: case UCXDT_UINT32: case UCXDT_UINT64: return true;
    case UCXDT_BYTE: return bitwise;
    case UCXDT_FLOAT: case UCXDT_DOUBLE: return op <= UCXDT_OP_MAX;
    case UCXDT_FLOAT_COMPLEX: case UCXDT_DOUBLE_COMPLEX: return op <= UCXDT_OP_PROD;
    default: return false;
    }
}

// n elements of T from small values (so that products stay exact), zeros among them (the
// logical ops), negative ones for the signed types.
template <typename T>
struct Signed : std::bool_constant<(T(-1) < T(0))> {};
template <typename T>
struct Signed<std::complex<T>> : std::true_type {};

template <typename T>
std::vector<T> values(int64_t n, int seed) {
    std::vector<T> v(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) {
        const int64_t x = (i * 7 + seed * 13) % 11 - (Signed<T>::value ? 5 : 0);
        v[static_cast<size_t>(i)] = T(x);
    }
    return v;
}

template <typename T>
Bytes as_bytes(const std::vector<T> &v) {
    Bytes b(v.size() * sizeof(T));
    std::memcpy(b.data(), v.data(), b.size());
    return b;
}

// Runs the reduction on `mem` memory and compares every element with `expect`.
template <typename T, typename Expect>
void check(Mem mem, ucxdt_primitive_t p, ucxdt_op_t op, int64_t n, Expect expect) {
    const Stream stream;
    const std::vector<T> in = values<T>(n, 1), inout = values<T>(n, 2);
    Buffer a(mem, n * int64_t{sizeof(T)}), b(mem, n * int64_t{sizeof(T)});
    a.upload(as_bytes(in));
    b.upload(as_bytes(inout));
    ASSERT_EQ(ucxdt_reduce_local_async(a.data(), b.data(), n, p, op, stream.get()), UCXDT_OK) << ucxdt_last_error();
    must(cudaStreamSynchronize(stream.get()), "reduction");
    const Bytes got = b.download();
    for (int64_t i = 0; i < n; ++i) {
        T g;
        std::memcpy(&g, got.data() + i * int64_t{sizeof(T)}, sizeof g);
        const T want = expect(in[static_cast<size_t>(i)], inout[static_cast<size_t>(i)]);
        ASSERT_TRUE(std::memcmp(&g, &want, sizeof g) == 0) << "element " << i << " of " << n;
    }
}

class GpuReduce : public GpuTest {};

TEST_F(GpuReduce, EveryDefinedOpOnEveryPrimitive) {
    for (Mem mem : {Mem::Device, Mem::Managed, Mem::Pinned}) {
        for (ucxdt_op_t op : kAllOps) {
            for (int64_t n : {int64_t{1}, int64_t{1000}, int64_t{1} << 21}) {  // 2^21: past one pass of the grid
                SCOPED_TRACE(std::string(mem_name(mem)) + ", op " + std::to_string(op) + ", n " + std::to_string(n));
                auto i = [&](auto tag, ucxdt_primitive_t p) {
                    using T = decltype(tag);
                    if (defined(p, op)) check<T>(mem, p, op, n, [&](T x, T y) { return apply_int<T>(op, x, y); });
                };
                i(int8_t{}, UCXDT_INT8), i(int16_t{}, UCXDT_INT16), i(int32_t{}, UCXDT_INT32), i(int64_t{}, UCXDT_INT64);
                i(uint8_t{}, UCXDT_UINT8), i(uint16_t{}, UCXDT_UINT16), i(uint32_t{}, UCXDT_UINT32);
                i(uint64_t{}, UCXDT_UINT64), i(uint8_t{}, UCXDT_BYTE);
                if (defined(UCXDT_FLOAT, op)) {
                    check<float>(mem, UCXDT_FLOAT, op, n, [&](float x, float y) { return apply_float(op, x, y); });
                    check<double>(mem, UCXDT_DOUBLE, op, n, [&](double x, double y) { return apply_float(op, x, y); });
                }
                if (defined(UCXDT_FLOAT_COMPLEX, op)) {
                    using CF = std::complex<float>;
                    using CD = std::complex<double>;
                    check<CF>(mem, UCXDT_FLOAT_COMPLEX, op, n, [&](CF x, CF y) { return apply_complex(op, x, y); });
                    check<CD>(mem, UCXDT_DOUBLE_COMPLEX, op, n, [&](CD x, CD y) { return apply_complex(op, x, y); });
                }
                if (HasFatalFailure()) return;
            }
        }
    }
}

// In place (inbuf == inoutbuf) doubles each element under SUM.
TEST_F(GpuReduce, InPlace) {
    const Stream stream;
    const std::vector<int32_t> v = values<int32_t>(4096, 3);
    Buffer a(Mem::Device, 4096 * 4);
    a.upload(as_bytes(v));
    ASSERT_EQ(ucxdt_reduce_local_async(a.data(), a.data(), 4096, UCXDT_INT32, UCXDT_OP_SUM, stream.get()), UCXDT_OK);
    must(cudaStreamSynchronize(stream.get()), "reduction");
    const Bytes got = a.download();
    for (int i = 0; i < 4096; ++i) {
        int32_t g;
        std::memcpy(&g, got.data() + 4 * i, 4);
        ASSERT_EQ(g, 2 * v[static_cast<size_t>(i)]) << i;
    }
}

// Refusals come before any GPU work, so they need no GPU: an op MPI leaves undefined on the
// primitive, the primitives without GPU arithmetic here, and bad arguments.
TEST(Reduce, UndefinedOpsAndBadArgumentsAreRefused) {
    int x = 0, y = 0;
    for (int p = 0; p < UCXDT_PRIMITIVE_LAST; ++p)
        for (ucxdt_op_t op : kAllOps)
            if (!defined(static_cast<ucxdt_primitive_t>(p), op)) {
                EXPECT_EQ(ucxdt_reduce_local_async(&x, &y, 1, static_cast<ucxdt_primitive_t>(p), op, nullptr),
                          UCXDT_ERR_UNSUPPORTED)
                    << "primitive " << p << ", op " << op;
                EXPECT_NE(std::string(ucxdt_last_error()), "");
            }
    EXPECT_EQ(ucxdt_reduce_local_async(&x, &y, -1, UCXDT_INT32, UCXDT_OP_SUM, nullptr), UCXDT_ERR_INVALID_PARAM);
    EXPECT_EQ(ucxdt_reduce_local_async(nullptr, &y, 1, UCXDT_INT32, UCXDT_OP_SUM, nullptr), UCXDT_ERR_INVALID_PARAM);
    EXPECT_EQ(ucxdt_reduce_local_async(&x, nullptr, 1, UCXDT_INT32, UCXDT_OP_SUM, nullptr), UCXDT_ERR_INVALID_PARAM);
    EXPECT_EQ(ucxdt_reduce_local_async(&x, &y, 1, static_cast<ucxdt_primitive_t>(99), UCXDT_OP_SUM, nullptr),
              UCXDT_ERR_INVALID_PARAM);
    EXPECT_EQ(ucxdt_reduce_local_async(&x, &y, 1, UCXDT_INT32, static_cast<ucxdt_op_t>(-1), nullptr),
              UCXDT_ERR_INVALID_PARAM);
    EXPECT_EQ(ucxdt_reduce_local_async(&x, &y, 1, UCXDT_INT32, UCXDT_OP_LAST, nullptr), UCXDT_ERR_INVALID_PARAM);
    // Nothing to do: no array is touched, none needed.
    EXPECT_EQ(ucxdt_reduce_local_async(nullptr, nullptr, 0, UCXDT_INT32, UCXDT_OP_SUM, nullptr), UCXDT_OK);
    EXPECT_EQ(x, 0);
    EXPECT_EQ(y, 0);
}

}  // namespace
