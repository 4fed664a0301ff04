// Failing calls return a status and leave a thread-local message naming the argument.
#pragma once

#include <ucxdt/ucxdt.h>

#include <string>

namespace ucxdt {

// Exported (though not in include/) so that companion libraries such as libucxdt_mpi report
// through the same thread-local slot that ucxdt_last_error() reads.

/// Records `message` as this thread's last error and returns `status`, so that a check reads
/// `if (bad) return fail(UCXDT_ERR_INVALID_PARAM, "count must be >= 0");`.
UCXDT_API ucxdt_status_t fail(ucxdt_status_t status, std::string message);

/// Clears this thread's last error; called when an entry point starts.
UCXDT_API void clear_error();

}  // namespace ucxdt
