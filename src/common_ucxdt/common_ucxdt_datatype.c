/* Each Open MPI datatype's ucxdt type, imported once per component and cached: by
 * ucxdt_type_from_mpi (MPI_Type_get_envelope/get_contents) for predefined types and those the
 * application built, and from Open MPI's own description for the types it builds inside
 * itself, which have no constructor arguments (common_ucxdt_datatype_desc.c). A user type's
 * entry is freed with it: an attribute whose delete callback runs when Open MPI destroys the
 * type (MPI-4.1 §7.7.4); a predefined type's, at finalize. The PML also publishes each entry in
 * the datatype's pml_data, which it reads without a lock on every message. */
#include "common_ucxdt.h"

#include "ompi/attribute/attribute.h"
#include "opal/class/opal_pointer_array.h"
#include "ompi/runtime/mpiruntime.h"
#include "opal/util/output.h"
#include <ucxdt/mpi.h>

static void entry_free(mca_common_ucxdt_dtype_t *e) {
    ucxdt_type_free(&e->type);
    free(e);
}

/* extra: the cache whose keyval this is. */
static int type_deleted(MPI_Datatype dt, int keyval, void *attr, void *extra) {
    const mca_common_ucxdt_types_t *cache = extra;
    (void)keyval;
    entry_free(attr);
    if (cache->in_pml_data) dt->pml_data = 0;
    return MPI_SUCCESS;
}

int mca_common_ucxdt_types_init(mca_common_ucxdt_types_t *cache) {
    ompi_attribute_fn_ptr_union_t copy, del;
    copy.attr_datatype_copy_fn = MPI_TYPE_NULL_COPY_FN;
    del.attr_datatype_delete_fn = type_deleted;
    cache->keyval = MPI_KEYVAL_INVALID;
    return ompi_attr_create_keyval(TYPE_ATTR, copy, del, &cache->keyval, cache, 0, NULL);
}

/* The entry of a user type, or NULL. */
static mca_common_ucxdt_dtype_t *attribute(const mca_common_ucxdt_types_t *cache, ompi_datatype_t *dt) {
    void *e = NULL;
    int found = 0;
    if (cache->keyval == MPI_KEYVAL_INVALID || !dt->d_keyhash) return NULL;
    if (ompi_attr_get_c(dt->d_keyhash, cache->keyval, &e, &found) != OMPI_SUCCESS || !found) return NULL;
    return e;
}

/* At finalize. The component is a DSO that Open MPI unloads afterwards, so no type should keep
 * the attribute whose delete callback lives here: each type still alive that Open MPI can list
 * (those with a Fortran index: every type the application built) drops its entry now, and
 * predefined types, which outlive the component, forget theirs. Open MPI's internal types are
 * freed by the collectives that made them, before this. */
void mca_common_ucxdt_types_fini(mca_common_ucxdt_types_t *cache) {
    const int n = opal_pointer_array_get_size(&ompi_datatype_f_to_c_table);
    for (int i = 0; i < n && cache->keyval != MPI_KEYVAL_INVALID; ++i) {
        ompi_datatype_t *dt = opal_pointer_array_get_item(&ompi_datatype_f_to_c_table, i);
        if (!dt) continue;
        if (ompi_datatype_is_predefined(dt)) {
            if (cache->in_pml_data) dt->pml_data = 0;
        } else if (attribute(cache, dt)) {
            (void)ompi_attr_delete(TYPE_ATTR, dt, dt->d_keyhash, cache->keyval, false);
        }
    }
    if (cache->keyval != MPI_KEYVAL_INVALID) ompi_attr_free_keyval(TYPE_ATTR, &cache->keyval, false);
    for (int i = 0; i < OMPI_DATATYPE_MAX_PREDEFINED; ++i) {
        if (cache->predefined[i]) entry_free(cache->predefined[i]), cache->predefined[i] = NULL;
        if (cache->early[i]) entry_free(cache->early[i]), cache->early[i] = NULL;
    }
}

