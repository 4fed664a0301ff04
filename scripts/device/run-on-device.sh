#!/usr/bin/env bash
# Runs ucxdt's GPU checks on the device machine, from the repository root:
#   bash .carry/run-on-device.sh [PHASE...]     (default: all, which is tests sanitize bench)
# Each phase is a file of phases/ (scripts/device/phases/ in the tree), which says what it runs:
#   tests, sanitize, bench    the GPU tests, them under compute-sanitizer, ucxdt_packbench
#   demo, paths, rma, sweep   the README's main job; compare-paths, compare-rma, pipeline-sweep
#   share, transports, netns  GPU sharing; host-staged transports; two network namespaces
#   mpi, pmpi, pml            the carried Open MPI 5: CUDA awareness, the interposer, pml ucxdt
#   mpich, mpich-gpu, peers   MPICH 5 beside ucxdt; MPICH's GPU test lists; table l in one call
#   scaling                   one rank per GPU: halo3d's weak scaling, the collectives
# Every step is bounded by `timeout`; `all` fits in UCXDT_DEADLINE_S (default 570 s, inside the
# device's 10-minute command limit). Logs go to $OUT (or .carry/out); a summary table is last.
# Exit status: 0 when every step that ran passed.
set -uo pipefail
C=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
OUT=${OUT:-$C/out}
mkdir -p "$OUT"
t0=$SECONDS
usage() {
  echo "usage: run-on-device.sh [all|$(cd "$C/phases" && ls *.sh | sed 's/\.sh$//' | paste -sd'|')]..."
}

