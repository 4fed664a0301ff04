/* MPI_THREAD_MULTIPLE stress (MPI-4.1 §11.6; issue 61): N threads per rank (argv[1], default 4)
 * over R rounds (argv[2], default 64), on host memory or, with argv[3] `device`, GPU memory
 * (check.h), on communicators of their own and shared ones, every
 * operation of the point-to-point layer at once:
 *  - first contact: right after MPI_Init, with no traffic before, every thread sends to every
 *    peer on MPI_COMM_WORLD at once (odd threads rendezvous-sized), so that the endpoints are
 *    made by racing threads; threads 3, 7, ... take their messages by MPI_Improbe + MPI_Mrecv;
 *  - then each thread duplicates its own communicator (concurrently with the others) and, each
 *    round, with the peers at distance d = 1 + round % (size - 1):
 *    (a) eager vectors, MPI_Isend/MPI_Irecv, MPI_ANY_SOURCE on odd rounds, MPI_Waitall;
 *    (b) a 320,000-byte vector (rendezvous: pml ucxdt's eager limit is 64 KiB) through
 *        persistent requests (MPI_Send_init/MPI_Recv_init once per distance, MPI_Startall
 *        each round), completed by MPI_Test loops;
 *    (c) on a shared communicator, a message found by MPI_Iprobe then MPI_Recv (even rounds)
 *        or MPI_Improbe then MPI_Mrecv (odd), eager and rendezvous in turn, sent by MPI_Isend
 *        and MPI_Wait;
 *    (d) a receive nothing matches (MPI_ANY_SOURCE on odd rounds), canceled: MPI_Test_cancelled
 *        must say so and its buffer must be untouched;
 *    (e) a receive canceled as its message arrives: canceled (buffer untouched; the message is
 *        then received again) or complete with the message, both legal (§3.8.4);
 *    (f) on a shared communicator, MPI_Isend followed at once by MPI_Request_free, received by
 *        an MPI_Irecv completed in an MPI_Testall loop;
 *    (g) an MPI_Iprobe of any source and tag on the shared communicator, racing the other
 *        threads' receives: what it sees must be a message some thread sends there.
 * Every byte of every receive buffer is checked: the type's elements hold the sender's
 * pattern of (source, thread, round, kind) and its gaps keep the receiver's poison. Each wait
 * is bounded (UCXDT_STRESS_WAIT_S, default 60 s): one that runs out names what it waited for
 * and aborts. Prints "threads_stress: OK", a line of its own, and exits 0 only when every check
 * held. */
#include <pthread.h>
#include <stdint.h>
#include <time.h>

#define PROGRAM "threads_stress"
#include "check.h"

enum { kMaxThreads = 16, kMaxRounds = 1024 };
enum { kSmall = 128, kLarge = 80000 };  /* ints of the vectors: 512 B and 320,000 B packed */
enum kind { FIRST, EAGER, PERSIST, PROBE, NEVER, RACE, FREED, KINDS };
static const int32_t kPoison = 0x13579bdf, kSenderGap = 0x5a5a5a5a;

static int nthreads = 4, rounds = 64, rank, size;
static double wait_limit_s = 60;
static MPI_Datatype small_t, large_t;  /* vector(n, 1, 2, MPI_INT): every other int */
static MPI_Comm parent[kMaxThreads], shared;

/* A tag per (thread, kind, round): receives of MPI_ANY_SOURCE and probes match one message. */
static int tag_of(int t, enum kind k, int round) { return ((t * 16 + (int)k) << 10) | (round & (kMaxRounds - 1)); }

static int32_t value(int src, int t, enum kind k, int round, int i) {
    uint32_t v = (uint32_t)src * 0x9e3779b1u ^ (uint32_t)t * 0x85ebca77u ^ (uint32_t)k * 0xc2b2ae3du ^
                 (uint32_t)round * 0x27d4eb2fu ^ (uint32_t)i * 0x165667b1u;
    v ^= v >> 15;
    return (int32_t)(v == (uint32_t)kPoison || v == (uint32_t)kSenderGap ? v + 1 : v);
}

typedef struct {
    int t;
    long checks, bad, canceled_races;
    char first_error[200];
    int32_t *freed_sends;  /* the buffer of the thread's freed sends */
} thread_state_t;

static void fail(thread_state_t *s, const char *fmt, int a, int b, int c) {
    if (s->bad++ == 0) snprintf(s->first_error, sizeof s->first_error, fmt, a, b, c);
}

/* The 2n ints of a message buffer, as a host array: the buffer itself on host memory, a copy
 * (host_view, then host_done, which writes it back when asked) on GPU memory; `read`: with the
 * buffer's contents (not for a caller that writes every int). */
