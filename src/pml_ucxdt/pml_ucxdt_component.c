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

mca_pml_ucxdt_state_t ompi_pml_ucxdt;

int mca_pml_ucxdt_progress(void) {
    int n = (int)ucxdt_worker_progress(ompi_pml_ucxdt.worker);
    if (__atomic_load_n(&ompi_pml_ucxdt.peer_failed, __ATOMIC_RELAXED)) n += mca_pml_ucxdt_peers_fail_receives();
    return ompi_pml_ucxdt.threads ? n + mca_pml_ucxdt_requests_finish_queued() : n;
}

static int component_register(void) {
    ompi_pml_ucxdt.priority = 5;  /* below ob1 and ucx: used only when asked for (--mca pml ucxdt) */
    (void)mca_base_component_var_register(&mca_pml_ucxdt_component.pmlm_version, "priority",
                                          "Priority of the ucxdt PML (it runs only when named in the pml MCA "
                                          "variable, whatever its priority)",
                                          MCA_BASE_VAR_TYPE_INT, NULL, 0, 0, OPAL_INFO_LVL_3,
                                          MCA_BASE_VAR_SCOPE_LOCAL, &ompi_pml_ucxdt.priority);
    ompi_pml_ucxdt.verbose = 0;
    (void)mca_base_component_var_register(&mca_pml_ucxdt_component.pmlm_version, "verbose",
                                          "Report peer failures and setup steps (0: errors only)",
                                          MCA_BASE_VAR_TYPE_INT, NULL, 0, 0, OPAL_INFO_LVL_5,
                                          MCA_BASE_VAR_SCOPE_LOCAL, &ompi_pml_ucxdt.verbose);
    ompi_pml_ucxdt.peer_failure = true;
    (void)mca_base_component_var_register(
        &mca_pml_ucxdt_component.pmlm_version, "peer_failure",
        "Detect failed peers (UCP_ERR_HANDLING_MODE_PEER): their operations end with MPI_ERR_PROC_FAILED "
        "instead of waiting for the runtime. UCX then leaves out transports that cannot report a failure, "
        "CMA's zero-copy among them, so large host messages between processes of a node move through "
        "shared-memory copies (false: as pml ucx, a failed peer is left to the runtime)",
        MCA_BASE_VAR_TYPE_BOOL, NULL, 0, 0, OPAL_INFO_LVL_4, MCA_BASE_VAR_SCOPE_LOCAL, &ompi_pml_ucxdt.peer_failure);
    ompi_pml_ucxdt.check_signature = false;
    (void)mca_base_component_var_register(
        &mca_pml_ucxdt_component.pmlm_version, "check_signature",
        "Fail a receive whose message has another type signature (MPI-4.1 §3.3.1), on both sides, with "
        "MPI_ERR_TYPE: a debugging aid. Every message then carries its signature, contiguous host ones "
        "included, which then go through ucxdt's protocol instead of as UCP's own messages (false: as pml ucx, "
        "a receive takes any message whose bytes fit)",
        MCA_BASE_VAR_TYPE_BOOL, NULL, 0, 0, OPAL_INFO_LVL_5, MCA_BASE_VAR_SCOPE_LOCAL, &ompi_pml_ucxdt.check_signature);
    return OMPI_SUCCESS;
}

static void teardown(void) {
    mca_common_ucxdt_types_fini(&ompi_pml_ucxdt.types);
    mca_pml_ucxdt_peers_close();
    if (ompi_pml_ucxdt.worker) ucxdt_worker_destroy(ompi_pml_ucxdt.worker), ompi_pml_ucxdt.worker = NULL;
    if (ompi_pml_ucxdt.address) ucp_worker_release_address(ompi_pml_ucxdt.ucp_worker, ompi_pml_ucxdt.address), ompi_pml_ucxdt.address = NULL;
    if (ompi_pml_ucxdt.ucp_worker) ucp_worker_destroy(ompi_pml_ucxdt.ucp_worker), ompi_pml_ucxdt.ucp_worker = NULL;
    if (ompi_pml_ucxdt.context) ucp_cleanup(ompi_pml_ucxdt.context), ompi_pml_ucxdt.context = NULL;
    mca_pml_ucxdt_requests_fini();
    OBJ_DESTRUCT(&ompi_pml_ucxdt.finished_lock);
    OBJ_DESTRUCT(&ompi_pml_ucxdt.lock);
}

