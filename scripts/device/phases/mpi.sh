# run-on-device.sh mpi: the carried CUDA-aware Open MPI 5 (relocated with OPAL_PREFIX): ompi_info
# reports CUDA support, and test/mpi/cuda_aware_check moves a vector type between device buffers as
# a singleton and as two ranks under mpirun over UCX (both ranks on GPU 0)
# Sourced by run-on-device.sh, whose settings and run_step it uses; `return` ends the phase.
if [ ! -x "$O/bin/mpirun" ]; then
  summary+=("mpi|MISSING|0|Open MPI 5 not carried"); failed=1; return
fi
run_step "ompi_info[cuda]" "$budget_mpi" "$OUT/mpi.log" "${ompi_env[@]}" bash -c \
  '"$1" --parsable --all | grep -E "mpi_built_with_cuda_support:value:true|accelerator:cuda" |
   grep -q "value:true" && "$1" | grep -E "Open MPI:|accelerator"' _ "$O/bin/ompi_info"
run_step "cuda_aware_check[singleton]" "$budget_mpi" "$OUT/mpi.log" "${ompi_env[@]}" \
  "$O/tests/cuda_aware_check"
run_step "cuda_aware_check[mpirun -np 2]" "$budget_mpi" "$OUT/mpi.log" "${ompi_env[@]}" \
  "$O/bin/mpirun" -np 2 -x LD_LIBRARY_PATH -x UCX_MODULE_DIR \
  "$O/tests/cuda_aware_check"
