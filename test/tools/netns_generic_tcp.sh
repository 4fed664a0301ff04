#!/usr/bin/env bash
# Two ucxdt_perftest processes in two network namespaces joined by a veth pair (MTU 1500, as
# between two nodes), the UCP generic datatype over TCP, every iteration checked (so a barrier
# follows every message). A sender whose send completed may still hold the message's last bytes
# in UCX's TCP transport, which sends them only from UCP progress: a process that stopped
# driving UCP while it waited out of band left its peer without them (the main job's stall
# across two nodes, performance-log.md run 31). The receiver unpacks bytes one at a time, so
# that the sender's socket stays full and the last fragment is sent in part.
#
# Usage: netns_generic_tcp.sh <ucxdt_perftest> [host|cuda] [runs]
# Environment: IP, the ip command (words; default ip); NS_EXEC_ENV, words run after
# `ip netns exec NAME` before each process (the GPU machine's carry: its library path).
# Exit 77 (skipped) where no namespace pair can be made (not root, no iproute2) or, for cuda,
# without a GPU. Each run bounds its waits (-T 5) and the pair script kills a survivor.
set -uo pipefail
bin=$1 mem=${2:-host} runs=${3:-3}
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
if [ "$mem" = cuda ] && ! nvidia-smi -L 2>/dev/null | grep -q '^GPU'; then echo "no GPU: skipped"; exit 77; fi

# shellcheck source=../../scripts/netns-pair.sh
. "$root/scripts/netns-pair.sh"
read -ra netns_ip <<<"${IP:-ip}"
a=ucxdt_t$$a b=ucxdt_t$$b   # unique per test process (CTest runs tests in parallel)
net=10.$((200 + $$ % 50)).$((($$ / 50) % 250))
trap 'netns_down "$a" "$b"' EXIT
if ! netns_pair "$a" "$b" va$$ vb$$ "$net" >/dev/null 2>&1; then
  echo "no network namespace pair here (needs root and iproute2): skipped"; exit 77
fi

# 128 fragments of 8,176 bytes (UCX 1.13's TCP segment less UCP's header): the last one full.
bytes=1046528
spec="contig:bytes=$bytes;vector:count=$bytes,blocklength=1,stride=2,type=byte"
tls=tcp
[ "$mem" = host ] || tls=tcp,cuda_copy
fails=0
for i in $(seq "$runs"); do
  out=$(env PAIR_SERVER_PREFIX="${netns_ip[*]} netns exec $a ${NS_EXEC_ENV:-}" PAIR_CLIENT_PREFIX="${netns_ip[*]} netns exec $b ${NS_EXEC_ENV:-}" PAIR_HOST=$net.1 \
          PAIR_GRACE=5 PAIR_TIMEOUT=60 UCX_TLS=$tls \
          UCX_TCP_SNDBUF=32k UCX_TCP_RCVBUF=32k \
          "$root/scripts/perftest-pair" "$bin" -t tag_bw -x generic -D "$spec" -m "$mem" -n 20 -w 0 -c -T 5 -f csv 2>&1)
  rc=$?
  if [ $rc -ne 0 ]; then
    fails=$((fails + 1))
    echo "run $i failed:"; echo "$out" | grep -v '^Waiting' | tail -n 8
  fi
done
echo "$runs runs across the namespace pair ($mem memory), $fails failed"
[ "$fails" -eq 0 ]
