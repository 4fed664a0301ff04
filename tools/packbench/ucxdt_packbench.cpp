// ucxdt_packbench: GPU pack/unpack of datatype layouts against the copy-engine rooflines, in one
// run on one GPU, device memory to device memory.
//
// Per layout: ucxdt_pack_async and ucxdt_unpack_async; cudaMemcpyAsync of the same packed bytes
// (the roofline); cudaMemcpy2DAsync where the layout is one strided level; one cudaMemcpyAsync
// per block (what Open MPI does for GPU buffers); the DRAM-sector bound (each block read moves
// whole 32-byte sectors, so small blocks cannot reach the copy rate); the first use of an
// uncached block-list type against the cached one. Then small messages end to end (host clock
// around the call until the data is complete) against cudaMemcpy of the same bytes.
// Every layout's packed stream and unpacked buffer are checked once against the CPU engine.
//
// Built as ucxdt_packbench_yaksa (UCXDT_PACKBENCH_YAKSA, against a CUDA-aware MPICH 5's Yaksa),
// it also packs and unpacks each layout with Yaksa, MPICH's engine (tools/yaksa_peer.hpp): its
// kernels on the same buffers and stream, verified the same way, and its ipack-and-wait end to end
// on the small messages.
//
// Timing: device events around each run, runs enqueued back to back, median after warm-up.
// Layouts whose touched bytes would sit in L2 rotate among several copies of their buffers.
// GB/s = 1e9 bytes of packed data per second.
//
// Exit: 0 all verified; 1 a mismatch or a failed call; 2 usage; 77 no CUDA device (nothing run).
#include "packbench/output.hpp"

