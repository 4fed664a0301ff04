/* Each Open MPI datatype's ucxdt type, imported once (ucxdt_type_from_mpi, which decodes it
 * with MPI_Type_get_envelope/get_contents) and kept in the datatype's pml_data. A user type's
 * copy is freed with it: an attribute whose delete callback runs when Open MPI destroys the
 * type (MPI-4.1 §7.7.4); a predefined type's, at finalize. */
#include "pml_ucxdt.h"

#include "ompi/attribute/attribute.h"
#include <ucxdt/mpi.h>

static int type_deleted(MPI_Datatype dt, int keyval, void *attr, void *extra) {
    (void)keyval, (void)extra;
    ucxdt_type_t t = attr;
    ucxdt_type_free(&t);
    dt->pml_data = 0;
    return MPI_SUCCESS;
}

int pml_ucxdt_types_init(void) {
    ompi_attribute_fn_ptr_union_t copy, del;
    copy.attr_datatype_copy_fn = MPI_TYPE_NULL_COPY_FN;
    del.attr_datatype_delete_fn = type_deleted;
    return ompi_attr_create_keyval(TYPE_ATTR, copy, del, &pml_ucxdt.type_keyval, NULL, 0, NULL);
}

/* At finalize. This component is a DSO that Open MPI unloads afterwards, so no user type may
 * keep the attribute whose delete callback lives here: each type still alive (every datatype
 * has a Fortran index) drops its copy now, and predefined types, which outlive the PML, forget
 * theirs. */
void pml_ucxdt_types_fini(void) {
    const int n = opal_pointer_array_get_size(&ompi_datatype_f_to_c_table);
    for (int i = 0; i < n; ++i) {
        ompi_datatype_t *dt = opal_pointer_array_get_item(&ompi_datatype_f_to_c_table, i);
        if (!dt || !dt->pml_data) continue;
        if (ompi_datatype_is_predefined(dt)) dt->pml_data = 0;
        else if (pml_ucxdt.type_keyval != MPI_KEYVAL_INVALID)
            (void)ompi_attr_delete(TYPE_ATTR, dt, dt->d_keyhash, pml_ucxdt.type_keyval, false);
    }
    if (pml_ucxdt.type_keyval != MPI_KEYVAL_INVALID) ompi_attr_free_keyval(TYPE_ATTR, &pml_ucxdt.type_keyval, false);
    for (int i = 0; i < OMPI_DATATYPE_MAX_PREDEFINED; ++i)
        if (pml_ucxdt.predefined[i]) ucxdt_type_free(&pml_ucxdt.predefined[i]);
}

int pml_ucxdt_type(ompi_datatype_t *dt, ucxdt_type_t *type) {
    if (dt->pml_data) {
        *type = (ucxdt_type_t)(uintptr_t)dt->pml_data;
        return OMPI_SUCCESS;
    }
    int rc = OMPI_SUCCESS;
    OPAL_THREAD_LOCK(&pml_ucxdt.lock);
    if (!dt->pml_data) {
        ucxdt_type_t t = UCXDT_TYPE_NULL;
        const ucxdt_status_t st = ucxdt_type_from_mpi(dt, &t);
        if (st != UCXDT_OK) {
            opal_output(0, "pml ucxdt: cannot import datatype '%s': %s", dt->name, ucxdt_last_error());
            rc = st == UCXDT_ERR_UNSUPPORTED ? MPI_ERR_UNSUPPORTED_DATAREP : MPI_ERR_TYPE;
        } else if (ompi_datatype_is_predefined(dt) && dt->id >= 0 && dt->id < OMPI_DATATYPE_MAX_PREDEFINED) {
            pml_ucxdt.predefined[dt->id] = t;
            dt->pml_data = (uint64_t)(uintptr_t)t;
        } else if ((rc = ompi_attr_set_c(TYPE_ATTR, dt, &dt->d_keyhash, pml_ucxdt.type_keyval, t, false)) != OMPI_SUCCESS) {
            ucxdt_type_free(&t);
        } else {
            dt->pml_data = (uint64_t)(uintptr_t)t;
        }
    }
    OPAL_THREAD_UNLOCK(&pml_ucxdt.lock);
    if (rc == OMPI_SUCCESS) *type = (ucxdt_type_t)(uintptr_t)dt->pml_data;
    return rc;
}
