// Timestamps of each request's protocol steps, for profiling the latency of small messages
// (UCXDT_TIMELINE=<path prefix>): held in memory, bounded, and written when the worker is
// destroyed to <prefix>.<pid>.<worker uuid>.csv as "ns,request,side,step". The clock is the steady
// clock (CLOCK_MONOTONIC), which the processes of one host share, so that a sender's and a
// receiver's files line up. Off (no file, one test per step) unless the variable is set.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace ucxdt::rndv {

class Timeline {
public:
    /// A timeline when UCXDT_TIMELINE is set, else null.
    static std::unique_ptr<Timeline> from_env(uint64_t worker_uuid);
    ~Timeline();  // writes the file
    /// Records `step` (a string literal) of request `request` now; past kMaxMarks, nothing.
    void mark(uint64_t request, bool send, const char *step);

private:
    explicit Timeline(std::string path) : path_(std::move(path)) { marks_.reserve(4096); }
    struct Mark {
        int64_t ns;
        uint64_t request;
        bool send;
        const char *step;
    };
    static constexpr size_t kMaxMarks = size_t(1) << 22;  // 128 MiB at most
    std::string path_;
    std::vector<Mark> marks_;
};

}  // namespace ucxdt::rndv