static int32_t *host_view(const int32_t *buf, int n, int read) {
    if (!on_device) return (int32_t *)buf;
    int32_t *h = malloc(sizeof(int32_t) * 2 * (size_t)n);
    if (!h) MPI_Abort(MPI_COMM_WORLD, 4);
    if (read) buffer_copy(h, buf, sizeof(int32_t) * 2 * (size_t)n);
    return h;
}
static void host_done(int32_t *buf, int32_t *h, int n, int write_back) {
    if (!on_device) return;
    if (write_back) buffer_copy(buf, h, sizeof(int32_t) * 2 * (size_t)n);
    free(h);
}

static void fill(int32_t *buf, int n, int src, int t, enum kind k, int round) {
    int32_t *h = host_view(buf, n, 0);
    for (int i = 0; i < n; ++i) h[2 * i] = value(src, t, k, round, i), h[2 * i + 1] = kSenderGap;
    host_done(buf, h, n, 1);
}
static void poison(int32_t *buf, int n) {
    int32_t *h = host_view(buf, n, 0);
    for (int i = 0; i < 2 * n; ++i) h[i] = kPoison;
    host_done(buf, h, n, 1);
}
/* Every int of the receive buffer: the elements the sender's pattern, the gaps untouched. */
static void check(thread_state_t *s, const int32_t *buf, int n, int src, enum kind k, int round) {
    int32_t *h = host_view(buf, n, 1);
    long wrong = 0;
    for (int i = 0; i < n; ++i) wrong += (h[2 * i] != value(src, s->t, k, round, i)) + (h[2 * i + 1] != kPoison);
    host_done(NULL, h, n, 0);
    ++s->checks;
    if (wrong) fail(s, "kind %d, round %d: %d ints wrong", (int)k, round, (int)wrong);
}
static void check_untouched(thread_state_t *s, const int32_t *buf, int n, enum kind k, int round) {
    int32_t *h = host_view(buf, n, 1);
    long wrong = 0;
    for (int i = 0; i < 2 * n; ++i) wrong += h[i] != kPoison;
    host_done(NULL, h, n, 0);
    ++s->checks;
    if (wrong) fail(s, "kind %d, round %d: a canceled receive wrote %d ints", (int)k, round, (int)wrong);
}
static void check_status(thread_state_t *s, const MPI_Status *st, MPI_Datatype type, int src, int tag) {
    int count = -1;
    MPI_Get_count(st, type, &count);
    if (st->MPI_SOURCE != src || st->MPI_TAG != tag || count != 1)
        fail(s, "status of tag %d: source %d, count %d", tag, st->MPI_SOURCE, count);
}

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}
static void timed_out(const thread_state_t *s, const char *what, int round) {
    fprintf(stderr, "threads_stress: FAIL, rank %d thread %d round %d: %s did not complete in %.0f s\n", rank, s->t,
            round, what, wait_limit_s);
    MPI_Abort(MPI_COMM_WORLD, 3);
}
/* MPI_Test until complete. */
static void test_loop(const thread_state_t *s, MPI_Request *req, MPI_Status *st, const char *what, int round) {
    const double until = now_s() + wait_limit_s;
    for (int done = 0; MPI_Test(req, &done, st), !done;)
        if (now_s() > until) timed_out(s, what, round);
}
static void testall_loop(const thread_state_t *s, int n, MPI_Request *reqs, MPI_Status *sts, const char *what, int round) {
    const double until = now_s() + wait_limit_s;
    for (int done = 0; MPI_Testall(n, reqs, &done, sts), !done;)
        if (now_s() > until) timed_out(s, what, round);
}

/* A message buffer of 2n ints. */
static int32_t *alloc_ints(int n) { return buffer_alloc(sizeof(int32_t) * 2 * (size_t)n); }

