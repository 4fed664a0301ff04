// Failing calls return a status and leave a thread-local message naming the argument.
#pragma once

#include <ucxdt/ucxdt.h>

#include <string>

namespace ucxdt {

/// Records `message` as this thread's last error and returns `status`, so that a check reads
/// `if (bad) return fail(UCXDT_ERR_INVALID_PARAM, "count must be >= 0");`.
ucxdt_status_t fail(ucxdt_status_t status, std::string message);

/// Clears this thread's last error; called when an entry point starts.
void clear_error();

}  // namespace ucxdt
