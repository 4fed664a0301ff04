#!/usr/bin/env bash
# Runs pmpi_check under Open MPI with pml ucxdt and with a reference PML (Open MPI's own pml ucx
# by default), each under timeout, and fails unless pml ucxdt fails no case that the reference
# passes and every case both pass left the same digest: the same bytes in every receive buffer.
# Cases that fail under the reference too are Open MPI's own (its copies of a rank's local
# blocks in collectives) and are listed, not counted. A run that times out fails the pair,
# the reference's too: a hang is never expected, and the cases after it went unchecked.
#
#   run_pml_pair.sh MPIRUN [ARGS...] -- PROGRAM [ARGS...]
#   run_pml_pair.sh mpirun --oversubscribe -np 2 --mca mca_base_component_path build/ompi5:... -- \
#       build/test/pmpi_check_ompi5 --types 200
#
# PML_REFERENCE: the reference's MCA arguments (default: pml ucx on any UCX device and
# transport, as on a machine without InfiniBand); PAIR_TIMEOUT: seconds for each run (120).
set -uo pipefail

usage() { echo "usage: $0 MPIRUN [ARGS...] -- PROGRAM [ARGS...]" >&2; exit 2; }
launcher=()
while [ $# -gt 0 ] && [ "$1" != "--" ]; do launcher+=("$1"); shift; done
[ $# -ge 2 ] && [ ${#launcher[@]} -gt 0 ] || usage
shift
program=("$@")
read -r -a reference <<<"${PML_REFERENCE:---mca pml ucx --mca pml_ucx_devices any --mca pml_ucx_tls any}"

out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

# run NAME MCA-ARGS...: the run's log in $out/NAME.log, its failing cases in $out/NAME.failed,
# its digests in $out/NAME.digests (both sorted).
run() {
  local name=$1 rc
  shift
  echo "== $name: ${launcher[*]} $* ${program[*]}"
  timeout -k 10 "${PAIR_TIMEOUT:-120}" "${launcher[@]}" "$@" "${program[@]}" >"$out/$name.log" 2>&1
  rc=$?
  grep -a '^pmpi_check' "$out/$name.log"
  echo "== $name exited $rc$([ $rc -eq 124 ] && echo ' (timed out)')"
  [ $rc -ne 124 ] && [ $rc -ne 137 ] || timed_out+=("$name")
  grep -a '^FAIL rank [0-9]* [0-9]' "$out/$name.log" | sed 's/^FAIL rank [0-9]* \([^:]*\):.*/\1/' | sort -u >"$out/$name.failed"
  grep -a '^digest ' "$out/$name.log" | sort >"$out/$name.digests"
}

timed_out=()
run reference "${reference[@]}"
run ucxdt --mca pml ucxdt
failed=0
if [ ${#timed_out[@]} -gt 0 ]; then
  echo "FAIL: timed out: ${timed_out[*]}"; failed=1
  for n in "${timed_out[@]}"; do grep -a '^case ' "$out/$n.log" | tail -n 1; done
fi
if [ ! -s "$out/reference.digests" ]; then
  echo "FAIL: the reference printed no digest lines"; grep -av '^digest ' "$out/reference.log" | tail -n 20; failed=1
fi
if grep -aq 'MPI_ABORT\|pmpi_check: FAILED ([^)]*) *$' "$out/ucxdt.log" && [ ! -s "$out/ucxdt.failed" ]; then
  echo "FAIL: the ucxdt run ended without naming a failing case"; tail -n 20 "$out/ucxdt.log"; failed=1
fi
new=$(comm -13 "$out/reference.failed" "$out/ucxdt.failed")
if [ -n "$new" ]; then
  echo "FAIL: cases that fail with pml ucxdt only:"; echo "$new"
  grep -a "^FAIL\|^  types of" "$out/ucxdt.log" | head -n 40
  failed=1
fi
both=$(comm -12 "$out/reference.failed" "$out/ucxdt.failed")
[ -z "$both" ] || echo "== failing under the reference too (Open MPI's own): $(echo $both)"
# Digests of the cases neither run failed.
skip=$(cat "$out/reference.failed" "$out/ucxdt.failed" | sort -u)
keep() { if [ -n "$skip" ]; then grep -av -F -f <(sed 's/^/digest /; s/$/ /' <<<"$skip") "$1"; else cat "$1"; fi; }
keep "$out/reference.digests" >"$out/a"
keep "$out/ucxdt.digests" >"$out/b"
if ! diff "$out/a" "$out/b" >"$out/diff"; then
  echo "FAIL: digests differ (< reference, > ucxdt):"; head -n 20 "$out/diff"; failed=1
else
  echo "== $(wc -l <"$out/a") digests agree"
fi
exit $failed
