/* cpupack_bench: host-memory packing of one MPI datatype three ways, in one process:
 *   MPI_Pack (Open MPI: opal_convertor_pack), ucxdt_pack of the same type imported by
 *   ucxdt_type_from_mpi (what pml ucxdt does), and memcpy of the packed bytes (the roofline).
 * Issue 62. Each figure: median over samples of a batch of calls (each sample >= ~20 us),
 * after warm-up; GB/s = 1e9 packed bytes per second. The packed bytes of ucxdt are checked
 * against MPI_Pack's once per case.
 *
 * Built as build/cpupack_bench where the build has Open MPI 5 (UCXDT_OMPI5_PREFIX).
 * Run: build/cpupack_bench [case-substring [packed-size]]   (singleton, no mpirun needed) */
#define _POSIX_C_SOURCE 200809L
#include <mpi.h>
#include <ucxdt/mpi.h>
#include <ucxdt/ucxdt.h>

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + 1e-9 * t.tv_nsec;
}

static int cmpd(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

struct particle { int a; double b; char c; double d[2]; }; /* blocks of 4, 9 and 16 bytes */

/* A type of about `bytes` packed bytes and the count to pack (1 for the vectors). */
static void make_type(const char *name, int64_t bytes, MPI_Datatype *t, int *count) {
    *count = 1;
    if (!strcmp(name, "vec4_s8")) {
        MPI_Type_vector((int)(bytes / 4), 1, 2, MPI_INT, t);
    } else if (!strcmp(name, "vec8_s64")) {
        MPI_Type_vector((int)(bytes / 8), 1, 8, MPI_DOUBLE, t);
    } else if (!strcmp(name, "vec2048_s4096")) {
        MPI_Type_vector((int)(bytes / 2048), 256, 512, MPI_DOUBLE, t);
    } else if (!strcmp(name, "indexed")) {
        /* 8 blocks of 1..4 doubles, irregular gaps: 17 doubles (136 B) per 256 B. */
        int bl[8] = {1, 3, 2, 4, 1, 2, 3, 1}, dp[8] = {0, 2, 7, 10, 16, 19, 23, 28};
        MPI_Datatype b;
        MPI_Type_indexed(8, bl, dp, MPI_DOUBLE, &b);
        MPI_Type_create_resized(b, 0, 256, t);
        MPI_Type_free(&b);
        *count = (int)(bytes / 136);
    } else if (!strcmp(name, "struct")) {
        int bl[4] = {1, 1, 1, 2};
        MPI_Aint dp[4] = {offsetof(struct particle, a), offsetof(struct particle, b),
                          offsetof(struct particle, c), offsetof(struct particle, d)};
        MPI_Datatype ty[4] = {MPI_INT, MPI_DOUBLE, MPI_CHAR, MPI_DOUBLE}, s;
        MPI_Type_create_struct(4, bl, dp, ty, &s);
        MPI_Type_create_resized(s, 0, sizeof(struct particle), t);
        MPI_Type_free(&s);
        *count = (int)(bytes / 29);
    } else { /* contig: per-call overhead */
        MPI_Type_contiguous((int)bytes, MPI_BYTE, t);
    }
    MPI_Type_commit(t);
}

enum { PACK_MPI, PACK_UCXDT, PACK_MEMCPY };

struct ctx {
    int method, count;
    MPI_Datatype mt;
    ucxdt_type_t ut;
    char *in, *out, *contig;
    int64_t size;
};

static void once(const struct ctx *c) {
    if (c->method == PACK_MPI) {
        int pos = 0;
        MPI_Pack(c->in, c->count, c->mt, c->out, (int)c->size, &pos, MPI_COMM_SELF);
    } else if (c->method == PACK_UCXDT) {
        int64_t pos = 0;
        if (ucxdt_pack(c->in, c->count, c->ut, c->out, c->size, &pos) != UCXDT_OK) {
            fprintf(stderr, "ucxdt_pack: %s\n", ucxdt_last_error());
            exit(1);
        }
    } else {
        memcpy(c->out, c->contig, (size_t)c->size);
    }
    __asm__ volatile("" ::: "memory");
}

/* Median GB/s. */
static double measure(const struct ctx *c) {
    for (int i = 0; i < 3; ++i) once(c);
    int batch = 1;
    for (;;) { /* a batch long enough for the clock */
        double t0 = now();
        for (int i = 0; i < batch; ++i) once(c);
        if (now() - t0 > 20e-6 || batch >= 1 << 20) break;
        batch *= 2;
    }
    enum { kSamples = 31 };
    double s[kSamples];
    for (int k = 0; k < kSamples; ++k) {
        double t0 = now();
        for (int i = 0; i < batch; ++i) once(c);
        s[k] = (now() - t0) / batch;
    }
    qsort(s, kSamples, sizeof s[0], cmpd);
    return c->size / s[kSamples / 2] / 1e9;
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    const char *only = argc > 1 ? argv[1] : NULL;
    const int64_t only_size = argc > 2 ? atoll(argv[2]) : 0;
    const char *cases[] = {"contig", "vec4_s8", "vec8_s64", "vec2048_s4096", "indexed", "struct"};
    const int64_t sizes[] = {4 << 10, 64 << 10, 1 << 20, 4 << 20};
    int bad = 0;
    printf("%-14s %9s %9s %10s %10s %10s %8s\n", "case", "target", "packed", "MPI_Pack", "ucxdt", "memcpy",
           "ucx/mpi");
    for (size_t ci = 0; ci < sizeof cases / sizeof *cases; ++ci) {
        if (only && !strstr(cases[ci], only)) continue;
        for (size_t si = 0; si < sizeof sizes / sizeof *sizes; ++si) {
            if (only_size && sizes[si] != only_size) continue;
            struct ctx c = {0};
            make_type(cases[ci], sizes[si], &c.mt, &c.count);
            int psz;
            MPI_Aint lb, ext, tlb, text;
            MPI_Pack_size(c.count, c.mt, MPI_COMM_SELF, &psz);
            MPI_Type_get_extent(c.mt, &lb, &ext);
            MPI_Type_get_true_extent(c.mt, &tlb, &text);
            int sz;
            MPI_Type_size(c.mt, &sz);
            c.size = (int64_t)sz * c.count;
            const size_t span = (size_t)(ext * (c.count - 1) + text + tlb) + 64;
            c.in = aligned_alloc(64, (span + 63) / 64 * 64);
            c.out = aligned_alloc(64, ((size_t)psz + 63) / 64 * 64);
            c.contig = aligned_alloc(64, ((size_t)c.size + 63) / 64 * 64);
            for (size_t i = 0; i < span; ++i) c.in[i] = (char)(i * 131 + 7);
            memset(c.contig, 1, (size_t)c.size);
            if (ucxdt_type_from_mpi(c.mt, &c.ut) != UCXDT_OK) {
                fprintf(stderr, "import %s: %s\n", cases[ci], ucxdt_last_error());
                return 1;
            }
            /* Check: ucxdt's packed bytes are MPI_Pack's. */
            char *ref = malloc((size_t)psz);
            int pos = 0;
            MPI_Pack(c.in, c.count, c.mt, ref, psz, &pos, MPI_COMM_SELF);
            int64_t upos = 0;
            memset(c.out, 0, (size_t)psz);
            ucxdt_pack(c.in, c.count, c.ut, c.out, psz, &upos);
            if (upos != pos || memcmp(ref, c.out, (size_t)pos)) {
                fprintf(stderr, "MISMATCH %s %lld: mpi %d ucxdt %lld bytes\n", cases[ci],
                        (long long)sizes[si], pos, (long long)upos);
                bad = 1;
            }
            free(ref);
            double g[3];
            for (int m = 0; m < 3; ++m) {
                c.method = m;
                g[m] = measure(&c);
            }
            printf("%-14s %9lld %9lld %10.2f %10.2f %10.2f %8.2f\n", cases[ci], (long long)sizes[si],
                   (long long)c.size, g[0], g[1], g[2], g[1] / g[0]);
            fflush(stdout);
            ucxdt_type_free(&c.ut);
            MPI_Type_free(&c.mt);
            free(c.in), free(c.out), free(c.contig);
        }
    }
    MPI_Finalize();
    return bad;
}
