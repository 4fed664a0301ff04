// The multi-rank check of libucxdt_pmpi, the PMPI interposer, on host or device buffers: an
// unmodified MPI program, run once with the interposer preloaded and once without (the baseline):
//
//   mpirun -np N env LD_PRELOAD=build/pmpi/ucxdt_pmpi_<mpi>/libucxdt_pmpi.so UCXDT_PMPI_HOST=1
//                pmpi_check_<mpi> --expect-interposer [--seed S] [--types N] [--max-size BYTES]
//   mpirun -np N pmpi_check_<mpi> [--seed S] [--types N] [--max-size BYTES]
// --mem device hands MPI device copies of every buffer (GPU 0; needs a CUDA-aware MPI without
// the interposer); --mem managed managed-memory copies (which Open MPI's CPU paths may touch,
// so no call is skipped for them).
//
// For each of N random type pairs (a type and a relayout of the same signature, drawn alike
// on every rank) it runs one point-to-point case, one collective case and one MPI_Pack case,
// taking the modes in turn (p2p_cases.cpp, collective_cases.cpp, pack_cases.cpp). Every
// receive buffer is poisoned; afterwards the bytes of the receive type map must hold the
// sender's data as the standard packs it (the reference walker), every other byte the poison.
// Each case prints `digest <case> <hash per rank>` of its final receive buffers, so that two
// runs can be compared (run_pair.sh). A failure prints `FAIL rank <r> <case>: ...`; the exit
// status is then non-zero. --trace prints each case before it runs (to find a hang).
// --one-sided adds a one-sided case per pair (rma_cases.cpp): puts and gets of the pair's
// types between windows, under each synchronization mode.
//
// Where a known deviation of this MPI from the standard applies to a case's types
// (support/deviations.hpp), both runs skip the case: the MPI's own answer is not the
// standard's, and the interposer's is neither, on purpose: it keeps the lb and extent that the
// MPI reports to the application (whose arrays are laid out by them) and packs the standard's
// type map (docs/pmpi.md). How ucxdt_type_from_mpi treats each deviation is checked by the
// oracle (test/mpi/test_oracle.cpp).
//
// --expect-interposer: ucxdt_pmpi_get_counters must exist and report sends, receives,
// collectives and packs through ucxdt (else the preload did not happen). Without it, the
// symbol must be absent: the baseline ran on the MPI alone.
#include "pmpi_case.hpp"

#include "harness/layout_buffer.hpp"
#include "support/mpi_deviations.hpp"

#if __has_include(<ucxdt/pmpi.h>)
#include <ucxdt/pmpi.h>
#else
extern "C" {
typedef struct {
    uint64_t sends, recvs, collectives, packs, fallbacks;
} ucxdt_pmpi_counters_t;
}
#endif

#include <dlfcn.h>

#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <map>
#include <set>
#include <string>
#include <vector>

namespace {

using namespace pmpi;

struct Options {
    uint64_t seed = 20240917;
    int64_t types = 200;
    int64_t max_size = 64 * 1024;  // packed bytes of one element (random_desc's default)
    bool expect_interposer = false;
    bool trace = false;
    bool one_sided = false;  // also the one-sided modes (rma_cases.cpp)
};

// "" or what is wrong with the command line.
std::string parse(int argc, char **argv, Options &o) {
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        const bool has_value = i + 1 < argc;
        if (a == "--expect-interposer") o.expect_interposer = true;
        else if (a == "--one-sided") o.one_sided = true;
        else if (a == "--trace") o.trace = true;
        else if (a == "--seed" && has_value) o.seed = std::strtoull(argv[++i], nullptr, 0);
        else if (a == "--types" && has_value) o.types = std::strtoll(argv[++i], nullptr, 0);
        else if (a == "--max-size" && has_value) o.max_size = std::strtoll(argv[++i], nullptr, 0);
        else if (a == "--mem" && has_value && (std::string(argv[i + 1]) == "host" || std::string(argv[i + 1]) == "device" ||
                                               std::string(argv[i + 1]) == "managed")) {
            g_device = std::string(argv[i + 1]) == "device";
            g_managed = std::string(argv[++i]) == "managed";
        }
        else return "unknown or incomplete option " + a;
    }
    if (o.types < 1 || o.max_size < 1) return "--types and --max-size take numbers >= 1";
    return "";
}

// Adds to `ids` the known deviations that may show for a pair's types as send or receive
// types of any count (contiguous(2, desc) reaches those of count > 1 too).
void deviations(const Pair &p, const std::vector<const T::Deviation *> &known,
                std::set<std::string> &ids) {
    for (const L::TypeDescPtr &d : {p.send, p.recv})
        for (const T::Deviation *dev : T::deviations_of(*L::contiguous(2, d), known))
            ids.insert(dev->id);
}

