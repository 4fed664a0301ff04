/* The collectives with a self block: the block moves first, from the rank to itself through the
 * PML (a receive posted, then a standard send: ucxdt's GPU engine under pml ucxdt), and the
 * algorithm Open MPI chose runs without it. The self message completes before that algorithm
 * starts and is the only one from the rank to itself, so it takes the collective's own tag. */
#include "coll_ucxdt.h"

#include "ompi/mca/coll/base/coll_base_functions.h"
#include "ompi/mca/coll/base/coll_tags.h"
#include "ompi/mca/pml/pml.h"
#include "opal/mca/accelerator/accelerator.h"
#include "opal/mca/accelerator/base/base.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

#define BELOW(module, fn) (((mca_coll_ucxdt_module_t *)(module))->below.coll_##fn)
#define BELOW_MODULE(module, fn) (((mca_coll_ucxdt_module_t *)(module))->below.coll_##fn##_module)

/* buf displaced by disp extents of dt (a block of a gather, scatter or all-to-all). */
static char *at(const void *buf, ptrdiff_t disp, ompi_datatype_t *dt) {
    ptrdiff_t lb, extent;
    ompi_datatype_get_extent(dt, &lb, &extent);
    return (char *)buf + disp * extent;
}

static bool on_device(const char *block, ompi_datatype_t *dt) {
    ptrdiff_t true_lb, true_extent;
    ompi_datatype_get_true_extent(dt, &true_lb, &true_extent);
    int dev;
    uint64_t flags;
    return opal_accelerator.check_addr(block + true_lb, &dev, &flags) > 0;
}

/* Whether an accelerator component other than "null" was selected: then Open MPI's copy of one
 * type into itself (opal_datatype_copy_content_same_ddt) asks it about both ends of every block,
 * a driver call each under "cuda" even on host memory. */
static bool accelerator_asks_per_block(void) {
    return strcmp(opal_accelerator_base_selected_component.base_version.mca_component_name, "null") != 0;
}

/* Whether Open MPI's own copy of the block would go wrong or block by block. On device memory on
 * either side: ompi_datatype_sndrcv copies one type into itself with the accelerator, but block
 * by block, and converts between two types with a CPU convertor that faults on device memory,
 * contiguous or not. On host memory: a non-contiguous type copied into itself, where the
 * accelerator is asked about every block (an Allgather of a 512 KiB layout of 16-byte blocks
 * took 132 ms against 44 us contiguous on an H200 host, 2026-11-30). */
static bool ours(const char *sblock, int scount, ompi_datatype_t *sdt, const char *rblock, int rcount,
                 ompi_datatype_t *rdt) {
    if (scount <= 0 || rcount <= 0) return false;
    if (sdt == rdt && ompi_datatype_is_contiguous_memory_layout(sdt, scount)) return false;
    if (on_device(sblock, sdt) || on_device(rblock, rdt)) return true;
    return sdt == rdt && scount == rcount && accelerator_asks_per_block();
}

/* The self block, rank to itself through the PML. A send error cancels the receive. */
static int self_copy(const char *sblock, int scount, ompi_datatype_t *sdt, char *rblock, int rcount,
                     ompi_datatype_t *rdt, int tag, ompi_communicator_t *comm) {
    const int me = ompi_comm_rank(comm);
    ompi_request_t *req = MPI_REQUEST_NULL;
    int rc = MCA_PML_CALL(irecv(rblock, (size_t)rcount, rdt, me, tag, comm, &req));
    if (rc != OMPI_SUCCESS) return rc;
    rc = MCA_PML_CALL(send(sblock, (size_t)scount, sdt, me, tag, MCA_PML_BASE_SEND_STANDARD, comm));
    if (rc != OMPI_SUCCESS) {
        (void)ompi_request_cancel(req);
        (void)ompi_request_wait(&req, MPI_STATUS_IGNORE);
        return rc;
    }
    return ompi_request_wait(&req, MPI_STATUS_IGNORE);
}

