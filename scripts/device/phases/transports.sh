# run-on-device.sh transports: compare-paths (layouts: UCXDT_TRANSPORT_LAYOUTS) host-staged with
# UCX_TLS=tcp,cuda_copy and UCX_TLS=sm,cuda_copy (UCXDT_CUDA_IPC=n on both sides and the same
# UCX_TLS for the roofline), then over CUDA IPC with both processes on GPU 0
# Sourced by run-on-device.sh, whose settings and run_step it uses; `return` ends the phase.
tl=$transport_layouts
for tls in tcp,cuda_copy sm,cuda_copy; do
  run_step "compare-paths[$tls]" "$budget_transports" "$OUT/transports.log" "${with_libs[@]}" \
    UCX_TLS="$tls" UCXDT_CUDA_IPC=n BIN="$C/bin" UCX_PERFTEST="$C/bin/ucx_perftest" \
    CSV="$OUT/transports-${tls%%,*}.csv" bash "$C/../scripts/compare-paths" $tl
done
run_step "compare-paths[one GPU]" "$budget_transports" "$OUT/transports.log" "${with_libs[@]}" \
  CUDA_VISIBLE_DEVICES=0 BIN="$C/bin" UCX_PERFTEST="$C/bin/ucx_perftest" \
  CSV="$OUT/transports-onegpu.csv" bash "$C/../scripts/compare-paths" $tl
