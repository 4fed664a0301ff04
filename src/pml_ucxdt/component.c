/* The component: its MCA registration, and the process's UCP context, UCP worker and ucxdt
 * worker, made when Open MPI selects the PML (init) and gone at finalize. The worker's address
 * goes into the modex in init, before Open MPI's fence, where peers.c reads it. */
#include "pml_ucxdt.h"

#include "opal/mca/base/mca_base_var.h"
#include "opal/mca/pmix/pmix-internal.h"
#include "opal/runtime/opal_progress.h"
#include "opal/util/output.h"
#include "ompi/proc/proc.h"

#include <stdlib.h>

pml_ucxdt_state_t pml_ucxdt;

int pml_ucxdt_progress(void) { return (int)ucxdt_worker_progress(pml_ucxdt.worker); }

static int component_register(void) {
    pml_ucxdt.priority = 5;  /* below ob1 and ucx: used only when asked for (--mca pml ucxdt) */
    (void)mca_base_component_var_register(&mca_pml_ucxdt_component.pmlm_version, "priority",
                                          "Priority of the ucxdt PML (it runs only when named in the pml MCA "
                                          "variable, whatever its priority)",
                                          MCA_BASE_VAR_TYPE_INT, NULL, 0, 0, OPAL_INFO_LVL_3,
                                          MCA_BASE_VAR_SCOPE_LOCAL, &pml_ucxdt.priority);
    pml_ucxdt.verbose = 0;
    (void)mca_base_component_var_register(&mca_pml_ucxdt_component.pmlm_version, "verbose",
                                          "Report peer failures and setup steps (0: errors only)",
                                          MCA_BASE_VAR_TYPE_INT, NULL, 0, 0, OPAL_INFO_LVL_5,
                                          MCA_BASE_VAR_SCOPE_LOCAL, &pml_ucxdt.verbose);
    pml_ucxdt.peer_failure = true;
    (void)mca_base_component_var_register(
        &mca_pml_ucxdt_component.pmlm_version, "peer_failure",
        "Detect failed peers (UCP_ERR_HANDLING_MODE_PEER): their operations end with MPI_ERR_PROC_FAILED "
        "instead of waiting for the runtime. UCX then leaves out transports that cannot report a failure, "
        "CMA's zero-copy among them, so large host messages between processes of a node move through "
        "shared-memory copies (false: as pml ucx, a failed peer is left to the runtime)",
        MCA_BASE_VAR_TYPE_BOOL, NULL, 0, 0, OPAL_INFO_LVL_4, MCA_BASE_VAR_SCOPE_LOCAL, &pml_ucxdt.peer_failure);
    return OMPI_SUCCESS;
}

static void teardown(void) {
    pml_ucxdt_types_fini();
    pml_ucxdt_peers_close();
    free(pml_ucxdt.peers), pml_ucxdt.peers = NULL, pml_ucxdt.npeers = 0;
    if (pml_ucxdt.worker) ucxdt_worker_destroy(pml_ucxdt.worker), pml_ucxdt.worker = NULL;
    if (pml_ucxdt.address) ucp_worker_release_address(pml_ucxdt.ucp_worker, pml_ucxdt.address), pml_ucxdt.address = NULL;
    if (pml_ucxdt.ucp_worker) ucp_worker_destroy(pml_ucxdt.ucp_worker), pml_ucxdt.ucp_worker = NULL;
    if (pml_ucxdt.context) ucp_cleanup(pml_ucxdt.context), pml_ucxdt.context = NULL;
    pml_ucxdt_requests_fini();
    OBJ_DESTRUCT(&pml_ucxdt.lock);
}