/* ---- Gathers and scatters: the self block first, then the algorithm with MPI_IN_PLACE ------
 * MPI_Gather and MPI_Scatter run Open MPI's linear algorithm whatever was chosen below: its
 * binomial trees pack and unpack subtrees' blocks with the CPU convertor, which faults on
 * device memory, and every rank must choose alike without knowing the others' memory. */

/* The rank's own contribution to a gather into block `disp` of rbuf, on the root only (every
 * rank for root -1: the all-gathers); *moved when it moved, so that the algorithm runs in
 * place. */
static int gather_self(const void *sbuf, int scount, ompi_datatype_t *sdt, void *rbuf, int rcount, ptrdiff_t disp,
                       ompi_datatype_t *rdt, int root, int tag, ompi_communicator_t *comm, bool *moved) {
    *moved = false;
    if (sbuf == MPI_IN_PLACE || (root >= 0 && ompi_comm_rank(comm) != root)) return OMPI_SUCCESS;
    char *mine = at(rbuf, disp, rdt);
    if (!ours(sbuf, scount, sdt, mine, rcount, rdt)) return OMPI_SUCCESS;
    *moved = true;
    return self_copy(sbuf, scount, sdt, mine, rcount, rdt, tag, comm);
}

/* gather_self for MPI_Gatherv: rcounts and disps are significant at the root only (MPI-4.1
 * §6.5.2), so other ranks may pass NULL, as MPI_Intercomm_merge's gathers over the local group
 * do. */
static int gatherv_self(const void *sbuf, int scount, ompi_datatype_t *sdt, void *rbuf, const int *rcounts,
                        const int *disps, ompi_datatype_t *rdt, int root, ompi_communicator_t *comm, bool *moved) {
    *moved = false;
    if (ompi_comm_rank(comm) != root) return OMPI_SUCCESS;
    return gather_self(sbuf, scount, sdt, rbuf, rcounts[root], disps[root], rdt, root, MCA_COLL_BASE_TAG_GATHERV,
                       comm, moved);
}

int mca_coll_ucxdt_allgather(const void *sbuf, int scount, ompi_datatype_t *sdt, void *rbuf, int rcount,
                         ompi_datatype_t *rdt, ompi_communicator_t *comm, mca_coll_base_module_t *module) {
    bool moved;
    const ptrdiff_t mine = (ptrdiff_t)ompi_comm_rank(comm) * rcount;
    int rc = gather_self(sbuf, scount, sdt, rbuf, rcount, mine, rdt, -1, MCA_COLL_BASE_TAG_ALLGATHER, comm, &moved);
    if (rc != OMPI_SUCCESS) return rc;
    if (((mca_coll_ucxdt_module_t *)module)->allgather_bruck) {
        /* Open MPI's copy serves a block ours() leaves to it. */
        if (!moved && sbuf != MPI_IN_PLACE &&
            (rc = ompi_datatype_sndrcv(sbuf, scount, sdt, at(rbuf, mine, rdt), rcount, rdt)) != OMPI_SUCCESS)
            return rc;
        return mca_coll_ucxdt_allgather_bruck(rbuf, rcount, rdt, comm);
    }
    return BELOW(module, allgather)(moved ? MPI_IN_PLACE : sbuf, scount, sdt, rbuf, rcount, rdt, comm,
                                    BELOW_MODULE(module, allgather));
}

int mca_coll_ucxdt_allgatherv(const void *sbuf, int scount, ompi_datatype_t *sdt, void *rbuf, const int *rcounts,
                          const int *disps, ompi_datatype_t *rdt, ompi_communicator_t *comm,
                          mca_coll_base_module_t *module) {
    const int me = ompi_comm_rank(comm);
    bool moved;
    const int rc = gather_self(sbuf, scount, sdt, rbuf, rcounts[me], disps[me], rdt, -1, MCA_COLL_BASE_TAG_ALLGATHERV,
                               comm, &moved);
    if (rc != OMPI_SUCCESS) return rc;
    return BELOW(module, allgatherv)(moved ? MPI_IN_PLACE : sbuf, scount, sdt, rbuf, rcounts, disps, rdt, comm,
                                     BELOW_MODULE(module, allgatherv));
}