static int setup(bool threads) {
    /* A rank goes in the tag's 20-bit field (pml_ucxdt.h): a larger job is refused here, with
     * its reason, rather than at the first communicator. */
    if (ompi_proc_world_size() > PML_UCXDT_MAX_RANK + 1)
        return opal_output(0, "pml ucxdt: %d processes do not fit the tag's %d-bit rank field (at most %d)",
                           ompi_proc_world_size(), PML_UCXDT_RANK_BITS, PML_UCXDT_MAX_RANK + 1),
               OMPI_ERR_NOT_SUPPORTED;
    ucp_config_t *cfg = NULL;
    ucs_status_t us = ucp_config_read(NULL, NULL, &cfg);
    if (us != UCS_OK) return opal_output(0, "pml ucxdt: ucp_config_read: %s", ucs_status_string(us)), OMPI_ERROR;
    /* Peers' failures are reported (UCP_ERR_HANDLING_MODE_PEER); without this, shared memory
     * drops out of such endpoints and processes of one node talk over TCP. */
    if (ompi_pml_ucxdt.peer_failure && !getenv("UCX_MM_ERROR_HANDLING"))
        (void)ucp_config_modify(cfg, "MM_ERROR_HANDLING", "y");
    ucp_params_t params = {0};
    params.field_mask = UCP_PARAM_FIELD_FEATURES | UCP_PARAM_FIELD_MT_WORKERS_SHARED;
    params.features = UCP_FEATURE_TAG | UCP_FEATURE_AM | UCP_FEATURE_RMA;
    params.mt_workers_shared = threads;
    us = ucp_init(&params, cfg, &ompi_pml_ucxdt.context);
    ucp_config_release(cfg);
    if (us != UCS_OK) return opal_output(0, "pml ucxdt: ucp_init: %s", ucs_status_string(us)), OMPI_ERROR;

    ucp_worker_params_t wp = {0};
    wp.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
    wp.thread_mode = threads ? UCS_THREAD_MODE_MULTI : UCS_THREAD_MODE_SINGLE;
    if ((us = ucp_worker_create(ompi_pml_ucxdt.context, &wp, &ompi_pml_ucxdt.ucp_worker)) != UCS_OK)
        return opal_output(0, "pml ucxdt: ucp_worker_create: %s", ucs_status_string(us)), OMPI_ERROR;
    if (threads) {  /* MPI_THREAD_MULTIPLE needs the worker's locks (ucxdt takes its own over them) */
        ucp_worker_attr_t attr = {.field_mask = UCP_WORKER_ATTR_FIELD_THREAD_MODE};
        if (ucp_worker_query(ompi_pml_ucxdt.ucp_worker, &attr) != UCS_OK || attr.thread_mode != UCS_THREAD_MODE_MULTI)
            return opal_output(0, "pml ucxdt: this UCX gives no thread-safe worker (MPI_THREAD_MULTIPLE)"), OMPI_ERROR;
    }
    ucxdt_worker_params_t dp = {0};
    dp.field_mask = UCXDT_WORKER_PARAM_FIELD_UCP_WORKER | UCXDT_WORKER_PARAM_FIELD_UCP_CONTEXT;
    dp.ucp_worker = ompi_pml_ucxdt.ucp_worker;
    if (!ompi_pml_ucxdt.check_signature) {  /* plain messages carry no signature to check */
        dp.field_mask |= UCXDT_WORKER_PARAM_FIELD_PLAIN_TAG_BIT;
        dp.plain_tag_bit = PML_UCXDT_PLAIN_BIT;  /* contiguous host messages as pml ucx sends them */
    }
    dp.ucp_context = ompi_pml_ucxdt.context;
    if (ucxdt_worker_create(&dp, &ompi_pml_ucxdt.worker) != UCXDT_OK)
        return opal_output(0, "pml ucxdt: ucxdt_worker_create: %s", ucxdt_last_error()), OMPI_ERROR;

    ucp_worker_attr_t attr = {.field_mask = UCP_WORKER_ATTR_FIELD_ADDRESS};
    if ((us = ucp_worker_query(ompi_pml_ucxdt.ucp_worker, &attr)) != UCS_OK)
        return opal_output(0, "pml ucxdt: ucp_worker_query: %s", ucs_status_string(us)), OMPI_ERROR;
    ompi_pml_ucxdt.address = attr.address;
    ompi_pml_ucxdt.address_length = attr.address_length;
    int rc;
    OPAL_MODEX_SEND(rc, PMIX_GLOBAL, &mca_pml_ucxdt_component.pmlm_version, ompi_pml_ucxdt.address,
                    ompi_pml_ucxdt.address_length);
    if (rc != OPAL_SUCCESS) return opal_output(0, "pml ucxdt: cannot publish the worker address"), OMPI_ERROR;

    ompi_pml_ucxdt.types.owner = "pml ucxdt";
    ompi_pml_ucxdt.types.lock = &ompi_pml_ucxdt.lock;
    ompi_pml_ucxdt.types.verbose = ompi_pml_ucxdt.verbose;
    ompi_pml_ucxdt.types.in_pml_data = true;
    return mca_common_ucxdt_types_init(&ompi_pml_ucxdt.types);
}

