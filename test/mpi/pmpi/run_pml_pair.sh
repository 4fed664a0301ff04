#!/usr/bin/env bash
# Runs pmpi_check under Open MPI with pml ucxdt and with a reference PML (Open MPI's own pml ucx
# by default), each under timeout, and fails unless
# - each run reached its end: pmpi_check's count line (`pmpi_check: N cases checked ...`) and
#   its verdict (`pmpi_check: PASSED (0 failures)` or `FAILED (N failures)`), with the exit
#   status the verdict calls for (0 for PASSED, 1 for FAILED); a run that aborted, hung, or
#   crashed after its verdict (in MPI_Finalize, say) fails the pair, the reference's too, and
#   so do both runs aborting at the same case;
# - a FAILED verdict names its failing cases (`FAIL rank R CASE: ...`);
# - both runs checked as many cases, and skipped as many for a known deviation;
# - pml ucxdt fails no case, except one that fails under the reference too AND is listed, with
#   its reason, in KNOWN (pml_reference_failures.txt beside this script). A case that fails
#   under the reference alone is shown, not counted: it must pass with pml ucxdt;
# - every case both runs passed left the same digest: the same bytes in every receive buffer.
#
#   run_pml_pair.sh MPIRUN [ARGS...] -- PROGRAM [ARGS...]
#   run_pml_pair.sh mpirun --oversubscribe -np 2 --mca mca_base_component_path build/ompi5:... -- \
#       build/test/pmpi_check_ompi5 --types 200
#
# PML_REFERENCE: the reference's MCA arguments (default: pml ucx on any UCX device and
# transport, as on a machine without InfiniBand); PAIR_TIMEOUT: seconds for each run (120);
# PML_KNOWN: the list of cases pml ucxdt may fail with the reference (KNOWN above).
set -uo pipefail

usage() { echo "usage: $0 MPIRUN [ARGS...] -- PROGRAM [ARGS...]" >&2; exit 2; }
launcher=()
while [ $# -gt 0 ] && [ "$1" != "--" ]; do launcher+=("$1"); shift; done
[ $# -ge 2 ] && [ ${#launcher[@]} -gt 0 ] || usage
shift
program=("$@")
read -r -a reference <<<"${PML_REFERENCE:---mca pml ucx --mca pml_ucx_devices any --mca pml_ucx_tls any}"
known_file=${PML_KNOWN:-$(dirname "${BASH_SOURCE[0]}")/pml_reference_failures.txt}
[ -r "$known_file" ] || { echo "FAIL: no list of known reference failures at $known_file"; exit 1; }

out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
failed=0
fail() { echo "FAIL: $*"; failed=1; }

# The listed cases (first word of each line that is not a comment), sorted.
grep -v '^[[:space:]]*\(#\|$\)' "$known_file" | awk '{print $1}' | sort -u >"$out/known"

# run NAME MCA-ARGS...: the run's log in $out/NAME.log, its failing cases in $out/NAME.failed,
# its digests in $out/NAME.digests (both sorted); checks that it ran to its verdict with the
# matching exit status, and keeps its count line in $out/NAME.count.
run() {
  local name=$1 rc count verdict
  shift
  echo "== $name: ${launcher[*]} $* ${program[*]}"
  timeout -k 10 "${PAIR_TIMEOUT:-120}" "${launcher[@]}" "$@" "${program[@]}" >"$out/$name.log" 2>&1
  rc=$?
  grep -a '^pmpi_check' "$out/$name.log"
  echo "== $name exited $rc$([ $rc -eq 124 ] && echo ' (timed out)')"
  grep -a '^FAIL rank [0-9]* [0-9]' "$out/$name.log" | sed 's/^FAIL rank [0-9]* \([^:]*\):.*/\1/' | sort -u >"$out/$name.failed"
  grep -a '^digest ' "$out/$name.log" | sort >"$out/$name.digests"
  # "pmpi_check: 556 cases checked on 2 ranks in 0.2 s (baseline), 44 of them skipped ...":
  # the counts, without the time.
  count=$(grep -a '^pmpi_check: [0-9]* cases checked on ' "$out/$name.log" |
          sed 's/ in [0-9.]* s / /' | tail -n 1)
  echo "$count" >"$out/$name.count"
  verdict=$(grep -a '^pmpi_check: \(PASSED\|FAILED\) ([0-9]* failures)$' "$out/$name.log" | tail -n 1)
  if [ $rc -eq 124 ] || [ $rc -eq 137 ]; then
    fail "$name timed out"; grep -a '^case \|^digest ' "$out/$name.log" | tail -n 1
    return
  fi
  if [ -z "$count" ] || [ -z "$verdict" ]; then
    fail "$name ended (exit status $rc) before pmpi_check's $([ -z "$count" ] && echo "count line" || echo verdict)"
    grep -av '^digest \|^deviating \|^\[\|^	\|^or$' "$out/$name.log" | tail -n 20
    return
  fi
  case "$verdict" in
    *PASSED*) [ $rc -eq 0 ] || fail "$name: '$verdict', but exit status $rc (a crash after the verdict?)" ;;
    *) [ $rc -eq 1 ] || fail "$name: '$verdict', but exit status $rc, not 1 (a crash after the verdict?)"
       [ -s "$out/$name.failed" ] || { fail "$name: '$verdict' without naming a failing case"; grep -a '^FAIL' "$out/$name.log" | head -n 20; } ;;
  esac
}

