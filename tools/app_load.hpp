// An application's kernels that occupy a share of the GPU's multiprocessors while ucxdt moves
// messages, to measure how the two slow each other (Wu et al. HPDC'16 §5.4, Fig. 15).
#pragma once

#include <string>

/// Kernels of the application, launched back to back on a stream of their own (normal
/// priority) by a thread of their own, until stopped. Each kernel has one block of 1024
/// threads per multiprocessor it occupies, with more than half a multiprocessor's shared
/// memory so that no two of its blocks share one; each block sweeps 1 MiB of its own slice of
/// a device buffer three times, 8 multiply-adds per float read and written (a stencil's
/// interior: HBM and the multiprocessors both busy). At 100% the grid is four such waves, so
/// that blocks wait to be scheduled, as in a large stencil launch.
class AppLoad {
public:
    /// Kernels on `percent` (1-100) of the current device's multiprocessors. Nothing runs until
    /// start(). `error()` is non-empty when CUDA refused.
    explicit AppLoad(int percent);
    ~AppLoad();
    AppLoad(const AppLoad &) = delete;
    AppLoad &operator=(const AppLoad &) = delete;
    /// Starts launching; stop() ends it and returns the kernels completed per second.
    void start();
    double stop();
    /// Runs alone for `seconds` and returns kernels per second: the rate stop() is compared to.
    double alone(double seconds);
    int blocks() const { return blocks_; }
    const std::string &error() const { return error_; }

private:
    struct State;
    State *s_;
    int blocks_ = 0;
    std::string error_;
};
