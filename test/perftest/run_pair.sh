#!/bin/bash
# Starts an ucxdt_perftest server and client on localhost on a free port, with a time limit;
# passes when both exit 0 and the client prints "verified:". Usage: run_pair.sh <binary> <args...>
set -u
bin=$1; shift
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("",0)); print(s.getsockname()[1])')
out=$(mktemp); err=$(mktemp)
timeout 120 "$bin" -p "$port" 2>"$err.server" & spid=$!
timeout 120 "$bin" -p "$port" "$@" localhost >"$out" 2>"$err"; crc=$?
wait "$spid"; src=$?
cat "$out"; cat "$err" "$err.server" >&2
ok=0
[ "$crc" -eq 0 ] || { echo "client exited $crc" >&2; ok=1; }
[ "$src" -eq 0 ] || { echo "server exited $src" >&2; ok=1; }
grep -Eq '^verified:|,yes$|"verified":true' "$out" || { echo "the client output does not say verified" >&2; ok=1; }
rm -f "$out" "$err" "$err.server"
exit $ok
