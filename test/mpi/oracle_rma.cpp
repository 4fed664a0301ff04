// The one-sided oracle (part of test_oracle_<flavor>): random origin types and relayouts of the
// same signature, put and got by MPI_Put / MPI_Get through an MPI_Win of this process
// (MPI_COMM_SELF, fences) and by ucxdt_put_nbx / ucxdt_get_nbx between two ucxdt workers, from
// and into buffers that start equal. The written buffers, the gaps of their layouts included,
// must end equal. Types where this MPI deviates from MPI-4.1 (support/mpi_deviations.hpp) are
// left out, as the MPI's answer is then not the standard's.
#define OMPI_SKIP_MPICXX 1
#define MPICH_SKIP_MPICXX 1
#include <mpi.h>

#include "harness/layout_buffer.hpp"
#include "support/mpi_desc.hpp"
#include "support/mpi_deviations.hpp"
#include "harness/rma_support.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <string>
#include <vector>

namespace {

namespace L = ucxdt::layouts;
namespace T = ucxdt::testing;

// One MPI datatype, freed on scope exit.
struct MpiType {
    MPI_Datatype t;
    explicit MpiType(const L::TypeDesc &d) : t(T::to_mpi(d)) {}
    ~MpiType() { MPI_Type_free(&t); }
};

// A span whose origin lies inside its buffer (grown at the front if not): a window's target
// displacement must not be negative, and a pointer before its allocation is undefined.
T::BufferSpan from_origin(T::BufferSpan s) {
    if (s.origin < 0) s.bytes -= s.origin, s.origin = 0;
    return s;
}

// A buffer in which both placements of (desc, count) fit, MPI's and the standard's.
std::vector<std::byte> filled(const T::BufferSpan &s, uint64_t seed) {
    std::vector<std::byte> b(static_cast<size_t>(s.bytes));
    ucxdt::ref::fill_pattern(b.data(), s.bytes, seed);
    return b;
}

// Runs the put (or get) both ways; "" when the written buffers agree.
std::string compare(T::RndvPair &p, bool put, const L::TypeDesc &o, const L::TypeDesc &t, int64_t count,
                    uint64_t seed) {
    MpiType om(o), tm(t);
    T::Type oh(o), th(t);
    const T::BufferSpan os = from_origin(T::joint_span(o, om.t, count, 64)),
                        ts = from_origin(T::joint_span(t, tm.t, count, 64));
    std::vector<std::byte> obuf = filled(os, seed), tbuf = filled(ts, ~seed);
    std::vector<std::byte> obuf2 = obuf, tbuf2 = tbuf;
    // MPI: the target buffer as a window of this process, addressed in bytes from its start.
    const auto mpi_error = [](const char *what, int code) {
        char text[MPI_MAX_ERROR_STRING];
        int len = 0;
        MPI_Error_string(code, text, &len);
        return std::string(what) + ": " + std::string(text, static_cast<size_t>(len));
    };
    MPI_Win win;
    if (int e = MPI_Win_create(tbuf.data(), static_cast<MPI_Aint>(tbuf.size()), 1, MPI_INFO_NULL, MPI_COMM_SELF, &win))
        return mpi_error("MPI_Win_create", e);
    MPI_Win_fence(0, win);
    const int rc = put ? MPI_Put(obuf.data() + os.origin, static_cast<int>(count), om.t, 0, ts.origin,
                                 static_cast<int>(count), tm.t, win)
                       : MPI_Get(obuf.data() + os.origin, static_cast<int>(count), om.t, 0, ts.origin,
                                 static_cast<int>(count), tm.t, win);
    MPI_Win_fence(0, win);
    MPI_Win_free(&win);
    if (rc != MPI_SUCCESS) return mpi_error(put ? "MPI_Put" : "MPI_Get", rc);
    // ucxdt: the same between two workers.
    T::Region reg(p, tbuf2.data(), tbuf2.size());
    if (!reg.error.empty()) return reg.error;
    const ucxdt_status_ptr_t r =
        put ? ucxdt_put_nbx(p.ep[0], obuf2.data() + os.origin, count, oh.h, T::addr(tbuf2.data() + ts.origin), reg.rkey,
                            count, th.h, nullptr)
            : ucxdt_get_nbx(p.ep[0], obuf2.data() + os.origin, count, oh.h, T::addr(tbuf2.data() + ts.origin),
                            reg.rkey, count, th.h, nullptr);
    if (int st = p.wait(r); st != UCXDT_OK) return std::string("ucxdt: ") + T::status_name(st);
    if (int st = p.wait(ucxdt_ep_flush_nbx(p.ep[0], nullptr)); st != UCXDT_OK) return "flush: " + T::status_name(st);
    const std::vector<std::byte> &a = put ? tbuf : obuf, &b = put ? tbuf2 : obuf2;
    const int64_t origin = put ? ts.origin : os.origin;
    for (size_t i = 0; i < a.size(); ++i)
        if (a[i] != b[i])
            return std::string(put ? "target" : "origin") + " byte at offset " +
                   std::to_string(static_cast<int64_t>(i) - origin) + ": MPI wrote 0x" +
                   std::to_string(static_cast<int>(a[i])) + ", ucxdt 0x" + std::to_string(static_cast<int>(b[i]));
    return "";
}

TEST(OracleRma, PutAndGetAsMpiWindowsDo) {
    T::RndvPair p{T::RndvConfig{}};
    ASSERT_EQ(p.error, "");
    const auto known = T::known_deviations(T::mpi_identity());
    int compared = 0, skipped = 0;
    for (int i = 0; i < 300; ++i) {
        T::Rng rng(0x0a3c0000 + i);
        const L::TypeDescPtr o = T::random_desc(rng);
        const L::TypeDescPtr t = T::relayout(*o, rng);
        const int64_t count = 1 + static_cast<int64_t>(rng() % 3);
        if (!T::deviations_of(*o, known).empty() || !T::deviations_of(*t, known).empty()) {
            ++skipped;
            continue;
        }
        // The written side is the relayout: a random type may name a byte twice.
        const bool put = i % 2 == 0;
        std::string bad;
        try {
            bad = put ? compare(p, true, *o, *t, count, 0x900 + i) : compare(p, false, *t, *o, count, 0x900 + i);
        } catch (const std::invalid_argument &) {
            ++skipped;  // a count or displacement outside MPI's int
            continue;
        }
        EXPECT_EQ(bad, "") << (put ? "put" : "get") << " #" << i << " x " << count << ": " << T::short_desc(*o)
                           << " / " << T::short_desc(*t);
        ++compared;
    }
    std::printf("[ oracle   ] one-sided: %d compared with MPI windows, %d left out (known deviations, int range)\n",
                compared, skipped);
    EXPECT_GT(compared, 200);
}

}  // namespace
