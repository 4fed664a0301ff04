/*
 * common ucxdt: what ucxdt's Open MPI components share (as Open MPI's ompi/mca/common/<name>
 * do): each Open MPI datatype's ucxdt type, imported once and cached, and ucxdt's statuses as
 * MPI error classes. A static library linked into mca_pml_ucxdt.so and mca_osc_ucxdt.so; each
 * component keeps its own cache, since another component may own the datatype's pml_data.
 */
#ifndef COMMON_UCXDT_H
#define COMMON_UCXDT_H

#include "ompi_config.h"
#include "ompi/datatype/ompi_datatype.h"
#include "opal/mca/threads/mutex.h"

#include <ucxdt/ucxdt.h>

BEGIN_C_DECLS

/* A datatype's cached ucxdt type. */
typedef struct mca_common_ucxdt_dtype {
    ucxdt_type_t type;
    bool packed;  /* from Open MPI's description (common_ucxdt_datatype_desc.c): its signature is
                     not MPI's, so its data must go as packed bytes */
} mca_common_ucxdt_dtype_t;

/* One component's cache. The component sets owner, lock, verbose and in_pml_data, then calls
 * mca_common_ucxdt_types_init. */
typedef struct mca_common_ucxdt_types {
    const char *owner;               /* "pml ucxdt": the prefix of its messages */
    opal_recursive_mutex_t *lock;    /* held while importing (readers of pml_data take none) */
    int verbose;
    bool in_pml_data;                /* the PML's: entries are published in ompi_datatype_t::pml_data
                                        for lock-free reads; others look up the attribute */
    int keyval;                      /* the attribute that frees a user type's entry with the type */
    mca_common_ucxdt_dtype_t *predefined[OMPI_DATATYPE_MAX_PREDEFINED];
    mca_common_ucxdt_dtype_t *early[OMPI_DATATYPE_MAX_PREDEFINED];  /* used before MPI_Init completed */
} mca_common_ucxdt_types_t;

int mca_common_ucxdt_types_init(mca_common_ucxdt_types_t *cache);
/* At the component's finalize: every entry freed, the keyval too. */
void mca_common_ucxdt_types_fini(mca_common_ucxdt_types_t *cache);
/* The committed ucxdt type of dt, imported on first use; OMPI_SUCCESS or an MPI error class
 * (MPI_ERR_TYPE, MPI_ERR_UNSUPPORTED_DATAREP). *packed: see mca_common_ucxdt_dtype_t. */
int mca_common_ucxdt_type(mca_common_ucxdt_types_t *cache, ompi_datatype_t *dt, ucxdt_type_t *type,
                          bool *packed);
/* common_ucxdt_datatype_desc.c: a ucxdt type from Open MPI's description of dt. */
ucxdt_status_t mca_common_ucxdt_type_from_desc(const ompi_datatype_t *dt, ucxdt_type_t *type);

/* common_ucxdt_error.c: a ucxdt status as an MPI error class; a status no class describes is
 * printed with owner's name and becomes MPI_ERR_INTERN. */
int mca_common_ucxdt_mpi_error(ucxdt_status_t st, const char *owner);

END_C_DECLS

#endif /* COMMON_UCXDT_H */
