// mpi_layouts: the application layouts of support (DDTBench's, Comb's and the GPU datatype
// papers'; docs/application-layouts.md) moved between ranks 0 and 1 by the MPI as derived
// datatypes, each against the same MPI's send of a contiguous buffer of the packed size, in the
// same run:
//   ping-pong: median one-way time (half of each round trip);
//   window:    -w (32) MPI_Isend on rank 0 against as many MPI_Irecv on rank 1, then a 0-byte
//              reply; bandwidth of the median window.
//   -x coll:   collectives of the layout on all ranks, each against the same collective of the
//              packed bytes: MPI_Bcast from rank 0, MPI_Allgather, MPI_Alltoall, their
//              nonblocking forms (MPI_Ibcast, MPI_Iallgather, MPI_Ialltoall, started and waited
//              for) and MPI_Neighbor_allgather on a periodic ring (MPI_Cart_create): median over
//              iterations of the slowest rank's time, each after a barrier. The MPI_Bcast is
//              verified on every rank.
//   -c:        the contiguous buffer alone (send and coll), the roofline for another run: an MPI
//              whose own derived-type path would take minutes.
//   -x put:    instead of both, 32 MPI_Put from rank 0 into rank 1's window, the target type
//              the layout (MPI-4.1 12.3.1), then MPI_Win_flush (passive target, locked for the
//              whole run): bandwidth of the median window, against MPI_Put of the packed bytes.
//   -x acc:    the same with MPI_Accumulate(MPI_SUM) (12.3.4), against MPI_Accumulate of the
//              packed elements as a contiguous array of the layout's one predefined type;
//              layouts of more than one predefined type, or of one MPI_SUM is not defined on
//              (bytes, characters) or whose padding makes bytes unequal (long double), are
//              skipped. Verified with small integer values, whose sums are exact.
// The derived transfer of each layout is verified once each way against the reference type-map
// walker: the receiver's buffer must hold the sender's bytes at exactly the type map's bytes and
// its own poison everywhere else.
// This client links ucxdt_support, and through it libucxdt, only to name and describe the
// layouts (the registry, the descriptions that to_mpi turns into MPI types, the walker): every
// byte moves through MPI, so a preloaded interposer sees a plain MPI program.
#include "../common/client.hpp"
#include "support/mpi_desc.hpp"
#include "support/registry.hpp"
#include "support/typemap_walk.hpp"

#include <unistd.h>

#include <cstddef>
#include <cstring>
#include <stdexcept>

