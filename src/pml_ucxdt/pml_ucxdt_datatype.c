/* Each Open MPI datatype's ucxdt type, imported once and kept behind the datatype's pml_data:
 * by ucxdt_type_from_mpi (MPI_Type_get_envelope/get_contents) for predefined types and those
 * the application built, and from Open MPI's own description for the types it builds inside
 * itself, which have no constructor arguments (datatype_desc.c). A user type's copy is freed
 * with it: an attribute whose delete callback runs when Open MPI destroys the type (MPI-4.1
 * §7.7.4); a predefined type's, at finalize. */
#include "pml_ucxdt.h"

#include "ompi/attribute/attribute.h"
#include "ompi/runtime/mpiruntime.h"
#include <ucxdt/mpi.h>

/* What pml_data points to. */
struct mca_pml_ucxdt_dtype {
    ucxdt_type_t type;
    bool packed;  /* from the description: its messages go as packed data */
};

static void entry_free(struct mca_pml_ucxdt_dtype *e) {
    ucxdt_type_free(&e->type);
    free(e);
}

static int type_deleted(MPI_Datatype dt, int keyval, void *attr, void *extra) {
    (void)keyval, (void)extra;
    entry_free(attr);
    dt->pml_data = 0;
    return MPI_SUCCESS;
}

int mca_pml_ucxdt_types_init(void) {
    ompi_attribute_fn_ptr_union_t copy, del;
    copy.attr_datatype_copy_fn = MPI_TYPE_NULL_COPY_FN;
    del.attr_datatype_delete_fn = type_deleted;
    return ompi_attr_create_keyval(TYPE_ATTR, copy, del, &ompi_pml_ucxdt.type_keyval, NULL, 0, NULL);
}

/* At finalize. This component is a DSO that Open MPI unloads afterwards, so no type should
 * keep the attribute whose delete callback lives here: each type still alive that Open MPI can
 * list (those with a Fortran index: every type the application built) drops its copy now, and
 * predefined types, which outlive the PML, forget theirs. Open MPI's internal types are freed
 * by the collectives that made them, before this. */
void mca_pml_ucxdt_types_fini(void) {
    const int n = opal_pointer_array_get_size(&ompi_datatype_f_to_c_table);
    for (int i = 0; i < n; ++i) {
        ompi_datatype_t *dt = opal_pointer_array_get_item(&ompi_datatype_f_to_c_table, i);
        if (!dt || !dt->pml_data) continue;
        if (ompi_datatype_is_predefined(dt)) dt->pml_data = 0;
        else if (ompi_pml_ucxdt.type_keyval != MPI_KEYVAL_INVALID)
            (void)ompi_attr_delete(TYPE_ATTR, dt, dt->d_keyhash, ompi_pml_ucxdt.type_keyval, false);
    }
    if (ompi_pml_ucxdt.type_keyval != MPI_KEYVAL_INVALID) ompi_attr_free_keyval(TYPE_ATTR, &ompi_pml_ucxdt.type_keyval, false);
    for (int i = 0; i < OMPI_DATATYPE_MAX_PREDEFINED; ++i) {
        if (ompi_pml_ucxdt.predefined[i]) entry_free(ompi_pml_ucxdt.predefined[i]), ompi_pml_ucxdt.predefined[i] = NULL;
        if (ompi_pml_ucxdt.early[i]) entry_free(ompi_pml_ucxdt.early[i]), ompi_pml_ucxdt.early[i] = NULL;
    }
}

/* A predefined type used before MPI_Init has completed, which MPI_Type_get_envelope cannot
 * decode yet: a spawned process's MPI_Init talks to its parents (MPI-4.1 §11.8.2). It is
 * imported from its description, as packed data, and kept apart (ompi_pml_ucxdt.early), so that
 * once MPI is initialized the type is imported from its constructor as usual. */
static bool mpi_initialized(void) { return ompi_mpi_state >= OMPI_MPI_STATE_INIT_COMPLETED; }

/* Imports dt and caches it, under the lock; *out: its entry. */
static int import(ompi_datatype_t *dt, const struct mca_pml_ucxdt_dtype **out) {
    const bool predefined = ompi_datatype_is_predefined(dt);
    const bool cached_id = predefined && dt->id >= 0 && dt->id < OMPI_DATATYPE_MAX_PREDEFINED;
    const bool early = cached_id && !mpi_initialized();
    if (early && ompi_pml_ucxdt.early[dt->id]) {
        *out = ompi_pml_ucxdt.early[dt->id];
        return OMPI_SUCCESS;
    }
    struct mca_pml_ucxdt_dtype *e = calloc(1, sizeof *e);
    if (!e) return OMPI_ERR_OUT_OF_RESOURCE;
    e->packed = early || (!predefined && dt->args == NULL);
    const ucxdt_status_t st = e->packed ? mca_pml_ucxdt_type_from_desc(dt, &e->type) : ucxdt_type_from_mpi(dt, &e->type);
    if (st != UCXDT_OK) {
        opal_output(0, "pml ucxdt: cannot import datatype '%s': %s", dt->name, ucxdt_last_error());
        free(e);
        return st == UCXDT_ERR_UNSUPPORTED ? MPI_ERR_UNSUPPORTED_DATAREP : MPI_ERR_TYPE;
    }
    if (ompi_pml_ucxdt.verbose > 1)
        opal_output(0, "pml ucxdt: datatype '%s' imported from its %s", dt->name,
                    e->packed ? "description" : "constructor");
    *out = e;
    if (early) {
        ompi_pml_ucxdt.early[dt->id] = e;
        return OMPI_SUCCESS;
    }
    if (cached_id) {
        ompi_pml_ucxdt.predefined[dt->id] = e;
    } else {
        const int rc = ompi_attr_set_c(TYPE_ATTR, dt, &dt->d_keyhash, ompi_pml_ucxdt.type_keyval, e, false);
        if (rc != OMPI_SUCCESS) {
            entry_free(e);
            return rc;
        }
    }
    /* Published whole: mca_pml_ucxdt_type reads it without the lock. */
    __atomic_store_n(&dt->pml_data, (uint64_t)(uintptr_t)e, __ATOMIC_RELEASE);
    return OMPI_SUCCESS;
}

int mca_pml_ucxdt_type(ompi_datatype_t *dt, ucxdt_type_t *type, bool *packed) {
    const struct mca_pml_ucxdt_dtype *e =
        (const struct mca_pml_ucxdt_dtype *)(uintptr_t)__atomic_load_n(&dt->pml_data, __ATOMIC_ACQUIRE);
    if (!e) {
        int rc = OMPI_SUCCESS;
        OPAL_THREAD_LOCK(&ompi_pml_ucxdt.lock);
        if (!(e = (const struct mca_pml_ucxdt_dtype *)(uintptr_t)dt->pml_data)) rc = import(dt, &e);
        OPAL_THREAD_UNLOCK(&ompi_pml_ucxdt.lock);
        if (rc != OMPI_SUCCESS) return rc;
    }
    *type = e->type;
    *packed = e->packed;
    return OMPI_SUCCESS;
}
