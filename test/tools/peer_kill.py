#!/usr/bin/env python3
"""A peer of ucxdt_perftest fails; the survivor must exit non-zero, in time, saying so.

  peer_kill.py BIN --victim server|client [--mode kill|stop|handshake-close|handshake-silent]
               [--path P] [--test tag_bw|put_bw|get_bw] [--mem host|cuda]
               [--err-mode peer|none] [--limit S]

kill: server and client on localhost run --test (tag_bw, or a one-sided put_bw or get_bw) with
an endless -n; once the client reports
timed iterations (so both are mid-run), the victim gets SIGKILL. stop: the same with SIGSTOP,
the survivor running with -T 5, so only its timeout can end it. handshake-*: the victim is a fake
peer of this script that closes the out-of-band connection half-way through the handshake, or
stays silent in it (the survivor runs with -T 3).

Passes when the survivor exits within --limit seconds (30) of the failure, with a non-zero
status (not by a signal), and an error naming the peer and how it failed. Exit 77 (skipped)
when --mem cuda and the binary finds no CUDA GPU.
"""
import argparse
import os
import re
import signal
import socket
import struct
import subprocess
import sys
import threading
import time

SKIP = 77


class Proc:
    """A process whose output lines (stdout and stderr) are collected as they come."""

    def __init__(self, name, argv):
        self.name, self.argv = name, argv
        self.lines = []
        self.cond = threading.Condition()
        self.p = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                  stdin=subprocess.DEVNULL, text=True, errors="replace")
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self):
        for line in self.p.stdout:
            with self.cond:
                self.lines.append(line.rstrip("\n"))
                self.cond.notify_all()
        with self.cond:
            self.cond.notify_all()

    def wait_line(self, pattern, timeout):
        """The first match of `pattern` in the output within `timeout` s, or None."""
        rx = re.compile(pattern)
        end = time.monotonic() + timeout
        with self.cond:
            while True:
                for line in self.lines:
                    m = rx.search(line)
                    if m:
                        return m
                left = end - time.monotonic()
                if left <= 0 or not self.reader.is_alive():
                    return None
                self.cond.wait(min(left, 0.2))

    def text(self):
        self.reader.join(timeout=5 if self.p.poll() is not None else 0)
        with self.cond:
            return "\n".join(self.lines)

    def kill(self):
        if self.p.poll() is None:
            self.p.send_signal(signal.SIGKILL)
        try:
            self.p.wait(10)
        except subprocess.TimeoutExpired:
            pass


def fail(msg, *procs):
    print("FAIL: " + msg)
    for p in procs:
        if p is not None:
            print("---- %s: %s\n%s" % (p.name, " ".join(p.argv), p.text()))
    return 1


def no_gpu(binary):
    """True when the binary reports that no CUDA GPU is there (one pack on cuda memory)."""
    r = subprocess.run([binary, "-t", "pack", "-m", "cuda", "-n", "1", "-w", "0"],
                       capture_output=True, text=True, timeout=120)
    return r.returncode != 0 and "needs a CUDA GPU" in r.stderr


def start_server(a, extra):
    s = Proc("server", [a.bin, "-p", "0"] + extra)
    m = s.wait_line(r"Waiting for connection on port (\d+)", 60)
    return s, (int(m.group(1)) if m else None)


def client_argv(a, port, extra):
    return ([a.bin, "-p", str(port), "-t", a.test, "-x", a.path, "-m", a.mem,
             "-e", a.err_mode, "-n", "1000000000", "-w", "2"] + extra + ["127.0.0.1"])


def judge(a, survivor, victim_name, since, expect, peer_name, others):
    """Waits for the survivor and checks its status and message."""
    try:
        rc = survivor.p.wait(timeout=a.limit)
    except subprocess.TimeoutExpired:
        return fail("the %s was still running %.0f s after its peer (%s) %s" %
                    (survivor.name, a.limit, victim_name, a.mode), survivor, *others)
    took = time.monotonic() - since
    if rc == 0:
        return fail("the %s exited 0 after its peer failed" % survivor.name, survivor, *others)
    if rc < 0:
        return fail("the %s died of signal %d instead of exiting with an error" %
                    (survivor.name, -rc), survivor, *others)
    m = re.search(r"error: peer (\S+) (%s).*" % expect, survivor.text())
    if not m:
        return fail("the %s exited %d without an error that names the peer and /%s/" %
                    (survivor.name, rc, expect), survivor, *others)
    if peer_name and m.group(1) != peer_name:
        return fail("the %s names peer %s, not %s" % (survivor.name, m.group(1), peer_name),
                    survivor, *others)
    print("PASS (-x %s, %s memory, -e %s): the %s exited %d %.2f s after the %s's %s: %s" %
          (a.path, a.mem, a.err_mode, survivor.name, rc, took, victim_name, a.mode, m.group(0)))
    return 0