std::string join(const std::set<std::string> &ids) {
    std::string list;
    for (const std::string &id : ids) {
        if (!list.empty()) list += ',';
        list += id;
    }
    return list;
}

// A pair for a per-peer mode: those draw size x size pairs, one of which nearly always
// deviates on MPICH (or meets a fault of the MPI in this mode), and so redraw such pairs (up
// to 20 times) for the baseline to check them too. Deviating types reach the interposed run
// through the other modes.
Pair peer_pair(uint64_t seed, const T::RandomDescLimits &limits,
               const std::vector<const T::Deviation *> &known, const Mode &mode) {
    for (uint64_t attempt = 0;; ++attempt) {
        Pair p = random_pair(mix(seed, attempt), limits);
        std::set<std::string> ids;
        deviations(p, known, ids);
        if (attempt == 20 || (ids.empty() && !(mode.mpi_fault && mode.mpi_fault(p)))) return p;
    }
}

// The interposer's counters, found at run time: present only where it was preloaded.
int check_interposer(bool expected, int rank) {
    using Get = void (*)(ucxdt_pmpi_counters_t *);
    const auto get = reinterpret_cast<Get>(dlsym(RTLD_DEFAULT, "ucxdt_pmpi_get_counters"));
    if (!expected) {
        if (!get) return 0;
        std::printf("FAIL rank %d: ucxdt_pmpi_get_counters is loaded, but this run is the "
                    "baseline (no --expect-interposer)\n", rank);
        return 1;
    }
    if (!get) {
        std::printf("FAIL rank %d: --expect-interposer, but ucxdt_pmpi_get_counters is not "
                    "loaded (was LD_PRELOAD passed on to the ranks?)\n", rank);
        return 1;
    }
    ucxdt_pmpi_counters_t n{};
    get(&n);
    const bool used = n.sends > 0 && n.recvs > 0 && n.collectives > 0 && n.packs > 0;
    // Rank 0 alone prints unless something is wrong: lines of several ranks may interleave with
    // rank 0's digest lines, which run_pair.sh compares.
    if (rank == 0 || !used)
        std::printf("rank %d: interposer counters: sends %" PRIu64 ", recvs %" PRIu64
                    ", collectives %" PRIu64 ", packs %" PRIu64 ", fallbacks %" PRIu64 "\n",
                    rank, n.sends, n.recvs, n.collectives, n.packs, n.fallbacks);
    if (used) return 0;
    std::printf("FAIL rank %d: the interposer routed none of some kind of call through ucxdt "
                "(sends, recvs, collectives and packs must all be > 0)\n", rank);
    return 1;
}

// On device memory, calls that neither the interposer (when preloaded) nor a PML carries are
// not run: Open MPI 5.0.7 packs device datatypes with the CPU and faults (its pml ucx, its
// MPI_Pack). On host memory they run, and run_pair.sh compares them with the baseline.
bool skips(const Options &o, const Mode &m) {
    return g_device && (o.expect_interposer ? !m.interposed : !m.via_pml);
}

