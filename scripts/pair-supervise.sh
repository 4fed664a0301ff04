# Sourced by perftest-pair and ucx-perftest-pair: the supervision of a server and a client that
# each run under `timeout` (which leads a process group of its own).
#   pair_supervise SPID CPID GRACE: waits until one side exits, gives the other GRACE seconds,
#   then stops what is left. Sets pair_first (server|client: the side that exited first) and
#   pair_killed (the sides it had to stop).

# A side is alive while any process of its group is (or, before timeout made the group, while
# timeout is).
pair_alive() { kill -0 -- "-$1" 2>/dev/null || kill -0 "$1" 2>/dev/null; }

pair_stop() {  # TERM (timeout passes it on), then KILL what is left after 2 s
  pair_alive "$1" || return 0
  kill -TERM -- "-$1" 2>/dev/null || kill -TERM "$1" 2>/dev/null
  for _ in $(seq 20); do pair_alive "$1" || return 0; sleep 0.1; done
  kill -KILL -- "-$1" 2>/dev/null || kill -KILL "$1" 2>/dev/null
}

pair_supervise() {
  local spid=$1 cpid=$2 grace=$3 end side pid
  while pair_alive "$spid" && pair_alive "$cpid"; do sleep 0.1; done
  pair_first=server; pair_alive "$spid" && pair_first=client
  end=$((SECONDS + grace))
  while { pair_alive "$spid" || pair_alive "$cpid"; } && [ "$SECONDS" -lt "$end" ]; do sleep 0.1; done
  pair_killed=
  for side in server client; do
    pid=$spid; [ $side = server ] || pid=$cpid
    if pair_alive "$pid"; then pair_stop "$pid"; pair_killed+=" $side"; fi
  done
}
