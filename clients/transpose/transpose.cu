// transpose: the global transpose between the passes of a distributed FFT, as a plain MPI
// program. An N x M matrix of complex doubles (or doubles) distributed by rows over P ranks is
// redistributed by columns: rank r goes from its row block x all M columns to all N rows x its
// column block, every element keeping its global (i, j), as mpi4py-fft and heFFTe do it.
//   -x alltoallw: one MPI_Alltoallw whose send type to peer p is the subarray of p's columns in
//                 the local slab and whose receive type from p is the subarray of p's rows in
//                 the output; the types are committed once;
//   -x handpack:  the program gathers each peer's column block into a contiguous buffer (a
//                 CUDA kernel, or loops on host memory) and calls MPI_Alltoall (MPI_Alltoallv
//                 when N or M does not divide by P). The row blocks are contiguous in the
//                 output, so the receive lands in place, as a user would arrange it.
// Each iteration fills the input with values that encode (i, j, iteration), poisons the
// output, times the exchange alone (from after an MPI_Barrier) and checks every output element.
#include "../common/box.cuh"

#include <unistd.h>

namespace {

using namespace clients;

struct Options {
    long n = 1024, m = 1024;
    bool complex = true;
    Mem mem = Mem::host;
    bool handpack = false;
    long iters = 50, warmup = 5;
    bool csv = false;
    double budget = 60;
};

const char *kUsage =
    "usage: mpirun -np P transpose [options]\n"
    "  -N N[,M]   global matrix of N rows and M columns (1024; M = N); N, M >= P\n"
    "  -t complex|double  element type (complex: MPI_C_DOUBLE_COMPLEX)\n"
    "  -m host|device     memory of the matrices (host)   -x alltoallw|handpack (alltoallw)\n"
    "  -n N  timed iterations (50)   -W N  warm-up iterations (5)\n"
    "  -f table|csv  csv: one row: transpose,ranks,N,M,type,mode,mem,bytes_total,iterations,\n"
    "                median_us,min_us,mismatches\n"
    "  -T S  abort when one iteration takes over S seconds (60)\n";

std::string parse(int argc, char **argv, Options *o) {
    std::vector<long> v;
    std::string type = "complex", mem = "host", mode = "alltoallw", fmt = "table";
    for (int c; (c = getopt(argc, argv, "N:t:m:x:n:W:f:T:")) != -1;) {
        switch (c) {
        case 'N':
            if (!parse_list(optarg, &v) || v.size() > 2) return "-N takes N or N,M";
            o->n = v[0], o->m = v.back();
            break;
        case 't': type = optarg; break;
        case 'm': mem = optarg; break;
        case 'x': mode = optarg; break;
        case 'n': o->iters = std::atol(optarg); break;
        case 'W': o->warmup = std::atol(optarg); break;
        case 'f': fmt = optarg; break;
        case 'T': o->budget = std::atof(optarg); break;
        default: return "unknown option";
        }
    }
    if (optind != argc) return std::string("unexpected argument ") + argv[optind];
    if (type != "complex" && type != "double") return "-t takes complex or double";
    if (!parse_mem(mem, &o->mem)) return "-m takes host or device";
    if (mode != "alltoallw" && mode != "handpack") return "-x takes alltoallw or handpack";
    if (fmt != "table" && fmt != "csv") return "-f takes table or csv";
    o->complex = type == "complex", o->handpack = mode == "handpack", o->csv = fmt == "csv";
    if (o->iters < 1 || o->warmup < 0 || o->budget <= 0) return "-n must be >= 1, -W >= 0, -T > 0";
    return "";
}

// Block p of n things over `parts`: the first n % parts blocks hold one more.
int64_t block_len(int64_t n, int parts, int p) { return n / parts + (p < n % parts); }
int64_t block_off(int64_t n, int parts, int p) { return p * (n / parts) + std::min<int64_t>(p, n % parts); }

MPI_Datatype subarray2d(int64_t rows, int64_t cols, int64_t sub_rows, int64_t sub_cols, int64_t row0,
                        int64_t col0, MPI_Datatype elem) {
    const int sizes[2] = {int(rows), int(cols)}, subs[2] = {int(sub_rows), int(sub_cols)},
              starts[2] = {int(row0), int(col0)};
    MPI_Datatype t;
    MPI_Type_create_subarray(2, sizes, subs, starts, MPI_ORDER_C, elem, &t);
    MPI_Type_commit(&t);
    return t;
}

}  // namespace

