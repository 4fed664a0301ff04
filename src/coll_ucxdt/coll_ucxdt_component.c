/* The component: its MCA registration, and the module each intracommunicator gets under
 * pml ucxdt, which keeps the functions Open MPI had chosen below it. */
#include "coll_ucxdt.h"

#include "ompi/mca/coll/base/coll_base_util.h"
#include "ompi/mca/pml/base/base.h"
#include "opal/mca/base/mca_base_var.h"

#include <string.h>

static int component_register(void) {
    /* Above every component that moves data (tuned 30, han 35, libnbc 10, cuda 78): it wraps
     * their choice rather than competing with it. */
    mca_coll_ucxdt_component.priority = 90;
    (void)mca_base_component_var_register(&mca_coll_ucxdt_component.super.collm_version, "priority",
                                          "Priority of coll ucxdt (above the components whose self-block "
                                          "copies it takes over; it enables itself only under pml ucxdt)",
                                          MCA_BASE_VAR_TYPE_INT, NULL, 0, 0, OPAL_INFO_LVL_3,
                                          MCA_BASE_VAR_SCOPE_READONLY, &mca_coll_ucxdt_component.priority);
    return OMPI_SUCCESS;
}

static int init_query(bool progress_threads, bool mpi_threads) {
    (void)progress_threads, (void)mpi_threads;
    return OMPI_SUCCESS;
}

static void module_construct(mca_coll_ucxdt_module_t *m) {
    memset(&m->below, 0, sizeof m->below);
    m->allgather_bruck = false;
}

/* Releases what enable() retained: each function's module below. */
static void module_destruct(mca_coll_ucxdt_module_t *m) {
    mca_coll_base_module_t *below[] = {
        m->below.coll_allgather_module,  m->below.coll_allgatherv_module,  m->below.coll_gatherv_module,
        m->below.coll_scatterv_module,
        m->below.coll_alltoall_module,   m->below.coll_alltoallv_module,   m->below.coll_alltoallw_module,
        m->below.coll_iallgather_module, m->below.coll_iallgatherv_module, m->below.coll_igather_module,
        m->below.coll_igatherv_module,   m->below.coll_iscatter_module,    m->below.coll_iscatterv_module,
        m->below.coll_ialltoall_module,  m->below.coll_ialltoallv_module,  m->below.coll_ialltoallw_module,
    };
    for (size_t i = 0; i < sizeof below / sizeof below[0]; ++i)
        if (below[i]) OBJ_RELEASE(below[i]);
}

OBJ_CLASS_INSTANCE(mca_coll_ucxdt_module_t, mca_coll_base_module_t, module_construct, module_destruct);

/* Keeps the communicator's current function `fn` as the one below ours; where there is none,
 * this module leaves `fn` alone (Open MPI copies only the functions a module sets). */
