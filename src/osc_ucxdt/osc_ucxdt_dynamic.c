/* Dynamic windows (MPI_Win_create_dynamic, MPI_Win_attach, MPI_Win_detach; MPI-4.1 §12.2.4).
 * Each process keeps, after the words of its state region, a table of the memory it has
 * attached: per segment (regions attached side by side are one) its address, length and
 * packed ucxdt key. An origin reads a target's table with UCP gets, so that no attach asks
 * anything of the target's progress, and keeps it per target with the keys unpacked. Every access first reads the table's version word (one
 * get of 8 bytes) and reads the table again only when the version moved, as after an attach or
 * a detach: a region detached and another attached at the same address is never reached
 * through the old key. The target changes its table as a sequence lock does (the version is odd
 * while it changes), and the origin retries a read that saw the version move. */
#include "osc_ucxdt.h"

#include "opal/runtime/opal_progress.h"
#include "opal/util/output.h"

#include <stdlib.h>
#include <string.h>

static mca_osc_ucxdt_table_t *local_table(mca_osc_ucxdt_module_t *m) {
    return (mca_osc_ucxdt_table_t *)(m->state + mca_osc_ucxdt_table_word(m));
}

size_t mca_osc_ucxdt_table_bytes(size_t slots) {
    return sizeof(mca_osc_ucxdt_table_t) + slots * sizeof(mca_osc_ucxdt_attachment_t);
}

static void table_begin(mca_osc_ucxdt_table_t *t) {
    __atomic_store_n(&t->version, t->version + 1, __ATOMIC_RELEASE);
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
}

static void table_end(mca_osc_ucxdt_table_t *t) {
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
    __atomic_store_n(&t->version, t->version + 1, __ATOMIC_RELEASE);
}

typedef mca_osc_ucxdt_span_t span_t;  /* attached by the user, or a segment of the table */

static int by_base(const void *a, const void *b) {
    const uint64_t x = ((const span_t *)a)->base, y = ((const span_t *)b)->base;
    return x < y ? -1 : x > y;
}

/* A segment to publish: its memory registered and its key packed. */
typedef struct {
    span_t span;
    ucxdt_mem_h memh;
    void *key;
    size_t key_length;
} fresh_t;

/* The table made to publish the user's attachments as segments: maximal runs of attached
 * regions that touch, so that an access spanning two regions attached side by side (MPICH's
 * win_dynamic_rma_flush_get does so, and MPI-4.1 §12.2.4 makes it legal) lies in one
 * registered region. Segments unchanged keep their key and number; new ones are registered,
 * and the memory of those gone unregistered once the table no longer names them. On an error
 * the table is as it was. */