int main(int argc, char **argv) {
    g_prog = "transpose";
    Options o;
    const std::string err = parse(argc, argv, &o);
    if (const int rc = start(&argc, &argv, err, kUsage, o.mem); rc >= 0) return rc;
    int size = 1, me = 0;
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    Watchdog wd(o.budget);
    wd.arm("setup", 0);
    // Subarrays of a 0 extent are refused by Open MPI 4.1, and a rank without rows has no slab.
    if (o.n < size || o.m < size) die("-N %ld,%ld: both must be at least the %d ranks", o.n, o.m, size);

    const int64_t k = o.complex ? 2 : 1;  // doubles per element
    const MPI_Datatype elem = o.complex ? MPI_C_DOUBLE_COMPLEX : MPI_DOUBLE;
    std::vector<int64_t> roff(size), rlen(size), coff(size), clen(size);
    for (int p = 0; p < size; ++p)
        roff[p] = block_off(o.n, size, p), rlen[p] = block_len(o.n, size, p), coff[p] = block_off(o.m, size, p),
        clen[p] = block_len(o.m, size, p);
    const bool even = o.n % size == 0 && o.m % size == 0;
    // The local slab (my rows x M) and the output (N x my columns), in doubles.
    const Box in{{1, rlen[me], k * o.m}, {0, 0, 0}, {1, rlen[me], k * o.m}};
    const Box out{{1, o.n, k * clen[me]}, {0, 0, 0}, {1, o.n, k * clen[me]}};
    const Global in_at{{0, roff[me], 0}, {1, o.n, k * o.m}}, out_at{{0, 0, k * coff[me]}, {1, o.n, k * o.m}};
    if (std::max(in.count(), out.count()) > INT32_MAX) die("-N: a rank's part must be below 2^31 doubles");
    Buffer src(o.mem, size_t(in.count()) * sizeof(double)), dst(o.mem, size_t(out.count()) * sizeof(double));
    Buffer packed(o.handpack ? o.mem : Mem::host, o.handpack ? src.size() : 0);

    std::vector<MPI_Datatype> stypes(size), rtypes(size);
    std::vector<int> ones(size, 1), zeros(size, 0), scount(size), sdispl(size), rcount(size), rdispl(size);
    std::vector<Box> blocks(size);  // handpack: peer p's columns of the slab
    for (int p = 0; p < size; ++p) {
        if (o.handpack) {
            blocks[p] = Box{{1, rlen[me], k * o.m}, {0, 0, k * coff[p]}, {1, rlen[me], k * clen[p]}};
            scount[p] = int(rlen[me] * k * clen[p]), sdispl[p] = int(rlen[me] * k * coff[p]);
            rcount[p] = int(rlen[p] * k * clen[me]), rdispl[p] = int(roff[p] * k * clen[me]);
        } else {
            stypes[p] = subarray2d(rlen[me], o.m, rlen[me], clen[p], 0, coff[p], elem);
            rtypes[p] = subarray2d(o.n, clen[me], rlen[p], clen[me], roff[p], 0, elem);
        }
    }
    cudaStream_t stream = nullptr;
    if (o.mem == Mem::device) cuda_check(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "stream");

    auto exchange = [&] {
        if (!o.handpack) {
            MPI_Alltoallw(src.get(), ones.data(), zeros.data(), stypes.data(), dst.get(), ones.data(),
                          zeros.data(), rtypes.data(), MPI_COMM_WORLD);
            return;
        }
        for (int p = 0; p < size; ++p)
            box_copy(o.mem, stream, src.as<double>(), blocks[p], packed.as<double>() + sdispl[p], true);
        if (stream) cuda_check(cudaStreamSynchronize(stream), "pack kernels");
        if (even)
            MPI_Alltoall(packed.get(), scount[0], MPI_DOUBLE, dst.get(), rcount[0], MPI_DOUBLE, MPI_COMM_WORLD);
        else
            MPI_Alltoallv(packed.get(), scount.data(), sdispl.data(), MPI_DOUBLE, dst.get(), rcount.data(),
                          rdispl.data(), MPI_DOUBLE, MPI_COMM_WORLD);
    };

    std::vector<double> host(size_t(out.count())), times;
    long long bad_total = 0;
    for (long step = 0; step < o.warmup + o.iters && bad_total == 0; ++step) {
        wd.arm("iteration", step);
        box_fill(o.mem, src.as<double>(), in, in_at, step);
        dst.set_bytes(0xff);  // NaN: an element left unwritten never passes
        MPI_Barrier(MPI_COMM_WORLD);
        const double t0 = MPI_Wtime();
        exchange();
        const double t = MPI_Wtime() - t0;
        dst.to_host(host.data());
        int budget = 5;
        long long bad = box_mismatches(host.data(), out, out_at, step, "output", &budget);
        MPI_Allreduce(&bad, &bad_total, 1, MPI_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
        const double tmax = max_over(t, MPI_COMM_WORLD);
        if (step >= o.warmup) times.push_back(tmax);
        if (bad_total && me == 0)
            std::fprintf(stderr, "transpose: iteration %ld: %lld elements wrong (all ranks)\n", step, bad_total);
    }
    wd.disarm();

    const Summary s = summarize(times);
    const long long total = static_cast<long long>(o.n * o.m * k * int64_t{sizeof(double)});
    const char *type = o.complex ? "complex" : "double", *mode = o.handpack ? "handpack" : "alltoallw";
    if (me == 0 && o.csv) {
        std::printf("transpose,%d,%ld,%ld,%s,%s,%s,%lld,%zu,%.3f,%.3f,%lld\n", size, o.n, o.m, type, mode,
                    mem_name(o.mem), total, times.size(), s.median * 1e6, s.min * 1e6, bad_total);
    } else if (me == 0) {
        std::printf("transpose: %d ranks, %ld x %ld %s, rows to columns by %s%s, %s memory\n", size, o.n, o.m, type,
                    mode, o.handpack ? (even ? " (MPI_Alltoall)" : " (MPI_Alltoallv)") : "", mem_name(o.mem));
        std::printf("transpose: %lld bytes in all; %zu iterations after %ld warm-up\n", total, times.size(), o.warmup);
        std::printf("transpose: exchange (slowest rank) median %.1f us, min %.1f us; %.3f GB/s in all at the median\n",
                    s.median * 1e6, s.min * 1e6, s.median > 0 ? total / s.median / 1e9 : 0.0);
        std::printf("transpose: %s\n", bad_total ? "FAILED: wrong elements (above)" : "every output element checked at every iteration");
    }
    for (int p = 0; p < size && !o.handpack; ++p) MPI_Type_free(&stypes[p]), MPI_Type_free(&rtypes[p]);
    if (stream) cudaStreamDestroy(stream);
    MPI_Finalize();
    return bad_total ? 1 : 0;
}
