// ucxdt types as UCP generic datatypes (include/ucxdt/ucp_generic.h) over real UCP transfers: two
// workers of one context in this process, connected by worker addresses. Each case sends
// (buffer, count, send type) and receives into a different layout of the same signature
// (relayout) over tag, AM and stream; the receive buffer must hold the sent data in type-map
// order at the map's bytes and its poison everywhere else. The Gpu cases do the same with
// either side, or both, in CUDA device memory (skipped without a GPU), which goes through the
// pinned ring of the generic datatype.
#include "harness/layout_buffer.hpp"
#include "harness/two_process.hpp"
#include "harness/ucp_pair.hpp"

#include <ucxdt/ucp_generic.h>

#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <stdexcept>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include <sys/wait.h>
#include <unistd.h>

namespace {

namespace L = ucxdt::layouts;
namespace T = ucxdt::testing;
using T::app_layouts, T::Buffer, T::check_received, T::have_gpu, T::Mem, T::mem_name, T::packed, T::Placed,
    T::short_desc, T::Type;

constexpr auto kTimeout = std::chrono::seconds(60);
constexpr uint16_t kAmId = 7;
constexpr uint64_t kTag = 0x5eed;
// Messages above this go rendezvous, below it eager (fixed so that both paths are certain).
constexpr const char *kRndvThresh = "8192";

// The AM receive side: the callback starts ucp_am_recv_data_nbx into `buffer`.
struct AmReceive {
    void *buffer = nullptr;
    int64_t count = 0;
    ucp_datatype_t datatype = 0;
    ucs_status_ptr_t request = nullptr;
    bool arrived = false, rndv = false;
    int64_t length = 0;
    ucs_status_t immediate = UCS_INPROGRESS;  // status when the receive completed at once
};

class Ucp : public T::UcpPair {
public:
    AmReceive am;
    std::string error;  // why setup failed

    Ucp() {
        error = open(UCP_FEATURE_TAG | UCP_FEATURE_AM | UCP_FEATURE_STREAM, {{"RNDV_THRESH", kRndvThresh}});
        if (!error.empty()) return;
        ucp_am_handler_param_t hp{};
        hp.field_mask = UCP_AM_HANDLER_PARAM_FIELD_ID | UCP_AM_HANDLER_PARAM_FIELD_FLAGS |
                        UCP_AM_HANDLER_PARAM_FIELD_CB | UCP_AM_HANDLER_PARAM_FIELD_ARG;
        hp.id = kAmId;
        // Persistent data: eager messages, too, can then go through ucp_am_recv_data_nbx and so
        // through the generic datatype's unpack.
        hp.flags = UCP_AM_FLAG_WHOLE_MSG | UCP_AM_FLAG_PERSISTENT_DATA;
        hp.cb = am_callback;
        hp.arg = this;
        if (const ucs_status_t st = ucp_worker_set_am_recv_handler(w[1], &hp); st != UCS_OK)
            error = std::string("ucp_worker_set_am_recv_handler: ") + ucs_status_string(st);
    }

    // Progresses both workers until `request` completes; its status (UCS_ERR_TIMED_OUT after
    // kTimeout, so that a hang fails the test). Frees the request.
    ucs_status_t wait(ucs_status_ptr_t request) {
        if (request == nullptr) return UCS_OK;
        if (UCS_PTR_IS_ERR(request)) return UCS_PTR_STATUS(request);
        const auto deadline = std::chrono::steady_clock::now() + kTimeout;
        ucs_status_t st;
        while ((st = ucp_request_check_status(request)) == UCS_INPROGRESS) {
            progress();
            if (std::chrono::steady_clock::now() > deadline) {
                ucp_request_cancel(w[0], request);
                ucp_request_cancel(w[1], request);
                ucp_request_free(request);
                return UCS_ERR_TIMED_OUT;
            }
        }
        ucp_request_free(request);
        return st;
    }

    void progress() {
        ucp_worker_progress(w[0]);
        ucp_worker_progress(w[1]);
    }