int mca_coll_ucxdt_gather(const void *sbuf, int scount, ompi_datatype_t *sdt, void *rbuf, int rcount,
                      ompi_datatype_t *rdt, int root, ompi_communicator_t *comm, mca_coll_base_module_t *module) {
    bool moved;
    const int rc = gather_self(sbuf, scount, sdt, rbuf, rcount, (ptrdiff_t)root * rcount, rdt,
                               root, MCA_COLL_BASE_TAG_GATHER, comm, &moved);
    if (rc != OMPI_SUCCESS) return rc;
    return ompi_coll_base_gather_intra_basic_linear(moved ? MPI_IN_PLACE : sbuf, scount, sdt, rbuf, rcount, rdt,
                                                    root, comm, module);
}

int mca_coll_ucxdt_gatherv(const void *sbuf, int scount, ompi_datatype_t *sdt, void *rbuf, const int *rcounts,
                       const int *disps, ompi_datatype_t *rdt, int root, ompi_communicator_t *comm,
                       mca_coll_base_module_t *module) {
    bool moved;
    const int rc = gatherv_self(sbuf, scount, sdt, rbuf, rcounts, disps, rdt, root, comm, &moved);
    if (rc != OMPI_SUCCESS) return rc;
    return BELOW(module, gatherv)(moved ? MPI_IN_PLACE : sbuf, scount, sdt, rbuf, rcounts, disps, rdt, root, comm,
                                  BELOW_MODULE(module, gatherv));
}

/* The root's own block of a scatter, from block `disp` of sbuf into rbuf (on the root only). */
static int scatter_self(const void *sbuf, int scount, ptrdiff_t disp, ompi_datatype_t *sdt, void *rbuf, int rcount,
                        ompi_datatype_t *rdt, int root, int tag, ompi_communicator_t *comm, bool *moved) {
    *moved = false;
    if (rbuf == MPI_IN_PLACE || ompi_comm_rank(comm) != root) return OMPI_SUCCESS;
    const char *theirs = at(sbuf, disp, sdt);
    if (!ours(theirs, scount, sdt, rbuf, rcount, rdt)) return OMPI_SUCCESS;
    *moved = true;
    return self_copy(theirs, scount, sdt, rbuf, rcount, rdt, tag, comm);
}

/* scatter_self for MPI_Scatterv, whose scounts and disps are significant at the root only
 * (MPI-4.1 §6.6.2). */
static int scatterv_self(const void *sbuf, const int *scounts, const int *disps, ompi_datatype_t *sdt, void *rbuf,
                         int rcount, ompi_datatype_t *rdt, int root, ompi_communicator_t *comm, bool *moved) {
    *moved = false;
    if (ompi_comm_rank(comm) != root) return OMPI_SUCCESS;
    return scatter_self(sbuf, scounts[root], disps[root], sdt, rbuf, rcount, rdt, root, MCA_COLL_BASE_TAG_SCATTERV,
                        comm, moved);
}

int mca_coll_ucxdt_scatter(const void *sbuf, int scount, ompi_datatype_t *sdt, void *rbuf, int rcount,
                       ompi_datatype_t *rdt, int root, ompi_communicator_t *comm, mca_coll_base_module_t *module) {
    bool moved;
    const int rc = scatter_self(sbuf, scount, (ptrdiff_t)root * scount, sdt, rbuf, rcount, rdt,
                                root, MCA_COLL_BASE_TAG_SCATTER, comm, &moved);
    if (rc != OMPI_SUCCESS) return rc;
    return ompi_coll_base_scatter_intra_basic_linear(sbuf, scount, sdt, moved ? MPI_IN_PLACE : rbuf, rcount, rdt,
                                                     root, comm, module);
}