/* A predefined type used before MPI_Init has completed, which MPI_Type_get_envelope cannot
 * decode yet: a spawned process's MPI_Init talks to its parents (MPI-4.1 §11.8.2). It is
 * imported from its description, as packed data, and kept apart (early), so that once MPI is
 * initialized the type is imported from its constructor as usual. */
static bool mpi_initialized(void) { return ompi_mpi_state >= OMPI_MPI_STATE_INIT_COMPLETED; }

/* The cached entry of dt, or NULL: lock-free where it is published in pml_data. */
static const mca_common_ucxdt_dtype_t *cached(const mca_common_ucxdt_types_t *cache, ompi_datatype_t *dt) {
    if (cache->in_pml_data)
        return (const mca_common_ucxdt_dtype_t *)(uintptr_t)__atomic_load_n(&dt->pml_data, __ATOMIC_ACQUIRE);
    if (ompi_datatype_is_predefined(dt))
        return dt->id >= 0 && dt->id < OMPI_DATATYPE_MAX_PREDEFINED ? cache->predefined[dt->id] : NULL;
    return attribute(cache, dt);
}

/* Imports dt and caches it, under the lock; *out: its entry. */
static int import(mca_common_ucxdt_types_t *cache, ompi_datatype_t *dt, const mca_common_ucxdt_dtype_t **out) {
    const bool predefined = ompi_datatype_is_predefined(dt);
    const bool cached_id = predefined && dt->id >= 0 && dt->id < OMPI_DATATYPE_MAX_PREDEFINED;
    const bool early = cached_id && !mpi_initialized();
    if (early && cache->early[dt->id]) {
        *out = cache->early[dt->id];
        return OMPI_SUCCESS;
    }
    mca_common_ucxdt_dtype_t *e = calloc(1, sizeof *e);
    if (!e) return OMPI_ERR_OUT_OF_RESOURCE;
    e->packed = early || (!predefined && dt->args == NULL);
    const ucxdt_status_t st = e->packed ? mca_common_ucxdt_type_from_desc(dt, &e->type) : ucxdt_type_from_mpi(dt, &e->type);
    if (st != UCXDT_OK) {
        opal_output(0, "%s: cannot import datatype '%s': %s", cache->owner, dt->name, ucxdt_last_error());
        free(e);
        return st == UCXDT_ERR_UNSUPPORTED ? MPI_ERR_UNSUPPORTED_DATAREP : MPI_ERR_TYPE;
    }
    if (cache->verbose > 1)
        opal_output(0, "%s: datatype '%s' imported from its %s", cache->owner, dt->name,
                    e->packed ? "description" : "constructor");
    *out = e;
    if (early) {
        cache->early[dt->id] = e;
        return OMPI_SUCCESS;
    }
    if (cached_id) {
        __atomic_store_n(&cache->predefined[dt->id], e, __ATOMIC_RELEASE);
    } else {
        const int rc = ompi_attr_set_c(TYPE_ATTR, dt, &dt->d_keyhash, cache->keyval, e, false);
        if (rc != OMPI_SUCCESS) {
            entry_free(e);
            return rc;
        }
    }
    /* Published whole: the PML reads it without the lock. */
    if (cache->in_pml_data) __atomic_store_n(&dt->pml_data, (uint64_t)(uintptr_t)e, __ATOMIC_RELEASE);
    return OMPI_SUCCESS;
}

int mca_common_ucxdt_type(mca_common_ucxdt_types_t *cache, ompi_datatype_t *dt, ucxdt_type_t *type,
                          bool *packed) {
    const mca_common_ucxdt_dtype_t *e = cache->in_pml_data ? cached(cache, dt) : NULL;
    if (!e) {
        int rc = OMPI_SUCCESS;
        OPAL_THREAD_LOCK(cache->lock);
        if (!(e = cached(cache, dt))) rc = import(cache, dt, &e);
        OPAL_THREAD_UNLOCK(cache->lock);
        if (rc != OMPI_SUCCESS) return rc;
    }
    *type = e->type;
    *packed = e->packed;
    return OMPI_SUCCESS;
}
