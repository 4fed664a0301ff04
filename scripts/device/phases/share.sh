# run-on-device.sh share: scripts/gpu-share: the transfer with UCXDT_GPU_SMS bounds (on GPU 0, then
# across two GPUs where there are two), and with an application's kernels on 100/50/25% of the
# multiprocessors at each stream priority (both processes on GPU 0)
# Sourced by run-on-device.sh, whose settings and run_step it uses; `return` ends the phase.
share=(BIN="$C/bin" UCX_PERFTEST="$C/bin/ucx_perftest" CSV="$OUT/share.csv" bash "$C/../scripts/gpu-share")
run_step "gpu-share[sms, one GPU]" "$budget_paths" "$OUT/share.log" "${with_libs[@]}" \
  CUDA_VISIBLE_DEVICES=0 "${share[@]}" sms
[ "$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')" -lt 2 ] ||
  run_step "gpu-share[sms, two GPUs]" "$budget_paths" "$OUT/share.log" "${with_libs[@]}" "${share[@]}" sms
run_step "gpu-share[load]" "$budget_paths" "$OUT/share.log" "${with_libs[@]}" \
  CUDA_VISIBLE_DEVICES=0 "${share[@]}" load
