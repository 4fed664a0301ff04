# run-on-device.sh pml: pml ucxdt (mca_pml_ucxdt.so) inside that Open MPI 5, one rank per GPU, on 2
# ranks and on 4 (4 GPUs, else two ranks a GPU): pmpi_check on device buffers (and host on 2; its
# one-sided cases through osc ucxdt); the Fortran halo and MPI_THREAD_MULTIPLE; halo3d (7- and
# 27-point; Isend, persistent, and MPI_Put in fence and PSCW epochs), transpose (Alltoallw) and mpi_layouts (ping-pong,
# UCXDT_PML_WINDOW (64) in flight, and -x coll: its collectives) under pml ucxdt, each against
# pml ucx sending the packed bytes (hand packing; mpi_layouts -c) in the same call, and the
# interposer over pml ucx; halo3d under compute-sanitizer memcheck and racecheck, and pmpi_check
# under memcheck (UCXDT_PML_SANITIZE=n: not); scripts/bench-pml: mpi_layouts, halo3d and transpose
# under ob1, pml ucx and pml ucxdt on host and device memory (issue 62)
# Sourced by run-on-device.sh, whose settings and run_step it uses; `return` ends the phase.
if [ ! -x "$O/bin/mpirun" ] || [ ! -e "$O/pml/mca_pml_ucxdt.so" ] || [ ! -x "$C/bin/halo3d" ]; then
  summary+=("pml|MISSING|0|Open MPI 5, pml ucxdt or clients/ not carried"); failed=1; return
