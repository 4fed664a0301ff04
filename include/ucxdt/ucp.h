/* Moved: the UCP generic datatype API is include/ucxdt/ucp_generic.h. This header, kept for one
 * release, includes it; include ucp_generic.h instead. */
#include <ucxdt/ucp_generic.h>
