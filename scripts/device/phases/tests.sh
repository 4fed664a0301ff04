# run-on-device.sh tests: the GPU tests (test_gpu_engine, _method, _memory, _async, _reduce),
# test_ucp_generic, test_rndv, test_rndv_faults, _matching, _probe, _plain, _threads and test_rma*
# plainly and under each environment variant of test_gpu_variants.tsv, then test_layouts
# Sourced by run-on-device.sh, whose settings and run_step it uses; `return` ends the phase.
end=$((SECONDS + budget_tests))
if [ ${#gpu_missing[@]} -eq 0 ]; then
  for t in "${gpu_tests[@]}"; do
    run_step "$t" $((end - SECONDS)) "$OUT/tests.log" "${with_libs[@]}" "$C/bin/$t"
  done
  set -f  # filters hold '*'
  run_step "test_ucp_generic" $((end - SECONDS)) "$OUT/tests.log" "${with_libs[@]}" \
    "$C/bin/test_ucp_generic"
  run_step "test_rndv" $((end - SECONDS)) "$OUT/tests.log" "${with_libs[@]}" "$C/bin/test_rndv"
  for t in test_rndv_faults test_rndv_matching test_rndv_probe test_rndv_plain test_rndv_threads; do
    run_step "$t" $((end - SECONDS)) "$OUT/tests.log" "${with_libs[@]}" "$C/bin/$t"
  done
  for t in test_rma test_rma_faults test_rma_ipc; do
    run_step "$t" $((end - SECONDS)) "$OUT/tests.log" "${with_libs[@]}" "$C/bin/$t"
  done
  while IFS=$'\t' read -r vname vbin venv vargs; do
    case "$vname" in ""|\#*) continue ;; esac
    run_step "$vbin[$vname]" $((end - SECONDS)) "$OUT/tests.log" \
      "${with_libs[@]}" $venv "$C/bin/$vbin" $vargs
  done < "$C/test_gpu_variants.tsv"
  set +f
else
  summary+=("test_gpu_*|MISSING|0|not carried (not built): ${gpu_missing[*]}"); failed=1
fi
run_step "test_layouts" $((end - SECONDS)) "$OUT/tests.log" "${with_libs[@]}" \
  "$C/bin/test_layouts"