phases=("$@")
[ ${#phases[@]} -gt 0 ] || phases=(all)
for p in "${phases[@]}"; do
  [ "$p" = all ] || [ -f "$C/phases/$p.sh" ] || { usage >&2; exit 2; }
done
if [ "${phases[*]}" = all ]; then
  phases=(tests sanitize bench)
  # Shares of the deadline when everything runs in one command.
  budget_tests=${UCXDT_TESTS_S:-170}; budget_san=${UCXDT_SANITIZE_S:-110}
  budget_bench=${UCXDT_BENCH_S:-170}
else
  budget_tests=${UCXDT_TESTS_S:-540}; budget_san=${UCXDT_SANITIZE_S:-260}
  budget_bench=${UCXDT_BENCH_S:-540}
fi
budget_demo=${UCXDT_DEMO_S:-240}; budget_paths=${UCXDT_PATHS_S:-300}
budget_sweep=${UCXDT_SWEEP_S:-200}; budget_transports=${UCXDT_TRANSPORTS_S:-100}
budget_netns=${UCXDT_NETNS_S:-150}; budget_mpi=${UCXDT_MPI_S:-60}; budget_pmpi=${UCXDT_PMPI_S:-150}
budget_mpich_gpu=${UCXDT_MPICH_GPU_S:-540}
transport_layouts=${UCXDT_TRANSPORT_LAYOUTS:-"submatrix:n=4000 nas_mg_y:514,258,258 fft2_scatter:N=1536,P=2"}
deadline=${UCXDT_DEADLINE_S:-570}

# Our libraries first, then the device's CUDA runtime, then the carried one as a fallback. Set
# per command, not exported, so the device's own tools keep their libraries.
cuda_lib=""
for d in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib /usr/local/cuda/lib; do
  if [ -e "$d/libcudart.so.13" ]; then cuda_lib=$d; break; fi
done
libs="$C/lib:$C/lib/ucx${cuda_lib:+:$cuda_lib}:$C/lib-cudart${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
with_libs=(env LD_LIBRARY_PATH="$libs" UCX_MODULE_DIR="$C/lib/ucx" GTEST_BRIEF=1)
sanitizer=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
# The carried Open MPI 5 finds its components and help texts under the prefix it is told; root
# may run it. pml ucx, whatever the transports: by default it declines a machine without
# InfiniBand.
O=$C/ompi
ompi_env=(env LD_LIBRARY_PATH="$O/lib:$libs" UCX_MODULE_DIR="$C/lib/ucx" PATH="$O/bin:$PATH"
          OPAL_PREFIX="$O" PRTE_PREFIX="$O" PMIX_PREFIX="$O"
          OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
          OMPI_MCA_pml=ucx OMPI_MCA_pml_ucx_tls=any OMPI_MCA_pml_ucx_devices=any)
# pml ucxdt instead, found in its own directory beside Open MPI's.
ucxdt_pml=(--mca pml ucxdt --mca mca_base_component_path "$O/pml:$O/lib/openmpi")
# The GPU tests, one binary per concept (test/cuda/test_gpu_*.cpp).
gpu_tests=(test_gpu_engine test_gpu_method test_gpu_memory test_gpu_async test_gpu_reduce)
gpu_missing=()
for t in "${gpu_tests[@]}"; do [ -x "$C/bin/$t" ] || gpu_missing+=("$t"); done

# The GPUs present (at least 1): one rank, or one demo at a time, per GPU.
ngpu=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU'); [ "$ngpu" -ge 1 ] || ngpu=1
summary=()   # "step|result|seconds|detail"
failed=0

# run_step NAME BUDGET LOG CMD...: runs CMD bounded by the smaller of BUDGET and the deadline.
run_step() {
  local name=$1 budget=$2 logf=$3; shift 3
  local left=$((deadline - (SECONDS - t0) - 5))
  [ "$budget" -lt "$left" ] || budget=$left
  if [ "$budget" -lt 15 ]; then
    summary+=("$name|SKIPPED|0|no time left before the ${deadline} s deadline"); return
  fi
  echo "=== $name (limit ${budget} s) ===" | tee -a "$logf"
  local s=$SECONDS rc step
  step=$(mktemp)
  timeout -k 10 "$budget" "$@" 2>&1 | tee "$step" | tee -a "$logf"
  rc=${PIPESTATUS[0]}
  local took=$((SECONDS - s)) result detail
  case $rc in
    0) result=PASS ;;
    124|137) result=TIMEOUT; failed=1 ;;
    # Everything skipped: ucxdt_packbench, or a gtest binary none of whose cases ran here
    # (test/harness/gtest_main.cpp), found no CUDA device. On the GPU machine that is a failure.
    77) result="SKIP(77)"; failed=1 ;;
    *) result="FAIL($rc)"; failed=1 ;;
  esac
  detail=$(grep -aE "^\[  (PASSED  |SKIPPED )\]|^\[  FAILED  \] [0-9]+ test|SUMMARY:|results, [0-9]+ failed|^\[mpich-suite\] ([0-9]+ runs under|[a-z0-9]+ +[0-9]+ passed)" \
           "$step" | grep -avE "^\[  SKIPPED \] [A-Za-z]" | tail -n 3 | tr '\n' ' ')
  rm -f "$step"
  summary+=("$name|$result|$took|$detail")
}

# halo3d_steps TAG LOG BUDGET MODE...: halo3d on device buffers, 7-point (256^3 a rank) and
# 27-point (128^3), launched by the caller's "${mpirun[@]}", one step per stencil and MODE:
# datatype (pml ucxdt, Isend), persistent (pml ucxdt, -P), handpack (under pml ucx),
# handpack-ucxdt, put (MPI_Put into the halos in fence and in PSCW epochs, osc ucxdt), pmpi (the
# interposer over pml ucx, where carried).
halo3d_steps() {
  local tag=$1 logf=$2 budget=$3 s g mode sync pmpi=$C/lib/pmpi/libucxdt_pmpi.so; shift 3
  for s in 7 27; do
    g=256,256,256; [ $s = 7 ] || g=128,128,128
    local halo=("$C/bin/halo3d" -g "$g" -s "$s" -m device -f csv -n 50 -W 5)
    for mode in "$@"; do
      case $mode in
        datatype) run_step "halo3d[s$s,$tag,pml ucxdt]" "$budget" "$logf" "${ompi_env[@]}" \
                    "${mpirun[@]}" "${ucxdt_pml[@]}" "${halo[@]}" -x datatype ;;
        persistent) run_step "halo3d[s$s,$tag,pml ucxdt -P]" "$budget" "$logf" "${ompi_env[@]}" \
                      "${mpirun[@]}" "${ucxdt_pml[@]}" "${halo[@]}" -x datatype -P ;;
        handpack) run_step "halo3d[s$s,$tag,handpack ucx]" "$budget" "$logf" "${ompi_env[@]}" \
                    "${mpirun[@]}" "${halo[@]}" -x handpack ;;
        handpack-ucxdt) run_step "halo3d[s$s,$tag,handpack ucxdt]" "$budget" "$logf" "${ompi_env[@]}" \
                          "${mpirun[@]}" "${ucxdt_pml[@]}" "${halo[@]}" -x handpack ;;
        put) for sync in fence pscw; do
               run_step "halo3d[s$s,$tag,put $sync]" "$budget" "$logf" "${ompi_env[@]}" \
                 "${mpirun[@]}" "${ucxdt_pml[@]}" "${halo[@]}" -x put -S "$sync"
             done ;;
        pmpi) [ ! -e "$pmpi" ] || run_step "halo3d[s$s,$tag,pmpi]" "$budget" "$logf" "${ompi_env[@]}" \
                "${mpirun[@]}" env LD_PRELOAD="$pmpi" "${halo[@]}" -x datatype ;;
        *) echo "halo3d_steps: no mode $mode" >&2; return 2 ;;
      esac
    done
  done
}