namespace {

using namespace clients;
namespace L = ucxdt::layouts;

constexpr int kDataTag = 1, kAckTag = 2;

struct Options : CommonOptions {
    std::vector<L::Layout> layouts;
    bool put = false;     // -x put or acc: one-sided
    bool acc = false;     // -x acc: MPI_Accumulate rather than MPI_Put
    bool contig = false;  // -c: the contiguous buffer only
    bool coll = false;    // -x coll: the collectives of kCollectives
    int window = 32;      // -w: messages (or puts) in flight
    int64_t loop_mib = 0; // -B: MiB a layout's timed loop moves at most (0: -n iterations each)
};

std::string usage() {
    return "usage: mpirun -np 2 mpi_layouts [options]\n"
           "  -D spec,...  layouts by ucxdt_perftest's -D specs (repeatable; default: nas_mg_y,\n"
           "               milc_su3_zdown,wrf_y_sa,fft2_scatter,triangular:n=1000)\n" +
           std::string("  -x send|put|acc|coll  two-sided (ping-pong and window), one-sided MPI_Put or\n"
                       "               MPI_Accumulate(MPI_SUM) windows, or collectives on all ranks: Bcast,\n"
                       "               Allgather, Alltoall, Ibcast, Iallgather, Ialltoall, Neighbor_allgather\n"
                       "               (send)\n"
                       "  -c           the contiguous buffer alone (send, coll): the derived type's columns 0\n"
                       "  -w N         messages in flight in a window (32)\n"
                       "  -B MIB       at most this many MiB per timed loop: fewer iterations for large\n"
                       "               layouts, at least 5 (and a fifth as many warm-up); the CSV's\n"
                       "               iterations are the window's (0: -n and -W for every layout)\n") +
           Options{}.usage("the buffers") +
           "  csv: a header (client,layout,...), then per layout mpi_layouts,layout,mem,packed_bytes,\n"
           "       iterations,window,pingpong_dt_us,pingpong_contig_us,bw_dt_MBps,bw_contig_MBps,verified\n"
           "       (-x put, acc: the ping-pong columns 0, the bandwidths those of the one-sided windows;\n"
           "       -c: verified n/a)\n"
           "  -x coll csv: mpi_layouts_coll,layout,mem,packed_bytes,iterations,ranks, then for each of\n"
           "       bcast, allgather, alltoall, ibcast, iallgather, ialltoall, neighbor_allgather\n"
           "       <name>_dt_us,<name>_contig_us, then verified (-c: the _dt_us columns 0)\n";
}

// A -D list: a spec's own commas (fft2_scatter:N=512,P=4) stay with it, since the longest run of
// comma-joined parts that names a layout is taken.
std::string add_layouts(const std::string &arg, std::vector<L::Layout> *out) {
    std::vector<std::string> parts;
    for (size_t at = 0;;) {
        const size_t comma = arg.find(',', at);
        parts.push_back(arg.substr(at, comma - at));
        if (comma == std::string::npos) break;
        at = comma + 1;
    }
    for (size_t i = 0; i < parts.size();) {
        std::string why;  // of the longest try, which names the most
        size_t j = parts.size();
        for (; j > i; --j) {
            std::string spec = parts[i], e;
            for (size_t k = i + 1; k < j; ++k) spec += "," + parts[k];
            L::Layout lay;
            if (L::resolve_layout(spec, &lay, &e)) {
                out->push_back(lay);
                break;
            }
            if (why.empty()) why = "-D " + spec + ": " + e;
        }
        if (j == i) return why;
        i = j;
    }
    return "";
}

std::string parse(int argc, char **argv, Options *o) {
    const std::string letters = std::string("D:x:w:cB:") + CommonOptions::kLetters;
    for (int c; (c = getopt(argc, argv, letters.c_str())) != -1;) {
        if (o->take(c, optarg)) continue;
        if (c == 'x') {
            const std::string x = optarg;
            if (x != "send" && x != "put" && x != "acc" && x != "coll") return "-x takes send, put, acc or coll";
            o->put = x == "put" || x == "acc";
            o->acc = x == "acc";
            o->coll = x == "coll";
            continue;
        }
        if (c == 'c') {
            o->contig = true;
            continue;
        }
        if (c == 'B') {
            o->loop_mib = std::atoll(optarg);
            if (o->loop_mib < 0) return "-B takes MiB >= 0";
            continue;
        }
        if (c == 'w') {
            o->window = std::atoi(optarg);
            if (o->window < 1 || o->window > 4096) return "-w takes 1 to 4096";
            continue;
        }
        if (c != 'D') return "unknown option";
        if (std::string e = add_layouts(optarg, &o->layouts); !e.empty()) return e;
    }
    if (o->contig && o->put) return "-c takes send or coll";
    if (std::string e = o->check(argc, argv, optind); !e.empty()) return e;
    if (o->layouts.empty()) return add_layouts("nas_mg_y,milc_su3_zdown,wrf_y_sa,fft2_scatter,triangular:n=1000", &o->layouts);
    return "";
}

// One message shape on ranks 0 and 1: (buffer, count, type), timed both ways.
struct Shape {
    void *ptr;
    int count;
    MPI_Datatype type;
};

class Bench {
public:
    Bench(const Options &o, int rank, Watchdog &wd) : o_(o), rank_(rank), wd_(wd), iters_(o.iters), warmup_(o.warmup) {}

    // The iterations of the loops to come, for messages of `packed` bytes: -n, or fewer under -B
    // (a window's bytes per iteration; the same count for the ping-pongs, which move less).
    long size_for(int64_t packed) {
        iters_ = o_.iters;
        warmup_ = o_.warmup;
        if (o_.loop_mib > 0 && packed > 0) {
            const double per_iter = double(packed) * double(o_.window);
            iters_ = std::max(5L, std::min<long>(o_.iters, long(double(o_.loop_mib) * double(1 << 20) / per_iter)));
            warmup_ = std::min<long>(o_.warmup, std::max(1L, iters_ / 5));
        }
        return iters_;
    }

