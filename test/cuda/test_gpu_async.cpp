// The stream-ordered API on user streams and inside CUDA graphs: pageable memory refused
// before anything is enqueued, and captured packs and unpacks launched twice. The harness is
// harness/gpu_check.hpp; without a GPU every test skips.
#include "harness/gpu_check.hpp"

#include <algorithm>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace {

using namespace ucxdt::testing::gpu;

// ---- Stream-ordered API -------------------------------------------------------------------

class GpuAsync : public GpuTest {};

// Stream-ordered calls refuse pageable memory before they enqueue anything: inside a capture
// the graph stays empty, and no byte of either buffer changes.
TEST_F(GpuAsync, PageableIsUnsupportedAndEnqueuesNothing) {
    const Stream stream;
    const Type strided(*L::vector(8, 2, 3, L::named(UCXDT_INT32)));
    const Type list(*L::indexed({5, 100, 37}, {0, 7, 200}, L::named(UCXDT_DOUBLE)));
    const int64_t bytes = 4096;
    Buffer dev_l(Mem::Device, bytes), dev_p(Mem::Device, bytes);
    Buffer host_l(Mem::Pageable, bytes), host_p(Mem::Pageable, bytes);
    Bytes img_l(bytes), img_p(bytes);
    ucxdt::ref::fill_pattern(img_l.data(), bytes, 31);
    ucxdt::ref::fill_pattern(img_p.data(), bytes, 32);
    dev_l.upload(img_l);
    host_l.upload(img_l);
    dev_p.upload(img_p);
    host_p.upload(img_p);

    for (const Type *t : {&strided, &list}) {
        using Sides = std::pair<Buffer *, Buffer *>;
        for (auto [lay, pk] : {Sides{&host_l, &dev_p}, Sides{&dev_l, &host_p}}) {
            for (int op = 0; op < 4; ++op) {
                SCOPED_TRACE("operation " + std::to_string(op) +
                             (lay == &host_l ? ", pageable layout" : ", pageable packed"));
                for (bool capture : {false, true}) {
                    if (capture) {
                        ASSERT_EQ(cudaStreamBeginCapture(stream.get(), cudaStreamCaptureModeGlobal),
                                  cudaSuccess);
                    }
                    int64_t pos = 3;
                    ucxdt_status_t st = UCXDT_OK;
                    char *l = lay->data() + 64, *p = pk->data() + 64;
                    switch (op) {
                    case 0: st = ucxdt_pack_async(l, 2, t->get(), p, 3000, &pos, stream.get()); break;
                    case 1: st = ucxdt_unpack_async(p, 3000, &pos, l, 2, t->get(), stream.get()); break;
                    case 2: st = ucxdt_pack_range_async(l, 2, t->get(), 5, p, 20, stream.get()); break;
                    case 3: st = ucxdt_unpack_range_async(p, 5, 20, l, 2, t->get(), stream.get()); break;
                    }
                    const std::string msg = ucxdt_last_error();
                    if (capture) {
                        cudaGraph_t g = nullptr;
                        ASSERT_EQ(cudaStreamEndCapture(stream.get(), &g), cudaSuccess)
                            << "the call broke the capture";
                        size_t nodes = 1;
                        EXPECT_EQ(cudaGraphGetNodes(g, nullptr, &nodes), cudaSuccess);
                        EXPECT_EQ(nodes, 0u) << "work was enqueued";
                        cudaGraphDestroy(g);
                    }
                    EXPECT_EQ(st, UCXDT_ERR_UNSUPPORTED);
                    EXPECT_EQ(pos, 3);
                    EXPECT_NE(msg, "");
                }
            }
        }
    }
    ASSERT_EQ(cudaStreamSynchronize(stream.get()), cudaSuccess);
    EXPECT_EQ(compare(dev_l.download(), img_l, "device layout", 0), "");
    EXPECT_EQ(compare(host_l.download(), img_l, "pageable layout", 0), "");
    EXPECT_EQ(compare(dev_p.download(), img_p, "device packed", 0), "");
    EXPECT_EQ(compare(host_p.download(), img_p, "pageable packed", 0), "");
}

// ---- CUDA graphs --------------------------------------------------------------------------

