#!/usr/bin/env bash
# Runs pmpi_check with the PMPI interposer preloaded and without it (the baseline), each under
# timeout, and fails unless both pass and print the same digest lines: the same cases, whose
# receive buffers ended alike. (Cases that a known deviation of the MPI keeps out of the
# baseline print `deviating` lines instead, which are not compared.)
#
#   run_pair.sh INTERPOSER LAUNCHER... -- PROGRAM [ARGS...]
#   run_pair.sh build/pmpi/ucxdt_pmpi_openmpi/libucxdt_pmpi.so mpirun.openmpi --oversubscribe -np 2 -- \
#       build/test/pmpi_check_openmpi --types 200
#
# PAIR_TIMEOUT: seconds for each run (120).
set -uo pipefail

usage() { echo "usage: $0 INTERPOSER LAUNCHER... -- PROGRAM [ARGS...]" >&2; exit 2; }
[ $# -ge 1 ] || usage
preload=$1
shift
launcher=()
while [ $# -gt 0 ] && [ "$1" != "--" ]; do launcher+=("$1"); shift; done
[ $# -ge 2 ] && [ ${#launcher[@]} -gt 0 ] || usage
shift
program=("$@")

out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
failed=0

# run NAME COMMAND...: its output shown but for the per-case lines, its digest lines kept in
# $out/NAME.
run() {
  local name=$1 rc
  shift
  echo "== $name: $*"
  timeout -k 10 "${PAIR_TIMEOUT:-120}" "$@" >"$out/$name.log" 2>&1
  rc=$?
  grep -v '^digest \|^deviating ' "$out/$name.log"
  echo "== $name exited $rc$([ $rc -eq 124 ] && echo ' (timed out)')"
  grep '^digest ' "$out/$name.log" >"$out/$name"
  [ $rc -eq 0 ] || failed=1
}

run interposed "${launcher[@]}" env LD_PRELOAD="$preload" UCXDT_PMPI_HOST=1 "${program[@]}" \
  --expect-interposer
run baseline "${launcher[@]}" "${program[@]}"

if [ ! -s "$out/baseline" ]; then
  echo "FAIL: the baseline printed no digest lines"
  failed=1
elif ! diff "$out/baseline" "$out/interposed"; then
  echo "FAIL: the digests differ (< baseline, > interposed)"
  failed=1
else
  echo "== $(wc -l <"$out/baseline") digests agree"
fi
exit $failed