run reference "${reference[@]}"
run ucxdt --mca pml ucxdt

if [ ! -s "$out/reference.digests" ]; then
  fail "the reference printed no digest lines"
fi
if [ -s "$out/reference.count" ] && [ -s "$out/ucxdt.count" ] && ! cmp -s "$out/reference.count" "$out/ucxdt.count"; then
  fail "the runs checked different cases:"; echo "  reference: $(cat "$out/reference.count")"; echo "  ucxdt:     $(cat "$out/ucxdt.count")"
fi
new=$(comm -13 "$out/reference.failed" "$out/ucxdt.failed")
if [ -n "$new" ]; then
  fail "cases that fail with pml ucxdt only:"; echo "$new"
  grep -a "^FAIL\|^  types of" "$out/ucxdt.log" | head -n 40
fi
both=$(comm -12 "$out/reference.failed" "$out/ucxdt.failed")
unlisted=$(comm -23 <(echo "$both" | sed '/^$/d') "$out/known")
if [ -n "$unlisted" ]; then
  fail "cases that fail under the reference and pml ucxdt both, not listed in $known_file:"; echo "$unlisted"
  grep -a "^FAIL\|^  types of" "$out/ucxdt.log" | grep -aF -f <(echo "$unlisted") | head -n 40
fi
listed=$(comm -12 <(echo "$both" | sed '/^$/d') "$out/known")
[ -z "$listed" ] || echo "== failing under the reference too, listed in $(basename "$known_file"): $(echo $listed)"
only_ref=$(comm -23 "$out/reference.failed" "$out/ucxdt.failed")
[ -z "$only_ref" ] || echo "== failing under the reference only (pml ucxdt passes them): $(echo $only_ref)"
# Digests of the cases neither run failed.
skip=$(cat "$out/reference.failed" "$out/ucxdt.failed" | sort -u)
keep() { if [ -n "$skip" ]; then grep -av -F -f <(sed 's/^/digest /; s/$/ /' <<<"$skip") "$1"; else cat "$1"; fi; }
keep "$out/reference.digests" >"$out/a"
keep "$out/ucxdt.digests" >"$out/b"
if ! diff "$out/a" "$out/b" >"$out/diff"; then
  fail "digests differ (< reference, > ucxdt):"; head -n 20 "$out/diff"
else
  echo "== $(wc -l <"$out/a") digests agree"
fi
[ $failed -eq 0 ] && echo "== PASS" || echo "== FAIL"
exit $failed