int mca_coll_ucxdt_scatterv(const void *sbuf, const int *scounts, const int *disps, ompi_datatype_t *sdt, void *rbuf,
                        int rcount, ompi_datatype_t *rdt, int root, ompi_communicator_t *comm,
                        mca_coll_base_module_t *module) {
    bool moved;
    const int rc = scatterv_self(sbuf, scounts, disps, sdt, rbuf, rcount, rdt, root, comm, &moved);
    if (rc != OMPI_SUCCESS) return rc;
    return BELOW(module, scatterv)(sbuf, scounts, disps, sdt, moved ? MPI_IN_PLACE : rbuf, rcount, rdt, root, comm,
                                   BELOW_MODULE(module, scatterv));
}

/* Nonblocking: the self block moves before the call returns, which MPI allows (a nonblocking
 * collective may complete any part of its work at the call, MPI-4.1 §6.12). */
int mca_coll_ucxdt_iallgather(const void *sbuf, int scount, ompi_datatype_t *sdt, void *rbuf, int rcount,
                          ompi_datatype_t *rdt, ompi_communicator_t *comm, ompi_request_t **req,
                          mca_coll_base_module_t *module) {
    bool moved;
    const int rc = gather_self(sbuf, scount, sdt, rbuf, rcount, (ptrdiff_t)ompi_comm_rank(comm) * rcount, rdt,
                               -1, MCA_COLL_BASE_TAG_ALLGATHER, comm, &moved);
    if (rc != OMPI_SUCCESS) return rc;
    return BELOW(module, iallgather)(moved ? MPI_IN_PLACE : sbuf, scount, sdt, rbuf, rcount, rdt, comm, req,
                                     BELOW_MODULE(module, iallgather));
}

int mca_coll_ucxdt_iallgatherv(const void *sbuf, int scount, ompi_datatype_t *sdt, void *rbuf, const int *rcounts,
                           const int *disps, ompi_datatype_t *rdt, ompi_communicator_t *comm, ompi_request_t **req,
                           mca_coll_base_module_t *module) {
    const int me = ompi_comm_rank(comm);
    bool moved;
    const int rc = gather_self(sbuf, scount, sdt, rbuf, rcounts[me], disps[me], rdt, -1, MCA_COLL_BASE_TAG_ALLGATHERV,
                               comm, &moved);
    if (rc != OMPI_SUCCESS) return rc;
    return BELOW(module, iallgatherv)(moved ? MPI_IN_PLACE : sbuf, scount, sdt, rbuf, rcounts, disps, rdt, comm, req,
                                      BELOW_MODULE(module, iallgatherv));
}

int mca_coll_ucxdt_igather(const void *sbuf, int scount, ompi_datatype_t *sdt, void *rbuf, int rcount,
                       ompi_datatype_t *rdt, int root, ompi_communicator_t *comm, ompi_request_t **req,
                       mca_coll_base_module_t *module) {
    bool moved;
    const int rc = gather_self(sbuf, scount, sdt, rbuf, rcount, (ptrdiff_t)root * rcount, rdt,
                               root, MCA_COLL_BASE_TAG_GATHER, comm, &moved);
    if (rc != OMPI_SUCCESS) return rc;
    return BELOW(module, igather)(moved ? MPI_IN_PLACE : sbuf, scount, sdt, rbuf, rcount, rdt, root, comm, req,
                                  BELOW_MODULE(module, igather));
}

int mca_coll_ucxdt_igatherv(const void *sbuf, int scount, ompi_datatype_t *sdt, void *rbuf, const int *rcounts,
                        const int *disps, ompi_datatype_t *rdt, int root, ompi_communicator_t *comm,
                        ompi_request_t **req, mca_coll_base_module_t *module) {
    bool moved;
    const int rc = gatherv_self(sbuf, scount, sdt, rbuf, rcounts, disps, rdt, root, comm, &moved);
    if (rc != OMPI_SUCCESS) return rc;
    return BELOW(module, igatherv)(moved ? MPI_IN_PLACE : sbuf, scount, sdt, rbuf, rcounts, disps, rdt, root, comm,
                                   req, BELOW_MODULE(module, igatherv));
}

