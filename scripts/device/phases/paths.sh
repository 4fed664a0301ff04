# run-on-device.sh paths: scripts/compare-paths: pipeline, generic and packsend against ucx_perftest
# contiguous (layouts: UCXDT_PATHS_LAYOUTS, space-separated, default compare-paths' own)
# Sourced by run-on-device.sh, whose settings and run_step it uses; `return` ends the phase.
run_step "compare-paths" "$budget_paths" "$OUT/paths.log" "${with_libs[@]}" BIN="$C/bin" \
  UCX_PERFTEST="$C/bin/ucx_perftest" CSV="$OUT/paths.csv" bash "$C/../scripts/compare-paths" \
  ${UCXDT_PATHS_LAYOUTS:-}