// One type's buffers for a captured graph: source, packed window, range-packed window and
// receive buffer on the device, with what they must hold after a launch.
struct GraphCase {
    L::TypeDescPtr send, recv;
    int64_t count = 1;
    std::unique_ptr<Type> ts, tr;
    int64_t total = 0;
    Geometry gs, gr;
    std::unique_ptr<Buffer> src, pk, pk2, dst;
    Bytes pk_poison, dst_poison;

    GraphCase(L::TypeDescPtr s, int64_t n) : send(std::move(s)), count(n) {
        recv = receiver(send, count, 3);
        ts = std::make_unique<Type>(*send);
        tr = std::make_unique<Type>(*recv);
        total = ts->size() * count;
        Case c;
        c.count = count;
        gs = geometry(c, *send, 0);
        gr = geometry(c, *recv, 0);
        src = std::make_unique<Buffer>(Mem::Device, gs.bytes);
        pk = std::make_unique<Buffer>(Mem::Device, total);
        pk2 = std::make_unique<Buffer>(Mem::Device, total);
        dst = std::make_unique<Buffer>(Mem::Device, gr.bytes);
    }
    // Fills the source from `seed` and poisons the outputs; returns the expected images of
    // pk (and pk2) and dst.
    std::pair<Bytes, Bytes> prepare(uint64_t seed) {
        Bytes img(static_cast<size_t>(gs.bytes));
        ucxdt::ref::fill_pattern(img.data(), gs.bytes, seed);
        Bytes ref(static_cast<size_t>(std::max<int64_t>(total, 1)));
        int64_t pos = 0;
        if (ucxdt_pack(img.data() + gs.origin, count, ts->get(), ref.data(), total, &pos))
            throw std::runtime_error("CPU pack failed");
        Bytes want(static_cast<size_t>(gr.bytes));
        ucxdt::ref::fill_pattern(want.data(), gr.bytes, mix(seed));
        Bytes poison = want;
        const Runs runs = ucxdt::ref::typemap_runs(*recv, count);
        scatter(want, gr.origin, runs, ref, false);
        scatter(poison, gr.origin, runs, ref, true);
        Bytes pk_poison_img(ref.size());
        for (size_t i = 0; i < ref.size(); ++i) pk_poison_img[i] = ~ref[i];
        src->upload(img);
        pk->upload(pk_poison_img);
        pk2->upload(pk_poison_img);
        dst->upload(poison);
        pk_poison = pk_poison_img;
        dst_poison = poison;
        return {ref, want};
    }
    // Enqueues pack, unpack of its result, and pack in two ranges (the later range first).
    std::string enqueue(cudaStream_t s) {
        int64_t pos = 0;
        char *in = src->data() + gs.origin, *out = dst->data() + gr.origin;
        const int64_t half = total / 2;
        CHECK_OK(call("pack_async", [&] {
            return ucxdt_pack_async(in, count, ts->get(), pk->data(), total, &pos, s);
        }));
        pos = 0;
        CHECK_OK(call("unpack_async", [&] {
            return ucxdt_unpack_async(pk->data(), total, &pos, out, count, tr->get(), s);
        }));
        CHECK_OK(call("pack_range_async (second half)", [&] {
            return ucxdt_pack_range_async(in, count, ts->get(), half, pk2->data() + half,
                                          total - half, s);
        }));
        CHECK_OK(call("pack_range_async (first half)", [&] {
            return ucxdt_pack_range_async(in, count, ts->get(), 0, pk2->data(), half, s);
        }));
        return "";
    }
    std::string verify(const std::pair<Bytes, Bytes> &want) {
        Bytes ref = want.first;
        ref.resize(static_cast<size_t>(std::max<int64_t>(total, 1)));
        Bytes got_pk = pk->download(), got_pk2 = pk2->download();
        CHECK_OK(compare(got_pk, ref, "pack_async", 0));
        CHECK_OK(compare(got_pk2, ref, "pack_range_async", 0));
        CHECK_OK(compare(dst->download(), want.second, "unpack_async", gr.origin));
        return "";
    }
};