static int reconcile(mca_osc_ucxdt_module_t *m) {
    mca_osc_ucxdt_table_t *t = local_table(m);
    const int max = ompi_osc_ucxdt.attach_max;
    span_t *segs = malloc((size_t)max * sizeof *segs);
    fresh_t *fresh = calloc((size_t)max, sizeof *fresh);
    bool *keep = calloc((size_t)max, sizeof *keep);
    int n = 0, nfresh = 0, rc = segs && fresh && keep ? OMPI_SUCCESS : OMPI_ERR_OUT_OF_RESOURCE;
    for (int i = 0; i < m->attach_n && rc == OMPI_SUCCESS; ++i)
        if (m->attachments[i].size) segs[n++] = m->attachments[i];
    if (rc == OMPI_SUCCESS) qsort(segs, (size_t)n, sizeof *segs, by_base);
    int k = 0;
    for (int i = 0; i < n && rc == OMPI_SUCCESS; ++i) {
        if (k > 0 && segs[k - 1].base + segs[k - 1].size == segs[i].base) segs[k - 1].size += segs[i].size;
        else segs[k++] = segs[i];
    }
    n = k;
    for (int i = 0; i < n && rc == OMPI_SUCCESS; ++i) {
        bool found = false;
        for (uint64_t j = 0; j < t->count && !found; ++j)
            if (t->slots[j].base == segs[i].base && t->slots[j].size == segs[i].size) keep[j] = found = true;
        if (found) continue;
        fresh_t *f = &fresh[nfresh++];
        f->span = segs[i];
        ucxdt_mem_map_params_t mp = {.field_mask = UCXDT_MEM_MAP_PARAM_FIELD_ADDRESS | UCXDT_MEM_MAP_PARAM_FIELD_LENGTH,
                                     .address = (void *)(uintptr_t)segs[i].base, .length = segs[i].size};
        ucxdt_status_t st = ucxdt_mem_map(ompi_osc_ucxdt.worker, &mp, &f->memh);
        if (st == UCXDT_OK) st = ucxdt_rkey_pack(f->memh, &f->key, &f->key_length);
        if (st != UCXDT_OK) {
            opal_output(0, "osc ucxdt: cannot register attached memory: %s", ucxdt_last_error());
            rc = OMPI_ERR_RMA_ATTACH;
        } else if (f->key_length > OSC_UCXDT_ATTACH_KEY_MAX) {
            opal_output(0, "osc ucxdt: a packed key of %zu bytes exceeds the table's %d", f->key_length,
                        OSC_UCXDT_ATTACH_KEY_MAX);
            rc = OMPI_ERR_RMA_ATTACH;
        }
    }
    if (rc == OMPI_SUCCESS) {
        /* Kept slots move down in order, new ones follow; what is dropped is unregistered after. */
        ucxdt_mem_h *gone = calloc((size_t)max, sizeof *gone);
        int ngone = 0;
        if (!gone) rc = OMPI_ERR_OUT_OF_RESOURCE;
        if (rc == OMPI_SUCCESS) {
            table_begin(t);
            uint64_t w = 0;
            for (uint64_t j = 0; j < t->count; ++j) {
                if (!keep[j]) {
                    gone[ngone++] = m->attached[j];
                    continue;
                }
                if (w != j) t->slots[w] = t->slots[j], m->attached[w] = m->attached[j];
                ++w;
            }
            for (int i = 0; i < nfresh; ++i, ++w) {
                mca_osc_ucxdt_attachment_t *a = &t->slots[w];
                a->id = ++m->attach_ids;
                a->base = fresh[i].span.base, a->size = fresh[i].span.size, a->key_length = fresh[i].key_length;
                memcpy(a->key, fresh[i].key, fresh[i].key_length);
                m->attached[w] = fresh[i].memh;
                fresh[i].memh = NULL;
            }
            for (uint64_t j = w; j < t->count; ++j) m->attached[j] = NULL;
            t->count = w;
            table_end(t);
            for (int i = 0; i < ngone; ++i)
                if (gone[i]) ucxdt_mem_unmap(gone[i]);
        }
        free(gone);
    }
    for (int i = 0; i < nfresh; ++i) {
        if (fresh[i].key) ucxdt_rkey_buffer_release(fresh[i].key);
        if (fresh[i].memh) ucxdt_mem_unmap(fresh[i].memh);
    }
    free(segs), free(fresh), free(keep);
    return rc;
}

int mca_osc_ucxdt_attach(ompi_win_t *win, void *base, size_t size) {
    mca_osc_ucxdt_module_t *m = mca_osc_ucxdt_module(win);
    if (m->flavor != MPI_WIN_FLAVOR_DYNAMIC) return OMPI_ERR_RMA_FLAVOR;
    OPAL_THREAD_LOCK(&ompi_osc_ucxdt.lock);
    const uint64_t start = (uint64_t)(uintptr_t)base;
    int rc = OMPI_SUCCESS;
    /* Regions attached twice or overlapping are erroneous (MPI-4.1 §12.2.4): refused here. */
    for (int i = 0; i < m->attach_n && rc == OMPI_SUCCESS; ++i) {
        const span_t *a = &m->attachments[i];
        if ((size > 0 && a->size > 0 && start < a->base + a->size && a->base < start + size) ||
            (a->base == start && (size == 0 || a->size == 0)))
            rc = OMPI_ERR_RMA_ATTACH;
    }
    if (rc == OMPI_SUCCESS && m->attach_n >= ompi_osc_ucxdt.attach_max) {
        opal_output(0, "osc ucxdt: a dynamic window holds at most %d regions (osc_ucxdt_attach_max)",
                    ompi_osc_ucxdt.attach_max);
        rc = OMPI_ERR_RMA_ATTACH;
    }
    if (rc == OMPI_SUCCESS) {
        m->attachments[m->attach_n++] = (span_t){start, size};
        if ((rc = reconcile(m)) != OMPI_SUCCESS) --m->attach_n;  /* the table is as it was */
    }
    OPAL_THREAD_UNLOCK(&ompi_osc_ucxdt.lock);
    return rc;
}

