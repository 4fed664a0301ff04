#include "base/error.hpp"

namespace ucxdt {

namespace {
thread_local std::string last_error;
}

ucxdt_status_t fail(ucxdt_status_t status, std::string message) {
    last_error = std::string(ucxdt_status_string(status)) + ": " + message;
    return status;
}

void clear_error() { last_error.clear(); }

}  // namespace ucxdt

extern "C" const char *ucxdt_status_string(ucxdt_status_t status) {
    switch (status) {
    case UCXDT_OK: return "Success";
    case UCXDT_ERR_INVALID_PARAM: return "Invalid parameter";
    case UCXDT_ERR_NO_MEMORY: return "Out of memory";
    case UCXDT_ERR_OVERFLOW: return "Arithmetic overflow";
    case UCXDT_ERR_NOT_COMMITTED: return "Datatype not committed";
    case UCXDT_ERR_TRUNCATED: return "Message truncated";
    case UCXDT_ERR_TYPE_MISMATCH: return "Type signature mismatch";
    case UCXDT_ERR_CUDA: return "CUDA error";
    case UCXDT_ERR_UCX: return "UCX error";
    case UCXDT_ERR_PEER_FAILURE: return "Peer failure";
    case UCXDT_ERR_CANCELED: return "Request canceled";
    case UCXDT_ERR_UNSUPPORTED: return "Unsupported operation";
    case UCXDT_ERR_OUT_OF_RANGE: return "Target outside the registered memory";
    }
    return "Unknown status";
}

extern "C" const char *ucxdt_last_error(void) { return ucxdt::last_error.c_str(); }