static int setup(bool threads) {
    ucp_config_t *cfg = NULL;
    ucs_status_t us = ucp_config_read(NULL, NULL, &cfg);
    if (us != UCS_OK) return opal_output(0, "pml ucxdt: ucp_config_read: %s", ucs_status_string(us)), OMPI_ERROR;
    /* Peers' failures are reported (UCP_ERR_HANDLING_MODE_PEER); without this, shared memory
     * drops out of such endpoints and processes of one node talk over TCP. */
    if (pml_ucxdt.peer_failure && !getenv("UCX_MM_ERROR_HANDLING"))
        (void)ucp_config_modify(cfg, "MM_ERROR_HANDLING", "y");
    ucp_params_t params = {0};
    params.field_mask = UCP_PARAM_FIELD_FEATURES | UCP_PARAM_FIELD_MT_WORKERS_SHARED;
    params.features = UCP_FEATURE_TAG | UCP_FEATURE_AM | UCP_FEATURE_RMA;
    params.mt_workers_shared = threads;
    us = ucp_init(&params, cfg, &pml_ucxdt.context);
    ucp_config_release(cfg);
    if (us != UCS_OK) return opal_output(0, "pml ucxdt: ucp_init: %s", ucs_status_string(us)), OMPI_ERROR;

    ucp_worker_params_t wp = {0};
    wp.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
    wp.thread_mode = threads ? UCS_THREAD_MODE_MULTI : UCS_THREAD_MODE_SINGLE;
    if ((us = ucp_worker_create(pml_ucxdt.context, &wp, &pml_ucxdt.ucp_worker)) != UCS_OK)
        return opal_output(0, "pml ucxdt: ucp_worker_create: %s", ucs_status_string(us)), OMPI_ERROR;
    if (threads) {  /* MPI_THREAD_MULTIPLE needs the worker's locks (ucxdt takes its own over them) */
        ucp_worker_attr_t attr = {.field_mask = UCP_WORKER_ATTR_FIELD_THREAD_MODE};
        if (ucp_worker_query(pml_ucxdt.ucp_worker, &attr) != UCS_OK || attr.thread_mode != UCS_THREAD_MODE_MULTI)
            return opal_output(0, "pml ucxdt: this UCX gives no thread-safe worker (MPI_THREAD_MULTIPLE)"), OMPI_ERROR;
    }
    ucxdt_worker_params_t dp = {0};
    dp.field_mask = UCXDT_WORKER_PARAM_FIELD_UCP_WORKER | UCXDT_WORKER_PARAM_FIELD_UCP_CONTEXT |
                    UCXDT_WORKER_PARAM_FIELD_PLAIN_TAG_BIT;
    dp.ucp_worker = pml_ucxdt.ucp_worker;
    dp.plain_tag_bit = PML_UCXDT_PLAIN_BIT;  /* contiguous host messages as pml ucx sends them */
    dp.ucp_context = pml_ucxdt.context;
    if (ucxdt_worker_create(&dp, &pml_ucxdt.worker) != UCXDT_OK)
        return opal_output(0, "pml ucxdt: ucxdt_worker_create: %s", ucxdt_last_error()), OMPI_ERROR;

    ucp_worker_attr_t attr = {.field_mask = UCP_WORKER_ATTR_FIELD_ADDRESS};
    if ((us = ucp_worker_query(pml_ucxdt.ucp_worker, &attr)) != UCS_OK)
        return opal_output(0, "pml ucxdt: ucp_worker_query: %s", ucs_status_string(us)), OMPI_ERROR;
    pml_ucxdt.address = attr.address;
    pml_ucxdt.address_length = attr.address_length;
    int rc;
    OPAL_MODEX_SEND(rc, PMIX_GLOBAL, &mca_pml_ucxdt_component.pmlm_version, pml_ucxdt.address,
                    pml_ucxdt.address_length);
    if (rc != OPAL_SUCCESS) return opal_output(0, "pml ucxdt: cannot publish the worker address"), OMPI_ERROR;

    pml_ucxdt.npeers = ompi_proc_world_size();
    pml_ucxdt.peers = calloc(pml_ucxdt.npeers, sizeof *pml_ucxdt.peers);
    if (!pml_ucxdt.peers) return OMPI_ERR_OUT_OF_RESOURCE;
    return pml_ucxdt_types_init();
}

static mca_pml_base_module_t *component_init(int *priority, bool progress_threads, bool mpi_threads) {
    (void)progress_threads;
    OBJ_CONSTRUCT(&pml_ucxdt.lock, opal_recursive_mutex_t);
    pml_ucxdt.type_keyval = MPI_KEYVAL_INVALID;
    if (pml_ucxdt_requests_init() != OPAL_SUCCESS || setup(mpi_threads) != OMPI_SUCCESS) {
        teardown();
        return NULL;
    }
    opal_progress_register(pml_ucxdt_progress);
    *priority = pml_ucxdt.priority;
    return &pml_ucxdt_module;
}

static int component_finalize(void) {
    opal_progress_unregister(pml_ucxdt_progress);
    teardown();
    return OMPI_SUCCESS;
}

mca_pml_base_component_2_1_0_t mca_pml_ucxdt_component = {
    .pmlm_version = {
        MCA_PML_BASE_VERSION_2_1_0,
        .mca_component_name = "ucxdt",
        MCA_BASE_MAKE_VERSION(component, 0, 1, 0),
        .mca_open_component = NULL,
        .mca_close_component = NULL,
        .mca_register_component_params = component_register,
    },
    .pmlm_data = {.param_field = MCA_BASE_METADATA_PARAM_NONE},
    .pmlm_init = component_init,
    .pmlm_finalize = component_finalize,
};