    // Median one-way time of a ping-pong between ranks 0 and 1 (rank 0's measure).
    double pingpong(const Shape &s, const char *what) {
        return timed(what, [&] {
            if (rank_ == 0) {
                MPI_Send(s.ptr, s.count, s.type, 1, kDataTag, MPI_COMM_WORLD);
                MPI_Recv(s.ptr, s.count, s.type, 1, kDataTag, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            } else if (rank_ == 1) {
                MPI_Recv(s.ptr, s.count, s.type, 0, kDataTag, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                MPI_Send(s.ptr, s.count, s.type, 0, kDataTag, MPI_COMM_WORLD);
            }
        }) / 2;
    }

    // Median time of a window of -w messages from rank 0 to rank 1 and the reply. The
    // receives of a window share one buffer, as in OSU's and ucx_perftest's bandwidth tests:
    // every message carries the same bytes, and a copy per message would not fit large layouts.
    double window(const Shape &s, const char *what) {
        std::vector<MPI_Request> reqs(size_t(o_.window));
        return timed(what, [&] {
            if (rank_ > 1) return;
            for (MPI_Request &r : reqs)
                if (rank_ == 0) MPI_Isend(s.ptr, s.count, s.type, 1, kDataTag, MPI_COMM_WORLD, &r);
                else MPI_Irecv(s.ptr, s.count, s.type, 0, kDataTag, MPI_COMM_WORLD, &r);
            MPI_Waitall(o_.window, reqs.data(), MPI_STATUSES_IGNORE);
            if (rank_ == 0) MPI_Recv(nullptr, 0, MPI_BYTE, 1, kAckTag, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            else MPI_Send(nullptr, 0, MPI_BYTE, 0, kAckTag, MPI_COMM_WORLD);
        });
    }

    // Median time, on rank 0, of -w MPI_Put (-x acc: MPI_Accumulate with MPI_SUM) of the shape
    // into rank 1's window at `disp` bytes and the MPI_Win_flush that completes them there; a
    // barrier after each, untimed.
    double put_window(const Shape &s, MPI_Win win, MPI_Aint disp, const char *what) {
        std::vector<double> t;
        for (long it = 0; it < warmup_ + iters_; ++it) {
            wd_.arm(what, it);
            if (rank_ == 0) {
                const double t0 = MPI_Wtime();
                for (int i = 0; i < o_.window; ++i)
                    if (o_.acc) MPI_Accumulate(s.ptr, s.count, s.type, 1, disp, s.count, s.type, MPI_SUM, win);
                    else MPI_Put(s.ptr, s.count, s.type, 1, disp, s.count, s.type, win);
                MPI_Win_flush(1, win);
                if (it >= warmup_) t.push_back(MPI_Wtime() - t0);
            }
            MPI_Barrier(MPI_COMM_WORLD);
        }
        return t.empty() ? 0 : summarize(t).median;
    }

    // Median over iterations of the slowest rank's time of one collective, each after a barrier.
    template <typename F> double collective(const char *what, F &&once) {
        std::vector<double> t;
        for (long it = 0; it < warmup_ + iters_; ++it) {
            wd_.arm(what, it);
            MPI_Barrier(MPI_COMM_WORLD);
            const double t0 = MPI_Wtime();
            once();
            double mine = MPI_Wtime() - t0, slowest = 0;
            MPI_Allreduce(&mine, &slowest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
            if (it >= warmup_) t.push_back(slowest);
        }
        return summarize(t).median;
    }

private:
    template <typename F> double timed(const char *what, F &&once) {
        std::vector<double> t;
        for (long it = 0; it < warmup_ + iters_; ++it) {
            wd_.arm(what, it);
            const double t0 = MPI_Wtime();
            once();
            if (it >= warmup_) t.push_back(MPI_Wtime() - t0);
        }
        return summarize(t).median;
    }
    const Options &o_;
    int rank_;
    Watchdog &wd_;
    long iters_, warmup_;
};

// The layout as an MPI datatype; "" or why the MPI refused it (it returns errors meanwhile).
MPI_Datatype to_mpi_type(const L::Layout &lay, std::string *why) {
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);
    MPI_Datatype t = MPI_DATATYPE_NULL;
    try {
        t = ucxdt::support::to_mpi(*lay.type);
    } catch (const std::exception &e) {
        *why = e.what();
    }
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
    MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_ARE_FATAL);
    return t;
}

// Sends the layout from `from` to `to` once and checks the receiver's buffer against the
// walker: the type map's bytes from `pattern`, every other byte still the poison. Every rank
// returns whether both sides agreed.
bool verify(const L::Layout &lay, MPI_Datatype t, Buffer &buf, int rank, int from, int to,
            const std::vector<std::byte> &pattern, const std::vector<std::byte> &poison) {
    std::byte *origin = buf.as<std::byte>() + lay.origin_bytes;
    std::string err;
    if (rank == from) {
        buf.from_host(pattern.data());
        MPI_Send(origin, int(lay.count), t, to, kDataTag, MPI_COMM_WORLD);
    } else if (rank == to) {
        buf.from_host(poison.data());
        MPI_Recv(origin, int(lay.count), t, from, kDataTag, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        std::vector<std::byte> got(buf.size());
        buf.to_host(got.data());
        err = ucxdt::ref::check_scattered(ucxdt::ref::typemap_runs(*lay.type, lay.count), lay.origin_bytes,
                                          got.data(), pattern.data(), int64_t(buf.size()));
        if (!err.empty())
            std::fprintf(stderr, "mpi_layouts: %s, rank %d to %d: %s\n", lay.name.c_str(), from, to, err.c_str());
    }
    int ok = err.empty(), all = 0;
    MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    return all;
}

// verify() for a put from rank 0 into rank 1's window `win` over buf.
bool verify_put(const L::Layout &lay, MPI_Datatype t, Buffer &buf, MPI_Win win, int rank,
                const std::vector<std::byte> &pattern, const std::vector<std::byte> &poison) {
    std::string err;
    buf.from_host(rank == 0 ? pattern.data() : poison.data());
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) {
        MPI_Put(buf.as<std::byte>() + lay.origin_bytes, int(lay.count), t, 1, MPI_Aint(lay.origin_bytes),
                int(lay.count), t, win);
        MPI_Win_flush(1, win);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 1) {
        std::vector<std::byte> got(buf.size());
        buf.to_host(got.data());
        err = ucxdt::ref::check_scattered(ucxdt::ref::typemap_runs(*lay.type, lay.count), lay.origin_bytes,
                                          got.data(), pattern.data(), int64_t(buf.size()));
        if (!err.empty()) std::fprintf(stderr, "mpi_layouts: %s, MPI_Put: %s\n", lay.name.c_str(), err.c_str());
    }
    int ok = err.empty(), all = 0;
    MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    return all;
}

// The one predefined type of a layout that MPI_SUM reduces exactly on small integers, or
// UCXDT_PRIMITIVE_LAST: every leaf of its description (entries of no data too, as Open MPI checks
// an accumulate's types by their constructors' arguments) is that type.
ucxdt_primitive_t summable_primitive(const L::TypeDesc &d) {
    std::vector<const L::TypeDesc *> todo{&d};
    ucxdt_primitive_t kind = UCXDT_PRIMITIVE_LAST;
    bool first = true;
    while (!todo.empty()) {
        const L::TypeDesc *n = todo.back();
        todo.pop_back();
        if (n->combiner == UCXDT_COMBINER_NAMED) {
            if (!first && n->primitive != kind) return UCXDT_PRIMITIVE_LAST;
            kind = n->primitive, first = false;
        }
        for (const L::TypeDescPtr &c : n->children) todo.push_back(c.get());
    }
    const bool summable = kind != UCXDT_BYTE && kind != UCXDT_CHAR && kind != UCXDT_LONG_DOUBLE;
    return summable ? kind : UCXDT_PRIMITIVE_LAST;
}

// Writes the small integer v as a `p` at `at` (a complex one as (v, 0)).
void put_value(std::byte *at, ucxdt_primitive_t p, int v) {
    auto put = [&](auto x) { std::memcpy(at, &x, sizeof x); };
    switch (p) {
    case UCXDT_INT8: return put(int8_t(v));
    case UCXDT_INT16: return put(int16_t(v));
    case UCXDT_INT32: return put(int32_t(v));
    case UCXDT_INT64: return put(int64_t(v));
    case UCXDT_UINT8: return put(uint8_t(v));
    case UCXDT_UINT16: return put(uint16_t(v));
    case UCXDT_UINT32: return put(uint32_t(v));
    case UCXDT_UINT64: return put(uint64_t(v));
    case UCXDT_FLOAT: return put(float(v));
    case UCXDT_DOUBLE: return put(double(v));
    case UCXDT_FLOAT_COMPLEX: put(float(v)), std::memset(at + 4, 0, 4); return;
    case UCXDT_DOUBLE_COMPLEX: put(double(v)), std::memset(at + 8, 0, 8); return;
    default: return;
    }
}

// verify() for MPI_Accumulate(MPI_SUM) from rank 0 into rank 1's window `win` over buf: element
// k of the origin holds k % 32 + 1, of the target k % 16 + 2, every other byte its poison; the
// target must end with their sums and its poison.
bool verify_acc(const L::Layout &lay, MPI_Datatype t, Buffer &buf, MPI_Win win, int rank,
                const std::vector<std::byte> &poison) {
    std::vector<std::byte> image = poison, want = poison;
    int64_t k = 0;
    ucxdt::ref::walk_primitives(*lay.type, lay.count, [&](int64_t offset, ucxdt_primitive_t p) {
        std::byte *at = image.data() + lay.origin_bytes + offset;
        put_value(at, p, rank == 0 ? int(k % 32 + 1) : int(k % 16 + 2));
        put_value(want.data() + lay.origin_bytes + offset, p, int(k % 32 + 1 + k % 16 + 2));
        ++k;
    });
    buf.from_host(image.data());
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) {
        MPI_Accumulate(buf.as<std::byte>() + lay.origin_bytes, int(lay.count), t, 1, MPI_Aint(lay.origin_bytes),
                       int(lay.count), t, MPI_SUM, win);
        MPI_Win_flush(1, win);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    std::string err;
    if (rank == 1) {
        std::vector<std::byte> got(buf.size());
        buf.to_host(got.data());
        for (size_t i = 0; i < got.size() && err.empty(); ++i)
            if (got[i] != want[i]) err = "byte " + std::to_string(int64_t(i) - lay.origin_bytes) + " of the layout differs";
        if (!err.empty()) std::fprintf(stderr, "mpi_layouts: %s, MPI_Accumulate: %s\n", lay.name.c_str(), err.c_str());
    }
    int ok = err.empty(), all = 0;
    MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    return all;
}

// verify() for MPI_Bcast of the layout from rank 0: every other rank checks its buffer.
bool verify_bcast(const L::Layout &lay, MPI_Datatype t, Buffer &buf, int rank,
                  const std::vector<std::byte> &pattern, const std::vector<std::byte> &poison) {
    std::string err;
    buf.from_host(rank == 0 ? pattern.data() : poison.data());
    MPI_Bcast(buf.as<std::byte>() + lay.origin_bytes, int(lay.count), t, 0, MPI_COMM_WORLD);
    if (rank != 0) {
        std::vector<std::byte> got(buf.size());
        buf.to_host(got.data());
        err = ucxdt::ref::check_scattered(ucxdt::ref::typemap_runs(*lay.type, lay.count), lay.origin_bytes,
                                          got.data(), pattern.data(), int64_t(buf.size()));
        if (!err.empty()) std::fprintf(stderr, "mpi_layouts: %s, MPI_Bcast to rank %d: %s\n", lay.name.c_str(), rank, err.c_str());
    }
    int ok = err.empty(), all = 0;
    MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    return all;
}

// -x coll: the collectives timed, in the CSV's order.
enum Collective { kBcast, kAllgather, kAlltoall, kIbcast, kIallgather, kIalltoall, kNeighborAllgather, kCollectives };
constexpr const char *kCollectiveNames[kCollectives] = {"bcast", "allgather", "alltoall", "ibcast",
                                                        "iallgather", "ialltoall", "neighbor_allgather"};

// One collective of `count` elements of `type` per peer: from `send` into `recv`, whose blocks
// for consecutive peers are count extents apart (MPI-4.1 §6.4, §6.7, §6.8, §8.6); MPI_Bcast in place
// at `send`. The nonblocking forms are started and waited for at once (their cost, not overlap).
void run_collective(Collective c, void *send, void *recv, int count, MPI_Datatype type, MPI_Comm ring) {
    MPI_Request r = MPI_REQUEST_NULL;
    switch (c) {
    case kBcast: MPI_Bcast(send, count, type, 0, MPI_COMM_WORLD); return;
    case kAllgather: MPI_Allgather(send, count, type, recv, count, type, MPI_COMM_WORLD); return;
    case kAlltoall: MPI_Alltoall(send, count, type, recv, count, type, MPI_COMM_WORLD); return;
    case kIbcast: MPI_Ibcast(send, count, type, 0, MPI_COMM_WORLD, &r); break;
    case kIallgather: MPI_Iallgather(send, count, type, recv, count, type, MPI_COMM_WORLD, &r); break;
    case kIalltoall: MPI_Ialltoall(send, count, type, recv, count, type, MPI_COMM_WORLD, &r); break;
    case kNeighborAllgather: MPI_Neighbor_allgather(send, count, type, recv, count, type, ring); return;
    case kCollectives: return;
    }
    MPI_Wait(&r, MPI_STATUS_IGNORE);
}

// -x coll for one layout: each collective of the derived type, then of its packed bytes (us;
// [c][0] derived, [c][1] contiguous). Per rank, the layout's blocks for its peers lie one
// extent of `count` elements after another, in a buffer from the layout's origin offset; the
// contiguous blocks one packed size apart.
struct CollTimes {
    double us[kCollectives][2] = {};
};
CollTimes time_collectives(Bench &bench, const Options &o, const L::Layout &lay, MPI_Datatype t,
                           Buffer &buf, Buffer &contig, int size, MPI_Comm ring) {
    MPI_Aint lb = 0, extent = 0;
    MPI_Type_get_extent(t, &lb, &extent);
    const size_t packed = contig.size();
    // size blocks each way (a ring's two neighbours are at most that).
    Buffer send_ctg(o.mem, size_t(size) * packed), recv_ctg(o.mem, size_t(size) * packed);
    Buffer send_dt, recv_dt;
    if (!o.contig) {
        const size_t bytes = lay.buffer_bytes + size_t(size - 1) * size_t(lay.count) * size_t(extent);
        send_dt = Buffer(o.mem, bytes), recv_dt = Buffer(o.mem, bytes);
        send_dt.set_bytes(0), recv_dt.set_bytes(0);
    }
    send_ctg.set_bytes(0), recv_ctg.set_bytes(0);
    // What the watchdog names, kept for the run: it holds the text while armed.
    static const std::vector<std::string> whats = [] {
        std::vector<std::string> w;
        for (const char *name : kCollectiveNames)
            for (const char *of : {"the derived type", "the contiguous buffer"})
                w.push_back(std::string(name) + " of " + of + ", iteration");
        return w;
    }();
    const int n = int(lay.count), np = int(packed);
    CollTimes r;
    for (int c = 0; c < kCollectives; ++c) {
        const auto coll = Collective(c);
        const bool rooted = coll == kBcast || coll == kIbcast;
        if (!o.contig) {
            void *from = (rooted ? buf : send_dt).as<std::byte>() + lay.origin_bytes;
            void *to = recv_dt.as<std::byte>() + lay.origin_bytes;
            r.us[c][0] = 1e6 * bench.collective(whats[2 * c].c_str(), [&] { run_collective(coll, from, to, n, t, ring); });
        }
        void *from = rooted ? contig.get() : send_ctg.get();
        r.us[c][1] = 1e6 * bench.collective(whats[2 * c + 1].c_str(),
                                            [&] { run_collective(coll, from, recv_ctg.get(), np, MPI_BYTE, ring); });
    }
    return r;
}

// A window over `buf` on every rank; rank 0, the origin, holds a passive-target lock on all.
MPI_Win open_window(Buffer &buf, int rank) {
    MPI_Win win = MPI_WIN_NULL;
    MPI_Win_create(buf.get(), MPI_Aint(buf.size()), 1, MPI_INFO_NULL, MPI_COMM_WORLD, &win);
    if (rank == 0) MPI_Win_lock_all(0, win);
    return win;
}
void close_window(MPI_Win *win, int rank) {
    if (rank == 0) MPI_Win_unlock_all(*win);
    MPI_Win_free(win);
}

}  // namespace

int main(int argc, char **argv) {
    Options o;
    const std::string err = parse(argc, argv, &o);  // before start(), which needs o.mem
    World world;
    if (const int rc = start("mpi_layouts", &argc, &argv, err, usage(), o.mem, &world); rc >= 0) return rc;
    const int rank = world.rank;
    if (world.size < 2) die("needs 2 ranks (ranks above 1 wait)");
    Watchdog wd(o.budget);
    Bench bench(o, rank, wd);
    MPI_Comm ring = MPI_COMM_NULL;  // -x coll's neighbourhood: rank - 1 and rank + 1, periodic
    if (o.coll) {
        const int dims[1] = {world.size}, periodic[1] = {1};
        MPI_Cart_create(MPI_COMM_WORLD, 1, dims, periodic, 0, &ring);
    }
    if (rank == 0 && o.csv && o.coll) {
        std::printf("client,layout,mem,packed_bytes,iterations,ranks");
        for (const char *name : kCollectiveNames) std::printf(",%s_dt_us,%s_contig_us", name, name);
        std::printf(",verified\n");
    } else if (rank == 0 && o.coll) {
        std::printf("%-40s %10s %-18s %10s %10s %7s %s\n", "layout", "packed_B", "collective", "dt_us", "ctg_us",
                    "dt/ctg", "verified");
    } else if (rank == 0 && o.csv)
        std::printf("client,layout,mem,packed_bytes,iterations,window,pingpong_dt_us,pingpong_contig_us,"
                    "bw_dt_MBps,bw_contig_MBps,verified\n");
    else if (rank == 0)
        std::printf("%-40s %10s %10s %10s %7s %10s %10s %7s %s\n", "layout", "packed_B", "pp_dt_us",
                    "pp_ctg_us", "dt/ctg", "bw_dt_MB/s", "bw_ctg", "dt/ctg", "verified");
    bool failed = false;
    for (size_t i = 0; i < o.layouts.size(); ++i) {
        const L::Layout &lay = o.layouts[i];
        wd.arm("layout setup", long(i));
        std::string why;
        MPI_Datatype t = to_mpi_type(lay, &why);
        MPI_Count tsize = 0;
        if (t != MPI_DATATYPE_NULL) MPI_Type_size_x(t, &tsize);
        const int64_t packed = int64_t(tsize) * lay.count;
        if (t == MPI_DATATYPE_NULL || packed > INT32_MAX || lay.count > INT32_MAX) {
            if (rank == 0)
                std::fprintf(stderr, "mpi_layouts: %s skipped: %s\n", lay.name.c_str(),
                             why.empty() ? "over 2^31 bytes, beyond MPI's int counts" : why.c_str());
            if (t != MPI_DATATYPE_NULL) MPI_Type_free(&t);
            continue;
        }
        const long iters = bench.size_for(packed);
        Buffer buf(o.mem, size_t(lay.buffer_bytes)), contig(o.mem, size_t(packed));
        std::vector<std::byte> pattern(buf.size()), poison(buf.size());
        ucxdt::ref::fill_pattern(pattern.data(), int64_t(buf.size()), 0x5eed + i);
        ucxdt::ref::fill_complement(poison.data(), pattern.data(), int64_t(buf.size()));
        const Shape dt{buf.as<std::byte>() + lay.origin_bytes, int(lay.count), t};
        Shape ctg{contig.get(), int(packed), MPI_BYTE};
        // -x acc: the layout's one predefined type, the contiguous buffer an array of it.
        const ucxdt_primitive_t kind = o.acc ? summable_primitive(*lay.type) : UCXDT_PRIMITIVE_LAST;
        MPI_Datatype element = MPI_DATATYPE_NULL;
        if (o.acc) {
            if (kind == UCXDT_PRIMITIVE_LAST) {
                if (rank == 0)
                    std::fprintf(stderr, "mpi_layouts: %s skipped: not one predefined type MPI_SUM adds exactly\n",
                                 lay.name.c_str());
                MPI_Type_free(&t);
                continue;
            }
            element = ucxdt::support::to_mpi(*L::named(kind));
            int esize = 0;
            MPI_Type_size(element, &esize);
            ctg = Shape{contig.get(), int(packed / esize), element};
        }
        bool ok = true;
        double pp_dt = 0, pp_ctg = 0, win_dt = 0, win_ctg = 0;
        if (o.coll) {
            if (!o.contig) ok = verify_bcast(lay, t, buf, rank, pattern, poison);
            const CollTimes c = time_collectives(bench, o, lay, t, buf, contig, world.size, ring);
            failed |= !ok;
            const char *verified = o.contig ? "n/a" : ok ? "yes" : o.csv ? "no" : "NO";
            if (rank == 0 && o.csv) {
                std::printf("mpi_layouts_coll,\"%s\",%s,%lld,%ld,%d", lay.name.c_str(), mem_name(o.mem),
                            static_cast<long long>(packed), iters, world.size);
                for (const auto &pair : c.us) std::printf(",%.3f,%.3f", pair[0], pair[1]);
                std::printf(",%s\n", verified);
            } else if (rank == 0) {
                for (int k = 0; k < kCollectives; ++k)
                    std::printf("%-40s %10lld %-18s %10.2f %10.2f %7.2f %s\n", lay.name.c_str(),
                                static_cast<long long>(packed), kCollectiveNames[k], c.us[k][0], c.us[k][1],
                                c.us[k][0] / c.us[k][1], verified);
            }
            std::fflush(stdout);
            MPI_Type_free(&t);
            continue;
        }
        if (o.put) {
            wd.arm("window setup", long(i));
            MPI_Win w_dt = open_window(buf, rank), w_ctg = open_window(contig, rank);
            ok = o.acc ? verify_acc(lay, t, buf, w_dt, rank, poison) : verify_put(lay, t, buf, w_dt, rank, pattern, poison);
            win_dt = bench.put_window(dt, w_dt, MPI_Aint(lay.origin_bytes), "one-sided window of the derived type, iteration");
            win_ctg = bench.put_window(ctg, w_ctg, 0, "one-sided window of the contiguous buffer, iteration");
            wd.arm("window teardown", long(i));
            close_window(&w_dt, rank);
            close_window(&w_ctg, rank);
        } else if (o.contig) {
            pp_ctg = bench.pingpong(ctg, "ping-pong of the contiguous buffer, iteration");
            win_ctg = bench.window(ctg, "window of the contiguous buffer, iteration");
        } else {
            ok = verify(lay, t, buf, rank, 0, 1, pattern, poison) && verify(lay, t, buf, rank, 1, 0, pattern, poison);
            pp_dt = bench.pingpong(dt, "ping-pong of the derived type, iteration");
            pp_ctg = bench.pingpong(ctg, "ping-pong of the contiguous buffer, iteration");
            win_dt = bench.window(dt, "window of the derived type, iteration");
            win_ctg = bench.window(ctg, "window of the contiguous buffer, iteration");
        }
        failed |= !ok;
        const double mb = double(o.window) * double(packed) / (1 << 20);
        const double bw_dt = win_dt > 0 ? mb / win_dt : 0, bw_ctg = win_ctg > 0 ? mb / win_ctg : 0;
        if (rank == 0 && o.csv)
            std::printf("mpi_layouts%s,\"%s\",%s,%lld,%ld,%d,%.3f,%.3f,%.2f,%.2f,%s\n", o.acc ? "_acc" : o.put ? "_put" : "",
                        lay.name.c_str(), mem_name(o.mem), static_cast<long long>(packed), iters, o.window,
                        pp_dt * 1e6, pp_ctg * 1e6, bw_dt, bw_ctg, o.contig ? "n/a" : ok ? "yes" : "no");
        else if (rank == 0)
            std::printf("%-40s %10lld %10.2f %10.2f %7.2f %10.1f %10.1f %7.2f %s\n", lay.name.c_str(),
                        static_cast<long long>(packed), pp_dt * 1e6, pp_ctg * 1e6, pp_ctg > 0 ? pp_dt / pp_ctg : 0.0, bw_dt, bw_ctg,
                        bw_dt / bw_ctg, o.contig ? "n/a" : ok ? "yes" : "NO");
        std::fflush(stdout);
        MPI_Type_free(&t);
        if (element != MPI_DATATYPE_NULL) MPI_Type_free(&element);
    }
    wd.disarm();  // the last layout may have been skipped while armed
    if (ring != MPI_COMM_NULL) MPI_Comm_free(&ring);
    if (rank == 0 && !o.csv && o.coll)
        std::printf("(%s memory, %d ranks; us, median of the slowest rank; dt/ctg: derived over contiguous "
                    "of the packed size)\n", mem_name(o.mem), world.size);
    else if (rank == 0 && !o.csv)
        std::printf("(%s memory; one-way ping-pong medians; bandwidth of windows of %d %s, MB = 2^20 B; "
                    "dt/ctg: derived over contiguous of the packed size)\n", mem_name(o.mem), o.window,
                    o.acc ? "MPI_Accumulate(MPI_SUM) and a flush (no ping-pong)"
                    : o.put ? "MPI_Put and a flush (no ping-pong)" : "messages");
    MPI_Finalize();
    return failed ? 1 : 0;
}