int mca_osc_ucxdt_detach(ompi_win_t *win, const void *base) {
    mca_osc_ucxdt_module_t *m = mca_osc_ucxdt_module(win);
    if (m->flavor != MPI_WIN_FLAVOR_DYNAMIC) return OMPI_ERR_RMA_FLAVOR;
    OPAL_THREAD_LOCK(&ompi_osc_ucxdt.lock);
    int rc = OMPI_ERR_BASE;  /* not attached (MPI-4.1 §12.2.4: erroneous) */
    for (int i = 0; i < m->attach_n; ++i) {
        if (m->attachments[i].base != (uint64_t)(uintptr_t)base) continue;
        const span_t was = m->attachments[i];
        m->attachments[i] = m->attachments[--m->attach_n];
        /* The rest of its segment is registered anew; should that fail, it stays attached. */
        if ((rc = reconcile(m)) != OMPI_SUCCESS) m->attachments[m->attach_n++] = was;
        break;
    }
    OPAL_THREAD_UNLOCK(&ompi_osc_ucxdt.lock);
    return rc;
}

/* The origin's copy of target's table, read again; every key of a region no longer attached
 * is destroyed after a flush of the endpoint (no operation of this process uses it then). */
static int refresh(mca_osc_ucxdt_module_t *m, int target, uint64_t version) {
    mca_osc_ucxdt_target_t *t = &m->targets[target];
    const uint64_t table = mca_osc_ucxdt_table_word(m) * sizeof(uint64_t);
    const size_t max = (size_t)ompi_osc_ucxdt.attach_max;
    mca_osc_ucxdt_table_t *copy = malloc(mca_osc_ucxdt_table_bytes(max));
    if (!copy) return OMPI_ERR_OUT_OF_RESOURCE;
    int rc = OMPI_SUCCESS;
    /* A read that raced with a change is read again; each change is a few stores, so a few
     * tries suffice unless the target attaches and detaches without pause. */
    for (int tries = 0;; ++tries) {
        if (tries == 1000) {
            opal_output(0, "osc ucxdt: rank %d's table of attached memory kept changing", target);
            rc = OMPI_ERROR;
            break;
        }
        if (version & 1) {
            opal_progress();
            rc = mca_osc_ucxdt_state_get(m, target, table, &version, sizeof version);
            if (rc != OMPI_SUCCESS) break;
            continue;
        }
        rc = mca_osc_ucxdt_state_get(m, target, table, copy, sizeof *copy);
        if (rc == OMPI_SUCCESS && copy->count > max) rc = OMPI_ERROR;  /* not a table */
        if (rc == OMPI_SUCCESS && copy->count)
            rc = mca_osc_ucxdt_state_get(m, target, table + sizeof *copy, copy->slots,
                                         copy->count * sizeof(mca_osc_ucxdt_attachment_t));
        uint64_t after = 0;
        if (rc == OMPI_SUCCESS) rc = mca_osc_ucxdt_state_get(m, target, table, &after, sizeof after);
        if (rc != OMPI_SUCCESS) break;
        if (after == version && copy->version == version) break;
        version = after;
    }
    mca_osc_ucxdt_region_t *regions = NULL;
    if (rc == OMPI_SUCCESS && copy->count && !(regions = calloc(copy->count, sizeof *regions)))
        rc = OMPI_ERR_OUT_OF_RESOURCE;
    bool stale = false;
    for (uint64_t i = 0; i < copy->count && rc == OMPI_SUCCESS; ++i) {
        const mca_osc_ucxdt_attachment_t *a = &copy->slots[i];
        regions[i].id = a->id, regions[i].base = a->base, regions[i].size = a->size;
        for (int j = 0; j < t->regions_n; ++j)
            if (t->regions[j].id == a->id && t->regions[j].rkey) {
                regions[i].rkey = t->regions[j].rkey;  /* kept */
                t->regions[j].rkey = NULL;
            }
        if (!regions[i].rkey && a->key_length) {
            if (a->key_length > OSC_UCXDT_ATTACH_KEY_MAX) {
                rc = OMPI_ERROR;
            } else if (ucxdt_ep_rkey_unpack(t->peer->ep, a->key, a->key_length, &regions[i].rkey) != UCXDT_OK) {
                opal_output(0, "osc ucxdt: rank %d's attached memory key: %s", target, ucxdt_last_error());
                rc = OMPI_ERROR;
            }
        }
    }
    for (int j = 0; j < t->regions_n; ++j) stale |= t->regions[j].rkey != NULL;
    if (rc == OMPI_SUCCESS) {
        if (stale) rc = mca_osc_ucxdt_flush_target(m, target);
        mca_osc_ucxdt_regions_release(t);
        t->regions = regions, t->regions_n = (int)copy->count, t->table_version = version;
        regions = NULL;
    }
    if (regions) {
        /* A failed read: the keys taken over from the old copy may be in use by operations
         * still running, as stale ones above; those end first. */
        (void)mca_osc_ucxdt_flush_target(m, target);
        for (uint64_t i = 0; i < copy->count; ++i)
            if (regions[i].rkey) ucxdt_rkey_destroy(regions[i].rkey);
        free(regions);
    }
    free(copy);
    return rc;
}