def run_pair(a):
    """kill / stop: a real server and client, mid-run."""
    timeout = ["-T", "5"] if a.mode == "stop" else []
    server, port = start_server(a, timeout)
    client = None
    try:
        if port is None:
            return fail("the server never said which port it listens on", server)
        client = Proc("client", client_argv(a, port, timeout))
        if not client.wait_line(r"\[ucxdt_perftest\] \d+/\d+ iterations", 120):
            return fail("the client never reported timed iterations", server, client)
        for p in (server, client):
            if p.p.poll() is not None:
                return fail("the %s ended before the %s" % (p.name, a.mode), server, client)
        victim, survivor = (server, client) if a.victim == "server" else (client, server)
        victim.p.send_signal(signal.SIGKILL if a.mode == "kill" else signal.SIGSTOP)
        since = time.monotonic()
        expect = "did not answer within" if a.mode == "stop" else "closed the connection|failed"
        peer_name = "127.0.0.1:%d" % port if survivor is client else None
        return judge(a, survivor, victim.name, since, expect, peer_name, [victim])
    finally:
        for p in (client, server):
            if p is not None:
                p.kill()


def read_blob(conn):
    head = b""
    while len(head) < 8:
        chunk = conn.recv(8 - len(head))
        if not chunk:
            return None
        head += chunk
    (n,) = struct.unpack("<Q", head)
    data = b""
    while len(data) < n:
        chunk = conn.recv(n - len(data))
        if not chunk:
            return None
        data += chunk
    return data


def run_handshake(a):
    """handshake-*: this script is the victim, in the out-of-band handshake."""
    silent = a.mode == "handshake-silent"
    timeout = ["-T", "3" if silent else "20"]
    held = []
    if a.victim == "client":
        server, port = start_server(a, timeout)
        try:
            if port is None:
                return fail("the server never said which port it listens on", server)
            c = socket.create_connection(("127.0.0.1", port))
            held.append(c)
            if not silent:
                c.sendall(struct.pack("<Q", 100)[:4])  # half a length
                c.close()
            since = time.monotonic()
            expect = (r"did not answer within 3 s \(-T\) while waiting for the parameters" if silent else
                      "closed the connection while waiting for the parameters")
            return judge(a, server, "client", since, expect, None, [])
        finally:
            server.kill()
    lsock = socket.socket()
    lsock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    lsock.bind(("127.0.0.1", 0))
    lsock.listen(1)
    port = lsock.getsockname()[1]
    client = Proc("client", client_argv(a, port, timeout))
    try:
        lsock.settimeout(60)
        conn, _ = lsock.accept()
        held.append(conn)
        conn.settimeout(60)
        params = read_blob(conn)
        if not params or b"test=tag_bw" not in params:
            return fail("the client sent no parameters", client)
        if not silent:
            conn.close()
        since = time.monotonic()
        expect = "did not answer within 3 s" if silent else "closed the connection"
        return judge(a, client, "server", since, expect, "127.0.0.1:%d" % port, [])
    finally:
        client.kill()
        lsock.close()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("bin")
    ap.add_argument("--victim", choices=["server", "client"], required=True)
    ap.add_argument("--mode", default="kill",
                    choices=["kill", "stop", "handshake-close", "handshake-silent"])
    ap.add_argument("--path", default="pipeline", choices=["pipeline", "generic", "packsend"])
    ap.add_argument("--test", default="tag_bw", choices=["tag_bw", "put_bw", "get_bw"])
    ap.add_argument("--mem", default="host", choices=["host", "cuda"])
    ap.add_argument("--err-mode", default="peer", choices=["peer", "none"])
    ap.add_argument("--limit", type=float, default=30.0)
    a = ap.parse_args()
    if not os.access(a.bin, os.X_OK):
        return fail("%s is not an executable" % a.bin)
    if a.mem == "cuda" and no_gpu(a.bin):
        print("SKIP: no CUDA GPU")
        return SKIP
    return run_handshake(a) if a.mode.startswith("handshake") else run_pair(a)


if __name__ == "__main__":
    sys.exit(main())