fi
P=$C/lib/pmpi/libucxdt_pmpi.so
win=${UCXDT_PML_WINDOW:-64}
vectors="vector:count=256,blocklength=2,stride=4,vector:count=4096,blocklength=2,stride=4"
vectors+=",vector:count=65536,blocklength=2,stride=4,vector:count=262144,blocklength=2,stride=4"
layouts="$vectors,nas_mg_y,milc_su3_zdown,wrf_y_sa,fft2_scatter"
for np in 2 4; do
  mpirun=("$O/bin/mpirun" --oversubscribe -np "$np" -x LD_LIBRARY_PATH -x UCX_MODULE_DIR)
  tag="np$np"; [ "$np" -le "$ngpu" ] || tag="np$np on $ngpu GPUs"
  run_step "pmpi_check[device, pml ucxdt, $tag]" "$budget_pmpi" "$OUT/pml.log" "${ompi_env[@]}" \
    "${mpirun[@]}" "${ucxdt_pml[@]}" "$C/bin/pmpi_check_ompi5" --mem device --seed 20240917 --types 300
  # The one-sided cases too (osc ucxdt, which pml ucxdt selects; osc ucx faults on GPU windows).
  run_step "pmpi_check[device, one-sided, pml ucxdt, $tag]" "$budget_pmpi" "$OUT/pml.log" "${ompi_env[@]}" \
    "${mpirun[@]}" "${ucxdt_pml[@]}" "$C/bin/pmpi_check_ompi5" --one-sided --mem device --seed 20240917 --types 150
  run_step "pmpi_check[managed, pml ucxdt, $tag]" "$budget_pmpi" "$OUT/pml.log" "${ompi_env[@]}" \
    "${mpirun[@]}" "${ucxdt_pml[@]}" "$C/bin/pmpi_check_ompi5" --mem managed --seed 77 --types 150
  run_step "halo_f08[pml ucxdt, $tag]" "$budget_pmpi" "$OUT/pml.log" "${ompi_env[@]}" \
    "${mpirun[@]}" "${ucxdt_pml[@]}" "$C/bin/pml_halo_f08"
  run_step "halo_f08[device, pml ucxdt, $tag]" "$budget_pmpi" "$OUT/pml.log" "${ompi_env[@]}" \
    "${mpirun[@]}" "${ucxdt_pml[@]}" "$C/bin/pml_halo_f08" device
  run_step "threads[pml ucxdt, $tag]" "$budget_pmpi" "$OUT/pml.log" "${ompi_env[@]}" \
    "${mpirun[@]}" "${ucxdt_pml[@]}" "$C/bin/pml_threads"
  # The legal programs of test/mpi/pml on GPU memory (their argument `device`), under pml
  # ucxdt and under ob1 and pml ucx as the references (CTest runs them on host memory; its
  # test/CMakeLists.txt says why one_sided, and threads_stress under the references, are not
  # run on GPU memory). dynamic's np is its parents', each of which spawns 2 children.
  for prog in collective_args receiver_errors predefined_types threads_stress dynamic one_sided_errors; do
    args=(device) refs=(ucxdt ob1 ucx)
    [ "$prog" != threads_stress ] || args=(4 64 device) refs=(ucxdt)
    [ "$prog" != one_sided_errors ] || refs=(ucxdt)  # judged by the standard's classes: osc ucxdt's
    pnp=$np; [ "$prog" != dynamic ] || pnp=$((np / 2))
    for ref in "${refs[@]}"; do
      run_step "$prog[device, pml $ref, np$pnp]" "${UCXDT_PML_PROGRAM_S:-60}" "$OUT/pml.log" "${ompi_env[@]}" \
        "$O/bin/mpirun" --oversubscribe -np "$pnp" -x LD_LIBRARY_PATH -x UCX_MODULE_DIR \
        --mca pml "$ref" --mca mca_base_component_path "$O/pml:$O/lib/openmpi" "$C/bin/pml_$prog" "${args[@]}"
    done
  done
  # One-sided (osc ucxdt) too: MPI_Put of the regions into the neighbours' halos.
  halo3d_steps "$tag" "$OUT/pml.log" "$budget_pmpi" datatype persistent handpack handpack-ucxdt put pmpi
  tr=("$C/bin/transpose" -N 4096 -m device -f csv -n 20 -W 3)
  run_step "transpose[$tag,pml ucxdt]" "$budget_pmpi" "$OUT/pml.log" "${ompi_env[@]}" \
    "${mpirun[@]}" "${ucxdt_pml[@]}" "${tr[@]}" -x alltoallw
  run_step "transpose[$tag,handpack ucx]" "$budget_pmpi" "$OUT/pml.log" "${ompi_env[@]}" \
    "${mpirun[@]}" "${tr[@]}" -x handpack
  run_step "transpose[$tag,handpack ucxdt]" "$budget_pmpi" "$OUT/pml.log" "${ompi_env[@]}" \
    "${mpirun[@]}" "${ucxdt_pml[@]}" "${tr[@]}" -x handpack
  ml=("$C/bin/mpi_layouts" -f csv -n 30 -W 5 -D "$layouts")
  run_step "mpi_layouts coll[$tag,pml ucxdt]" "$budget_pmpi" "$OUT/pml.log" "${ompi_env[@]}" \
    "${mpirun[@]}" "${ucxdt_pml[@]}" "${ml[@]}" -m device -x coll
  run_step "mpi_layouts coll[$tag,ucx contig]" "$budget_pmpi" "$OUT/pml.log" "${ompi_env[@]}" \
    "${mpirun[@]}" "${ml[@]}" -m device -x coll -c
done
# Two ranks, one per GPU: one message at a time and a window in flight, device and host memory.
mpirun=("$O/bin/mpirun" -np 2 -x LD_LIBRARY_PATH -x UCX_MODULE_DIR)
ml=("$C/bin/mpi_layouts" -f csv -n 200 -W 20 -w "$win" -D "$layouts")
for m in device host; do
  run_step "mpi_layouts[$m,pml ucxdt]" "$budget_pmpi" "$OUT/pml.log" "${ompi_env[@]}" \
    "${mpirun[@]}" "${ucxdt_pml[@]}" "${ml[@]}" -m $m
  run_step "mpi_layouts[$m,ucx contig]" "$budget_pmpi" "$OUT/pml.log" "${ompi_env[@]}" \
    "${mpirun[@]}" "${ml[@]}" -m $m -c
