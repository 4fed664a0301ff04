# run-on-device.sh scaling: one rank per GPU, 1, 2, 4... ranks up to the GPUs present (issue 65):
# the topology (nvidia-smi topo -m: which pairs share NVLink); weak scaling of halo3d, 7-point
# (256^3 per rank) and 27-point (128^3), device buffers, under pml ucxdt (Isend and persistent)
# against hand packing under pml ucx, and under the interposer where carried; from 2 ranks, the
# collectives of derived types (mpi_layouts -x coll: Bcast, Allgather, Alltoall, their
# nonblocking forms, Neighbor_allgather) under pml ucxdt against pml ucx sending the packed bytes
# (-c), and transpose's Alltoallw against its hand packing. Ranks bind to cores; each client
# picks the GPU of its local rank (clients/common/client.hpp).
# Sourced by run-on-device.sh, whose settings and run_step it uses; `return` ends the phase.
if [ ! -x "$O/bin/mpirun" ] || [ ! -e "$O/pml/mca_pml_ucxdt.so" ] || [ ! -x "$C/bin/halo3d" ]; then
  summary+=("scaling|MISSING|0|Open MPI 5, pml ucxdt or halo3d not carried"); failed=1; return
fi
budget_scaling=${UCXDT_SCALING_S:-120}
run_step "topology[$ngpu GPUs]" 30 "$OUT/scaling.log" nvidia-smi topo -m
layouts=nas_mg_y,milc_su3_zdown,wrf_y_sa,fft2_scatter
for ((np = 1; np <= ngpu; np *= 2)); do
  mpirun=("$O/bin/mpirun" -np "$np" -x LD_LIBRARY_PATH -x UCX_MODULE_DIR)
  halo3d_steps "weak np$np" "$OUT/scaling.log" "$budget_scaling" datatype persistent handpack pmpi
  [ "$np" -ge 2 ] || continue
  ml=("$C/bin/mpi_layouts" -f csv -n 30 -W 5 -m device -D "$layouts" -x coll)
  run_step "mpi_layouts coll[np$np,pml ucxdt]" "$budget_scaling" "$OUT/scaling.log" "${ompi_env[@]}" \
    "${mpirun[@]}" "${ucxdt_pml[@]}" "${ml[@]}"
  run_step "mpi_layouts coll[np$np,ucx contig]" "$budget_scaling" "$OUT/scaling.log" "${ompi_env[@]}" \
    "${mpirun[@]}" "${ml[@]}" -c
  tr=("$C/bin/transpose" -N 4096 -m device -f csv -n 20 -W 3)
  run_step "transpose[np$np,pml ucxdt]" "$budget_scaling" "$OUT/scaling.log" "${ompi_env[@]}" \
    "${mpirun[@]}" "${ucxdt_pml[@]}" "${tr[@]}" -x alltoallw
  run_step "transpose[np$np,handpack ucx]" "$budget_scaling" "$OUT/scaling.log" "${ompi_env[@]}" \
    "${mpirun[@]}" "${tr[@]}" -x handpack
done