int mca_coll_ucxdt_iscatter(const void *sbuf, int scount, ompi_datatype_t *sdt, void *rbuf, int rcount,
                        ompi_datatype_t *rdt, int root, ompi_communicator_t *comm, ompi_request_t **req,
                        mca_coll_base_module_t *module) {
    bool moved;
    const int rc = scatter_self(sbuf, scount, (ptrdiff_t)root * scount, sdt, rbuf, rcount, rdt,
                                root, MCA_COLL_BASE_TAG_SCATTER, comm, &moved);
    if (rc != OMPI_SUCCESS) return rc;
    return BELOW(module, iscatter)(sbuf, scount, sdt, moved ? MPI_IN_PLACE : rbuf, rcount, rdt, root, comm, req,
                                   BELOW_MODULE(module, iscatter));
}

int mca_coll_ucxdt_iscatterv(const void *sbuf, const int *scounts, const int *disps, ompi_datatype_t *sdt, void *rbuf,
                         int rcount, ompi_datatype_t *rdt, int root, ompi_communicator_t *comm, ompi_request_t **req,
                         mca_coll_base_module_t *module) {
    bool moved;
    const int rc = scatterv_self(sbuf, scounts, disps, sdt, rbuf, rcount, rdt, root, comm, &moved);
    if (rc != OMPI_SUCCESS) return rc;
    return BELOW(module, iscatterv)(sbuf, scounts, disps, sdt, moved ? MPI_IN_PLACE : rbuf, rcount, rdt, root, comm,
                                    req, BELOW_MODULE(module, iscatterv));
}

/* ---- All-to-alls: the diagonal first, then the algorithm with a count of zero there --------- */

/* Per-rank counts and displacements (elements) with the rank's own count zero: the arrays that
 * the v and w algorithms read only while they are called (libnbc builds its schedule then). */
typedef struct {
    int *scounts, *sdisps, *rcounts, *rdisps;
} counts_t;

static void counts_free(counts_t *c) { free(c->scounts), c->scounts = NULL; }

/* From per-rank arrays (or, where counts are NULL, `scount`/`rcount` for every rank at
 * displacement i x count); false when out of memory or a displacement overflows int. */
static bool counts_without_self(counts_t *c, int n, int me, const int *scounts, const int *sdisps, int scount,
                                const int *rcounts, const int *rdisps, int rcount) {
    c->scounts = malloc(4 * (size_t)n * sizeof(int));
    if (!c->scounts) return false;
    c->sdisps = c->scounts + n, c->rcounts = c->sdisps + n, c->rdisps = c->rcounts + n;
    for (int i = 0; i < n; ++i) {
        if (!scounts && ((long long)i * scount > INT_MAX || (long long)i * rcount > INT_MAX)) {
            counts_free(c);
            return false;
        }
        c->scounts[i] = scounts ? scounts[i] : scount;
        c->sdisps[i] = scounts ? sdisps[i] : i * scount;
        c->rcounts[i] = rcounts ? rcounts[i] : rcount;
        c->rdisps[i] = rcounts ? rdisps[i] : i * rcount;
    }
    c->scounts[me] = c->rcounts[me] = 0;
    return true;
}

/* The diagonal of an all-to-all with one type a side; *moved when it went through the PML. */
static int diagonal(const void *sbuf, int scount, ptrdiff_t sdisp, ompi_datatype_t *sdt, void *rbuf, int rcount,
                    ptrdiff_t rdisp, ompi_datatype_t *rdt, int tag, ompi_communicator_t *comm, bool *moved) {
    *moved = false;
    if (sbuf == MPI_IN_PLACE) return OMPI_SUCCESS;  /* the diagonal stays where it is */
    const char *s = at(sbuf, sdisp, sdt);
    char *r = at(rbuf, rdisp, rdt);
    if (!ours(s, scount, sdt, r, rcount, rdt)) return OMPI_SUCCESS;
    *moved = true;
    return self_copy(s, scount, sdt, r, rcount, rdt, tag, comm);
}