#define KEEP_BELOW(m, comm, fn)                                                      \
    do {                                                                             \
        if ((comm)->c_coll->coll_##fn && (comm)->c_coll->coll_##fn##_module) {       \
            (m)->below.coll_##fn = (comm)->c_coll->coll_##fn;                        \
            (m)->below.coll_##fn##_module = (comm)->c_coll->coll_##fn##_module;      \
            OBJ_RETAIN((m)->below.coll_##fn##_module);                               \
        } else {                                                                     \
            (m)->super.coll_##fn = NULL;                                             \
        }                                                                            \
    } while (0)

/* Whether the MPI_Allgather below runs Bruck's algorithm: it is tuned's fixed rule (tuned's
 * module, dynamic rules off), which in Open MPI 5.0.7 picks recursive doubling below 32 ranks,
 * and recursive doubling falls back to Bruck on a number of ranks that is not a power of two.
 * Every rank decides alike: the MCA settings and the communicator's size are the same on all. */
static bool below_allgather_is_bruck(const mca_coll_ucxdt_module_t *m, ompi_communicator_t *comm) {
    const int n = ompi_comm_size(comm);
    if (n <= 2 || n >= 32 || (n & (n - 1)) == 0 || !m->below.coll_allgather_module) return false;
    const char *name = NULL;
    mca_coll_base_avail_coll_t *item;
    OPAL_LIST_FOREACH(item, comm->c_coll->module_list, mca_coll_base_avail_coll_t) {
        if (item->ac_module == m->below.coll_allgather_module) name = item->ac_component_name;
    }
    if (!name || strcmp(name, "tuned") != 0) return false;
    const int var = mca_base_var_find("ompi", "coll", "tuned", "use_dynamic_rules");
    const bool *dynamic = NULL;
    return var >= 0 && mca_base_var_get_value(var, &dynamic, NULL, NULL) == OPAL_SUCCESS && dynamic && !*dynamic;
}

static int module_enable(mca_coll_base_module_t *module, ompi_communicator_t *comm) {
    mca_coll_ucxdt_module_t *m = (mca_coll_ucxdt_module_t *)module;
    KEEP_BELOW(m, comm, allgather);
    m->allgather_bruck = below_allgather_is_bruck(m, comm);
    KEEP_BELOW(m, comm, allgatherv);
    KEEP_BELOW(m, comm, gatherv);
    KEEP_BELOW(m, comm, scatterv);
    KEEP_BELOW(m, comm, alltoall);
    KEEP_BELOW(m, comm, alltoallv);
    KEEP_BELOW(m, comm, alltoallw);
    KEEP_BELOW(m, comm, iallgather);
    KEEP_BELOW(m, comm, iallgatherv);
    KEEP_BELOW(m, comm, igather);
    KEEP_BELOW(m, comm, igatherv);
    KEEP_BELOW(m, comm, iscatter);
    KEEP_BELOW(m, comm, iscatterv);
    KEEP_BELOW(m, comm, ialltoall);
    KEEP_BELOW(m, comm, ialltoallv);
    KEEP_BELOW(m, comm, ialltoallw);
    return OMPI_SUCCESS;
}

static mca_coll_base_module_t *comm_query(ompi_communicator_t *comm, int *priority) {
    /* The self block goes through the PML, which is ucxdt's only under pml ucxdt. */
    if (OMPI_COMM_IS_INTER(comm) ||
        strcmp(mca_pml_base_selected_component.pmlm_version.mca_component_name, "ucxdt") != 0)
        return NULL;
    mca_coll_ucxdt_module_t *m = OBJ_NEW(mca_coll_ucxdt_module_t);
    if (!m) return NULL;
    *priority = mca_coll_ucxdt_component.priority;
    m->super.coll_module_enable = module_enable;
    m->super.coll_allgather = mca_coll_ucxdt_allgather;
    m->super.coll_allgatherv = mca_coll_ucxdt_allgatherv;
    m->super.coll_gather = mca_coll_ucxdt_gather;
    m->super.coll_gatherv = mca_coll_ucxdt_gatherv;
    m->super.coll_scatter = mca_coll_ucxdt_scatter;
    m->super.coll_scatterv = mca_coll_ucxdt_scatterv;
    m->super.coll_alltoall = mca_coll_ucxdt_alltoall;
    m->super.coll_alltoallv = mca_coll_ucxdt_alltoallv;
    m->super.coll_alltoallw = mca_coll_ucxdt_alltoallw;
    m->super.coll_iallgather = mca_coll_ucxdt_iallgather;
    m->super.coll_iallgatherv = mca_coll_ucxdt_iallgatherv;
    m->super.coll_igather = mca_coll_ucxdt_igather;
    m->super.coll_igatherv = mca_coll_ucxdt_igatherv;
    m->super.coll_iscatter = mca_coll_ucxdt_iscatter;
    m->super.coll_iscatterv = mca_coll_ucxdt_iscatterv;
    m->super.coll_ialltoall = mca_coll_ucxdt_ialltoall;
    m->super.coll_ialltoallv = mca_coll_ucxdt_ialltoallv;
    m->super.coll_ialltoallw = mca_coll_ucxdt_ialltoallw;
    return &m->super;
}

mca_coll_ucxdt_component_t mca_coll_ucxdt_component = {
    .super = {
        .collm_version = {
            MCA_COLL_BASE_VERSION_2_4_0,
            .mca_component_name = "ucxdt",
            MCA_BASE_MAKE_VERSION(component, 0, 1, 0),
            .mca_register_component_params = component_register,
        },
        .collm_data = {.param_field = MCA_BASE_METADATA_PARAM_NONE},
        .collm_init_query = init_query,
        .collm_comm_query = comm_query,
    },
};