/* First contact: every peer at once, on MPI_COMM_WORLD. */
static void first_contact(thread_state_t *s) {
    const int t = s->t, n = t % 2 ? kLarge : kSmall;
    const MPI_Datatype type = t % 2 ? large_t : small_t;
    const int tag = tag_of(t, FIRST, 0);
    int32_t *out = alloc_ints(n), *in = alloc_ints(n * size);
    MPI_Request *reqs = malloc(sizeof(MPI_Request) * 2 * (size_t)size);
    MPI_Status *sts = malloc(sizeof(MPI_Status) * 2 * (size_t)size);
    if (!reqs || !sts) MPI_Abort(MPI_COMM_WORLD, 4);
    fill(out, n, rank, t, FIRST, 0);
    poison(in, n * size);
    int nr = 0;
    const int by_probe = t % 4 == 3, recv_first = t % 2 == 0;
    for (int pass = 0; pass < 2; ++pass) {
        if ((pass == 0) == recv_first) {
            if (!by_probe)
                for (int p = 0; p < size; ++p)
                    if (p != rank) MPI_Irecv(in + 2 * (size_t)n * p, 1, type, p, tag, MPI_COMM_WORLD, &reqs[nr++]);
        } else {
            for (int p = 0; p < size; ++p)
                if (p != rank) MPI_Isend(out, 1, type, p, tag, MPI_COMM_WORLD, &reqs[nr++]);
        }
    }
    if (by_probe) {
        char *seen = calloc((size_t)size, 1);
        if (!seen) MPI_Abort(MPI_COMM_WORLD, 4);
        const double until = now_s() + wait_limit_s;
        for (int got = 0; got < size - 1;) {
            int found = 0;
            MPI_Message msg;
            MPI_Status st;
            MPI_Improbe(MPI_ANY_SOURCE, tag, MPI_COMM_WORLD, &found, &msg, &st);
            if (!found) {
                if (now_s() > until) timed_out(s, "MPI_Improbe of a first message", 0);
                continue;
            }
            if (st.MPI_SOURCE < 0 || st.MPI_SOURCE >= size || st.MPI_SOURCE == rank || seen[st.MPI_SOURCE]) {
                fprintf(stderr, "threads_stress: FAIL, rank %d thread %d: a first message probed from source %d\n",
                        rank, t, st.MPI_SOURCE);
                MPI_Abort(MPI_COMM_WORLD, 5);
            }
            seen[st.MPI_SOURCE] = 1;
            MPI_Mrecv(in + 2 * (size_t)n * st.MPI_SOURCE, 1, type, &msg, &st);
            ++got;
        }
        free(seen);
    }
    MPI_Waitall(nr, reqs, sts);
    for (int p = 0; p < size; ++p)
        if (p != rank) check(s, in + 2 * (size_t)n * p, n, p, FIRST, 0);
    buffer_free(out), buffer_free(in), free(reqs), free(sts);
}