/* MPI_Alltoall(v) and their nonblocking forms, all run as the v algorithm below once the
 * diagonal moved (uniform counts become arrays); `req` NULL for the blocking ones. */
static int alltoallv_any(const void *sbuf, const int *scounts, const int *sdisps, int scount, ompi_datatype_t *sdt,
                         void *rbuf, const int *rcounts, const int *rdisps, int rcount, ompi_datatype_t *rdt,
                         ompi_communicator_t *comm, ompi_request_t **req, mca_coll_base_module_t *module) {
    const int me = ompi_comm_rank(comm), n = ompi_comm_size(comm);
    const bool uniform = rcounts == NULL;  /* scounts may be NULL too under MPI_IN_PLACE */
    bool moved = false;
    counts_t c = {0};
    if (sbuf != MPI_IN_PLACE && BELOW(module, alltoallv) && (!req || BELOW(module, ialltoallv)) &&
        counts_without_self(&c, n, me, scounts, sdisps, scount, rcounts, rdisps, rcount)) {
        const int rc = diagonal(sbuf, uniform ? scount : scounts[me], uniform ? (ptrdiff_t)me * scount : sdisps[me],
                                sdt, rbuf, uniform ? rcount : rcounts[me],
                                uniform ? (ptrdiff_t)me * rcount : rdisps[me], rdt,
                                uniform ? MCA_COLL_BASE_TAG_ALLTOALL : MCA_COLL_BASE_TAG_ALLTOALLV, comm, &moved);
        if (rc != OMPI_SUCCESS) return counts_free(&c), rc;
    }
    int rc;
    if (moved && req)
        rc = BELOW(module, ialltoallv)(sbuf, c.scounts, c.sdisps, sdt, rbuf, c.rcounts, c.rdisps, rdt, comm, req,
                                       BELOW_MODULE(module, ialltoallv));
    else if (moved)
        rc = BELOW(module, alltoallv)(sbuf, c.scounts, c.sdisps, sdt, rbuf, c.rcounts, c.rdisps, rdt, comm,
                                      BELOW_MODULE(module, alltoallv));
    else if (uniform && req)
        rc = BELOW(module, ialltoall)(sbuf, scount, sdt, rbuf, rcount, rdt, comm, req, BELOW_MODULE(module, ialltoall));
    else if (uniform)
        rc = BELOW(module, alltoall)(sbuf, scount, sdt, rbuf, rcount, rdt, comm, BELOW_MODULE(module, alltoall));
    else if (req)
        rc = BELOW(module, ialltoallv)(sbuf, scounts, sdisps, sdt, rbuf, rcounts, rdisps, rdt, comm, req,
                                       BELOW_MODULE(module, ialltoallv));
    else
        rc = BELOW(module, alltoallv)(sbuf, scounts, sdisps, sdt, rbuf, rcounts, rdisps, rdt, comm,
                                      BELOW_MODULE(module, alltoallv));
    counts_free(&c);
    return rc;
}

int mca_coll_ucxdt_alltoall(const void *sbuf, int scount, ompi_datatype_t *sdt, void *rbuf, int rcount,
                        ompi_datatype_t *rdt, ompi_communicator_t *comm, mca_coll_base_module_t *module) {
    return alltoallv_any(sbuf, NULL, NULL, scount, sdt, rbuf, NULL, NULL, rcount, rdt, comm, NULL, module);
}

int mca_coll_ucxdt_alltoallv(const void *sbuf, const int *scounts, const int *sdisps, ompi_datatype_t *sdt, void *rbuf,
                         const int *rcounts, const int *rdisps, ompi_datatype_t *rdt, ompi_communicator_t *comm,
                         mca_coll_base_module_t *module) {
    return alltoallv_any(sbuf, scounts, sdisps, 0, sdt, rbuf, rcounts, rdisps, 0, rdt, comm, NULL, module);
}

