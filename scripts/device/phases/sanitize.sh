# run-on-device.sh sanitize: the GPU tests under compute-sanitizer memcheck and racecheck (the five
# binaries share each tool's budget), with UCXDT_GPU_TEST_TYPES scaled down (UCXDT_SANITIZE_TYPES,
# default 16; UCXDT_SANITIZE_FILTER: a gtest filter), the GPU cases of test_ucp_generic under
# memcheck, and those of test_rndv and test_rma* under memcheck and racecheck; with --leak-check
# full, the GPU cases of test_rndv_faults and test_rndv_threads, and test_rndv_probe and _matching
# Sourced by run-on-device.sh, whose settings and run_step it uses; `return` ends the phase.
absent=("${gpu_missing[@]}")
[ -x "$sanitizer" ] || absent+=(compute-sanitizer)
if [ ${#absent[@]} -gt 0 ]; then
  summary+=("sanitize|MISSING|0|absent: ${absent[*]}"); failed=1; return
fi
filter=()
[ -z "${UCXDT_SANITIZE_FILTER:-}" ] || filter=("--gtest_filter=$UCXDT_SANITIZE_FILTER")
for tool in memcheck racecheck; do
  end=$((SECONDS + budget_san))  # one budget for the five binaries
  for t in "${gpu_tests[@]}"; do
    run_step "$tool[${t#test_}]" $((end - SECONDS)) "$OUT/sanitize.log" \
      "${with_libs[@]}" UCXDT_GPU_TEST_TYPES="${UCXDT_SANITIZE_TYPES:-16}" \
      "$sanitizer" --tool "$tool" --error-exitcode 86 --print-limit 20 \
      "$C/bin/$t" "${filter[@]}"
  done
done
# API errors off: ucp_init probes cuCtxGetDevice before any context exists (UCX's
# uct_cuda_base_query_devices_common), which memcheck would count against us.
run_step "memcheck[ucp_generic]" "$budget_san" "$OUT/sanitize.log" "${with_libs[@]}" \
  "$sanitizer" --tool memcheck --report-api-errors no --error-exitcode 86 --print-limit 20 \
  "$C/bin/test_ucp_generic" "--gtest_filter=UcpGeneric.Gpu*"
for tool in memcheck racecheck; do
  run_step "$tool[rndv]" "$budget_san" "$OUT/sanitize.log" "${with_libs[@]}" \
    "$sanitizer" --tool "$tool" --report-api-errors no --error-exitcode 86 --print-limit 20 \
    "$C/bin/test_rndv" "--gtest_filter=*Gpu*"
  # test_rma_faults has no GPU case: under the sanitizer it would make no CUDA call, which
  # compute-sanitizer reports as an error.
  for t in test_rma test_rma_ipc; do
    run_step "$tool[${t#test_}]" "$budget_san" "$OUT/sanitize.log" "${with_libs[@]}" \
      "$sanitizer" --tool "$tool" --report-api-errors no --error-exitcode 86 --print-limit 20 \
      "$C/bin/$t" "--gtest_filter=*Gpu*"
  done
done
# What an MPI library needs (issue 43), with leak checks: a GPU peer killed while it holds
# our CUDA IPC mappings and device staging (child processes tracked too: a forked child
# that the tool does not follow hangs in its first CUDA call), the
# threads test on CUDA memory (all 1,000 messages a thread: 5 s under memcheck), probes,
# matching.
leaks=("$sanitizer" --tool memcheck --leak-check full --report-api-errors no --error-exitcode 86 --print-limit 20)
run_step "memcheck-leaks[rndv_faults]" "$budget_san" "$OUT/sanitize.log" "${with_libs[@]}" \
  "${leaks[@]}" --target-processes all "$C/bin/test_rndv_faults" "--gtest_filter=*Gpu*"
run_step "memcheck-leaks[rndv_threads]" "$budget_san" "$OUT/sanitize.log" "${with_libs[@]}" \
  "${leaks[@]}" "$C/bin/test_rndv_threads" "--gtest_filter=*Gpu*"
for t in test_rndv_probe test_rndv_matching; do
  run_step "memcheck-leaks[${t#test_}]" "$budget_san" "$OUT/sanitize.log" "${with_libs[@]}" \
    "${leaks[@]}" "$C/bin/$t"
done
