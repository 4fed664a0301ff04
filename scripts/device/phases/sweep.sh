# run-on-device.sh sweep: scripts/pipeline-sweep: 4 KiB tag_lat against ucx_perftest, and tag_bw of
# V into V and into contiguous from 1 to 128 MB against ucx_perftest contiguous
# Sourced by run-on-device.sh, whose settings and run_step it uses; `return` ends the phase.
run_step "pipeline-sweep" "$budget_sweep" "$OUT/sweep.log" "${with_libs[@]}" BIN="$C/bin" \
  UCX_PERFTEST="$C/bin/ucx_perftest" CSV="$OUT/sweep.csv" bash "$C/../scripts/pipeline-sweep"
