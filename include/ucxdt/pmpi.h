/*
 * libucxdt_pmpi: a PMPI interposer that moves GPU derived datatypes for unmodified MPI programs.
 *
 * Loaded ahead of the MPI library (LD_PRELOAD=libucxdt_pmpi.so, or linked before it), it
 * defines MPI_* entry points that route (buffer, count, datatype) triples through ucxdt when
 * the datatype is a committed, non-contiguous derived type and the buffer is GPU memory (or host
 * memory, with UCXDT_PMPI_HOST=y): sends pack into staging and send MPI_BYTE through the PMPI_*
 * call, receives land in staging and are unpacked when MPI_Wait/MPI_Test completes them.
 * Everything else goes to the MPI untouched. Matching, ordering, progress, statuses and error
 * handlers stay the MPI's (MPI-4.1 section 15.2, the profiling interface). Built once per MPI
 * ABI (Open MPI, MPICH). docs/pmpi.md lists the calls, the settings and the limits.
 *
 * Settings (environment, read once): UCXDT_PMPI_HOST=y|n (default n); UCXDT_PMPI_CUDA_AWARE=
 * y|n (default: MPIX_Query_cuda_support where the MPI has it, else n): device staging when the
 * MPI moves device memory itself, page-locked host staging otherwise; UCXDT_PMPI_PINNED_MAX
 * (bytes, default 16384): GPU layouts of at most this many packed bytes stage in page-locked host
 * memory under a CUDA-aware MPI too, where its small device messages cost more; UCXDT_PMPI_STAGING_MB
 * (default 256): staging kept for reuse per process; UCXDT_PMPI_VERBOSE=y: counters on stderr
 * at MPI_Finalize.
 */
#ifndef UCXDT_PMPI_H
#define UCXDT_PMPI_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/** What the interposer routed through ucxdt in this process since MPI_Init (counts of calls). */
typedef struct ucxdt_pmpi_counters {
    uint64_t sends;       /**< point-to-point sends (each start of a persistent one) packed */
    uint64_t recvs;       /**< point-to-point receives unpacked */
    uint64_t collectives; /**< collectives whose blocks were packed and unpacked */
    uint64_t packs;       /**< MPI_Pack and MPI_Unpack calls */
    uint64_t fallbacks;   /**< committed types ucxdt could not import: the MPI's own path */
} ucxdt_pmpi_counters_t;

/** Copies the counters into *out. Thread safe; callable before MPI_Init and after
 *  MPI_Finalize. A program can look it up with dlsym(RTLD_DEFAULT, "ucxdt_pmpi_get_counters")
 *  to learn whether the interposer is loaded. */
__attribute__((visibility("default"))) void ucxdt_pmpi_get_counters(ucxdt_pmpi_counters_t *out);

#ifdef __cplusplus
}
#endif

#endif /* UCXDT_PMPI_H */
