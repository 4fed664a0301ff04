// ucxdt_perftest (ucxdt_perftest.cpp): the shared helpers (die, clocks) and the peer: who it is, and how long we wait for it.
// One translation unit includes these headers, in order; their names stay in an anonymous namespace, as
// when they were one file.
#pragma once

#include "app_load.hpp"
#include "support/registry.hpp"
#include "support/typemap_walk.hpp"
#include "support/worker_address.hpp"
#include <ucxdt/ucp_generic.h>
#include <ucxdt/ucxdt_rma.h>
#include <ucxdt/ucxdt_ucp.h>
#include <ucxdt/ucxdt.h>
#include <cuda_runtime_api.h>
#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>
#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>


namespace {


namespace L = ucxdt::layouts;
using Clock = std::chrono::steady_clock;

constexpr ucp_tag_t kDataTag = 0x1337, kAckTag = 0x1338;

[[noreturn]] void die(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    std::fprintf(stderr, "ucxdt_perftest: error: ");
    std::vfprintf(stderr, fmt, ap);
    std::fprintf(stderr, "\n");
    va_end(ap);
    std::exit(2);
}

double now_s() { return std::chrono::duration<double>(Clock::now().time_since_epoch()).count(); }

// ---- The peer: who it is, and how long we wait for it --------------------------------------

struct Peer {
    std::string name = "?";  // host:port of the other process
    int fd = -1;             // the out-of-band socket; the kernel closes it when the peer dies
    double timeout_s = 30;   // -T: the longest wait for the peer
    // Messages posted, completed or received: counted in the hot loops, timed by watch().
    uint64_t events = 0, seen_events = 0;
    double activity = now_s();  // when `events` last changed, as watch() saw it
    double last_check = 0;      // of the socket, while transfers are in flight
    // Called while this side waits out of band, once UCP is up: UCP progress. UCP completes a
    // send once the transport has its bytes, and TCP may still hold some of them, which only
    // progress sends: a sender that stopped driving UCP at a barrier left its peer waiting for
    // the end of the message (the first generic-path message over TCP, run 31).
    void (*drive)() = nullptr;
    // Where this side is, for the error: the iteration (warm-up ones are negative) and the
    // messages it has in flight.
    bool in_run = false;
    long iter = 0;
    size_t in_flight = 0;
} g_peer;

void abort_ucp();  // force-closes the endpoint of a failed peer (the Ucp below)

// The peer failed or did not answer in time: releases what UCP needs released, exits 3.
[[noreturn]] void die_peer(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    std::fprintf(stderr, "ucxdt_perftest: error: peer %s ", g_peer.name.c_str());
    std::vfprintf(stderr, fmt, ap);
    if (g_peer.in_run)
        std::fprintf(stderr, " (at iteration %ld, %zu message(s) in flight)", g_peer.iter, g_peer.in_flight);
    std::fprintf(stderr, "\n");
    va_end(ap);
    std::fflush(stderr);
    abort_ucp();
    std::exit(3);
}

}  // namespace