done
[ -e "$P" ] && run_step "mpi_layouts[device,pmpi]" "$budget_pmpi" "$OUT/pml.log" "${ompi_env[@]}" \
  "${mpirun[@]}" env LD_PRELOAD="$P" "${ml[@]}" -m device
# One-sided (osc ucxdt): MPI_Put and MPI_Accumulate(MPI_SUM) windows of the layouts on device
# memory, the accumulates reduced by the GPU and, the alternative, by the host.
ml1=("$C/bin/mpi_layouts" -f csv -n 30 -W 5 -m device -D nas_mg_y,milc_su3_zdown,wrf_y_sa,fft2_scatter)
run_step "mpi_layouts put[device,osc ucxdt]" "$budget_pmpi" "$OUT/pml.log" "${ompi_env[@]}" \
  "${mpirun[@]}" "${ucxdt_pml[@]}" "${ml1[@]}" -x put
for r in 1 0; do
  run_step "mpi_layouts acc[device,osc ucxdt,gpu_reduce=$r]" "$budget_pmpi" "$OUT/pml.log" "${ompi_env[@]}" \
    "${mpirun[@]}" "${ucxdt_pml[@]}" --mca osc_ucxdt_gpu_reduce $r "${ml1[@]}" -x acc
done
# Against Open MPI's own PMLs (issue 62): scripts/bench-pml runs mpi_layouts (issue 62's
# layouts), halo3d and transpose under ob1, pml ucx and pml ucxdt on host and device memory;
# its tables are $OUT/bench-pml/table.md.
run_step "bench-pml[host,device]" "$((3 * budget_pmpi))" "$OUT/pml.log" "${ompi_env[@]}" OMPI="$O" \
  PML_PATH="$O/pml" MPI_LAYOUTS="$C/bin/mpi_layouts" HALO3D="$C/bin/halo3d" TRANSPOSE="$C/bin/transpose" \
  MPIRUN_ARGS="-x UCX_MODULE_DIR" RUN_LIMIT_S=150 \
  python3 "$C/bench-pml" -m host,device -w "$win" -o "$OUT/bench-pml"
if [ "${UCXDT_PML_SANITIZE:-y}" != n ]; then
  for tool in memcheck racecheck; do
    run_step "$tool[halo3d s27, pml ucxdt]" "$budget_pmpi" "$OUT/pml.log" "${ompi_env[@]}" \
      "${mpirun[@]}" "${ucxdt_pml[@]}" "$sanitizer" --tool $tool --report-api-errors no \
      --error-exitcode 86 --print-limit 20 "$C/bin/halo3d" -g 32,32,32 -s 27 -m device -x datatype -n 2 -W 1
    run_step "$tool[halo3d s27 -P, pml ucxdt]" "$budget_pmpi" "$OUT/pml.log" "${ompi_env[@]}" \
      "${mpirun[@]}" "${ucxdt_pml[@]}" "$sanitizer" --tool $tool --report-api-errors no \
      --error-exitcode 86 --print-limit 20 "$C/bin/halo3d" -g 32,32,32 -s 27 -m device -x datatype -P -n 2 -W 1
  done
  run_step "memcheck[pmpi_check device, pml ucxdt]" "$budget_pmpi" "$OUT/pml.log" "${ompi_env[@]}" \
    "${mpirun[@]}" "${ucxdt_pml[@]}" "$sanitizer" --tool memcheck --report-api-errors no \
    --error-exitcode 86 --print-limit 20 "$C/bin/pmpi_check_ompi5" --mem device --seed 20240917 --types 60
  # osc ucxdt's GPU paths: puts and gets through CUDA IPC, accumulates reduced by the GPU.
  run_step "memcheck[pmpi_check one-sided device, pml ucxdt]" "$budget_pmpi" "$OUT/pml.log" "${ompi_env[@]}" \
    "${mpirun[@]}" "${ucxdt_pml[@]}" "$sanitizer" --tool memcheck --report-api-errors no \
    --error-exitcode 86 --print-limit 20 "$C/bin/pmpi_check_ompi5" --one-sided --mem device --seed 20240917 --types 40
fi
