/* ThreadSanitizer's build of pml ucxdt (scripts/sanitize): included before each of its sources
 * (cmake/UcxdtPml.cmake). Open MPI's inline code that the component compiles in orders memory
 * with fences and relaxed or acquire-only atomics (opal/sys/gcc_builtin/atomic.h), which
 * ThreadSanitizer does not model, so the order it gives is told to it here, at the two places
 * the component's own data passes through it:
 *  - a free list (pml_ucxdt.requests, Open MPI's messages): what the thread that returns an
 *    item wrote comes before what the thread that gets it again does;
 *  - a request's completion: what the completing thread wrote (the status, the component's
 *    fields) comes before what a thread that waited for it reads (ompi_request_wait_completion;
 *    waits inside libmpi are told by the test program, test/tsan/ompi_requests.c).
 * Each is an edge Open MPI guarantees; none covers what the component itself orders. */
#ifndef UCXDT_TSAN_OMPI_INLINE_SYNC_H
#define UCXDT_TSAN_OMPI_INLINE_SYNC_H

#include "ompi_config.h"
#include "opal/class/opal_free_list.h"

#include <sanitizer/tsan_interface.h>

static inline opal_free_list_item_t *ucxdt_tsan_free_list_get(opal_free_list_t *flist) {
    opal_free_list_item_t *item = opal_free_list_get(flist);
    if (item) __tsan_acquire(item);
    return item;
}
static inline void ucxdt_tsan_free_list_return(opal_free_list_t *flist, opal_free_list_item_t *item) {
    __tsan_release(item);
    opal_free_list_return(flist, item);
}
/* From here on, including in the inline code of headers included later (ompi_message_alloc). */
#define opal_free_list_get ucxdt_tsan_free_list_get
#define opal_free_list_return ucxdt_tsan_free_list_return

#include "ompi/request/request.h"

static inline int ucxdt_tsan_request_complete(ompi_request_t *request, bool with_signal) {
    __tsan_release(request);
    return ompi_request_complete(request, with_signal);
}
static inline void ucxdt_tsan_request_wait_completion(ompi_request_t *request) {
    ompi_request_wait_completion(request);
    __tsan_acquire(request);
}
#define ompi_request_complete ucxdt_tsan_request_complete
#define ompi_request_wait_completion ucxdt_tsan_request_wait_completion

#endif