/* One-sided calls (MPI-4.1 §12) must run wherever this PML does. osc rdma needs ob1's BML, and
 * osc ucx by default runs only where its transport and device lists (Open MPI's common UCX
 * settings: InfiniBand) find a match, which pml ucx widens to "any" when asked to run on any
 * device. This PML runs on any device, so it widens them the same way; a list the user set
 * (osc_ucx_tls, osc_ucx_devices) stays as set. A setting registered already gets the new
 * default; one not yet registered reads it from the environment. */
static void osc_ucx_on_any_device(void) {
    static const char *const names[] = {"tls", "devices"};
    for (size_t i = 0; i < sizeof names / sizeof *names; ++i) {
        const int idx = mca_base_var_find("ompi", "osc", "ucx", names[i]);
        mca_base_var_source_t source;
        if (idx >= 0 && mca_base_var_get_value(idx, NULL, &source, NULL) == OPAL_SUCCESS) {
            if (source == MCA_BASE_VAR_SOURCE_DEFAULT)
                (void)mca_base_var_set_value(idx, "any", 0, MCA_BASE_VAR_SOURCE_DEFAULT, NULL);
        } else {
            char env[64];
            snprintf(env, sizeof env, "OMPI_MCA_osc_ucx_%s", names[i]);
            (void)setenv(env, "any", 0);
        }
    }
}

static mca_pml_base_module_t *component_init(int *priority, bool progress_threads, bool mpi_threads) {
    (void)progress_threads;
    OBJ_CONSTRUCT(&ompi_pml_ucxdt.lock, opal_recursive_mutex_t);
    OBJ_CONSTRUCT(&ompi_pml_ucxdt.finished_lock, opal_mutex_t);
    ompi_pml_ucxdt.threads = mpi_threads;
    ompi_pml_ucxdt.finished = ompi_pml_ucxdt.finished_last = NULL;
    ompi_pml_ucxdt.types.keyval = MPI_KEYVAL_INVALID;
    if (mca_pml_ucxdt_requests_init() != OPAL_SUCCESS || setup(mpi_threads) != OMPI_SUCCESS) {
        teardown();
        return NULL;
    }
    opal_progress_register(mca_pml_ucxdt_progress);
    osc_ucx_on_any_device();
    *priority = ompi_pml_ucxdt.priority;
    return &mca_pml_ucxdt_module;
}

static int component_finalize(void) {
    opal_progress_unregister(mca_pml_ucxdt_progress);
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