static void rounds_on(thread_state_t *s) {
    const int t = s->t;
    MPI_Comm own;
    MPI_Comm_dup(parent[t], &own);  /* concurrently with the other threads' */
    int32_t *es = alloc_ints(kSmall), *er = alloc_ints(kSmall);
    int32_t *ps = alloc_ints(kLarge * size), *pr = alloc_ints(kLarge * size);
    int32_t *qs = alloc_ints(kLarge), *qr = alloc_ints(kLarge);
    int32_t *nv = alloc_ints(kSmall), *cs = alloc_ints(kLarge), *cr = alloc_ints(kLarge);
    int32_t *fr = alloc_ints(kLarge);
    /* (f): one buffer, sent by every freed send of the thread at once (never written again) */
    int32_t *fs = alloc_ints(kLarge);
    fill(fs, kLarge, rank, t, FREED, 0);
    /* (b): a persistent pair per distance */
    MPI_Request psend[kMaxThreads * 4 + 1], precv[kMaxThreads * 4 + 1];
    for (int d = 1; d < size; ++d) {
        MPI_Send_init(ps + 2 * (size_t)kLarge * d, 1, large_t, (rank + d) % size, tag_of(t, PERSIST, 0), own, &psend[d]);
        MPI_Recv_init(pr + 2 * (size_t)kLarge * d, 1, large_t, (rank + size - d) % size, tag_of(t, PERSIST, 0), own, &precv[d]);
    }
    for (int r = 0; r < rounds; ++r) {
        const int d = 1 + r % (size - 1), right = (rank + d) % size, left = (rank + size - d) % size;
        MPI_Request reqs[4];
        MPI_Status sts[4];
        /* (b) started first, to run under everything else */
        int32_t *pso = ps + 2 * (size_t)kLarge * d, *pri = pr + 2 * (size_t)kLarge * d;
        fill(pso, kLarge, rank, t, PERSIST, r);
        poison(pri, kLarge);
        MPI_Request pair[2] = {psend[d], precv[d]};
        MPI_Startall(2, pair);
        /* (a) */
        int tag = tag_of(t, EAGER, r);
        fill(es, kSmall, rank, t, EAGER, r);
        poison(er, kSmall);
        MPI_Irecv(er, 1, small_t, r % 2 ? MPI_ANY_SOURCE : left, tag, own, &reqs[0]);
        MPI_Isend(es, 1, small_t, right, tag, own, &reqs[1]);
        MPI_Waitall(2, reqs, sts);
        check_status(s, &sts[0], small_t, left, tag);
        check(s, er, kSmall, left, EAGER, r);
        /* (d) */
        poison(nv, kSmall);
        MPI_Irecv(nv, 1, small_t, r % 2 ? MPI_ANY_SOURCE : left, tag_of(t, NEVER, r), own, &reqs[0]);
        MPI_Cancel(&reqs[0]);
        test_loop(s, &reqs[0], &sts[0], "a canceled receive nothing matches", r);
        int canceled = 0;
        MPI_Test_cancelled(&sts[0], &canceled);
        if (!canceled) fail(s, "round %d: a receive nothing matches was not canceled (source %d, tag %d)", r,
                            sts[0].MPI_SOURCE, sts[0].MPI_TAG);
        check_untouched(s, nv, kSmall, NEVER, r);
        /* (c) */
        const int pn = r % 2 ? kLarge : kSmall;
        const MPI_Datatype pt = r % 2 ? large_t : small_t;
        tag = tag_of(t, PROBE, r);
        fill(qs, pn, rank, t, PROBE, r);
        poison(qr, pn);
        MPI_Isend(qs, 1, pt, right, tag, shared, &reqs[0]);
        const double until = now_s() + wait_limit_s;
        int found = 0;
        MPI_Status st;
        if (r % 2 == 0) {
            while (MPI_Iprobe(left, tag, shared, &found, &st), !found)
                if (now_s() > until) timed_out(s, "MPI_Iprobe", r);
            check_status(s, &st, pt, left, tag);
            MPI_Recv(qr, 1, pt, left, tag, shared, &st);
        } else {
            MPI_Message msg;
            while (MPI_Improbe(left, tag, shared, &found, &msg, &st), !found)
                if (now_s() > until) timed_out(s, "MPI_Improbe", r);
            check_status(s, &st, pt, left, tag);
            MPI_Mrecv(qr, 1, pt, &msg, &st);
        }
        check_status(s, &st, pt, left, tag);
        check(s, qr, pn, left, PROBE, r);
        MPI_Wait(&reqs[0], MPI_STATUS_IGNORE);
        /* (e) */
        const int cn = r % 2 ? kSmall : kLarge;
        const MPI_Datatype ct = r % 2 ? small_t : large_t;
        tag = tag_of(t, RACE, r);
        fill(cs, cn, rank, t, RACE, r);
        poison(cr, cn);
        MPI_Isend(cs, 1, ct, right, tag, own, &reqs[1]);
        MPI_Irecv(cr, 1, ct, left, tag, own, &reqs[0]);
        MPI_Cancel(&reqs[0]);
        MPI_Wait(&reqs[0], &sts[0]);  /* the send may wait for the receive posted again */
        MPI_Test_cancelled(&sts[0], &canceled);
        if (canceled) {
            ++s->canceled_races;
            check_untouched(s, cr, cn, RACE, r);
            MPI_Recv(cr, 1, ct, left, tag, own, &sts[0]);
        }
        check_status(s, &sts[0], ct, left, tag);
        check(s, cr, cn, left, RACE, r);
        MPI_Wait(&reqs[1], MPI_STATUS_IGNORE);
        /* (f) */
        const int fn = r % 4 == 1 ? kLarge : kSmall;
        const MPI_Datatype ft = r % 4 == 1 ? large_t : small_t;
        tag = tag_of(t, FREED, r);
        poison(fr, fn);
        MPI_Irecv(fr, 1, ft, left, tag, shared, &reqs[0]);
        MPI_Isend(fs, 1, ft, right, tag, shared, &reqs[1]);
        MPI_Request_free(&reqs[1]);
        if (reqs[1] != MPI_REQUEST_NULL) fail(s, "round %d: MPI_Request_free left the request (%d, %d)", r, 0, 0);
        testall_loop(s, 1, reqs, sts, "the receive of a freed send", r);
        check_status(s, &sts[0], ft, left, tag);
        check(s, fr, fn, left, FREED, 0);
        /* (g) */
        MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, shared, &found, &st);
        if (found) {
            const int k = (st.MPI_TAG >> 10) % 16, th = (st.MPI_TAG >> 10) / 16;
            int bytes = -1;
            MPI_Get_count(&st, MPI_BYTE, &bytes);
            ++s->checks;
            if (st.MPI_SOURCE < 0 || st.MPI_SOURCE >= size || th >= nthreads || (k != PROBE && k != FREED) ||
                (bytes != kSmall * 4 && bytes != kLarge * 4))
                fail(s, "MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG) saw source %d, tag %d, %d bytes", st.MPI_SOURCE,
                     st.MPI_TAG, bytes);
        }
        /* (b) */
        test_loop(s, &psend[d], MPI_STATUS_IGNORE, "a persistent send", r);
        test_loop(s, &precv[d], &st, "a persistent receive", r);
        check_status(s, &st, large_t, left, tag_of(t, PERSIST, 0));
        check(s, pri, kLarge, left, PERSIST, r);
    }
    for (int d = 1; d < size; ++d) MPI_Request_free(&psend[d]), MPI_Request_free(&precv[d]);
    MPI_Comm_free(&own);
    int32_t *buffers[] = {es, er, ps, pr, qs, qr, nv, cs, cr, fr};
    for (size_t i = 0; i < sizeof buffers / sizeof *buffers; ++i) buffer_free(buffers[i]);
    s->freed_sends = fs;  /* freed by main once the barrier says every peer received them */
}

