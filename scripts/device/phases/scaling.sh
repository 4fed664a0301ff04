# run-on-device.sh scaling: weak scaling of halo3d (27-point, 128^3 per rank, device buffers) under
# that Open MPI 5, one rank per GPU, 1, 2, 4... ranks up to the GPUs present: under the interposer
# (Isend and persistent) and hand-packed
# Sourced by run-on-device.sh, whose settings and run_step it uses; `return` ends the phase.
P=$C/lib/pmpi/libucxdt_pmpi.so
if [ ! -x "$O/bin/mpirun" ] || [ ! -e "$P" ] || [ ! -x "$C/bin/halo3d" ]; then
  summary+=("scaling|MISSING|0|Open MPI 5, libucxdt_pmpi or halo3d not carried"); failed=1; return
fi
halo=("$C/bin/halo3d" -g 128,128,128 -s 27 -m device -f csv -n 50 -W 5)
for ((np = 1; np <= ngpu; np *= 2)); do
  mpirun=("$O/bin/mpirun" -np "$np" -x LD_LIBRARY_PATH -x UCX_MODULE_DIR)
  run_step "halo3d[weak np$np,pmpi]" "$budget_pmpi" "$OUT/scaling.log" "${ompi_env[@]}" \
    "${mpirun[@]}" env LD_PRELOAD="$P" "${halo[@]}" -x datatype
  run_step "halo3d[weak np$np,pmpi -P]" "$budget_pmpi" "$OUT/scaling.log" "${ompi_env[@]}" \
    "${mpirun[@]}" env LD_PRELOAD="$P" "${halo[@]}" -x datatype -P
  run_step "halo3d[weak np$np,handpack]" "$budget_pmpi" "$OUT/scaling.log" "${ompi_env[@]}" \
    "${mpirun[@]}" "${halo[@]}" -x handpack
done
