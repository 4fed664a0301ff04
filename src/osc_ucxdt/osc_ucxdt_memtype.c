/* Whether a buffer is host memory, which UCP's RMA reaches itself (the direct path,
 * osc_ucxdt_direct.c), or GPU memory, which ucxdt moves. The answer is the CUDA driver's pointer
 * query (ucxdt_memory_type), which costs 0.15-0.5 us on an H200 host: a third of a small put's
 * time, and what osc ucx, which asks nothing and leaves memory types to UCP, does not pay. Two
 * kinds of range are known without it:
 * - a host window's own memory, for the window's life: UCP's registration of it page-locks it
 *   where a CUDA context is active (UCX's cuda_copy memory domain calls cuMemHostRegister), so
 *   the driver calls it page-locked, which the second kind cannot keep;
 * - pageable host memory, which stays host memory until it is unmapped: each thread keeps the
 *   last ranges the driver called pageable and takes them as such again while no memory of the
 *   process has been unmapped since: UCM's VM_UNMAPPED event, on which UCX's registration cache
 *   rests too (munmap, mremap, shmdt, brk and sbrk shrinking, madvise, and a MAP_FIXED mmap over
 *   a mapping). Without UCM's hooks every call asks the driver. */
#include "osc_ucxdt.h"

#include "opal/util/output.h"

#include <ucm/api/ucm.h>

#include <unistd.h>

static uint64_t unmaps;  /* VM_UNMAPPED events so far */
static bool watching;    /* the handler is installed */
static uintptr_t page_mask;

/* This thread's last ranges found pageable host memory, and the events counted before each was
 * asked: four, for an accumulate's origin, result and staging. Empty ranges at first. */
#define KNOWN 4
static __thread struct {
    uintptr_t lo, hi;
    uint64_t unmaps;
} known[KNOWN];
static __thread unsigned known_next;

/* Runs before the memory goes: a query that raced with it stored the old count. It must not
 * allocate (ucm.h). */
static void vm_unmapped(ucm_event_type_t type, ucm_event_t *event, void *arg) {
    (void)type, (void)event, (void)arg;
    __atomic_add_fetch(&unmaps, 1, __ATOMIC_ACQ_REL);
}

void mca_osc_ucxdt_memtype_init(void) {
    if (watching) return;
    page_mask = ~((uintptr_t)sysconf(_SC_PAGESIZE) - 1);
    watching = ucm_set_event_handler(UCM_EVENT_VM_UNMAPPED, 0, vm_unmapped, NULL) == UCS_OK;
    if (!watching && ompi_osc_ucxdt.verbose > 0)
        opal_output(0, "osc ucxdt: no UCM memory events: every direct put and get asks the driver for its memory type");
}

void mca_osc_ucxdt_memtype_fini(void) {
    if (watching) ucm_unset_event_handler(UCM_EVENT_VM_UNMAPPED, vm_unmapped, NULL);
    watching = false;
}

ucxdt_memory_type_t mca_osc_ucxdt_memory_type(const mca_osc_ucxdt_module_t *m, const void *p, size_t bytes,
                                              int *device) {
    const uintptr_t lo = (uintptr_t)p, hi = lo + bytes, base = (uintptr_t)(m ? m->base : NULL);
    if (device) *device = -1;  /* as ucxdt_memory_type leaves it for host memory */
    /* Within the window's own memory, registered for UCP only where it is host memory. */
    if (m && m->ucp_memh && lo >= base && bytes <= m->length && lo - base <= m->length - bytes)
        return UCXDT_MEMORY_HOST;
    const uint64_t now = __atomic_load_n(&unmaps, __ATOMIC_ACQUIRE);
    if (watching && hi >= lo)
        for (int i = 0; i < KNOWN; ++i)
            if (lo >= known[i].lo && hi <= known[i].hi && known[i].unmaps == now) return UCXDT_MEMORY_HOST;
    const ucxdt_memory_type_t t = ucxdt_memory_type(p, device);
    if (t == UCXDT_MEMORY_HOST && watching && hi >= lo) {
        /* Page-locked memory is not kept: its driver frees it, whose unmapping UCM may not see.
         * A range that touches or overlaps a kept one joins it (their union is all host memory):
         * a window of operations on consecutive slices of a buffer (osu_get_bw, 64 of them)
         * asks the driver once, not once a slice. */
        const uintptr_t plo = lo & page_mask, phi = (hi + ~page_mask) & page_mask;
        int i = 0;
        while (i < KNOWN && !(known[i].unmaps == now && known[i].lo <= phi && plo <= known[i].hi)) ++i;
        if (i == KNOWN) {
            i = (int)(known_next++ % KNOWN);
            known[i].lo = plo, known[i].hi = phi, known[i].unmaps = now;
        } else {
            if (plo < known[i].lo) known[i].lo = plo;
            if (phi > known[i].hi) known[i].hi = phi;
        }
    }
    return t;
}

bool mca_osc_ucxdt_host_memory(const mca_osc_ucxdt_module_t *m, const void *p, size_t bytes) {
    const ucxdt_memory_type_t t = mca_osc_ucxdt_memory_type(m, p, bytes, NULL);
    return t == UCXDT_MEMORY_HOST || t == UCXDT_MEMORY_HOST_PINNED;
}