int mca_coll_ucxdt_ialltoall(const void *sbuf, int scount, ompi_datatype_t *sdt, void *rbuf, int rcount,
                         ompi_datatype_t *rdt, ompi_communicator_t *comm, ompi_request_t **req,
                         mca_coll_base_module_t *module) {
    return alltoallv_any(sbuf, NULL, NULL, scount, sdt, rbuf, NULL, NULL, rcount, rdt, comm, req, module);
}

int mca_coll_ucxdt_ialltoallv(const void *sbuf, const int *scounts, const int *sdisps, ompi_datatype_t *sdt, void *rbuf,
                          const int *rcounts, const int *rdisps, ompi_datatype_t *rdt, ompi_communicator_t *comm,
                          ompi_request_t **req, mca_coll_base_module_t *module) {
    return alltoallv_any(sbuf, scounts, sdisps, 0, sdt, rbuf, rcounts, rdisps, 0, rdt, comm, req, module);
}

/* MPI_Alltoallw: displacements in bytes, a type per rank. */
static int alltoallw_any(const void *sbuf, const int *scounts, const int *sdisps, ompi_datatype_t *const *sdts,
                         void *rbuf, const int *rcounts, const int *rdisps, ompi_datatype_t *const *rdts,
                         ompi_communicator_t *comm, ompi_request_t **req, mca_coll_base_module_t *module) {
    const int me = ompi_comm_rank(comm), n = ompi_comm_size(comm);
    counts_t c = {0};
    bool moved = false;
    if (sbuf != MPI_IN_PLACE) {
        const char *s = (const char *)sbuf + sdisps[me];
        char *r = (char *)rbuf + rdisps[me];
        if (ours(s, scounts[me], sdts[me], r, rcounts[me], rdts[me]) &&
            counts_without_self(&c, n, me, scounts, sdisps, 0, rcounts, rdisps, 0)) {
            const int rc =
                self_copy(s, scounts[me], sdts[me], r, rcounts[me], rdts[me], MCA_COLL_BASE_TAG_ALLTOALLW, comm);
            if (rc != OMPI_SUCCESS) return counts_free(&c), rc;
            moved = true;
        }
    }
    const int *sc = moved ? c.scounts : scounts, *rc_ = moved ? c.rcounts : rcounts;
    const int rc = req ? BELOW(module, ialltoallw)(sbuf, sc, sdisps, sdts, rbuf, rc_, rdisps, rdts, comm, req,
                                                   BELOW_MODULE(module, ialltoallw))
                       : BELOW(module, alltoallw)(sbuf, sc, sdisps, sdts, rbuf, rc_, rdisps, rdts, comm,
                                                  BELOW_MODULE(module, alltoallw));
    counts_free(&c);
    return rc;
}

int mca_coll_ucxdt_alltoallw(const void *sbuf, const int *scounts, const int *sdisps, ompi_datatype_t *const *sdts,
                         void *rbuf, const int *rcounts, const int *rdisps, ompi_datatype_t *const *rdts,
                         ompi_communicator_t *comm, mca_coll_base_module_t *module) {
    return alltoallw_any(sbuf, scounts, sdisps, sdts, rbuf, rcounts, rdisps, rdts, comm, NULL, module);
}

int mca_coll_ucxdt_ialltoallw(const void *sbuf, const int *scounts, const int *sdisps, ompi_datatype_t *const *sdts,
                          void *rbuf, const int *rcounts, const int *rdisps, ompi_datatype_t *const *rdts,
                          ompi_communicator_t *comm, ompi_request_t **req, mca_coll_base_module_t *module) {
    return alltoallw_any(sbuf, scounts, sdisps, sdts, rbuf, rcounts, rdisps, rdts, comm, req, module);
}
