// ucxdt_packbench (ucxdt_packbench.cpp): results, and one layout's pack and unpack against the copy-engine rooflines.
// One translation unit includes these headers, in order; their names stay in an anonymous namespace, as
// when they were one file.
#pragma once

#include "packbench/timing.hpp"

namespace {

// ---- Results ---------------------------------------------------------------------------------

std::string method_name(ucxdt_gpu_method_t m) {
    switch (m) {
    case UCXDT_GPU_METHOD_COPY_ENGINE: return "copy";
    case UCXDT_GPU_METHOD_COPY_ENGINE_2D: return "copy2d";
    case UCXDT_GPU_METHOD_STRIDED_KERNEL: return "strided_kernel";
    case UCXDT_GPU_METHOD_UNIT_KERNEL: return "unit_kernel";
    case UCXDT_GPU_METHOD_POINT_KERNEL: return "point_kernel";
    default: return "method_" + std::to_string(static_cast<int>(m));  // newer than this file
    }
}

struct Row {
    std::string section = "layout";  // "layout" or "small"
    std::string name;
    int64_t count = 0, packed = 0, blocks = -1;
    std::string plan = "-", method = "-";
    double pack_gbs = kNaN, unpack_gbs = kNaN, memcpy_gbs = kNaN;
    double memcpy2d_gbs = kNaN, per_block_gbs = kNaN;
    double sectors_read_bytes = kNaN, bound_gbs = kNaN;
    double first_use_us = kNaN, cached_us = kNaN;
    double pack_us = kNaN, unpack_us = kNaN, memcpy_us = kNaN;
    // Host time of the call that enqueues a pack (median): once the GPU's share is this short,
    // it paces back-to-back runs.
    double pack_call_us = kNaN, memcpy_call_us = kNaN, yaksa_pack_call_us = kNaN;
    double e2e_pack_us = kNaN, e2e_async_us = kNaN, e2e_memcpy_us = kNaN;
    double yaksa_pack_gbs = kNaN, yaksa_unpack_gbs = kNaN, yaksa_e2e_us = kNaN;
    std::string yaksa_verified = "-";  // "yes", "no", or "-" (not run)
    int64_t slots = 0;
    bool verified = false;
    std::string note;
};

void add_note(Row &r, const std::string &s) { r.note += (r.note.empty() ? "" : "; ") + s; }

// ---- One layout ------------------------------------------------------------------------------

// Bytes of `runs` (relative to the slot's base) in distinct 32-byte DRAM sectors.
double sector_bytes(const std::vector<ucxdt::ref::Block> &runs, int64_t to_slot,
                    int64_t slot_bytes) {
    std::vector<bool> touched(static_cast<size_t>(slot_bytes / 32 + 1), false);
    int64_t n = 0;
    for (const auto &[disp, len] : runs) {
        const int64_t a = (disp + to_slot) / 32, b = (disp + to_slot + len - 1) / 32;
        for (int64_t s = a; s <= b; ++s)
            if (!touched[static_cast<size_t>(s)]) touched[static_cast<size_t>(s)] = true, ++n;
    }
    return 32.0 * static_cast<double>(n);
}

// One strided level: equal runs at one positive stride that leaves gaps. Returns rows or 0.
int64_t single_strided_level(const std::vector<ucxdt::ref::Block> &runs, int64_t *len,
                             int64_t *stride) {
    if (runs.size() < 2) return 0;
    *len = runs[0].second, *stride = runs[1].first - runs[0].first;
    if (*stride <= *len) return 0;
    for (size_t i = 1; i < runs.size(); ++i)
        if (runs[i].second != *len || runs[i].first - runs[i - 1].first != *stride) return 0;
    return static_cast<int64_t>(runs.size());
}

// Where a layout's bytes go in a rotation slot. The type map touches [span_lo, span_lo + span)
// of the application's buffer, whose start cudaMalloc aligns to 256 bytes; a slot holds just
// these bytes, at align_off, so kernels see the application's alignment.
struct Placement {
    int64_t span_lo = 0, span = 0, align_off = 0, slot_bytes = 0;
};

Placement place(const L::Layout &l, const ucxdt::type &t) {
    const int64_t ext = t.extent(), tlb = t.true_lb(), text = t.true_extent();
    const int64_t reach = (l.count - 1) * ext;  // element i sits i extents from the first
    Placement p;
    p.span_lo = l.origin_bytes + tlb + std::min<int64_t>(0, reach);
    p.span = text + (reach < 0 ? -reach : reach);
    p.align_off = ((p.span_lo % 256) + 256) % 256;
    p.slot_bytes = round_up(p.align_off + p.span, 256);
    return p;
}

// A row naming layout l, its packed size, plan and GPU method; *t gets its committed type.
Row layout_row(const L::Layout &l, ucxdt::type *t) {
    Row r;
    r.name = l.name, r.count = l.count;
    *t = build(*l.type);
    r.packed = l.count * t->size();
    const ucxdt::plan_info plan = t->plan(l.count);
    r.plan = L::plan_name(plan.plan_class), r.blocks = plan.num_blocks;
    ucxdt_gpu_method_t method;
    ucxdt_ok(ucxdt_gpu_method(t->get(), l.count, &method), "ucxdt_gpu_method");
    r.method = method_name(method);
    return r;
}

Row run_layout(const L::Layout &l, const Options &opt, Gpu &g) {
    ucxdt::type t;
    Row r = layout_row(l, &t);
    if (r.packed == 0) {
        add_note(r, "no data");
        r.verified = true;
        return r;
    }

    const Placement pl = place(l, t);
    const int64_t span_lo = pl.span_lo, span = pl.span, align_off = pl.align_off;
    const int64_t slot_in = pl.slot_bytes, slot_pk = round_up(r.packed, 256);
    // Rotate among enough copies that a run's bytes were evicted from L2 since their last use.
    const int64_t footprint = span + 2 * r.packed, target = 3 * g.l2_bytes;
    r.slots = footprint >= target ? 1
                                  : std::min<int64_t>(1024, (target + footprint - 1) / footprint);

    size_t free_b = 0, total_b = 0;
    cuda_ok(cudaMemGetInfo(&free_b, &total_b), "cudaMemGetInfo");
    const int64_t need = r.slots * (slot_in + 2 * slot_pk);
    if (static_cast<double>(need) > 0.9 * static_cast<double>(free_b))
        throw BenchError("needs " + std::to_string(need >> 20) + " MiB of device memory, " +
                         std::to_string(free_b >> 20) + " MiB free");
    DeviceBuffer in(r.slots * slot_in), pk(r.slots * slot_pk), ref(r.slots * slot_pk);
    // The application's buffer pointer in slot s (its touched bytes start at offset align_off).
    auto buf = [&](int64_t s) {
        return shifted(in.p + (s % r.slots) * slot_in, align_off - span_lo + l.origin_bytes);
    };
    auto packed_at = [&](const DeviceBuffer &b, int64_t s) {
        return b.p + (s % r.slots) * slot_pk;
    };
    auto sync = [&](const char *what) { cuda_ok(cudaStreamSynchronize(g.stream), what); };

    // ---- Verification against the CPU engine, once ----
    HostBuffer h_in(span), h_packed(r.packed), h_got(std::max(span, r.packed)), h_un(span);
    ucxdt::ref::fill_pattern(h_in.data(), span, 0x5eed0000u + static_cast<uint64_t>(r.packed));
    std::byte *const h_buf = shifted(h_in.data(), l.origin_bytes - span_lo);
    int64_t pos = 0;
    ucxdt_ok(ucxdt_pack(h_buf, l.count, t.get(), h_packed.data(), r.packed, &pos), "host pack");
    for (int64_t s = 0; s < r.slots; ++s)
        upload(in.p + s * slot_in + align_off, h_in.data(), span, "upload input");
    // Poison: the complement of the expected stream, so no unwritten byte can pass.
    ucxdt::ref::fill_complement(h_got.data(), h_packed.data(), r.packed);
    upload(pk.p, h_got.data(), r.packed, "upload poison");
    pos = 0;
    ucxdt_ok(ucxdt_pack_async(buf(0), l.count, t.get(), pk.p, r.packed, &pos, g.stream),
             "ucxdt_pack_async");
    sync("pack");
    download(h_got.data(), pk.p, r.packed, "download packed");
    std::string diff = first_difference(h_got.data(), h_packed.data(), r.packed);
    if (!diff.empty()) add_note(r, "PACK MISMATCH at " + diff);
    // Unpack the correct stream into the complement of the input; gaps must keep the poison.
    ucxdt::ref::fill_complement(h_un.data(), h_in.data(), span);
    upload(in.p + align_off, h_un.data(), span, "upload poison");
    pos = 0;
    ucxdt_ok(ucxdt_unpack(h_packed.data(), r.packed, &pos,
                          shifted(h_un.data(), l.origin_bytes - span_lo), l.count, t.get()),
             "host unpack");
    upload(pk.p, h_packed.data(), r.packed, "upload packed");
    pos = 0;
    ucxdt_ok(ucxdt_unpack_async(pk.p, r.packed, &pos, buf(0), l.count, t.get(), g.stream),
             "ucxdt_unpack_async");
    sync("unpack");
    download(h_got.data(), in.p + align_off, span, "download unpacked");
    const std::string udiff = first_difference(h_got.data(), h_un.data(), span);
    if (!udiff.empty()) add_note(r, "UNPACK MISMATCH at " + udiff);
    r.verified = diff.empty() && udiff.empty();
    // The memcpy source holds data too (never time on a buffer nothing wrote).
    for (int64_t s = 0; s < r.slots; ++s)
        upload(ref.p + s * slot_pk, h_packed.data(), r.packed, "upload memcpy source");

    // ---- Timed runs ----
    int64_t slot = 0;
    auto timed = [&](auto &&op, double *call_us = nullptr) {
        return median_event_seconds(g, opt.warmup, opt.iterations, slot, op, call_us);
    };
    const double t_pack = timed([&](int64_t s) {
        int64_t p = 0;
        ucxdt_ok(ucxdt_pack_async(buf(s), l.count, t.get(), packed_at(pk, s), r.packed, &p,
                                  g.stream),
                 "ucxdt_pack_async");
    }, &r.pack_call_us);
    const double t_unpack = timed([&](int64_t s) {
        int64_t p = 0;
        ucxdt_ok(ucxdt_unpack_async(packed_at(pk, s), r.packed, &p, buf(s), l.count, t.get(),
                                    g.stream),
                 "ucxdt_unpack_async");
    });
    const double t_copy = timed([&](int64_t s) {
        cuda_ok(cudaMemcpyAsync(packed_at(pk, s), packed_at(ref, s), static_cast<size_t>(r.packed),
                                cudaMemcpyDeviceToDevice, g.stream), "cudaMemcpyAsync");
    }, &r.memcpy_call_us);
    r.pack_us = t_pack * 1e6, r.unpack_us = t_unpack * 1e6, r.memcpy_us = t_copy * 1e6;
    r.pack_gbs = gbs(r.packed, t_pack), r.unpack_gbs = gbs(r.packed, t_unpack);
    r.memcpy_gbs = gbs(r.packed, t_copy);

#ifdef UCXDT_PACKBENCH_YAKSA
    // Yaksa on the same buffers: checked as ucxdt was (poisoned output, the CPU engine's
    // stream), then timed the same way. A Yaksa failure is noted, and fails no ucxdt result.
    try {
        const ucxdt::bench::YaksaType yt(*l.type);
        if (yt.size() != t.size()) throw ucxdt::bench::YaksaError("Yaksa's size differs");
        ucxdt::ref::fill_complement(h_got.data(), h_packed.data(), r.packed);
        upload(pk.p, h_got.data(), r.packed, "upload poison");
        // Where Yaksa has no kernel for a type it splits it up (a struct: per element and
        // entry), which can take seconds: such a layout is timed by this one run alone.
        auto t0 = Clock::now();
        ucxdt::bench::yaksa_pack_on(buf(0), l.count, yt, pk.p, r.packed, g.stream);
        sync("yaksa pack");
        const double first_pack = std::chrono::duration<double>(Clock::now() - t0).count();
        download(h_got.data(), pk.p, r.packed, "download packed");
        const std::string ydiff = first_difference(h_got.data(), h_packed.data(), r.packed);
        ucxdt::ref::fill_complement(h_got.data(), h_in.data(), span);
        upload(in.p + align_off, h_got.data(), span, "upload poison");
        upload(pk.p, h_packed.data(), r.packed, "upload packed");
        t0 = Clock::now();
        ucxdt::bench::yaksa_unpack_on(pk.p, r.packed, buf(0), l.count, yt, g.stream);
        sync("yaksa unpack");
        const double first_unpack = std::chrono::duration<double>(Clock::now() - t0).count();
        download(h_got.data(), in.p + align_off, span, "download unpacked");
        const std::string yudiff = first_difference(h_got.data(), h_un.data(), span);
        if (!ydiff.empty()) add_note(r, "YAKSA PACK MISMATCH at " + ydiff);
        if (!yudiff.empty()) add_note(r, "YAKSA UNPACK MISMATCH at " + yudiff);
        r.yaksa_verified = ydiff.empty() && yudiff.empty() ? "yes" : "no";
        if (first_pack + first_unpack > 1.0) {
            r.yaksa_pack_gbs = gbs(r.packed, first_pack);
            r.yaksa_unpack_gbs = gbs(r.packed, first_unpack);
            char b[96];
            std::snprintf(b, sizeof b, "yaksa: one run each, host clock (pack %.2f s, unpack %.2f s)",
                          first_pack, first_unpack);
            add_note(r, b);
        } else {
            r.yaksa_pack_gbs = gbs(r.packed, timed([&](int64_t s) {
                ucxdt::bench::yaksa_pack_on(buf(s), l.count, yt, packed_at(pk, s), r.packed,
                                            g.stream);
            }, &r.yaksa_pack_call_us));
            r.yaksa_unpack_gbs = gbs(r.packed, timed([&](int64_t s) {
                ucxdt::bench::yaksa_unpack_on(packed_at(pk, s), r.packed, buf(s), l.count, yt,
                                              g.stream);
            }));
        }
    } catch (const ucxdt::bench::YaksaError &e) {
        sync("yaksa");
        add_note(r, std::string("yaksa: ") + e.what());
    }
#endif

    // The blocks in pack order, from the reference walker (independent of the engine).
    const auto runs = ucxdt::ref::typemap_runs(*l.type, l.count);
    const int64_t to_slot = align_off - span_lo + l.origin_bytes;
    r.sectors_read_bytes = sector_bytes(runs, to_slot, slot_in);
    // Reads of whole sectors plus the contiguous writes, at the DRAM rate that a large copy
    // reaches (counting its read and its write); unpack is the mirror image.
    const double dram_rw = 2 * g.peak_memcpy_gbs;
    r.bound_gbs = dram_rw * static_cast<double>(r.packed) /
                  (r.sectors_read_bytes + static_cast<double>(r.packed));

    int64_t len = 0, stride = 0;
    if (const int64_t rows = single_strided_level(runs, &len, &stride); rows > 0) {
        const int64_t first = runs[0].first;
        const double t2d = timed([&](int64_t s) {
            cuda_ok(cudaMemcpy2DAsync(packed_at(pk, s), static_cast<size_t>(len),
                                      shifted(buf(s), first), static_cast<size_t>(stride),
                                      static_cast<size_t>(len), static_cast<size_t>(rows),
                                      cudaMemcpyDeviceToDevice, g.stream),
                    "cudaMemcpy2DAsync");
        });
        r.memcpy2d_gbs = gbs(r.packed, t2d);
    }

    if (static_cast<int64_t>(runs.size()) <= opt.per_block_cap) {
        // Enough runs to enqueue about a million copies, between 3 and -n.
        const int reps = static_cast<int>(std::clamp<int64_t>(
            1000000 / static_cast<int64_t>(runs.size()), 3, opt.iterations));
        const double tpb = median_event_seconds(g, 1, reps, slot, [&](int64_t s) {
            char *dst = packed_at(pk, s);
            const char *src = buf(s);
            for (const auto &[disp, n] : runs) {
                cuda_ok(cudaMemcpyAsync(dst, shifted(src, disp), static_cast<size_t>(n),
                                        cudaMemcpyDeviceToDevice, g.stream), "cudaMemcpyAsync");
                dst += n;
            }
        });
        r.per_block_gbs = gbs(r.packed, tpb);
    } else {
        add_note(r, "per-block memcpy skipped: " + std::to_string(runs.size()) + " blocks > " +
                        std::to_string(opt.per_block_cap));
    }

    // First use of a block list: a fresh type (committed, never packed) uploads its work units
    // on that call. Host clock from the call until the stream has finished.
    if (t.plan(l.count).plan_class == UCXDT_PLAN_BLOCK_LIST && opt.first_use_reps > 0) {
        auto to_completion = [&](const ucxdt::type &ty) {
            int64_t p = 0;
            const auto t0 = Clock::now();
            ucxdt_ok(ucxdt_pack_async(buf(0), l.count, ty.get(), pk.p, r.packed, &p, g.stream),
                     "ucxdt_pack_async");
            cuda_ok(cudaStreamSynchronize(g.stream), "cudaStreamSynchronize");
            return std::chrono::duration<double>(Clock::now() - t0).count();
        };
        std::vector<double> first;
        for (int i = 0; i < opt.first_use_reps; ++i) {
            ucxdt::type fresh = build(*l.type);
            first.push_back(to_completion(fresh));
        }
        r.first_use_us = median(first) * 1e6;
        r.cached_us =
            median_host_seconds(opt.warmup, opt.iterations, [&] { to_completion(t); }) * 1e6;
    }
    return r;
}

}  // namespace
