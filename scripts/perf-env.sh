# Sourced by compare-paths, compare-rma, compare-sgl, pipeline-sweep and gpu-share: where the
# binaries are, which memory and GPUs the two processes use, how many messages are in flight, a
# reader for ucxdt_perftest's CSV, and a table printer for the scripts' CSV files.
#   sets: root bin ucx_perftest mem window err_mode; exports PAIR_SERVER_GPU / PAIR_CLIENT_GPU on
#   2+ GPUs
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
bin=${BIN:-$root/build}
ucx_perftest=${UCX_PERFTEST:-$(ls "${XDG_CACHE_HOME:-$HOME/.cache}"/ucxdt/ucx-1.13.1-*/bin/ucx_perftest 2>/dev/null | tail -n 1)}
gpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU' || true)
# CUDA_VISIBLE_DEVICES=0 puts both processes on one GPU (ucx_perftest included).
[ -z "${CUDA_VISIBLE_DEVICES:-}" ] || gpus=$(awk -F, '{print NF}' <<<"$CUDA_VISIBLE_DEVICES")
mem=${MEM:-$([ "${gpus:-0}" -ge 1 ] && echo cuda || echo host)}
if [ "${gpus:-0}" -ge 2 ]; then export PAIR_SERVER_GPU=0 PAIR_CLIENT_GPU=1; fi
window=${WINDOW:-32}
# ucxdt_perftest -e: UCP's error handling mode (ERR_MODE, default none), as ucx_perftest runs
# without -e, so that both tools choose among the same transports (peer mode leaves out CMA).
err_mode=${ERR_MODE:-none}

# iterations_for BYTES: messages per timed run, about 2 GB of traffic (100 to 20,000). A run must
# last long enough that a few slow messages (ucxdt_perftest's slowest, 300-600 us on two H200s,
# is usually the first after the window restarts) do not weigh: 200 messages of 1 MiB take 2 ms.
iterations_for() {
  local n=$(( 2000000000 / ($1 > 0 ? $1 : 1) ))
  [ "$n" -ge 100 ] || n=100
  [ "$n" -le 20000 ] || n=20000
  echo "$n"
}

# csv_fields ROW INDEX...: the columns of one ucxdt_perftest CSV row, space-separated.
csv_fields() {
  python3 -c 'import csv, sys; r = next(csv.reader([sys.argv[1]])); print(*(r[int(i)] for i in sys.argv[2:]))' "$@"
}

# csv_table FILE LEFT KEY=HEADER...: FILE's rows (a CSV with a header line) as a table of the
# named columns under their headers, aligned: the first LEFT columns to the left, the rest (the
# figures) to the right.
csv_table() {
  python3 - "$@" <<'PY'
import csv, sys
path, left, cols = sys.argv[1], int(sys.argv[2]), [c.split("=", 1) for c in sys.argv[3:]]
t = [[h for _, h in cols]] + [[r[k] for k, _ in cols] for r in csv.DictReader(open(path))]
w = [max(len(x[i]) for x in t) for i in range(len(cols))]
for x in t:
    print("  ".join(v.ljust(w[i]) if i < left else v.rjust(w[i]) for i, v in enumerate(x)))
PY
}
