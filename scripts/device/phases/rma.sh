# run-on-device.sh rma: scripts/compare-rma: one-sided put_bw and get_bw against ucx_perftest
# ucp_put_bw and ucp_get contiguous (layouts: UCXDT_RMA_LAYOUTS, space-separated, default its own)
# Sourced by run-on-device.sh, whose settings and run_step it uses; `return` ends the phase.
run_step "compare-rma" "$budget_paths" "$OUT/rma.log" "${with_libs[@]}" BIN="$C/bin" \
  UCX_PERFTEST="$C/bin/ucx_perftest" CSV="$OUT/rma.csv" bash "$C/../scripts/compare-rma" \
  ${UCXDT_RMA_LAYOUTS:-}