int main(int argc, char **argv) {
    Options opt;
    for (int c; (c = getopt(argc, argv, "l:n:w:o:j:b:f:s:St:d:Lh")) != -1;) {
        switch (c) {
        case 'l': opt.filters.push_back(optarg); break;
        case 'n': opt.iterations = std::atoi(optarg); break;
        case 'w': opt.warmup = std::atoi(optarg); break;
        case 'o': opt.csv_path = optarg; break;
        case 'j': opt.json_path = optarg; break;
        case 'b': opt.per_block_cap = std::atoll(optarg); break;
        case 'f': opt.first_use_reps = std::atoi(optarg); break;
        case 's': opt.small_reps = std::atoi(optarg); break;
        case 'S': opt.small = false; break;
        case 't': opt.time_budget_s = std::atof(optarg); break;
        case 'd': opt.device = std::atoi(optarg); break;
        case 'L': opt.list_only = true; break;
        default: return usage(argv[0]), c == 'h' ? 0 : 2;
        }
    }
    if (opt.iterations < 1 || opt.warmup < 0 || opt.small_reps < 1 || opt.first_use_reps < 0 ||
        optind != argc)
        return usage(argv[0]), 2;

    std::vector<L::Layout> layouts;
    std::vector<L::Layout> small;
    try {
        for (auto &l : bench_layouts())
            if (selected(l.name, opt)) layouts.push_back(l);
        if (opt.small)
            for (int64_t bytes = 4096; bytes <= 65536; bytes *= 2)
                for (auto &l : small_layouts(bytes))
                    if (selected(l.name, opt)) small.push_back(l);
    } catch (const std::exception &e) {
        std::fprintf(stderr, "ucxdt_packbench: building the layouts failed: %s\n", e.what());
        return 1;
    }
    if (layouts.empty() && small.empty()) {
        std::fprintf(stderr, "ucxdt_packbench: no layout matches the -l filters\n");
        return 2;
    }
    if (opt.list_only) {
        try {
            for (const auto *set : {&layouts, &small})
                for (const auto &l : *set) {
                    const ucxdt::type t = build(*l.type);
                    const auto p = t.plan(l.count);
                    std::printf("%-40s packed %12lld  blocks %10lld  %s\n", l.name.c_str(),
                                static_cast<long long>(l.count * t.size()),
                                static_cast<long long>(p.num_blocks), L::plan_name(p.plan_class));
                }
        } catch (const std::exception &ex) {
            std::fprintf(stderr, "ucxdt_packbench: %s\n", ex.what());
            return 1;
        }
        return 0;
    }

    int ndev = 0;
    const cudaError_t e = cudaGetDeviceCount(&ndev);
    if (e != cudaSuccess || ndev == 0) {
        std::fprintf(stderr, "ucxdt_packbench: no CUDA device (%s); nothing measured, exit %d\n",
                     e != cudaSuccess ? cudaGetErrorString(e) : "0 devices", kExitNoDevice);
        return kExitNoDevice;
    }

    Gpu g;
    std::vector<Row> rows;
    std::vector<std::string> skipped;
    int failures = 0;
    const auto start = Clock::now();
#ifdef UCXDT_PACKBENCH_YAKSA
    std::optional<ucxdt::bench::Yaksa> yaksa;
#endif
    try {
        g.device = opt.device;
        cuda_ok(cudaSetDevice(g.device), "cudaSetDevice");
        cudaDeviceProp prop{};
        cuda_ok(cudaGetDeviceProperties(&prop, g.device), "cudaGetDeviceProperties");
        g.name = prop.name;
        g.sms = prop.multiProcessorCount;
        int l2 = 0;
        cuda_ok(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, g.device), "L2 size");
        g.l2_bytes = l2;
        cuda_ok(cudaStreamCreateWithFlags(&g.stream, cudaStreamNonBlocking), "cudaStreamCreate");
        measure_peak_copy(g, opt);
#ifdef UCXDT_PACKBENCH_YAKSA
        yaksa.emplace();
#endif
    } catch (const std::exception &ex) {
        std::fprintf(stderr, "ucxdt_packbench: setup failed: %s\n", ex.what());
        return 1;
    }
    std::printf("device %d: %s, %d SMs, L2 %.0f MB; large memcpy %.1f GB/s"
                " (%.1f GB/s read+write)\n",
                g.device, g.name.c_str(), g.sms, static_cast<double>(g.l2_bytes) / 1e6,
                g.peak_memcpy_gbs, 2 * g.peak_memcpy_gbs);
    std::printf("median of %d runs after %d warm-up, device events; GB/s of packed bytes\n",
                opt.iterations, opt.warmup);

    auto over_budget = [&] {
        return opt.time_budget_s > 0 &&
               std::chrono::duration<double>(Clock::now() - start).count() > opt.time_budget_s;
    };
    auto run = [&](const L::Layout &l, bool is_small) {
        if (over_budget()) {
            skipped.push_back(l.name);
            return;
        }
        Row r;
        try {
            r = is_small ? run_small(l, opt, g) : run_layout(l, opt, g);
        } catch (const std::exception &ex) {
            r.section = is_small ? "small" : "layout", r.name = l.name, r.count = l.count;
            add_note(r, std::string("FAILED: ") + ex.what());
            cudaGetLastError();  // a later layout should not see this one's error
        }
        if (!r.verified) {
            ++failures;
            std::fprintf(stderr, "FAIL %s: %s\n", r.name.c_str(), r.note.c_str());
        }
        const std::string note = r.note.empty() ? "" : "  (" + r.note + ")";
        std::string peer;
#ifdef UCXDT_PACKBENCH_YAKSA
        peer = "; yaksa pack " + num(r.yaksa_pack_gbs) + ", unpack " + num(r.yaksa_unpack_gbs) +
               (r.section == "small" ? ", " + num(r.yaksa_e2e_us, 1) + " us" : "");
#endif
        std::fprintf(stderr, "[packbench %6.1f s] %s: pack %s, unpack %s, memcpy %s GB/s%s%s\n",
                     std::chrono::duration<double>(Clock::now() - start).count(), r.name.c_str(),
                     num(r.pack_gbs).c_str(), num(r.unpack_gbs).c_str(), num(r.memcpy_gbs).c_str(),
                     peer.c_str(), note.c_str());
        rows.push_back(std::move(r));
    };
    for (const auto &l : layouts) run(l, false);
    for (const auto &l : small) run(l, true);

    print_layout_table(rows);
    print_small_table(rows);
#ifdef UCXDT_PACKBENCH_YAKSA
    print_yaksa_table(rows);
#endif
    if (!skipped.empty())
        std::printf("\n%zu skipped by the %.0f s budget (-t)\n", skipped.size(), opt.time_budget_s);
    std::printf("\n%zu results, %d failed, %.1f s\n", rows.size(), failures,
                std::chrono::duration<double>(Clock::now() - start).count());
    try {
        if (!opt.csv_path.empty()) write_csv(opt.csv_path, rows);
        if (!opt.json_path.empty()) write_json(opt.json_path, rows, g, opt, skipped, failures);
    } catch (const std::exception &ex) {
        std::fprintf(stderr, "ucxdt_packbench: %s\n", ex.what());
        return 1;
    }
    if (g.stream) cudaStreamDestroy(g.stream);
    for (cudaEvent_t ev : g.events) cudaEventDestroy(ev);
    return failures == 0 ? 0 : 1;
}
