/* Buffered sends (MPI_Bsend and its persistent form, MPI-4.1 §3.6). */
#include "pml_ucxdt.h"

#include "ompi/mca/pml/base/pml_base_bsend.h"
#include "opal/datatype/opal_convertor.h"

/* A buffered send (MPI_Bsend, MPI-4.1 §3.6) completes locally: its data is packed into space
 * of the attached buffer (the packed size, which MPI_Pack_size reserves) by Open MPI's
 * convertor, which reads host and device memory alike, and sent from there as packed data
 * (MPI_PACKED: any receive of the type takes it); the space returns when the send ends. */
int mca_pml_ucxdt_bsend(const void *buf, size_t count, ompi_datatype_t *dt, int dst, int tag, ompi_communicator_t *comm) {
    size_t size = 0;
    ompi_datatype_type_size(dt, &size);
    const size_t bytes = size * count;
    void *space = mca_pml_base_bsend_request_alloc_buf(bytes ? bytes : 1);
    if (!space) return MPI_ERR_BUFFER;
    opal_convertor_t conv;
    OBJ_CONSTRUCT(&conv, opal_convertor_t);
    int rc = opal_convertor_copy_and_prepare_for_send(ompi_mpi_local_convertor, &dt->super, count, buf, 0, &conv);
    struct iovec iov = {.iov_base = space, .iov_len = bytes};
    uint32_t n = 1;
    size_t packed = bytes;
    if (rc == OPAL_SUCCESS && bytes > 0 && opal_convertor_pack(&conv, &iov, &n, &packed) < 0) rc = OMPI_ERROR;
    OBJ_DESTRUCT(&conv);
    mca_pml_ucxdt_request_t *r = rc == OPAL_SUCCESS
        ? mca_pml_ucxdt_request_make(PML_UCXDT_SEND, space, bytes, MPI_PACKED, dst, tag, MCA_PML_BASE_SEND_STANDARD, comm, false)
        : NULL;
    if (!r) {
        mca_pml_base_bsend_request_free(space);
        return rc == OPAL_SUCCESS ? OMPI_ERR_OUT_OF_RESOURCE : MPI_ERR_INTERN;
    }
    /* Nobody waits for it: it is released, and its space returned, when it ends (request_done). */
    r->bsend_space = space;
    r->free_called = true;
    if ((rc = mca_pml_ucxdt_request_post(r, NULL)) != OMPI_SUCCESS) {
        mca_pml_base_bsend_request_free(space);
        mca_pml_ucxdt_request_release(r);
    }
    return rc;
}
