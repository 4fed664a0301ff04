#include "ucp_rndv/ucx_reach.hpp"

#include <ucs/sys/uid.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <random>
#include <sstream>

#include <unistd.h>

namespace ucxdt::rndv {

uint64_t node_identity() { return ucs_get_system_id(); }

uint64_t process_identity() {
    // Drawn anew in a forked child, which must not pass for its parent.
    static std::mutex m;
    static pid_t owner = -1;
    static uint64_t id = 0;
    std::lock_guard<std::mutex> lock(m);
    if (owner != getpid()) {
        std::random_device rd;
        const auto t = static_cast<uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count());
        owner = getpid();
        id = ((static_cast<uint64_t>(rd()) << 32) ^ rd() ^ t ^ (static_cast<uint64_t>(owner) << 17)) | 1;
    }
    return id;
}

std::set<std::string> context_transports(ucp_context_h context) {
    std::set<std::string> tls;
    // UCP has no query for a context's transports; its printed summary names each resource as
    // "#      resource N :  md N dev N flags xx <tl>/<device>" (UCX 1.13 to 1.22).
    char *text = nullptr;
    size_t size = 0;
    FILE *f = open_memstream(&text, &size);
    if (!f) return tls;
    ucp_context_print_info(context, f);
    std::fclose(f);
    std::istringstream lines(std::string(text, size));
    std::free(text);
    for (std::string line; std::getline(lines, line);) {
        std::istringstream words(line);
        std::string hash, word, last;
        if (!(words >> hash >> word) || hash != "#" || word != "resource") continue;
        while (words >> word) last = word;
        if (const size_t slash = last.find('/'); slash != std::string::npos && slash > 0)
            tls.insert(last.substr(0, slash));
    }
    return tls;
}

int ep_has_transport(ucp_ep_h ep, const char *tl) {
#if UCP_API_VERSION >= UCP_VERSION(1, 14)
    ucp_transport_entry_t entries[32] = {};
    ucp_ep_attr_t attr{};
    attr.field_mask = UCP_EP_ATTR_FIELD_TRANSPORTS;
    attr.transports.entries = entries;
    attr.transports.num_entries = sizeof entries / sizeof entries[0];
    attr.transports.entry_size = sizeof entries[0];
    if (ucp_ep_query(ep, &attr) != UCS_OK) return -1;
    for (unsigned i = 0; i < attr.transports.num_entries && i < sizeof entries / sizeof entries[0]; ++i)
        if (entries[i].transport_name && std::string(entries[i].transport_name) == tl) return 1;
    return 0;
#else
    (void)ep, (void)tl;
    return -1;
#endif
}

bool ucp_rma_on_device() {
    unsigned major = 0, minor = 0, release = 0;
    ucp_get_version(&major, &minor, &release);
    return UCP_VERSION(major, minor) >= UCP_VERSION(1, 22);
}

bool ucp_rma_reaches_device(ucp_ep_h ep) {
    if (!ucp_rma_on_device()) return false;
    for (const char *tl : {"cuda_ipc", "rc_mlx5", "rc_verbs", "dc_mlx5"})
        if (ep_has_transport(ep, tl) == 1) return true;
    return false;
}

}  // namespace ucxdt::rndv