void mca_osc_ucxdt_regions_release(mca_osc_ucxdt_target_t *t) {
    for (int j = 0; j < t->regions_n; ++j)
        if (t->regions[j].rkey) ucxdt_rkey_destroy(t->regions[j].rkey);
    free(t->regions);
    t->regions = NULL, t->regions_n = 0;
}

void mca_osc_ucxdt_attached_release(mca_osc_ucxdt_module_t *m) {
    if (m->attached)
        for (int i = 0; i < ompi_osc_ucxdt.attach_max; ++i)
            if (m->attached[i]) ucxdt_mem_unmap(m->attached[i]);
    free(m->attached), free(m->attachments);
    m->attached = NULL, m->attachments = NULL, m->attach_n = 0;
}

int mca_osc_ucxdt_resolve(mca_osc_ucxdt_module_t *m, int target, ptrdiff_t target_disp, ompi_datatype_t *target_dt,
                          uint64_t *remote, ucxdt_rkey_h *rkey) {
    mca_osc_ucxdt_target_t *t = &m->targets[target];
    *remote = mca_osc_ucxdt_address(t, target_disp);
    if (m->flavor != MPI_WIN_FLAVOR_DYNAMIC) {
        *rkey = t->rkey;
        return t->rkey ? OMPI_SUCCESS : MPI_ERR_RMA_RANGE;  /* a window of 0 bytes */
    }
    /* The region that holds the layout's first byte; ucxdt checks that the rest lies in it. */
    ptrdiff_t true_lb = 0, true_extent = 0;
    ompi_datatype_get_true_extent(target_dt, &true_lb, &true_extent);
    const uint64_t first = *remote + (uint64_t)(int64_t)true_lb;
    OPAL_THREAD_LOCK(&ompi_osc_ucxdt.lock);
    uint64_t version = 0;
    int rc = mca_osc_ucxdt_state_get(m, target, mca_osc_ucxdt_table_word(m) * sizeof(uint64_t), &version,
                                     sizeof version);
    if (rc == OMPI_SUCCESS && version != t->table_version) {
        rc = refresh(m, target, version);
        if (rc != OMPI_SUCCESS) t->table_version = OSC_UCXDT_TABLE_UNREAD;
    }
    *rkey = NULL;
    for (int j = 0; j < t->regions_n && rc == OMPI_SUCCESS; ++j)
        if (t->regions[j].rkey && first >= t->regions[j].base && first - t->regions[j].base < t->regions[j].size)
            *rkey = t->regions[j].rkey;
    OPAL_THREAD_UNLOCK(&ompi_osc_ucxdt.lock);
    if (rc == OMPI_SUCCESS && !*rkey) rc = MPI_ERR_RMA_RANGE;  /* in no attached region */
    return rc;
}
