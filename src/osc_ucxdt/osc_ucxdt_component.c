/* The component: its MCA variables, the window query (which flavors, at which priority), and
 * the process's UCP context, UCP worker and ucxdt worker, made at the first window and gone at
 * finalize; progress runs while windows exist. */
#include "osc_ucxdt.h"

#include "ompi/mca/pml/base/base.h"
#include "opal/mca/base/mca_base_var.h"
#include "opal/runtime/opal_progress.h"
#include "opal/util/output.h"

#include <stdlib.h>

mca_osc_ucxdt_state_t ompi_osc_ucxdt;

int mca_osc_ucxdt_progress(void) {
    return ompi_osc_ucxdt.worker ? (int)ucxdt_worker_progress(ompi_osc_ucxdt.worker) : 0;
}

int mca_osc_ucxdt_type(ompi_datatype_t *dt, ucxdt_type_t *type) {
    bool packed = false;
    const int rc = mca_common_ucxdt_type(&ompi_osc_ucxdt.types, dt, type, &packed);
    /* Users name only types with constructors; a type built inside Open MPI has no MPI
     * signature to check a target's against. */
    return rc != OMPI_SUCCESS ? rc : packed ? MPI_ERR_TYPE : OMPI_SUCCESS;
}

static void int_var(const char *name, const char *help, int level, int *storage) {
    (void)mca_base_component_var_register(&mca_osc_ucxdt_component.osc_version, name, help, MCA_BASE_VAR_TYPE_INT,
                                          NULL, 0, 0, level, MCA_BASE_VAR_SCOPE_LOCAL, storage);
}

static int component_register(void) {
    ompi_osc_ucxdt.priority = 80;
    int_var("priority", "Priority under pml ucxdt (above osc ucx's 60, below osc sm's 100, which takes shared windows)",
            OPAL_INFO_LVL_3, &ompi_osc_ucxdt.priority);
    ompi_osc_ucxdt.priority_other = 10;
    int_var("priority_other",
            "Priority under another PML (below osc ucx and osc rdma: used when they cannot serve, or when named "
            "with --mca osc ucxdt)",
            OPAL_INFO_LVL_3, &ompi_osc_ucxdt.priority_other);
    ompi_osc_ucxdt.attach_max = 1024;
    int_var("attach_max",
            "Regions a process may attach to one dynamic window at once (each takes a slot of ~1 KiB in the "
            "window's state region; osc ucx has 48, too few for MPICH's linked-list benchmarks)",
            OPAL_INFO_LVL_5, &ompi_osc_ucxdt.attach_max);
    if (ompi_osc_ucxdt.attach_max < 1) ompi_osc_ucxdt.attach_max = 1;
    ompi_osc_ucxdt.gpu_reduce = 1;
    int_var("gpu_reduce",
            "Accumulates whose origin is device memory reduce on its GPU (1), or on the host with Open MPI's op "
            "(0: the alternative, for comparison)",
            OPAL_INFO_LVL_5, &ompi_osc_ucxdt.gpu_reduce);
    ompi_osc_ucxdt.verbose = 0;
    int_var("verbose", "Report setup steps, failed peers and imported datatypes (0: errors only)", OPAL_INFO_LVL_5,
            &ompi_osc_ucxdt.verbose);
    return OMPI_SUCCESS;
}

static int component_init(bool enable_progress_threads, bool enable_mpi_threads) {
    (void)enable_progress_threads;
    OBJ_CONSTRUCT(&ompi_osc_ucxdt.lock, opal_recursive_mutex_t);
    OBJ_CONSTRUCT(&ompi_osc_ucxdt.peers, opal_hash_table_t);
    ompi_osc_ucxdt.threads = enable_mpi_threads;
    ompi_osc_ucxdt.types.keyval = MPI_KEYVAL_INVALID;
    return opal_hash_table_init(&ompi_osc_ucxdt.peers, 64);
}

/* Local and the same on every rank of comm (base select runs only the winner's select, with no
 * fallback): the flavor and the PML decide. */
static int component_query(ompi_win_t *win, void **base, size_t size, int disp_unit, ompi_communicator_t *comm,
                           opal_info_t *info, int flavor) {
    (void)win, (void)base, (void)size, (void)disp_unit, (void)info;
    if (flavor == MPI_WIN_FLAVOR_SHARED) return -1;
    if (OMPI_COMM_IS_INTER(comm)) return -1;
    const char *pml = mca_pml_base_selected_component.pmlm_version.mca_component_name;
    return strcmp(pml, "ucxdt") == 0 ? ompi_osc_ucxdt.priority : ompi_osc_ucxdt.priority_other;
}