    bool progress_until(const bool &flag) {
        const auto deadline = std::chrono::steady_clock::now() + kTimeout;
        while (!flag) {
            progress();
            if (std::chrono::steady_clock::now() > deadline) return false;
        }
        return true;
    }

private:
    static ucs_status_t am_callback(void *arg, const void *, size_t, void *data, size_t length,
                                    const ucp_am_recv_param_t *param) {
        auto &a = static_cast<Ucp *>(arg)->am;
        a.arrived = true;
        a.rndv = (param->recv_attr & UCP_AM_RECV_ATTR_FLAG_RNDV) != 0;
        a.length = static_cast<int64_t>(length);
        ucp_request_param_t p{};
        p.op_attr_mask = UCP_OP_ATTR_FIELD_DATATYPE;
        p.datatype = a.datatype;
        a.request = ucp_am_recv_data_nbx(static_cast<Ucp *>(arg)->w[1], data, a.buffer,
                                         static_cast<size_t>(a.count), &p);
        if (a.request == nullptr) a.immediate = UCS_OK;
        // Eager data (FLAG_DATA) stays with UCP, which now owns it; rndv ignores the status.
        return UCS_INPROGRESS;
    }
};

Ucp &ucp() {
    static Ucp u;
    return u;
}

// A UCP datatype made from a description. The ucxdt handle is freed right after creation, so
// every transfer also checks that the datatype keeps its own reference.
struct Datatype {
    ucp_datatype_t dt = 0;
    int64_t size = 0;
    explicit Datatype(const L::TypeDesc &d) {
        Type t(d);
        ucxdt_type_size(t.h, &size);
        const ucs_status_t st = ucxdt_ucp_dt_create(t.h, &dt);
        if (st != UCS_OK)
            throw std::runtime_error(std::string("ucxdt_ucp_dt_create: ") + ucxdt_last_error());
    }
    ~Datatype() { ucxdt_ucp_dt_destroy(dt); }
    Datatype(const Datatype &) = delete;
    Datatype &operator=(const Datatype &) = delete;
};


enum class Api { tag, am, stream };
const char *api_name(Api a) { return a == Api::tag ? "tag" : a == Api::am ? "am" : "stream"; }

struct Result {
    ucs_status_t send = UCS_OK, recv = UCS_OK;
    bool am_rndv = false;
    std::string why;  // a failure of the harness itself
};

// Sends (send_buf, send_count, send_dt) from w[0] and receives (recv_buf, recv_count,
// recv_dt) on w[1] through `api`.
Result transfer(Api api, const Datatype &send_dt, void *send_buf, int64_t send_count,
                const Datatype &recv_dt, void *recv_buf, int64_t recv_count) {
    Ucp &u = ucp();
    Result r;
    ucp_request_param_t sp{};
    sp.op_attr_mask = UCP_OP_ATTR_FIELD_DATATYPE;
    sp.datatype = send_dt.dt;
    ucp_request_param_t rp{};
    rp.op_attr_mask = UCP_OP_ATTR_FIELD_DATATYPE;
    rp.datatype = recv_dt.dt;
    const auto scount = static_cast<size_t>(send_count);
    const auto rcount = static_cast<size_t>(recv_count);
    switch (api) {
    case Api::tag: {
        // Posted first: the expected path; the unexpected path is taken by am and stream.
        ucs_status_ptr_t rreq = ucp_tag_recv_nbx(u.w[1], recv_buf, rcount, kTag, ~0ull, &rp);
        ucs_status_ptr_t sreq = ucp_tag_send_nbx(u.ep[0], send_buf, scount, kTag, &sp);
        r.send = u.wait(sreq);
        r.recv = u.wait(rreq);
        break;
    }
    case Api::am: {
        u.am = AmReceive{};
        u.am.buffer = recv_buf;
        u.am.count = recv_count;
        u.am.datatype = recv_dt.dt;
        ucs_status_ptr_t sreq = ucp_am_send_nbx(u.ep[0], kAmId, nullptr, 0, send_buf, scount, &sp);
        if (!u.progress_until(u.am.arrived)) {
            r.why = "the active message did not arrive";
            u.wait(sreq);
            return r;
        }
        r.am_rndv = u.am.rndv;
        r.recv = u.am.immediate == UCS_OK ? UCS_OK : u.wait(u.am.request);
        r.send = u.wait(sreq);
        break;
    }
    case Api::stream: {
        size_t length = 0;
        rp.op_attr_mask |= UCP_OP_ATTR_FIELD_FLAGS;
        rp.flags = UCP_STREAM_RECV_FLAG_WAITALL;
        ucs_status_ptr_t sreq = ucp_stream_send_nbx(u.ep[0], send_buf, scount, &sp);
        ucs_status_ptr_t rreq = ucp_stream_recv_nbx(u.ep[1], recv_buf, rcount, &length, &rp);
        r.send = u.wait(sreq);
        r.recv = u.wait(rreq);
        break;
    }
    }
    return r;
}

struct Counters {
    int eager = 0, rndv = 0;
};

// One case over every API: send `count` elements of `send` and receive into `recv` (same
// signature). "" when all transfers deliver exactly.
std::string run_case(const L::TypeDescPtr &send, const L::TypeDescPtr &recv, int64_t count,
                     uint64_t seed, Counters *am_paths = nullptr, Mem smem = Mem::host,
                     Mem rmem = Mem::host) {
    Datatype sdt(*send), rdt(*recv);
    if (sdt.size != rdt.size) return "support: relayout changed the size";
    const int64_t total = sdt.size * count;
    Buffer src(*send, count, seed);
    const std::vector<std::byte> sent = packed(*send, src.ptr(), count, total);
    Placed src_at(src, smem);
    for (Api api : {Api::tag, Api::am, Api::stream}) {
        if (api == Api::stream && total == 0) continue;  // a stream has no empty message
        Buffer dst(*recv, count, ~seed);
        const std::vector<std::byte> poison = dst.bytes;
        Placed dst_at(dst, rmem);
        const Result r = transfer(api, sdt, src_at.ptr(), count, rdt, dst_at.ptr(), count);
        const std::string where = std::string(api_name(api)) + " " + mem_name(smem) + " to " +
                                  mem_name(rmem) + " (" + std::to_string(total) + " bytes): ";
        if (!r.why.empty()) return where + r.why;
        if (r.send != UCS_OK) return where + "send: " + ucs_status_string(r.send);
        if (r.recv != UCS_OK) return where + "receive: " + ucs_status_string(r.recv);
        dst_at.fetch();
        const std::string bad = check_received(*recv, count, dst, poison, sent, total);
        if (!bad.empty()) return where + bad;
        if (api == Api::am && am_paths) ++(r.am_rndv ? am_paths->rndv : am_paths->eager);
    }
    return "";
}

class UcpGeneric : public ::testing::Test {
protected:
    void SetUp() override { ASSERT_EQ(ucp().error, "") << "UCP setup failed"; }
};

// ---- Application layouts ------------------------------------------------------------------

class UcpGenericLayouts : public ::testing::TestWithParam<size_t> {
protected:
    void SetUp() override { ASSERT_EQ(ucp().error, "") << "UCP setup failed"; }
};

// Layout i sent as the application has it and received into a relayout of it, both sides in
// `mem`; "" when exact.
std::string layout_case(size_t i, Mem mem) {
    const L::Layout &l = app_layouts()[i];
    T::Rng rng(0x1a7e0000 + i);
    const L::TypeDescPtr recv = T::relayout(*l.type, rng);
    const std::string bad = run_case(l.type, recv, l.count, 0xabc0 + i, nullptr, mem, mem);
    return bad.empty() ? bad : l.name + " received as " + short_desc(*recv) + ": " + bad;
}

TEST_P(UcpGenericLayouts, TagAmStreamIntoRelayout) { EXPECT_EQ(layout_case(GetParam(), Mem::host), ""); }

INSTANTIATE_TEST_SUITE_P(App, UcpGenericLayouts, ::testing::Range<size_t>(0, app_layouts().size()),
                         T::app_layout_test_name<::testing::TestParamInfo<size_t>>);

// ---- Random types -------------------------------------------------------------------------

TEST_F(UcpGeneric, RandomTypesIntoRelayout) {
    constexpr int kTypes = 50;
    Counters am_paths;
    int eager_tag = 0, rndv_tag = 0;
    for (int i = 0; i < kTypes; ++i) {
        T::Rng rng(0x7a9d0000 + i);
        const L::TypeDescPtr send = T::random_desc(rng);
        const L::TypeDescPtr recv = T::relayout(*send, rng);
        const int64_t count = 1 + static_cast<int64_t>(rng() % 3);
        int64_t size = 0;
        {
            Type t(*send);
            ucxdt_type_size(t.h, &size);
        }
        ++(size * count > 8192 ? rndv_tag : eager_tag);
        EXPECT_EQ(run_case(send, recv, count, 0xfeed0000 + i, &am_paths), "")
            << "type #" << i << " x " << count << ": " << short_desc(*send) << "\n  received as "
            << short_desc(*recv);
    }
    // Both protocols must have been exercised, or the test proves less than it says.
    EXPECT_GT(eager_tag, 0);
    EXPECT_GT(rndv_tag, 0);
    EXPECT_GT(am_paths.eager, 0);
    EXPECT_GT(am_paths.rndv, 0);
    std::printf("[ ucp      ] %d random types: %d eager, %d rndv by size; am %d eager, %d rndv\n",
                kTypes, eager_tag, rndv_tag, am_paths.eager, am_paths.rndv);
}

// ---- Truncation ---------------------------------------------------------------------------

// A receive of one element where two were sent (3 rows of `block` doubles each), tag and AM,
// both buffers in `mem`: "" when it fails with TRUNCATED and nothing outside the receive's
// type map was written (whatever UCP delivered before it noticed lies in the map).
std::string truncated_case(Mem mem, int64_t block) {
    const L::TypeDescPtr send = L::vector(3, block, block + 5, L::named(UCXDT_DOUBLE));
    T::Rng rng(static_cast<uint64_t>(block));
    const L::TypeDescPtr recv = T::relayout(*send, rng);
    Datatype sdt(*send), rdt(*recv);
    Buffer src(*send, 2, 11);
    Placed src_at(src, mem);
    for (Api api : {Api::tag, Api::am}) {
        Buffer dst(*recv, 1, 12);
        const std::vector<std::byte> poison = dst.bytes;
        Placed dst_at(dst, mem);
        const Result r = transfer(api, sdt, src_at.ptr(), 2, rdt, dst_at.ptr(), 1);
        const std::string where = std::string(api_name(api)) + ", block " + std::to_string(block) + ": ";
        if (!r.why.empty()) return where + r.why;
        if (r.recv != UCS_ERR_MESSAGE_TRUNCATED)
            return where + "receive completed with " + ucs_status_string(r.recv);
        dst_at.fetch();
        std::vector<bool> in_map(dst.bytes.size(), false);
        for (const auto &[disp, len] : ucxdt::ref::typemap_runs(*recv, 1))
            for (int64_t i = 0; i < len; ++i) in_map[static_cast<size_t>(dst.origin + disp + i)] = true;
        for (size_t i = 0; i < in_map.size(); ++i)
            if (!in_map[i] && dst.bytes[i] != poison[i]) return where + "byte " + std::to_string(i) + " written";
    }
    return "";
}

// 768 B per element (eager) and 48 KiB (rndv).
TEST_F(UcpGeneric, TruncatedReceiveWritesNothingOutsideItsLayout) {
    for (int64_t block : {32, 2048}) EXPECT_EQ(truncated_case(Mem::host, block), "");
}

// ---- Creation errors and lifetime ---------------------------------------------------------

TEST_F(UcpGeneric, CreateRejectsUncommittedAndInvalidTypes) {
    ucxdt_type_t t = UCXDT_TYPE_NULL;
    ASSERT_EQ(ucxdt_type_contiguous(4, ucxdt_type_primitive(UCXDT_INT32), &t), UCXDT_OK);
    ucp_datatype_t dt = 12345;
    EXPECT_EQ(ucxdt_ucp_dt_create(t, &dt), UCS_ERR_INVALID_PARAM);
    EXPECT_NE(std::string(ucxdt_last_error()), "");
    EXPECT_EQ(dt, 12345u);  // untouched
    EXPECT_EQ(ucxdt_ucp_dt_create(t, nullptr), UCS_ERR_INVALID_PARAM);
    ucxdt_type_t freed = t;
    ASSERT_EQ(ucxdt_type_free(&t), UCXDT_OK);
    EXPECT_EQ(ucxdt_ucp_dt_create(freed, &dt), UCS_ERR_INVALID_PARAM);
    EXPECT_NE(std::string(ucxdt_last_error()), "");
    EXPECT_EQ(ucxdt_ucp_dt_create(UCXDT_TYPE_NULL, &dt), UCS_ERR_INVALID_PARAM);
    EXPECT_EQ(dt, 12345u);
}

// The user's ucxdt handle may be freed while requests are in flight: the datatype and each
// request hold their own references. (Destroying the datatype itself then is forbidden by
// ucp_dt_destroy's contract.)
TEST_F(UcpGeneric, TypeFreedWhileRequestInFlight) {
    const auto send_desc = L::vector(4096, 3, 7, L::named(UCXDT_INT32));  // 48 KiB: rndv
    Type t(*send_desc);
    ucp_datatype_t dt = 0;
    ASSERT_EQ(ucxdt_ucp_dt_create(t.h, &dt), UCS_OK);
    Buffer src(*send_desc, 1, 21), dst(*send_desc, 1, 22);
    const std::vector<std::byte> poison = dst.bytes;
    const std::vector<std::byte> sent = packed(*send_desc, src.ptr(), 1, 4096 * 3 * 4);
    Ucp &u = ucp();
    ucp_request_param_t p{};
    p.op_attr_mask = UCP_OP_ATTR_FIELD_DATATYPE;
    p.datatype = dt;
    ucs_status_ptr_t rreq = ucp_tag_recv_nbx(u.w[1], dst.ptr(), 1, kTag + 1, ~0ull, &p);
    ucs_status_ptr_t sreq = ucp_tag_send_nbx(u.ep[0], src.ptr(), 1, kTag + 1, &p);
    ASSERT_EQ(ucxdt_type_free(&t.h), UCXDT_OK);  // the user's handle goes mid-transfer
    EXPECT_EQ(u.wait(sreq), UCS_OK);
    EXPECT_EQ(u.wait(rreq), UCS_OK);
    EXPECT_EQ(check_received(*send_desc, 1, dst, poison, sent, 4096 * 3 * 4), "");
    ucxdt_ucp_dt_destroy(dt);
}

// ---- CUDA memory (the pinned ring) ---------------------------------------------------------

#define SKIP_WITHOUT_GPU() \
    if (!have_gpu()) GTEST_SKIP() << "no CUDA device: the generic datatype's GPU path is untested here"

class UcpGenericGpuLayouts : public UcpGenericLayouts {};

// Each application layout from device memory into a relayout in device memory.
TEST_P(UcpGenericGpuLayouts, TagAmStreamIntoRelayout) {
    SKIP_WITHOUT_GPU();
    EXPECT_EQ(layout_case(GetParam(), Mem::cuda), "");
}

INSTANTIATE_TEST_SUITE_P(App, UcpGenericGpuLayouts, ::testing::Range<size_t>(0, app_layouts().size()),
                         T::app_layout_test_name<::testing::TestParamInfo<size_t>>);

// Random types with device memory on one side or both.
TEST_F(UcpGeneric, GpuRandomTypesMixedMemory) {
    SKIP_WITHOUT_GPU();
    const std::pair<Mem, Mem> sides[] = {
        {Mem::cuda, Mem::cuda}, {Mem::cuda, Mem::host}, {Mem::host, Mem::cuda}};
    for (int i = 0; i < 30; ++i) {
        T::Rng rng(0x6a9d0000 + i);
        const L::TypeDescPtr send = T::random_desc(rng);
        const L::TypeDescPtr recv = T::relayout(*send, rng);
        const int64_t count = 1 + static_cast<int64_t>(rng() % 3);
        const auto [sm, rm] = sides[i % 3];
        EXPECT_EQ(run_case(send, recv, count, 0xbeef0000 + i, nullptr, sm, rm), "")
            << "type #" << i << " x " << count << ": " << short_desc(*send);
    }
}

// Messages of many ring slots (the ring wraps many times): 1 MiB to 24 MiB packed.
TEST_F(UcpGeneric, GpuLargeMessagesWrapTheRing) {
    SKIP_WITHOUT_GPU();
    const auto dbl = L::named(UCXDT_DOUBLE);
    for (int64_t rows : {512, 3072}) {
        const L::TypeDescPtr send = L::vector(rows, 256, 300, dbl);  // 2 KiB of every 2400 B
        T::Rng rng(static_cast<uint64_t>(rows));
        EXPECT_EQ(run_case(send, T::relayout(*send, rng), 4, 0x1a60 + rows, nullptr, Mem::cuda,
                           Mem::cuda), "")
            << rows << " rows";
    }
}

// Truncation with device buffers: eager, rndv, and a message of several ring slots.
TEST_F(UcpGeneric, GpuTruncatedReceiveWritesNothingOutsideItsLayout) {
    SKIP_WITHOUT_GPU();
    for (int64_t block : {32, 2048, 65536}) EXPECT_EQ(truncated_case(Mem::cuda, block), "");
}

// The callbacks driven directly, as UCP's protocols may: send fragments of random sizes with
// some asked for twice, receive fragments in a shuffled order (far ahead of the ring, so that
// chunks go direct) and in a nearly sorted one (the ring path). UCP keeps its generic ops at
// the datatype's address (UCX 1.13 src/ucp/dt/dt_generic.h, ucp_dt_to_generic): the test
// reads them from there, as UCP does.
struct GenericOps {
    void *context;
    ucp_generic_dt_ops_t ops;
};
const GenericOps &ops_of(ucp_datatype_t dt) {
    return *reinterpret_cast<const GenericOps *>(dt & ~static_cast<ucp_datatype_t>(UCP_DATATYPE_CLASS_MASK));
}

TEST_F(UcpGeneric, GpuCallbacksInAnyOrder) {
    SKIP_WITHOUT_GPU();
    const auto i32 = L::named(UCXDT_INT32);
    const L::TypeDescPtr send = L::vector(20000, 5, 9, i32);  // 400,000 packed bytes
    T::Rng rng(5);
    const L::TypeDescPtr recv = T::relayout(*send, rng);
    Datatype sdt(*send), rdt(*recv);
    const int64_t total = sdt.size;
    Buffer src(*send, 1, 31);
    const std::vector<std::byte> sent = packed(*send, src.ptr(), 1, total);
    Placed src_at(src, Mem::cuda);

    // Send side: sequential fragments of 1..9000 bytes; every 7th is asked for again.
    const GenericOps &so = ops_of(sdt.dt);
    void *st = so.ops.start_pack(so.context, src_at.ptr(), 1);
    ASSERT_EQ(so.ops.packed_size(st), static_cast<size_t>(total));
    std::vector<std::byte> out(static_cast<size_t>(total));
    std::vector<std::pair<size_t, size_t>> frags;  // (offset, length) as packed
    for (size_t off = 0, k = 0; off < static_cast<size_t>(total); ++k) {
        const size_t got = so.ops.pack(st, off, out.data() + off, 1 + rng() % 9000);
        ASSERT_GT(got, 0u) << "offset " << off;
        if (k % 7 == 3) {  // again, into a scratch copy
            std::vector<std::byte> again(got);
            ASSERT_EQ(so.ops.pack(st, off, again.data(), got), got);
            ASSERT_EQ(std::memcmp(again.data(), out.data() + off, got), 0) << "offset " << off;
        }
        frags.emplace_back(off, got);
        off += got;
    }
    so.ops.finish(st);
    ASSERT_EQ(std::memcmp(out.data(), sent.data(), sent.size()), 0) << "packed stream differs";

    // Receive side, two orders.
    for (int order = 0; order < 2; ++order) {
        std::vector<std::pair<size_t, size_t>> f = frags;
        if (order == 0) {
            for (size_t i = f.size() - 1; i > 0; --i) std::swap(f[i], f[rng() % (i + 1)]);
        } else {
            for (size_t i = 1; i < f.size(); i += 3) std::swap(f[i - 1], f[i]);
        }
        Buffer dst(*recv, 1, 32);
        const std::vector<std::byte> poison = dst.bytes;
        Placed dst_at(dst, Mem::cuda);
        const GenericOps &ro = ops_of(rdt.dt);
        void *rs = ro.ops.start_unpack(ro.context, dst_at.ptr(), 1);
        for (const auto &[off, len] : f)
            ASSERT_EQ(ro.ops.unpack(rs, off, sent.data() + off, len), UCS_OK) << "offset " << off;
        ro.ops.finish(rs);
        dst_at.fetch();
        EXPECT_EQ(check_received(*recv, 1, dst, poison, sent, total), "")
            << (order == 0 ? "shuffled" : "nearly sorted") << " fragments";
    }
}

// Work queued on the legacy default stream before a call is seen by it, as by cudaMemcpy: a
// large memset is still running when the synchronous pack, or the generic send, starts.
TEST_F(UcpGeneric, GpuCallsOrderAfterLegacyStreamWork) {
    SKIP_WITHOUT_GPU();
    constexpr int64_t kRows = 1 << 16, kBytes = kRows * 512;  // 32 MiB, half of it packed
    const L::TypeDescPtr desc = L::vector(kRows, 256, 512, L::named(UCXDT_BYTE));
    Type t(*desc);
    Datatype dt(*desc);
    void *src = nullptr, *packed_dev = nullptr;
    ASSERT_EQ(cudaMalloc(&src, kBytes), cudaSuccess);
    ASSERT_EQ(cudaMalloc(&packed_dev, kBytes / 2), cudaSuccess);
    std::vector<unsigned char> got(kBytes / 2);
    for (int round = 1; round <= 3; ++round) {
        ASSERT_EQ(cudaMemsetAsync(src, round, kBytes, nullptr), cudaSuccess);
        int64_t pos = 0;
        ASSERT_EQ(ucxdt_pack(src, 1, t.h, packed_dev, kBytes / 2, &pos), UCXDT_OK);
        ASSERT_EQ(cudaMemcpy(got.data(), packed_dev, got.size(), cudaMemcpyDeviceToHost), cudaSuccess);
        EXPECT_EQ(std::count(got.begin(), got.end(), round), kBytes / 2) << "ucxdt_pack, round " << round;

        ASSERT_EQ(cudaMemsetAsync(src, round + 10, kBytes, nullptr), cudaSuccess);
        std::fill(got.begin(), got.end(), 0);
        const Datatype contig(*L::contiguous(kBytes / 2, L::named(UCXDT_BYTE)));
        const Result r = transfer(Api::tag, dt, src, 1, contig, got.data(), 1);
        ASSERT_EQ(r.why, "");
        ASSERT_EQ(r.send, UCS_OK);
        ASSERT_EQ(r.recv, UCS_OK);
        EXPECT_EQ(std::count(got.begin(), got.end(), round + 10), kBytes / 2)
            << "generic send, round " << round;
    }
    cudaFree(src);
    cudaFree(packed_dev);
}

// ---- Two processes ------------------------------------------------------------------------

namespace two_proc {

using T::ProcessSide, T::read_blob, T::write_blob;

// Sends (send layout) to the peer and receives the peer's message into the relayout; "" when
// the received bytes are exact. Both processes run this with the same seeds.
std::string exchange(ProcessSide &s, const L::TypeDescPtr &send, const L::TypeDescPtr &recv,
                     uint64_t send_seed, uint64_t recv_seed) {
    Datatype sdt(*send), rdt(*recv);
    Buffer src(*send, 1, send_seed);
    Buffer peer_src(*send, 1, recv_seed);  // what the peer sends, for the check
    const std::vector<std::byte> expect = packed(*send, peer_src.ptr(), 1, sdt.size);
    Buffer dst(*recv, 1, ~recv_seed);
    const std::vector<std::byte> poison = dst.bytes;
    ucp_request_param_t sp{}, rp{};
    sp.op_attr_mask = rp.op_attr_mask = UCP_OP_ATTR_FIELD_DATATYPE;
    sp.datatype = sdt.dt;
    rp.datatype = rdt.dt;
    ucs_status_ptr_t rreq = ucp_tag_recv_nbx(s.w, dst.ptr(), 1, kTag, ~0ull, &rp);
    ucs_status_ptr_t sreq = ucp_tag_send_nbx(s.ep, src.ptr(), 1, kTag, &sp);
    const ucs_status_t rs = s.wait(rreq), ss = s.wait(sreq);
    if (ss != UCS_OK) return std::string("send: ") + ucs_status_string(ss);
    if (rs != UCS_OK) return std::string("receive: ") + ucs_status_string(rs);
    return check_received(*recv, 1, dst, poison, expect, sdt.size);
}

}  // namespace two_proc

// A forked child with its own context exchanges one rendezvous-sized layout each way with this
// process; worker addresses go through pipes.
TEST(UcpGenericTwoProcesses, ForkedPeerExchangesLayouts) {
    using namespace two_proc;
    const auto send = L::vector(4096, 3, 7, L::named(UCXDT_INT32));  // 48 KiB: rndv
    T::Rng rng(99);
    const L::TypeDescPtr recv = T::relayout(*send, rng);
    int to_child[2], to_parent[2];
    ASSERT_EQ(pipe(to_child), 0);
    ASSERT_EQ(pipe(to_parent), 0);
    const pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
        // Child: no gtest assertions; the exit status says how it went.
        alarm(90);  // a hang ends the child, which the parent sees
        int code = 0;
        {
            ProcessSide s;
            std::vector<char> peer;
            if (!s.init(UCP_FEATURE_TAG, {{"RNDV_THRESH", kRndvThresh}}).empty()) code = 2;
            else if (!write_blob(to_parent[1], s.address) || !read_blob(to_child[0], &peer)) code = 3;
            else if (!s.connect(peer).empty()) code = 4;
            else if (!exchange(s, send, recv, 2, 1).empty()) code = 5;
        }
        _exit(code);
    }
    std::string result;
    {
        ProcessSide s;
        std::vector<char> peer;
        result = s.init(UCP_FEATURE_TAG, {{"RNDV_THRESH", kRndvThresh}});
        if (result.empty() && (!read_blob(to_parent[0], &peer) || !write_blob(to_child[1], s.address)))
            result = "address exchange through the pipes failed";
        if (result.empty()) result = s.connect(peer);
        if (result.empty()) result = exchange(s, send, recv, 1, 2);
    }
    EXPECT_EQ(result, "");
    const int status = T::wait_child(pid, std::chrono::seconds(100));
    ASSERT_NE(status, -1) << "child did not exit";
    ASSERT_TRUE(WIFEXITED(status)) << "child status " << status;
    EXPECT_EQ(WEXITSTATUS(status), 0) << "child: 2 init, 3 pipes, 4 ep, 5 exchange";
    for (int fd : {to_child[0], to_child[1], to_parent[0], to_parent[1]}) close(fd);
}

}  // namespace
