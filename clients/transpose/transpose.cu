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

struct Options : CommonOptions {
    Options() { iters = 50, warmup = 5; }
    long n = 1024, m = 1024;
    bool complex = true;
    bool handpack = false;
};

std::string usage() {
    return "usage: mpirun -np P transpose [options]\n"
           "  -N N[,M]  global matrix of N rows and M columns (1024; M = N); N, M >= P\n"
           "  -t complex|double  element type (complex: MPI_C_DOUBLE_COMPLEX)\n"
           "  -x alltoallw|handpack  MPI_Alltoallw of subarrays, or the program's packing (alltoallw)\n" +
           Options{}.usage("the matrices") +
           "  csv: one row: transpose,ranks,N,M,type,mode,mem,bytes_total,iterations,median_us,min_us,\n"
           "       mismatches\n";
}

std::string parse(int argc, char **argv, Options *o) {
    std::vector<long> v;
    std::string type = "complex", mode = "alltoallw";
    const std::string letters = std::string("N:t:x:") + CommonOptions::kLetters;
    for (int c; (c = getopt(argc, argv, letters.c_str())) != -1;) {
        if (o->take(c, optarg)) continue;
        switch (c) {
        case 'N':
            if (!parse_list(optarg, &v) || v.size() > 2) return "-N takes N or N,M";
            o->n = v[0], o->m = v.back();
            break;
        case 't': type = optarg; break;
        case 'x': mode = optarg; break;
        default: return "unknown option";
        }
    }
    if (std::string e = o->check(argc, argv, optind); !e.empty()) return e;
    if (type != "complex" && type != "double") return "-t takes complex or double";
    if (mode != "alltoallw" && mode != "handpack") return "-x takes alltoallw or handpack";
    o->complex = type == "complex", o->handpack = mode == "handpack";
    return "";
}

// Block p of n things over `parts`: the first n % parts blocks hold one more.
int64_t block_len(int64_t n, int parts, int p) { return n / parts + (p < n % parts); }
int64_t block_off(int64_t n, int parts, int p) { return p * (n / parts) + std::min<int64_t>(p, n % parts); }

}  // namespace

int main(int argc, char **argv) {
    Options o;
    const std::string err = parse(argc, argv, &o);  // before start(), which needs o.mem
    World world;
    if (const int rc = start("transpose", &argc, &argv, err, usage(), o.mem, &world); rc >= 0) return rc;
    const int size = world.size, me = world.rank;
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
            const int64_t slab[2] = {rlen[me], o.m}, cols[2] = {rlen[me], clen[p]}, at_col[2] = {0, coff[p]};
            const int64_t output[2] = {o.n, clen[me]}, rows[2] = {rlen[p], clen[me]}, at_row[2] = {roff[p], 0};
            stypes[p] = subarray(2, slab, cols, at_col, elem);
            rtypes[p] = subarray(2, output, rows, at_row, elem);
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

    std::vector<double> host(size_t(out.count()));
    const Steps run = run_steps(
        o, wd, MPI_COMM_WORLD,
        [&](long step) {
            box_fill(o.mem, src.as<double>(), in, in_at, step);
            dst.set_bytes(0xff);  // NaN: an element left unwritten never passes
        },
        [&](long) { exchange(); },
        [&](long step) {
            dst.to_host(host.data());
            int budget = 5;
            return box_mismatches(host.data(), out, out_at, step, "output", &budget);
        });

    const Summary s = summarize(run.times);
    const long long total = static_cast<long long>(o.n * o.m * k * int64_t{sizeof(double)});
    const char *type = o.complex ? "complex" : "double", *mode = o.handpack ? "handpack" : "alltoallw";
    if (me == 0 && o.csv) {
        std::printf("transpose,%d,%ld,%ld,%s,%s,%s,%lld,%zu,%.3f,%.3f,%lld\n", size, o.n, o.m, type, mode,
                    mem_name(o.mem), total, run.times.size(), s.median * 1e6, s.min * 1e6, run.wrong);
    } else if (me == 0) {
        std::printf("transpose: %d ranks, %ld x %ld %s, rows to columns by %s%s, %s memory\n", size, o.n, o.m, type,
                    mode, o.handpack ? (even ? " (MPI_Alltoall)" : " (MPI_Alltoallv)") : "", mem_name(o.mem));
        std::printf("transpose: %lld bytes in all; %zu iterations after %ld warm-up\n", total, run.times.size(), o.warmup);
        std::printf("transpose: exchange (slowest rank) median %.1f us, min %.1f us; %.3f GB/s in all at the median\n",
                    s.median * 1e6, s.min * 1e6, s.median > 0 ? total / s.median / 1e9 : 0.0);
        std::printf("transpose: %s\n", run.wrong ? "FAILED: wrong elements (above)" : "every output element checked at every iteration");
    }
    for (int p = 0; p < size && !o.handpack; ++p) MPI_Type_free(&stypes[p]), MPI_Type_free(&rtypes[p]);
    if (stream) cudaStreamDestroy(stream);
    MPI_Finalize();
    return run.wrong ? 1 : 0;
}
