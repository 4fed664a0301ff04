#include "ucp_rndv/timeline.hpp"

#include <chrono>
#include <cstdio>
#include <cstdlib>

#include <unistd.h>

namespace ucxdt::rndv {

std::unique_ptr<Timeline> Timeline::from_env(uint64_t worker_uuid) {
    const char *prefix = std::getenv("UCXDT_TIMELINE");
    if (!prefix || !*prefix) return nullptr;
    return std::unique_ptr<Timeline>(new Timeline(std::string(prefix) + "." + std::to_string(getpid()) + "." +
                                                  std::to_string(worker_uuid) + ".csv"));
}

void Timeline::mark(uint64_t request, bool send, const char *step) {
    if (marks_.size() >= kMaxMarks) return;
    const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(
        std::chrono::steady_clock::now().time_since_epoch()).count();
    marks_.push_back({static_cast<int64_t>(ns), request, send, step});
}

Timeline::~Timeline() {
    // A profile, not a result: a file that cannot be written is said on stderr and skipped.
    std::FILE *f = std::fopen(path_.c_str(), "w");
    if (!f) {
        std::fprintf(stderr, "ucxdt: UCXDT_TIMELINE: cannot write %s\n", path_.c_str());
        return;
    }
    std::fprintf(f, "ns,request,side,step\n");
    for (const Mark &m : marks_)
        std::fprintf(f, "%lld,%llu,%s,%s\n", static_cast<long long>(m.ns), static_cast<unsigned long long>(m.request),
                     m.send ? "send" : "recv", m.step);
    std::fclose(f);
}

}  // namespace ucxdt::rndv
