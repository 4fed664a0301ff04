/*
 * coll ucxdt: the self block of Open MPI 5's collectives, moved by the PML.
 *
 * Open MPI's collective algorithms (coll base, tuned, basic, libnbc) move every other rank's
 * block through the PML, but copy a rank's own block (MPI_Allgather's contribution,
 * MPI_Alltoallw's diagonal, a root's block of MPI_Gather and MPI_Scatter) with its own datatype
 * engine (ompi_datatype_sndrcv, NBC_Copy). On device memory that engine copies a derived type
 * block by block, one accelerator copy each (a second for 1 MiB of 16-byte blocks), and
 * between two different types, even contiguous ones, it packs device memory with the CPU and
 * faults.
 *
 * This component sits above whichever components Open MPI chose for a communicator. For the
 * collectives that have a self block it moves that block itself, as a message from the rank to
 * itself through the PML (pml ucxdt: ucxdt's GPU engine), then runs the chosen algorithm
 * without it: MPI_IN_PLACE for the gathers and scatters, a count of zero for the all-to-alls.
 * MPI_Gather and MPI_Scatter run Open MPI's linear algorithm instead of the chosen one.
 * Self blocks of host memory, or of one contiguous type on both sides, go to Open MPI unchanged.
 * It enables itself only under pml ucxdt, on intracommunicators.
 *
 * Built out of Open MPI's tree as mca_coll_ucxdt.so, beside mca_pml_ucxdt.so.
 */
#ifndef COLL_UCXDT_H
#define COLL_UCXDT_H

#include "ompi_config.h"
#include "ompi/communicator/communicator.h"
#include "ompi/datatype/ompi_datatype.h"
#include "ompi/mca/coll/coll.h"
#include "ompi/request/request.h"

BEGIN_C_DECLS

typedef struct {
    mca_coll_base_component_2_4_0_t super;
    int priority;
} mca_coll_ucxdt_component_t;

OMPI_DECLSPEC extern mca_coll_ucxdt_component_t mca_coll_ucxdt_component;

/* The module of one communicator: the functions it replaces, as Open MPI had chosen them (all
 * but gather and scatter, which run Open MPI's linear algorithm). */
typedef struct {
    mca_coll_base_module_t super;
    mca_coll_base_comm_coll_t below;
    /* The MPI_Allgather below is tuned's fixed rule, which runs Bruck's algorithm on 3 to 31
     * ranks but powers of two: coll_ucxdt_bruck.c runs it without the local rotation. */
    bool allgather_bruck;
} mca_coll_ucxdt_module_t;
OBJ_CLASS_DECLARATION(mca_coll_ucxdt_module_t);

/* coll_ucxdt_self_block.c: the replacements. */
int mca_coll_ucxdt_allgather(const void *sbuf, int scount, ompi_datatype_t *sdtype, void *rbuf, int rcount,
                         ompi_datatype_t *rdtype, ompi_communicator_t *comm, mca_coll_base_module_t *module);
/* The blocks of the other ranks into rbuf (rcount elements of rdt each, rank i's at block i),
 * the rank's own block already at block `rank` (coll_ucxdt_bruck.c). */
int mca_coll_ucxdt_allgather_bruck(void *rbuf, int rcount, ompi_datatype_t *rdtype, ompi_communicator_t *comm);
int mca_coll_ucxdt_allgatherv(const void *sbuf, int scount, ompi_datatype_t *sdtype, void *rbuf, const int *rcounts,
                          const int *disps, ompi_datatype_t *rdtype, ompi_communicator_t *comm,
                          mca_coll_base_module_t *module);
int mca_coll_ucxdt_gather(const void *sbuf, int scount, ompi_datatype_t *sdtype, void *rbuf, int rcount,
                      ompi_datatype_t *rdtype, int root, ompi_communicator_t *comm, mca_coll_base_module_t *module);
int mca_coll_ucxdt_gatherv(const void *sbuf, int scount, ompi_datatype_t *sdtype, void *rbuf, const int *rcounts,
                       const int *disps, ompi_datatype_t *rdtype, int root, ompi_communicator_t *comm,
                       mca_coll_base_module_t *module);