int run(const Options &o, int rank, int size) {
    const std::vector<const T::Deviation *> known = T::known_deviations(T::mpi_identity());
    T::RandomDescLimits limits;
    limits.max_size = o.max_size;
    limits.max_span = 4 * o.max_size;
    std::vector<std::vector<Mode>> lists = {p2p_modes(), collective_modes(), local_modes()};
    if (o.one_sided) lists.push_back(one_sided_modes());
    std::map<std::string, int64_t> checked;  // per mode: cases run and checked
    int64_t failures = 0, cases = 0, deviating = 0;
    const double t0 = MPI_Wtime();
    for (int64_t i = 0; i < o.types; ++i) {
        for (size_t l = 0; l < lists.size(); ++l) {
            const Mode &mode = lists[l][static_cast<size_t>(i) % lists[l].size()];
            const std::string name = std::to_string(i) + "." + mode.name;
            if (skips(o, mode)) continue;
            Case c;
            c.rank = rank, c.size = size;
            c.src = (rank + size - 1) % size, c.dst = (rank + 1) % size;
            c.seed = mix(o.seed, static_cast<uint64_t>(i), l);
            c.tag = static_cast<int>((i * 3 + static_cast<int64_t>(l)) % 4000) * Case::kTags;
            const Pair pair = random_pair(mix(c.seed, 1), limits);
            std::vector<std::vector<Pair>> peers;
            // The deviations of the types the case moves: pair's, or those of all peers'.
            std::set<std::string> devs;
            auto fault = [&](const Pair &q) {
                if (const char *id = mode.mpi_fault ? mode.mpi_fault(q) : nullptr) devs.insert(id);
            };
            if (!mode.per_peer) deviations(pair, known, devs), fault(pair);
            for (int s = 0; mode.per_peer && s < size; ++s) {
                peers.emplace_back();
                for (int d = 0; d < size; ++d) {
                    peers[s].push_back(peer_pair(mix(c.seed, 2 + s, d), limits, known, mode));
                    deviations(peers[s][d], known, devs);
                    fault(peers[s][d]);
                }
            }
            c.pair = &pair, c.peers = &peers;
            // Every rank draws the same types, so all skip alike.
            if (!devs.empty()) {
                if (rank == 0) std::printf("deviating %s skipped (%s)\n", name.c_str(),
                                          join(devs).c_str());
                ++deviating;
                continue;
            }
            if (o.trace && rank == 0) std::printf("case %s\n", name.c_str()), std::fflush(stdout);
            try {
                mode.run(c);
                ok(MPI_Barrier(MPI_COMM_WORLD), "MPI_Barrier");
            } catch (const std::exception &e) {
                // The other ranks may be waiting for this one: end the job.
                std::printf("FAIL rank %d %s: %s\n", rank, name.c_str(), e.what());
                if (!mode.per_peer)
                    std::printf("  types of %s: send %s, receive %s, count %lld\n", name.c_str(),
                                ucxdt::testing::short_desc(*pair.send).c_str(), ucxdt::testing::short_desc(*pair.recv).c_str(),
                                static_cast<long long>(pair.count));
                std::fflush(stdout);
                MPI_Abort(MPI_COMM_WORLD, 3);
            }
            for (const std::string &f : c.failures)
                std::printf("FAIL rank %d %s: %s\n", rank, name.c_str(), f.c_str());
            if (!c.failures.empty()) {  // what to rebuild the case from
                auto show = [&](const Pair &q, const std::string &which) {
                    std::printf("  types of %s%s: send %s, receive %s\n", name.c_str(), which.c_str(),
                                ucxdt::testing::short_desc(*q.send).c_str(), ucxdt::testing::short_desc(*q.recv).c_str());
                };
                if (!mode.per_peer) show(pair, "");
                for (int s = 0; mode.per_peer && s < size; ++s)
                    show(peers[s][rank], " from rank " + std::to_string(s));
            }
            failures += static_cast<int64_t>(c.failures.size());
            ++cases, ++checked[mode.name];
            std::vector<uint64_t> digests(static_cast<size_t>(size));
            ok(MPI_Gather(&c.digest, 1, MPI_UINT64_T, digests.data(), 1, MPI_UINT64_T, 0,
                          MPI_COMM_WORLD),
               "MPI_Gather");
            if (rank != 0) continue;
            std::string line = "digest " + name;
            for (uint64_t d : digests) {
                char hex[20];
                std::snprintf(hex, sizeof hex, " %016" PRIx64, d);
                line += hex;
            }
            std::printf("%s\n", line.c_str());
        }
    }
    // Each mode must have been checked, or a short run passes without testing it.
    for (const auto &list : lists)
        for (const Mode &m : list)
            if (checked[m.name] == 0 && !skips(o, m) && rank == 0) {
                std::printf("FAIL mode %s was never checked (more --types?)\n", m.name);
                ++failures;
            }
    failures += check_interposer(o.expect_interposer, rank);
    if (rank == 0)
        std::printf("pmpi_check: %" PRId64 " cases checked on %d ranks in %.1f s (%s), %" PRId64
                    " of them %s for a known deviation of this MPI\n",
                    cases, size, MPI_Wtime() - t0,
                    o.expect_interposer ? "interposed" : "baseline", deviating,
                    o.expect_interposer ? "against the walker alone" : "skipped");
    return static_cast<int>(failures);
}

}  // namespace

int main(int argc, char **argv) {
    // Whole lines to mpirun, so that the ranks' lines do not cut into each other.
    std::setvbuf(stdout, nullptr, _IOLBF, 0);
    MPI_Init(&argc, &argv);
    // Errors come back as codes: to_mpi names the type, ok() the call.
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);
    int rank = 0, size = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    Options o;
    std::string usage = parse(argc, argv, o);
    if (usage.empty() && size < 2) usage = "needs 2 ranks or more";
    int failures = 0;
    if (!usage.empty()) {
        if (rank == 0) std::printf("FAIL %s\n", usage.c_str());
        failures = 1;
    } else {
        failures = run(o, rank, size);
    }
    int total = 0;
    MPI_Allreduce(&failures, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0) std::printf("pmpi_check: %s (%d failures)\n", total ? "FAILED" : "PASSED", total);
    MPI_Finalize();
    return total ? 1 : 0;
}
