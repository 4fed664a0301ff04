// ucxdt_packbench (ucxdt_packbench.cpp): small messages end to end, and the setup.
// One translation unit includes these headers, in order; their names stay in an anonymous namespace, as
// when they were one file.
#pragma once

#include "packbench/one_layout.hpp"

namespace {

// ---- Small messages, end to end --------------------------------------------------------------

// Three shapes of `bytes` packed bytes: 256-byte blocks, 8-byte blocks at 64 bytes, and an
// irregular block list of 24- and 40-byte blocks.
std::vector<L::Layout> small_layouts(int64_t bytes) {
    const std::string sz = "(" + std::to_string(bytes) + ")";
    const char *src = "small-message shapes of ucxdt_packbench";
    std::vector<L::Layout> out;
    const int64_t rows = bytes / 256;
    out.push_back({"small_vec256B" + sz, L::vector(rows, 32, 48, D()), 1, rows * 384, 0, bytes,
                   -1, -1, rows, src});
    const int64_t n8 = bytes / 8;
    out.push_back({"small_vec8B" + sz, L::vector(n8, 1, 8, D()), 1, n8 * 64, 0, bytes, -1, -1,
                   n8, src});
    const int64_t nb = bytes / 32;  // pairs of 3 and 5 doubles: 32 bytes a block on average
    std::vector<int64_t> bl(static_cast<size_t>(nb)), disp(static_cast<size_t>(nb));
    for (int64_t j = 0; j < nb; ++j)
        bl[static_cast<size_t>(j)] = j % 2 ? 5 : 3, disp[static_cast<size_t>(j)] = 8 * j + j % 3;
    out.push_back({"small_list" + sz, L::indexed(bl, disp, D()), 1, (8 * nb + 8) * 8, 0,
                   bytes, -1, -1, nb, src});
    return out;
}

Row run_small(const L::Layout &l, const Options &opt, Gpu &g) {
    ucxdt::type t;
    Row r = layout_row(l, &t);
    r.section = "small";
    r.slots = 1;
    DeviceBuffer in(l.buffer_bytes), pk(r.packed), ref(r.packed);
    HostBuffer h_in(l.buffer_bytes), h_packed(r.packed), h_got(r.packed);
    ucxdt::ref::fill_pattern(h_in.data(), l.buffer_bytes,
                             0xabcd0000u + static_cast<uint64_t>(r.packed));
    upload(in.p, h_in.data(), l.buffer_bytes, "upload input");
    upload(ref.p, h_in.data(), r.packed, "upload memcpy source");
    int64_t pos = 0;
    ucxdt_ok(ucxdt_pack(h_in.data(), l.count, t.get(), h_packed.data(), r.packed, &pos),
             "host pack");
    ucxdt::ref::fill_complement(h_got.data(), h_packed.data(), r.packed);
    upload(pk.p, h_got.data(), r.packed, "upload poison");

    // The synchronous call on device memory returns with the data complete.
    auto sync_pack = [&] {
        int64_t p = 0;
        ucxdt_ok(ucxdt_pack(in.p, l.count, t.get(), pk.p, r.packed, &p), "ucxdt_pack");
    };
    sync_pack();
    download(h_got.data(), pk.p, r.packed, "download packed");
    const std::string diff = first_difference(h_got.data(), h_packed.data(), r.packed);
    if (!diff.empty()) add_note(r, "PACK MISMATCH at " + diff);
    r.verified = diff.empty();

    const int warm = std::max(opt.warmup, 10);
    r.e2e_pack_us = median_host_seconds(warm, opt.small_reps, sync_pack) * 1e6;
    r.e2e_async_us = median_host_seconds(warm, opt.small_reps, [&] {
        int64_t p = 0;
        ucxdt_ok(ucxdt_pack_async(in.p, l.count, t.get(), pk.p, r.packed, &p, g.stream),
                 "ucxdt_pack_async");
        cuda_ok(cudaStreamSynchronize(g.stream), "cudaStreamSynchronize");
    }) * 1e6;
    // A device-to-device cudaMemcpy may return before the copy is done: wait for it too.
    r.e2e_memcpy_us = median_host_seconds(warm, opt.small_reps, [&] {
        cuda_ok(cudaMemcpy(pk.p, ref.p, static_cast<size_t>(r.packed), cudaMemcpyDeviceToDevice),
                "cudaMemcpy");
        cuda_ok(cudaStreamSynchronize(nullptr), "cudaStreamSynchronize");
    }) * 1e6;
#ifdef UCXDT_PACKBENCH_YAKSA
    // Yaksa's ipack and wait, as MPICH packs a message: checked, then timed the same way.
    try {
        const ucxdt::bench::YaksaType yt(*l.type);
        ucxdt::ref::fill_complement(h_got.data(), h_packed.data(), r.packed);
        upload(pk.p, h_got.data(), r.packed, "upload poison");
        ucxdt::bench::yaksa_pack_wait(in.p, l.count, yt, pk.p, r.packed);
        download(h_got.data(), pk.p, r.packed, "download packed");
        const std::string ydiff = first_difference(h_got.data(), h_packed.data(), r.packed);
        if (!ydiff.empty()) add_note(r, "YAKSA PACK MISMATCH at " + ydiff);
        r.yaksa_verified = ydiff.empty() ? "yes" : "no";
        r.yaksa_e2e_us = median_host_seconds(warm, opt.small_reps, [&] {
            ucxdt::bench::yaksa_pack_wait(in.p, l.count, yt, pk.p, r.packed);
        }) * 1e6;
    } catch (const ucxdt::bench::YaksaError &e) {
        add_note(r, std::string("yaksa: ") + e.what());
    }
#endif
    return r;
}

// ---- Setup -----------------------------------------------------------------------------------

void measure_peak_copy(Gpu &g, const Options &opt) {
    size_t free_b = 0, total_b = 0;
    cuda_ok(cudaMemGetInfo(&free_b, &total_b), "cudaMemGetInfo");
    const int64_t bytes = std::min<int64_t>(int64_t{1} << 30, static_cast<int64_t>(free_b / 4));
    DeviceBuffer a(bytes), b(bytes);
    cuda_ok(cudaMemset(a.p, 0x5a, static_cast<size_t>(bytes)), "cudaMemset");
    int64_t slot = 0;
    const double t = median_event_seconds(g, opt.warmup, opt.iterations, slot, [&](int64_t) {
        cuda_ok(cudaMemcpyAsync(b.p, a.p, static_cast<size_t>(bytes), cudaMemcpyDeviceToDevice,
                                g.stream), "cudaMemcpyAsync");
    });
    g.peak_memcpy_gbs = gbs(bytes, t);
}

}  // namespace