static void *first_thread(void *arg) {
    first_contact(arg);
    return NULL;
}
static void *rounds_thread(void *arg) {
    rounds_on(arg);
    return NULL;
}

static void run_threads(void *(*fn)(void *), thread_state_t *states) {
    pthread_t th[kMaxThreads];
    for (int t = 0; t < nthreads; ++t)
        if (pthread_create(&th[t], NULL, fn, &states[t]) != 0) MPI_Abort(MPI_COMM_WORLD, 4);
    for (int t = 0; t < nthreads; ++t) pthread_join(th[t], NULL);
}

int main(int argc, char **argv) {
    int provided;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (argc > 1) nthreads = atoi(argv[1]);
    if (argc > 2) rounds = atoi(argv[2]);
    memory_init(argc > 3 ? argv[3] : NULL);
    if (getenv("UCXDT_STRESS_WAIT_S")) wait_limit_s = atof(getenv("UCXDT_STRESS_WAIT_S"));
    if (provided != MPI_THREAD_MULTIPLE || size < 2 || size > 4 * kMaxThreads || nthreads < 1 ||
        nthreads > kMaxThreads || rounds < 1 || rounds > kMaxRounds) {
        if (rank == 0)
            printf("threads_stress: FAIL, needs MPI_THREAD_MULTIPLE (got %d), 2-%d ranks, 1-%d threads, 1-%d rounds\n",
                   provided, 4 * kMaxThreads, kMaxThreads, kMaxRounds);
        MPI_Finalize();
        return 2;
    }
    /* No traffic before the threads' first sends. */
    MPI_Type_vector(kSmall, 1, 2, MPI_INT, &small_t);
    MPI_Type_vector(kLarge, 1, 2, MPI_INT, &large_t);
    MPI_Type_commit(&small_t);
    MPI_Type_commit(&large_t);
    thread_state_t states[kMaxThreads];
    memset(states, 0, sizeof states);
    for (int t = 0; t < nthreads; ++t) states[t].t = t;
    const double start = now_s();
    run_threads(first_thread, states);
    for (int t = 0; t < nthreads; ++t) MPI_Comm_dup(MPI_COMM_WORLD, &parent[t]);
    MPI_Comm_dup(MPI_COMM_WORLD, &shared);
    run_threads(rounds_thread, states);
    MPI_Barrier(MPI_COMM_WORLD);  /* every freed send has been received */
    for (int t = 0; t < nthreads; ++t) buffer_free(states[t].freed_sends);
    long checks = 0, bad = 0, races = 0;
    for (int t = 0; t < nthreads; ++t) {
        checks += states[t].checks, bad += states[t].bad, races += states[t].canceled_races;
        if (states[t].bad) printf("threads_stress: rank %d thread %d: %ld failures, the first: %s\n", rank, t,
                                  states[t].bad, states[t].first_error);
    }
    long sums[3] = {checks, bad, races}, all[3];
    MPI_Allreduce(sums, all, 3, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    for (int t = 0; t < nthreads; ++t) MPI_Comm_free(&parent[t]);
    MPI_Comm_free(&shared);
    MPI_Type_free(&small_t);
    MPI_Type_free(&large_t);
    if (rank == 0) {
        printf("threads_stress: %d ranks x %d threads x %d rounds, %ld checks, %ld receives canceled as their "
               "message came, %.1f s\n", size, nthreads, rounds, all[0], all[2], now_s() - start);
        if (all[1] == 0 && all[0] > 0)
            printf("threads_stress: OK\n");
        else
            printf("threads_stress: FAIL, %ld of %ld checks failed\n", all[1], all[0]);
    }
    fflush(stdout);
    MPI_Finalize();
    return all[1] != 0 || all[0] == 0;
}
