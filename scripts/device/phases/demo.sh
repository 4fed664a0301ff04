# run-on-device.sh demo: the README's main job (scripts/demo) with the carried binaries: CUDA
# memory, and one GPU per process when there are two
# Sourced by run-on-device.sh, whose settings and run_step it uses; `return` ends the phase.
run_step "demo" "$budget_demo" "$OUT/demo.log" "${with_libs[@]}" UCXDT_BIN="$C/bin" \
  bash "$C/../scripts/demo"