{
  echo "host: $(hostname)  date: $(date -u +%FT%TZ)"
  nvidia-smi -L 2>&1
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>&1
  echo "CUDA runtime dir: ${cuda_lib:-none found, using the carried one}"
  cat "$C/MANIFEST" 2>/dev/null
  for b in "$C"/bin/*; do
    nf=$("${with_libs[@]}" ldd "$b" 2>&1 | grep "not found")
    [ -z "$nf" ] || echo "WARNING $(basename "$b"): $nf"
  done
} 2>&1 | tee "$OUT/env.txt"


for phase in "${phases[@]}"; do
  # shellcheck source=/dev/null
  . "$C/phases/$phase.sh"
done

{
  echo
  echo "==================== summary ($((SECONDS - t0)) s) ===================="
  printf '%-28s %-10s %6s  %s\n' step result s detail
  for row in "${summary[@]}"; do
    IFS='|' read -r n r s d <<< "$row"
    printf '%-28s %-10s %6s  %s\n' "$n" "$r" "$s" "$d"
  done
  if [ -s "$OUT/packbench.csv" ] && command -v python3 >/dev/null; then
    echo
    python3 - "$OUT/packbench.csv" <<'PY'
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
f = lambda r, k, d=0: ("%.*f" % (d, float(r[k]))) if r.get(k) else "-"
print("%-36s %8s %-14s %7s %7s %7s %5s %5s %7s %5s" % ("layout", "MB", "method", "pack",
      "unpack", "memcpy", "p/m", "u/m", "bound", "p/bnd"))
for r in rows:
    if r["section"] != "layout":
        continue
    print("%-36s %8s %-14s %7s %7s %7s %5s %5s %7s %5s%s" % (r["layout"][:36],
          "%.1f" % (int(r["packed_bytes"]) / 1e6), r["gpu_method"], f(r, "pack_GBps"),
          f(r, "unpack_GBps"), f(r, "memcpy_GBps"), f(r, "pack_vs_memcpy", 2),
          f(r, "unpack_vs_memcpy", 2), f(r, "sector_bound_GBps"), f(r, "pack_vs_bound", 2),
          "" if r["verified"] == "yes" else "  NOT VERIFIED"))
small = [r for r in rows if r["section"] == "small"]
if small:
    print("%-36s %8s %9s %9s %9s" % ("small message (us, to completion)", "bytes", "pack",
          "async", "memcpy"))
    for r in small:
        print("%-36s %8s %9s %9s %9s" % (r["layout"], r["packed_bytes"], f(r, "e2e_pack_us", 1),
              f(r, "e2e_async_us", 1), f(r, "e2e_memcpy_us", 1)))
PY
  fi
  echo "GB/s of packed bytes; logs and results in $OUT"
} 2>&1 | tee "$OUT/summary.txt"
exit $failed
