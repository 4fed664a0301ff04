// halo3d: the halo exchange of a 3-D stencil code on a periodic process grid, as a plain MPI
// program. Each rank owns NX x NY x NZ interior doubles inside a halo of width w; every step it
// fills the interior with values that encode (global cell, step), exchanges the faces (7-point)
// or faces, edges and corners (27-point) with its neighbours, and checks every received halo
// cell and its own interior against what they must hold.
//   -x datatype: each region is an MPI_Type_create_subarray of the whole array, committed once,
//                moved by MPI_Irecv/MPI_Isend/MPI_Waitall (what an interposer can speed up),
//                or with -P by persistent requests made once and started by MPI_Startall;
//   -x handpack: the program gathers each region into a contiguous buffer itself (a CUDA kernel
//                on device memory, loops on host memory), sends doubles and scatters them back;
//   -x put:      one-sided (MPI-4.1 §12): the array is a window, and each rank puts each of its
//                regions, as a subarray type, straight into the neighbour's halo region (the
//                target type), between two MPI_Win_fence calls or, with -S pscw, in a general
//                active-target epoch of the neighbours (post, start, complete, wait).
// Only the exchange is timed: from after an MPI_Barrier to the end of MPI_Waitall (handpack:
// of its unpack, kernels synchronized; put: of the closing fence or MPI_Win_wait), reported as
// the median and minimum over iterations of the slowest rank's time.
#include "../common/box.cuh"

#include <unistd.h>

namespace {

using namespace clients;

struct Options : CommonOptions {
    long n[3] = {64, 64, 64};
    long p[3] = {0, 0, 0};  // 0: MPI_Dims_create chooses
    long width = 1;
    int stencil = 7;
    bool handpack = false;
    bool put = false;   // one-sided: MPI_Put into the neighbours' windows
    bool pscw = false;  // put: post/start/complete/wait rather than fences
    bool persistent = false;  // MPI_Send_init/MPI_Recv_init once, MPI_Startall every step
    bool hang = false;  // test of -T: rank 0 stops sending from step 1 on
};

std::string usage() {
    return "usage: mpirun -np P halo3d [options]\n"
           "  -g NX,NY,NZ  interior points per rank (64,64,64)   -w W  halo width (1)\n"
           "  -p PX,PY,PZ  process grid (MPI_Dims_create's)       -s 7|27  stencil (7)\n"
           "  -x datatype|handpack|put  subarray types, the program's packing, or MPI_Put of\n"
           "               subarray types into the neighbours' windows (datatype)\n"
           "  -S fence|pscw  -x put's synchronization (fence)\n"
           "  -P           persistent requests: made once, started by MPI_Startall every step\n" +
           Options{}.usage("the grid") +
           "  csv: one row: halo3d,ranks,proc_grid,grid,width,stencil,mode,mem,messages,\n"
           "       bytes_per_rank,iterations,median_us,min_us,mismatches\n";
}

std::string parse(int argc, char **argv, Options *o) {
    std::vector<long> v;
    std::string mode = "datatype", sync = "fence";
    const std::string letters = std::string("g:p:w:s:x:S:PH") + CommonOptions::kLetters;
    for (int c; (c = getopt(argc, argv, letters.c_str())) != -1;) {
        if (o->take(c, optarg)) continue;
        switch (c) {
        case 'g':
        case 'p':
            if (!parse_list(optarg, &v) || v.size() != 3) return std::string("-") + char(c) + " takes A,B,C";
            std::copy(v.begin(), v.end(), c == 'g' ? o->n : o->p);
            break;
        case 'w': o->width = std::atol(optarg); break;
        case 's': o->stencil = std::atoi(optarg); break;
        case 'x': mode = optarg; break;
        case 'S': sync = optarg; break;
        case 'P': o->persistent = true; break;
        case 'H': o->hang = true; break;
        default: return "unknown option";
        }
    }
    if (std::string e = o->check(argc, argv, optind); !e.empty()) return e;
    if (mode != "datatype" && mode != "handpack" && mode != "put") return "-x takes datatype, handpack or put";
    o->handpack = mode == "handpack";
    o->put = mode == "put";
    if (sync != "fence" && sync != "pscw") return "-S takes fence or pscw";
    o->pscw = sync == "pscw";
    if (o->hang && o->persistent) return "-H and -P do not go together";
    if (o->put && (o->hang || o->persistent)) return "-x put takes neither -H nor -P";
    if (o->stencil != 7 && o->stencil != 27) return "-s takes 7 or 27";
    if (o->width < 1) return "-w must be >= 1";
    for (long x : o->n)
        if (x < o->width) return "-g: every extent must be at least the halo width";
    for (long x : o->p)
        if (x < 0) return "-p: extents must be >= 0";
    return "";
}

// One neighbour: the interior region this rank sends toward direction d, and the halo region
// that the neighbour there fills, with their committed types or contiguous buffers.
struct Dir {
    int d[3];
    int peer = -1;
    int send_tag = 0, recv_tag = 0;
    Box send{}, recv{};
    MPI_Datatype send_type = MPI_DATATYPE_NULL, recv_type = MPI_DATATYPE_NULL;
    MPI_Datatype target_type = MPI_DATATYPE_NULL;  // put: the peer's halo region that send fills
    Buffer send_buf, recv_buf;  // handpack
};

// Directions are tagged by their index in the 3x3x3 cube: the neighbour sends the region for
// -d with tag(-d). With periodic wrap a rank can be its own neighbour, or both neighbours of
// one dimension can be the same rank; the tags keep those messages apart.
int tag_of(const int d[3]) { return (d[0] + 1) * 9 + (d[1] + 1) * 3 + (d[2] + 1); }

}  // namespace