// Captures the calls of every case into one graph, then launches it twice with different
// source data. Captured (not run) work must leave the buffers alone until the launch.
void capture_and_launch(std::vector<std::unique_ptr<GraphCase>> &cases,
                        unsigned stream_flags = cudaStreamNonBlocking) {
    const Stream stream(0, stream_flags);
    std::vector<std::pair<Bytes, Bytes>> want;
    for (auto &c : cases) want.push_back(c->prepare(101));

    ASSERT_EQ(cudaStreamBeginCapture(stream.get(), cudaStreamCaptureModeGlobal), cudaSuccess);
    std::string err;
    for (auto &c : cases)
        if (err.empty()) err = c->enqueue(stream.get());
    cudaGraph_t graph = nullptr;
    const cudaError_t end = cudaStreamEndCapture(stream.get(), &graph);
    cudaGetLastError();
    std::unique_ptr<CUgraph_st, decltype(&cudaGraphDestroy)> graph_owner(graph, cudaGraphDestroy);
    ASSERT_EQ(err, "");
    ASSERT_EQ(end, cudaSuccess) << "the capture was invalidated: " << cudaGetErrorName(end);

    cudaGraphExec_t exec = nullptr;
    ASSERT_EQ(cudaGraphInstantiate(&exec, graph, 0), cudaSuccess);
    std::unique_ptr<CUgraphExec_st, decltype(&cudaGraphExecDestroy)> exec_owner(
        exec, cudaGraphExecDestroy);
    for (auto &c : cases) {
        EXPECT_EQ(compare(c->pk->download(), c->pk_poison, "before launch: packed", 0), "")
            << short_desc(*c->send);
        EXPECT_EQ(compare(c->dst->download(), c->dst_poison, "before launch: receive", 0), "")
            << short_desc(*c->send);
    }
    for (int launch = 0; launch < 2; ++launch) {
        SCOPED_TRACE("launch " + std::to_string(launch));
        if (launch == 1)
            for (size_t i = 0; i < cases.size(); ++i) want[i] = cases[i]->prepare(202);
        ASSERT_EQ(cudaGraphLaunch(exec, stream.get()), cudaSuccess);
        ASSERT_EQ(cudaStreamSynchronize(stream.get()), cudaSuccess);
        for (size_t i = 0; i < cases.size(); ++i)
            EXPECT_EQ(cases[i]->verify(want[i]), "") << short_desc(*cases[i]->send);
    }
}

class GpuGraph : public GpuTest {};

// Block lists whose first use on the GPU (the upload of their work units or tree) happens
// inside the capture, a contiguous type and a strided one the 2-D copy engine cannot take.
TEST_F(GpuGraph, CaptureAndLaunchTwice) {
    const auto dbl = L::named(UCXDT_DOUBLE), b = L::named(UCXDT_BYTE);
    std::vector<std::unique_ptr<GraphCase>> cases;
    // Fresh types, never used before this test: the first use is inside the capture.
    cases.push_back(std::make_unique<GraphCase>(
        L::resized(L::hindexed({40, 300, 17, 1000, 64}, {0, 4096, 100, 9000, 2000}, b), 0, 12000), 3));
    cases.push_back(std::make_unique<GraphCase>(
        L::vector(300, 1, 3, L::hindexed({1, 2, 1}, {0, 3, 9}, b)), 2));
    cases.push_back(std::make_unique<GraphCase>(L::contiguous(777, dbl), 2));
    cases.push_back(std::make_unique<GraphCase>(L::vector(100, 3, -5, dbl), 2));
    capture_and_launch(cases);
}

// The same on a blocking stream (cudaStreamDefault), which orders with the legacy default
// stream: nothing the engine does during the capture may touch that stream.
TEST_F(GpuGraph, CaptureOnBlockingStream) {
    std::vector<std::unique_ptr<GraphCase>> cases;
    const auto b = L::named(UCXDT_BYTE);
    cases.push_back(std::make_unique<GraphCase>(
        L::resized(L::hindexed({40, 300, 17, 1000, 64}, {0, 4096, 100, 9000, 2000}, b), 0, 12000), 2));
    cases.push_back(std::make_unique<GraphCase>(
        L::vector(300, 1, 3, L::hindexed({1, 2, 1}, {0, 3, 9}, b)), 3));
    capture_and_launch(cases, cudaStreamDefault);
}

// A strided type whose method the cost model picks: in a process of its own (as ctest runs
// each test), its first use, and so the measurement of the copy costs, is inside the capture.
TEST_F(GpuGraph, StridedFirstUseInCapture) {
    std::vector<std::unique_ptr<GraphCase>> cases;
    cases.push_back(std::make_unique<GraphCase>(L::vector(256, 3, 7, L::named(UCXDT_DOUBLE)), 2));
    capture_and_launch(cases);
}

}  // namespace