int mca_coll_ucxdt_scatter(const void *sbuf, int scount, ompi_datatype_t *sdtype, void *rbuf, int rcount,
                       ompi_datatype_t *rdtype, int root, ompi_communicator_t *comm, mca_coll_base_module_t *module);
int mca_coll_ucxdt_scatterv(const void *sbuf, const int *scounts, const int *disps, ompi_datatype_t *sdtype, void *rbuf,
                        int rcount, ompi_datatype_t *rdtype, int root, ompi_communicator_t *comm,
                        mca_coll_base_module_t *module);
int mca_coll_ucxdt_alltoall(const void *sbuf, int scount, ompi_datatype_t *sdtype, void *rbuf, int rcount,
                        ompi_datatype_t *rdtype, ompi_communicator_t *comm, mca_coll_base_module_t *module);
int mca_coll_ucxdt_alltoallv(const void *sbuf, const int *scounts, const int *sdisps, ompi_datatype_t *sdtype,
                         void *rbuf, const int *rcounts, const int *rdisps, ompi_datatype_t *rdtype,
                         ompi_communicator_t *comm, mca_coll_base_module_t *module);
int mca_coll_ucxdt_alltoallw(const void *sbuf, const int *scounts, const int *sdisps, ompi_datatype_t *const *sdtypes,
                         void *rbuf, const int *rcounts, const int *rdisps, ompi_datatype_t *const *rdtypes,
                         ompi_communicator_t *comm, mca_coll_base_module_t *module);
int mca_coll_ucxdt_iallgather(const void *sbuf, int scount, ompi_datatype_t *sdtype, void *rbuf, int rcount,
                          ompi_datatype_t *rdtype, ompi_communicator_t *comm, ompi_request_t **req,
                          mca_coll_base_module_t *module);
int mca_coll_ucxdt_iallgatherv(const void *sbuf, int scount, ompi_datatype_t *sdtype, void *rbuf, const int *rcounts,
                           const int *disps, ompi_datatype_t *rdtype, ompi_communicator_t *comm,
                           ompi_request_t **req, mca_coll_base_module_t *module);
int mca_coll_ucxdt_igather(const void *sbuf, int scount, ompi_datatype_t *sdtype, void *rbuf, int rcount,
                       ompi_datatype_t *rdtype, int root, ompi_communicator_t *comm, ompi_request_t **req,
                       mca_coll_base_module_t *module);
int mca_coll_ucxdt_igatherv(const void *sbuf, int scount, ompi_datatype_t *sdtype, void *rbuf, const int *rcounts,
                        const int *disps, ompi_datatype_t *rdtype, int root, ompi_communicator_t *comm,
                        ompi_request_t **req, mca_coll_base_module_t *module);
int mca_coll_ucxdt_iscatter(const void *sbuf, int scount, ompi_datatype_t *sdtype, void *rbuf, int rcount,
                        ompi_datatype_t *rdtype, int root, ompi_communicator_t *comm, ompi_request_t **req,
                        mca_coll_base_module_t *module);
int mca_coll_ucxdt_iscatterv(const void *sbuf, const int *scounts, const int *disps, ompi_datatype_t *sdtype,
                         void *rbuf, int rcount, ompi_datatype_t *rdtype, int root, ompi_communicator_t *comm,
                         ompi_request_t **req, mca_coll_base_module_t *module);
int mca_coll_ucxdt_ialltoall(const void *sbuf, int scount, ompi_datatype_t *sdtype, void *rbuf, int rcount,
                         ompi_datatype_t *rdtype, ompi_communicator_t *comm, ompi_request_t **req,
                         mca_coll_base_module_t *module);
int mca_coll_ucxdt_ialltoallv(const void *sbuf, const int *scounts, const int *sdisps, ompi_datatype_t *sdtype,
                          void *rbuf, const int *rcounts, const int *rdisps, ompi_datatype_t *rdtype,
                          ompi_communicator_t *comm, ompi_request_t **req, mca_coll_base_module_t *module);
int mca_coll_ucxdt_ialltoallw(const void *sbuf, const int *scounts, const int *sdisps, ompi_datatype_t *const *sdtypes,
                          void *rbuf, const int *rcounts, const int *rdisps, ompi_datatype_t *const *rdtypes,
                          ompi_communicator_t *comm, ompi_request_t **req, mca_coll_base_module_t *module);

END_C_DECLS

#endif
