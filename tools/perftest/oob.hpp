// ucxdt_perftest (ucxdt_perftest.cpp): the out-of-band TCP socket between client and server.
// One translation unit includes these headers, in order; their names stay in an anonymous namespace, as
// when they were one file.
#pragma once

#include "perftest/common.hpp"

namespace {

// ---- Out-of-band socket --------------------------------------------------------------------
// Every wait is a poll bounded by -T; `what` says what was awaited, for the error.

void sock_wait(int fd, short events, const char *what) {
    const double deadline = now_s() + g_peer.timeout_s;
    for (;;) {
        const double left = deadline - now_s();
        if (left <= 0) die_peer("did not answer within %g s (-T) %s", g_peer.timeout_s, what);
        pollfd p{fd, events, 0};
        // Driving UCP, it polls without blocking.
        const int r = ::poll(&p, 1, g_peer.drive ? 0 : static_cast<int>(std::min(std::ceil(left * 1000), 60000.0)));
        if (r > 0) return;  // ready, or closed: the send or recv tells which
        if (r < 0 && errno != EINTR) die("out-of-band socket: poll: %s", std::strerror(errno));
        if (g_peer.drive) g_peer.drive();
    }
}
void sock_write(int fd, const void *data, size_t n, const char *what) {
    const char *c = static_cast<const char *>(data);
    while (n > 0) {
        sock_wait(fd, POLLOUT, what);
        const ssize_t w = ::send(fd, c, n, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (w < 0 && (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK)) continue;
        if (w < 0 && (errno == EPIPE || errno == ECONNRESET))
            die_peer("closed the connection (%s) %s", std::strerror(errno), what);
        if (w <= 0) die("out-of-band socket: send failed (%s)", w < 0 ? std::strerror(errno) : "nothing sent");
        c += w, n -= static_cast<size_t>(w);
    }
}
void sock_read(int fd, void *data, size_t n, const char *what) {
    char *c = static_cast<char *>(data);
    while (n > 0) {
        sock_wait(fd, POLLIN, what);
        const ssize_t r = ::recv(fd, c, n, MSG_DONTWAIT);
        if (r < 0 && (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK)) continue;
        if (r == 0) die_peer("closed the connection %s", what);
        if (r < 0 && errno == ECONNRESET) die_peer("closed the connection (%s) %s", std::strerror(errno), what);
        if (r < 0) die("out-of-band socket: %s", std::strerror(errno));
        c += r, n -= static_cast<size_t>(r);
    }
    ++g_peer.events;
}
void send_blob(int fd, const std::string &s, const char *what) {
    const uint64_t n = s.size();
    sock_write(fd, &n, sizeof n, what);
    sock_write(fd, s.data(), s.size(), what);
}
std::string recv_blob(int fd, const char *what) {
    uint64_t n = 0;
    sock_read(fd, &n, sizeof n, what);
    if (n > (1u << 24)) die("out-of-band socket: oversized message");
    std::string s(n, '\0');
    sock_read(fd, s.data(), n, what);
    return s;
}
// While waiting for transfers: dies when nothing happened for -T seconds, or when the socket
// closed. It is idle until the next barrier, and its end (the peer's process is gone) is the
// surest sign of a dead peer on any transport; checked at most every 0.1 s.
void watch() {
    const double t = now_s();
    if (g_peer.events != g_peer.seen_events) g_peer.seen_events = g_peer.events, g_peer.activity = t;
    else if (t - g_peer.activity > g_peer.timeout_s)
        die_peer("did not answer within %g s (-T): no message completed", g_peer.timeout_s);
    if (g_peer.fd < 0 || t - g_peer.last_check < 0.1) return;
    g_peer.last_check = t;
    pollfd p{g_peer.fd, POLLRDHUP, 0};
    if (::poll(&p, 1, 0) == 1 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR)))
        die_peer("closed the connection while transfers were in flight");
}

// The barrier's small writes must leave at once: with Nagle's algorithm one side of a barrier
// waited for the peer's delayed ACK, 40 ms inside the next timed iteration of the other side.
int no_delay(int fd) {
    const int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    return fd;
}

// Waits for one client, without a time limit (a server waits for its client).
int server_accept(int port) {
    const int lfd = ::socket(AF_INET, SOCK_STREAM, 0);
    const int one = 1;
    setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    sockaddr_in a{};
    a.sin_family = AF_INET, a.sin_port = htons(static_cast<uint16_t>(port));
    a.sin_addr.s_addr = INADDR_ANY;
    socklen_t alen = sizeof a;
    if (::bind(lfd, reinterpret_cast<sockaddr *>(&a), sizeof a) != 0 || ::listen(lfd, 1) != 0 ||
        ::getsockname(lfd, reinterpret_cast<sockaddr *>(&a), &alen) != 0)
        die("cannot listen on port %d: %s", port, std::strerror(errno));
    std::fprintf(stderr, "Waiting for connection on port %d...\n", ntohs(a.sin_port));
    int fd;
    sockaddr_in c{};
    socklen_t clen = sizeof c;
    do {
        fd = ::accept(lfd, reinterpret_cast<sockaddr *>(&c), &clen);
    } while (fd < 0 && errno == EINTR);
    ::close(lfd);
    if (fd < 0) die("accept: %s", std::strerror(errno));
    char host[INET_ADDRSTRLEN] = "?";
    inet_ntop(AF_INET, &c.sin_addr, host, sizeof host);
    g_peer.name = std::string(host) + ":" + std::to_string(ntohs(c.sin_port));
    return no_delay(fd);
}

// Connects within -T, retrying while the server may still be starting.
int client_connect(const std::string &host, int port) {
    g_peer.name = host + ":" + std::to_string(port);
    addrinfo hints{}, *res = nullptr;
    hints.ai_family = AF_INET, hints.ai_socktype = SOCK_STREAM;
    if (getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &res) != 0)
        die("cannot resolve %s", host.c_str());
    const double deadline = now_s() + g_peer.timeout_s;
    int fd = -1, err = 0;
    while (fd < 0) {
        fd = ::socket(AF_INET, SOCK_STREAM, 0);
        ::fcntl(fd, F_SETFL, O_NONBLOCK);
        err = ::connect(fd, res->ai_addr, res->ai_addrlen) == 0 ? 0 : errno;
        if (err == EINPROGRESS) {
            pollfd p{fd, POLLOUT, 0};
            const double left = std::max(0.0, deadline - now_s());
            socklen_t len = sizeof err;
            if (::poll(&p, 1, static_cast<int>(std::min(std::ceil(left * 1000), 60000.0))) == 1)
                ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len);
            else
                err = ETIMEDOUT;
        }
        if (err != 0) {
            ::close(fd), fd = -1;
            if (now_s() >= deadline)
                die_peer("did not answer within %g s (-T): cannot connect (%s)", g_peer.timeout_s,
                         std::strerror(err));
            usleep(100000);
        }
    }
    freeaddrinfo(res);
    return no_delay(fd);
}

}  // namespace