int mca_osc_ucxdt_setup(void) {
    if (ompi_osc_ucxdt.ready) return OMPI_SUCCESS;
    ucp_config_t *config;
    ucs_status_t us = ucp_config_read(NULL, NULL, &config);
    if (us != UCS_OK) return opal_output(0, "osc ucxdt: ucp_config_read: %s", ucs_status_string(us)), OMPI_ERROR;
    ucp_params_t params = {0};
    params.field_mask = UCP_PARAM_FIELD_FEATURES | UCP_PARAM_FIELD_MT_WORKERS_SHARED;
    params.features = UCP_FEATURE_TAG | UCP_FEATURE_AM | UCP_FEATURE_RMA | UCP_FEATURE_AMO64;
    params.mt_workers_shared = ompi_osc_ucxdt.threads;
    us = ucp_init(&params, config, &ompi_osc_ucxdt.context);
    ucp_config_release(config);
    if (us != UCS_OK) return opal_output(0, "osc ucxdt: ucp_init: %s", ucs_status_string(us)), OMPI_ERROR;
    ucp_worker_params_t wp = {0};
    wp.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
    wp.thread_mode = ompi_osc_ucxdt.threads ? UCS_THREAD_MODE_MULTI : UCS_THREAD_MODE_SINGLE;
    if ((us = ucp_worker_create(ompi_osc_ucxdt.context, &wp, &ompi_osc_ucxdt.ucp_worker)) != UCS_OK)
        return opal_output(0, "osc ucxdt: ucp_worker_create: %s", ucs_status_string(us)), OMPI_ERROR;
    ucxdt_worker_params_t dp = {0};
    dp.field_mask = UCXDT_WORKER_PARAM_FIELD_UCP_WORKER | UCXDT_WORKER_PARAM_FIELD_UCP_CONTEXT;
    dp.ucp_worker = ompi_osc_ucxdt.ucp_worker;
    dp.ucp_context = ompi_osc_ucxdt.context;
    if (ucxdt_worker_create(&dp, &ompi_osc_ucxdt.worker) != UCXDT_OK)
        return opal_output(0, "osc ucxdt: ucxdt_worker_create: %s", ucxdt_last_error()), OMPI_ERROR;
    ucp_worker_attr_t attr = {.field_mask = UCP_WORKER_ATTR_FIELD_ADDRESS};
    if ((us = ucp_worker_query(ompi_osc_ucxdt.ucp_worker, &attr)) != UCS_OK)
        return opal_output(0, "osc ucxdt: ucp_worker_query: %s", ucs_status_string(us)), OMPI_ERROR;
    ompi_osc_ucxdt.address = attr.address;
    ompi_osc_ucxdt.address_length = attr.address_length;
    ompi_osc_ucxdt.types.owner = "osc ucxdt";
    ompi_osc_ucxdt.types.lock = &ompi_osc_ucxdt.lock;
    ompi_osc_ucxdt.types.verbose = ompi_osc_ucxdt.verbose;
    ompi_osc_ucxdt.types.in_pml_data = false;
    const int rc = mca_common_ucxdt_types_init(&ompi_osc_ucxdt.types);
    if (rc != OMPI_SUCCESS) return rc;
    mca_osc_ucxdt_memtype_init();
    ompi_osc_ucxdt.ready = true;
    return OMPI_SUCCESS;
}

static int component_finalize(void) {
    if (ompi_osc_ucxdt.ready) mca_common_ucxdt_types_fini(&ompi_osc_ucxdt.types);
    mca_osc_ucxdt_memtype_fini();
    for (int d = 0; d < ompi_osc_ucxdt.gpu_count; ++d) {
        if (ompi_osc_ucxdt.gpus[d].stage) (void)cudaFree(ompi_osc_ucxdt.gpus[d].stage);
        if (ompi_osc_ucxdt.gpus[d].stream) (void)cudaStreamDestroy(ompi_osc_ucxdt.gpus[d].stream);
    }
    free(ompi_osc_ucxdt.gpus), free(ompi_osc_ucxdt.host_stage);
    ompi_osc_ucxdt.host_stage = NULL, ompi_osc_ucxdt.host_stage_bytes = 0;
    ompi_osc_ucxdt.gpus = NULL, ompi_osc_ucxdt.gpu_count = 0;
    mca_osc_ucxdt_peers_close();
    if (ompi_osc_ucxdt.worker) ucxdt_worker_destroy(ompi_osc_ucxdt.worker), ompi_osc_ucxdt.worker = NULL;
    if (ompi_osc_ucxdt.address) ucp_worker_release_address(ompi_osc_ucxdt.ucp_worker, ompi_osc_ucxdt.address), ompi_osc_ucxdt.address = NULL;
    if (ompi_osc_ucxdt.ucp_worker) ucp_worker_destroy(ompi_osc_ucxdt.ucp_worker), ompi_osc_ucxdt.ucp_worker = NULL;
    if (ompi_osc_ucxdt.context) ucp_cleanup(ompi_osc_ucxdt.context), ompi_osc_ucxdt.context = NULL;
    ompi_osc_ucxdt.ready = false;
    OBJ_DESTRUCT(&ompi_osc_ucxdt.peers);
    OBJ_DESTRUCT(&ompi_osc_ucxdt.lock);
    return OMPI_SUCCESS;
}

ompi_osc_base_component_t mca_osc_ucxdt_component = {
    .osc_version = {
        OMPI_OSC_BASE_VERSION_3_0_0,
        .mca_component_name = "ucxdt",
        MCA_BASE_MAKE_VERSION(component, 0, 1, 0),
        .mca_register_component_params = component_register,
    },
    .osc_data = {MCA_BASE_METADATA_PARAM_NONE},
    .osc_init = component_init,
    .osc_query = component_query,
    .osc_select = mca_osc_ucxdt_window_select,
    .osc_finalize = component_finalize,
};
