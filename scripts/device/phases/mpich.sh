# run-on-device.sh mpich: the carried CUDA-aware MPICH 5 (Yaksa's kernels) beside ucxdt, one rank
# per GPU (two ranks a GPU past the GPUs present): cuda_aware_check as a singleton and on 2 ranks;
# pmpi_check on host and device buffers under the interposer; then on 2 and 4 ranks (UCXDT_MPICH_NP)
# halo3d (7- and 27-point, Isend and persistent), transpose (Alltoallw) and mpi_layouts (ping-pong),
# each as MPICH alone, under libucxdt_pmpi, and hand-packed (mpi_layouts: its contiguous send, -c);
# halo3d under compute-sanitizer memcheck with the interposer; ucxdt_packbench_yaksa (ucxdt's pack
# and unpack against Yaksa's on one GPU; its struct apart, last)
# Sourced by run-on-device.sh, whose settings and run_step it uses; `return` ends the phase.
M=$C/mpich
P5=$C/lib/pmpi-mpich5/libucxdt_pmpi.so
if [ ! -x "$M/bin/mpiexec" ] || [ ! -e "$P5" ] || [ ! -x "$C/bin/halo3d_mpich5" ]; then
  summary+=("mpich|MISSING|0|MPICH 5, its interposer or clients not carried"); failed=1; return
fi
# Hydra passes the whole environment to the ranks; MPICH finds UCX's modules as ours do.
mpich_env=(env LD_LIBRARY_PATH="$M/lib:$libs" UCX_MODULE_DIR="$C/lib/ucx" PATH="$M/bin:$PATH")
pre=(env LD_PRELOAD="$P5")
run_step "cuda_aware_check[mpich singleton]" "$budget_mpi" "$OUT/mpich.log" "${mpich_env[@]}" \
  "$M/tests/cuda_aware_check"
run_step "cuda_aware_check[mpich -n 2]" "$budget_mpi" "$OUT/mpich.log" "${mpich_env[@]}" \
  "$M/bin/mpiexec" -n 2 "$M/tests/cuda_aware_check"
chk=("$C/bin/pmpi_check_mpich5" --seed 20240917 --types 200)
run_step "pmpi_check[host, mpich+pmpi]" "$budget_pmpi" "$OUT/mpich.log" "${mpich_env[@]}" \
  "$M/bin/mpiexec" -n 2 "${pre[@]}" UCXDT_PMPI_HOST=y "${chk[@]}" --expect-interposer
run_step "pmpi_check[device, mpich+pmpi]" "$budget_pmpi" "$OUT/mpich.log" "${mpich_env[@]}" \
  "$M/bin/mpiexec" -n 2 "${pre[@]}" "${chk[@]}" --mem device --expect-interposer
# MPICH alone is no baseline on device buffers: Yaksa's kernel faults on a misaligned struct
# at the first collective and the job aborts (docs/performance-log.md, run 39).
for np in ${UCXDT_MPICH_NP:-2 4}; do
  mpiexec=("$M/bin/mpiexec" -n "$np")
  tag="np$np"; [ "$np" -le "$ngpu" ] || tag="np$np on $ngpu GPUs"
  for s in 7 27; do
    g=256,256,256; [ $s = 7 ] || g=128,128,128
    halo=("$C/bin/halo3d_mpich5" -g "$g" -s "$s" -m device -f csv -n 50 -W 5)
    for P in "" -P; do
      run_step "halo3d[s$s,$tag,mpich$P]" "$budget_pmpi" "$OUT/mpich.log" "${mpich_env[@]}" \
        "${mpiexec[@]}" "${halo[@]}" -x datatype $P
      run_step "halo3d[s$s,$tag,mpich+pmpi$P]" "$budget_pmpi" "$OUT/mpich.log" "${mpich_env[@]}" \
        "${mpiexec[@]}" "${pre[@]}" "${halo[@]}" -x datatype $P
    done
    run_step "halo3d[s$s,$tag,mpich handpack]" "$budget_pmpi" "$OUT/mpich.log" "${mpich_env[@]}" \
      "${mpiexec[@]}" "${halo[@]}" -x handpack
  done
  tr=("$C/bin/transpose_mpich5" -N 4096 -m device -f csv -n 20 -W 3)
  run_step "transpose[$tag,mpich]" "$budget_pmpi" "$OUT/mpich.log" "${mpich_env[@]}" \
    "${mpiexec[@]}" "${tr[@]}" -x alltoallw
  run_step "transpose[$tag,mpich+pmpi]" "$budget_pmpi" "$OUT/mpich.log" "${mpich_env[@]}" \
    "${mpiexec[@]}" "${pre[@]}" "${tr[@]}" -x alltoallw
  run_step "transpose[$tag,mpich handpack]" "$budget_pmpi" "$OUT/mpich.log" "${mpich_env[@]}" \
    "${mpiexec[@]}" "${tr[@]}" -x handpack
  ml=("$C/bin/mpi_layouts_mpich5" -m device -f csv -n 50 -W 5 -D "${UCXDT_PMPI_LAYOUTS:-nas_mg_y,milc_su3_zdown,wrf_y_sa,fft2_scatter}")
  run_step "mpi_layouts[$tag,mpich]" "$budget_pmpi" "$OUT/mpich.log" "${mpich_env[@]}" \
    "${mpiexec[@]}" "${ml[@]}" -n 5 -W 1
  run_step "mpi_layouts[$tag,mpich+pmpi]" "$budget_pmpi" "$OUT/mpich.log" "${mpich_env[@]}" \
    "${mpiexec[@]}" "${pre[@]}" "${ml[@]}"
  run_step "mpi_layouts[$tag,mpich contig]" "$budget_pmpi" "$OUT/mpich.log" "${mpich_env[@]}" \
    "${mpiexec[@]}" "${ml[@]}" -c
done
run_step "memcheck[halo3d s27, mpich+pmpi]" "$budget_pmpi" "$OUT/mpich.log" "${mpich_env[@]}" \
  "$M/bin/mpiexec" -n 2 "${pre[@]}" "$sanitizer" --tool memcheck --report-api-errors no \
  --error-exitcode 86 --print-limit 20 "$C/bin/halo3d_mpich5" -g 32,32,32 -s 27 -m device -x datatype -P -n 2 -W 1
if [ -x "$C/bin/ucxdt_packbench_yaksa" ]; then
  # Every layout but the struct first: Yaksa packs a struct element by element and entry
  # by entry (seconds), so it runs last, by itself.
  pb=("$C/bin/ucxdt_packbench_yaksa" -n 20)
  run_step "packbench vs yaksa" "$budget_bench" "$OUT/mpich.log" "${with_libs[@]}" \
    "${pb[@]}" -o "$OUT/packbench_yaksa.csv" -t $((budget_bench / 2)) \
    -l hpdc16 -l transpose -l vector -l specfem3d -l tpds14 -l face_ -l nas_ -l milc -l wrf -l fft2 -l small
  run_step "packbench vs yaksa[struct]" "$budget_bench" "$OUT/mpich.log" "${with_libs[@]}" \
    "${pb[@]}" -o "$OUT/packbench_yaksa_struct.csv" -l struct -S
fi