int main(int argc, char **argv) {
    Options o;
    const std::string err = parse(argc, argv, &o);  // before start(), which needs o.mem
    World world;
    if (const int rc = start("halo3d", &argc, &argv, err, usage(), o.mem, &world); rc >= 0) return rc;
    const int size = world.size;
    int rank = 0;  // in the Cartesian communicator
    Watchdog wd(o.budget);
    wd.arm("setup", 0);

    int pdims[3] = {int(o.p[0]), int(o.p[1]), int(o.p[2])}, periods[3] = {1, 1, 1}, coords[3];
    const long fixed = std::max(1L, o.p[0]) * std::max(1L, o.p[1]) * std::max(1L, o.p[2]);
    if (size % fixed || (o.p[0] && o.p[1] && o.p[2] && fixed != size)) die("-p %ldx%ldx%ld does not fit %d ranks", o.p[0], o.p[1], o.p[2], size);
    MPI_Dims_create(size, 3, pdims);
    MPI_Comm cart;
    MPI_Cart_create(MPI_COMM_WORLD, 3, pdims, periods, 0, &cart);
    MPI_Comm_rank(cart, &rank);
    MPI_Cart_coords(cart, rank, 3, coords);

    const int64_t w = o.width;
    Box all{};
    Global global{};
    for (int i = 0; i < 3; ++i) {
        all.dims[i] = o.n[i] + 2 * w, all.start[i] = w, all.sub[i] = o.n[i];
        global.origin[i] = int64_t{coords[i]} * o.n[i] - w, global.dims[i] = int64_t{pdims[i]} * o.n[i];
    }
    if (all.array_count() > INT32_MAX) die("-g: the array must hold fewer than 2^31 doubles");
    std::vector<Dir> dirs;
    int64_t bytes = 0;
    for (int dx = -1; dx <= 1; ++dx)
        for (int dy = -1; dy <= 1; ++dy)
            for (int dz = -1; dz <= 1; ++dz) {
                const int d[3] = {dx, dy, dz}, nd[3] = {-dx, -dy, -dz};
                const int axes = (dx != 0) + (dy != 0) + (dz != 0);
                if (axes == 0 || (o.stencil == 7 && axes != 1)) continue;
                Dir &r = dirs.emplace_back();
                r.send = r.recv = all;
                int pc[3];
                for (int i = 0; i < 3; ++i) {
                    const int64_t n = o.n[i];
                    r.d[i] = d[i];
                    pc[i] = ((coords[i] + d[i]) % pdims[i] + pdims[i]) % pdims[i];
                    r.send.start[i] = d[i] > 0 ? n : w;  // the interior's layer next to side d
                    r.recv.start[i] = d[i] < 0 ? 0 : d[i] > 0 ? n + w : w;
                    r.send.sub[i] = r.recv.sub[i] = d[i] ? w : n;
                }
                MPI_Cart_rank(cart, pc, &r.peer);
                r.send_tag = tag_of(d), r.recv_tag = tag_of(nd);
                bytes += r.send.count() * int64_t{sizeof(double)};
                if (o.handpack) {
                    r.send_buf = Buffer(o.mem, size_t(r.send.count()) * sizeof(double));
                    r.recv_buf = Buffer(o.mem, size_t(r.recv.count()) * sizeof(double));
                } else {
                    r.send_type = subarray(3, r.send.dims, r.send.sub, r.send.start, MPI_DOUBLE);
                    r.recv_type = subarray(3, r.recv.dims, r.recv.sub, r.recv.start, MPI_DOUBLE);
                }
            }

    Buffer grid(o.mem, size_t(all.array_count()) * sizeof(double));
    grid.set_bytes(0);
    double *a = grid.as<double>();
    std::vector<double> host(o.mem == Mem::device ? size_t(all.array_count()) : 0);
    cudaStream_t stream = nullptr;
    if (o.mem == Mem::device) cuda_check(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "stream");
    std::vector<MPI_Request> reqs(2 * dirs.size());

    // Each message's buffer and type: the region itself as a subarray type, or the program's
    // contiguous copy of it as doubles.
    auto post_recv = [&](Dir &r, MPI_Request *req, bool init) {
        auto fn = init ? MPI_Recv_init : MPI_Irecv;
        if (o.handpack) fn(r.recv_buf.get(), int(r.recv.count()), MPI_DOUBLE, r.peer, r.recv_tag, cart, req);
        else fn(a, 1, r.recv_type, r.peer, r.recv_tag, cart, req);
    };
    auto post_send = [&](Dir &r, MPI_Request *req, bool init) {
        auto fn = init ? MPI_Send_init : MPI_Isend;
        if (o.handpack) fn(r.send_buf.get(), int(r.send.count()), MPI_DOUBLE, r.peer, r.send_tag, cart, req);
        else fn(a, 1, r.send_type, r.peer, r.send_tag, cart, req);
    };
    if (o.persistent) {
        size_t k = 0;
        for (Dir &r : dirs) post_recv(r, &reqs[k++], true);
        for (Dir &r : dirs) post_send(r, &reqs[k++], true);
    }
    const size_t nrecv = dirs.size();

    // -x put: the array as a window; each region goes to the peer's halo region on the side
    // facing this rank, the recv region of the opposite direction (every rank's array has the
    // same shape). The peers as a group, for PSCW.
    MPI_Win win = MPI_WIN_NULL;
    MPI_Group peers = MPI_GROUP_NULL;
    if (o.put) {
        for (Dir &r : dirs)
            for (const Dir &q : dirs)
                if (q.d[0] == -r.d[0] && q.d[1] == -r.d[1] && q.d[2] == -r.d[2]) r.target_type = q.recv_type;
        MPI_Win_create(a, MPI_Aint(all.array_count() * int64_t{sizeof(double)}), sizeof(double), MPI_INFO_NULL, cart,
                       &win);
        std::vector<int> ranks;
        for (const Dir &r : dirs)
            if (std::find(ranks.begin(), ranks.end(), r.peer) == ranks.end()) ranks.push_back(r.peer);
        MPI_Group cart_group;
        MPI_Comm_group(cart, &cart_group);
        MPI_Group_incl(cart_group, int(ranks.size()), ranks.data(), &peers);
        MPI_Group_free(&cart_group);
    }
    // The puts of one step: every rank's interior is filled before any put reads it, and every
    // halo is checked before the next step's puts write it (the fences, or post after the check
    // and start after the peers' posts).
    auto exchange_put = [&]() {
        if (o.pscw) MPI_Win_post(peers, 0, win), MPI_Win_start(peers, 0, win);
        else MPI_Win_fence(0, win);
        for (Dir &r : dirs) MPI_Put(a, 1, r.send_type, r.peer, 0, 1, r.target_type, win);
        if (o.pscw) MPI_Win_complete(win), MPI_Win_wait(win);
        else MPI_Win_fence(0, win);
    };

    auto exchange = [&](long step) {
        if (o.put) return exchange_put();
        if (o.persistent) MPI_Startall(int(nrecv), reqs.data());
        else
            for (size_t k = 0; k < nrecv; ++k) post_recv(dirs[k], &reqs[k], false);
        if (o.handpack) {
            for (Dir &r : dirs) box_copy(o.mem, stream, a, r.send, r.send_buf.as<double>(), true);
            if (stream) cuda_check(cudaStreamSynchronize(stream), "pack kernels");
        }
        const bool mute = o.hang && rank == 0 && step >= 1;
        size_t k = nrecv;
        if (o.persistent) MPI_Startall(int(dirs.size()), reqs.data() + nrecv), k += dirs.size();
        else
            for (Dir &r : dirs)
                if (!mute) post_send(r, &reqs[k++], false);
        MPI_Waitall(int(k), reqs.data(), MPI_STATUSES_IGNORE);
        if (o.handpack) {
            for (Dir &r : dirs) box_copy(o.mem, stream, a, r.recv, r.recv_buf.as<double>(), false);
            if (stream) cuda_check(cudaStreamSynchronize(stream), "unpack kernels");
        }
    };

    const Steps run = run_steps(
        o, wd, cart, [&](long step) { box_fill(o.mem, a, all, global, step); }, exchange,
        [&](long step) {  // the interior as filled, every exchanged halo region as the neighbour's
            const double *view = a;
            if (o.mem == Mem::device) grid.to_host(host.data()), view = host.data();
            int budget = 5;
            long long bad = box_mismatches(view, all, global, step, "interior", &budget);
            for (const Dir &r : dirs) bad += box_mismatches(view, r.recv, global, step, "halo", &budget);
            return bad;
        });
    const Summary s = summarize(run.times);
    const std::string mode = o.put ? std::string(o.pscw ? "put+pscw" : "put+fence")
                                   : std::string(o.handpack ? "handpack" : "datatype") + (o.persistent ? "+persistent" : "");
    if (rank == 0 && o.csv) {
        std::printf("halo3d,%d,%dx%dx%d,%ldx%ldx%ld,%ld,%d,%s,%s,%zu,%lld,%zu,%.3f,%.3f,%lld\n", size, pdims[0],
                    pdims[1], pdims[2], o.n[0], o.n[1], o.n[2], o.width, o.stencil, mode.c_str(), mem_name(o.mem),
                    dirs.size(), static_cast<long long>(bytes), run.times.size(), s.median * 1e6, s.min * 1e6,
                    run.wrong);
    } else if (rank == 0) {
        std::printf("halo3d: %d ranks as %dx%dx%d (periodic), %ldx%ldx%ld interior + halo %ld per rank, "
                    "%d-point (%zu messages), %s, %s memory\n",
                    size, pdims[0], pdims[1], pdims[2], o.n[0], o.n[1], o.n[2], o.width, o.stencil, dirs.size(),
                    mode.c_str(), mem_name(o.mem));
        std::printf("halo3d: %lld bytes per exchange per rank; %zu iterations after %ld warm-up\n",
                    static_cast<long long>(bytes), run.times.size(), o.warmup);
        std::printf("halo3d: exchange (slowest rank) median %.1f us, min %.1f us; %.3f GB/s per rank at the median\n",
                    s.median * 1e6, s.min * 1e6, s.median > 0 ? bytes / s.median / 1e9 : 0.0);
        std::printf("halo3d: %s\n", run.wrong ? "FAILED: wrong values (above)" : "every halo and interior cell checked at every step");
    }
    if (o.persistent)
        for (MPI_Request &q : reqs) MPI_Request_free(&q);
    for (Dir &r : dirs)
        if (r.send_type != MPI_DATATYPE_NULL) MPI_Type_free(&r.send_type), MPI_Type_free(&r.recv_type);
    if (win != MPI_WIN_NULL) MPI_Win_free(&win), MPI_Group_free(&peers);
    if (stream) cudaStreamDestroy(stream);
    MPI_Comm_free(&cart);
    MPI_Finalize();
    return run.wrong ? 1 : 0;
}
