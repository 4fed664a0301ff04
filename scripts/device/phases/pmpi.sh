# run-on-device.sh pmpi: the PMPI interposer under that Open MPI 5, two ranks (one per GPU where
# there are two, else both on GPU 0): pmpi_check on host and device buffers (device and host
# staging), then halo3d (7- and 27-point), transpose and mpi_layouts on device buffers on 2 ranks
# (UCXDT_PMPI_NP: the rank counts, e.g. "2 4"), each as Open MPI alone, preloaded with
# libucxdt_pmpi, and hand-packed (halo3d also with persistent requests under the interposer;
# UCXDT_PMPI_ALONE=n: not Open MPI alone, whose runs take minutes); pmpi_check on four ranks; halo3d
# (and with -P also racecheck) under compute-sanitizer's memcheck with the interposer
# Sourced by run-on-device.sh, whose settings and run_step it uses; `return` ends the phase.
P=$C/lib/pmpi/libucxdt_pmpi.so
if [ ! -x "$O/bin/mpirun" ] || [ ! -e "$P" ] || [ ! -x "$C/bin/halo3d" ]; then
  summary+=("pmpi|MISSING|0|Open MPI 5, libucxdt_pmpi or clients/ not carried"); failed=1; return
fi
# Two ranks (one per GPU where there are two), each client as Open MPI alone, under the
# interposer, and hand-packed.
# UCXDT_PMPI_ALONE=n leaves out the runs of Open MPI alone (minutes: 25 s a halo exchange);
# =all runs them on every rank count.
alone=${UCXDT_PMPI_ALONE:-y}
mpirun=("$O/bin/mpirun" -np 2 -x LD_LIBRARY_PATH -x UCX_MODULE_DIR)
pre=(env LD_PRELOAD="$P" UCXDT_PMPI_VERBOSE=y)
run_step "pmpi_check[host, 2 ranks]" "$budget_pmpi" "$OUT/pmpi.log" "${ompi_env[@]}" \
  "${mpirun[@]}" "${pre[@]}" UCXDT_PMPI_HOST=y "$C/bin/pmpi_check_openmpi" --expect-interposer \
  --seed 20240917 --types 200
# Device buffers: the interposer with device staging (the MPI is CUDA-aware) and with
# page-locked host staging (as for an MPI that is not), each against the walker. Open MPI
# 5.0.7 alone cannot serve as the baseline: its pml ucx packs derived types on device memory
# with the CPU and faults (MPI_Isend of a struct, MPI_Alltoallw's self copy).
chk=("$C/bin/pmpi_check_openmpi" --mem device --seed 20240917)
run_step "pmpi_check[device, 2 ranks]" "$budget_pmpi" "$OUT/pmpi.log" "${ompi_env[@]}" \
  "${mpirun[@]}" "${pre[@]}" "${chk[@]}" --expect-interposer --types 200
run_step "pmpi_check[device, host staging]" "$budget_pmpi" "$OUT/pmpi.log" "${ompi_env[@]}" \
  "${mpirun[@]}" "${pre[@]}" UCXDT_PMPI_CUDA_AWARE=n "${chk[@]}" --expect-interposer --types 200
# Four processes on one GPU: each GPU operation waits longer, which exposes missing order
# between the program's copies and the interposer's stream.
run_step "pmpi_check[device, 4 ranks]" "$budget_pmpi" "$OUT/pmpi.log" "${ompi_env[@]}" \
  "$O/bin/mpirun" -np 4 -x LD_LIBRARY_PATH -x UCX_MODULE_DIR "${pre[@]}" "${chk[@]}" \
  --expect-interposer --types 200
# The clients on each count of UCXDT_PMPI_NP (default 2) ranks, one rank per GPU (two a GPU
# past the GPUs present); Open MPI alone on 2 ranks only (UCXDT_PMPI_ALONE=all: on each).
alone_all=$alone
for np in ${UCXDT_PMPI_NP:-2}; do
  mpirun=("$O/bin/mpirun" --oversubscribe -np "$np" -x LD_LIBRARY_PATH -x UCX_MODULE_DIR)
  tag="np$np"; [ "$np" -le "$ngpu" ] || tag="np$np on $ngpu GPUs"
  alone=$alone_all; [ "$alone_all" = all ] || [ "$np" = 2 ] || alone=n
  for s in 7 27; do
    g=256,256,256; [ $s = 7 ] || g=128,128,128
    halo=("$C/bin/halo3d" -g "$g" -s "$s" -m device -f csv)
    [ "$alone" = n ] || run_step "halo3d[s$s,$tag,ompi5]" "$budget_pmpi" "$OUT/pmpi.log" "${ompi_env[@]}" \
      "${mpirun[@]}" "${halo[@]}" -x datatype -n 3 -W 1
    run_step "halo3d[s$s,$tag,pmpi]" "$budget_pmpi" "$OUT/pmpi.log" "${ompi_env[@]}" \
      "${mpirun[@]}" "${pre[@]}" "${halo[@]}" -x datatype -n 50 -W 5
    run_step "halo3d[s$s,$tag,handpack]" "$budget_pmpi" "$OUT/pmpi.log" "${ompi_env[@]}" \
      "${mpirun[@]}" "${halo[@]}" -x handpack -n 50 -W 5
    run_step "halo3d[s$s,$tag,pmpi,persistent]" "$budget_pmpi" "$OUT/pmpi.log" "${ompi_env[@]}" \
      "${mpirun[@]}" "${pre[@]}" "${halo[@]}" -x datatype -P -n 50 -W 5
  done
  tr=("$C/bin/transpose" -N 4096 -m device -f csv)
  [ "$alone" = n ] || run_step "transpose[$tag,ompi5]" "$budget_pmpi" "$OUT/pmpi.log" "${ompi_env[@]}" \
    "${mpirun[@]}" "${tr[@]}" -x alltoallw -n 3 -W 1
  run_step "transpose[$tag,pmpi]" "$budget_pmpi" "$OUT/pmpi.log" "${ompi_env[@]}" \
    "${mpirun[@]}" "${pre[@]}" "${tr[@]}" -x alltoallw -n 20 -W 3
  run_step "transpose[$tag,handpack]" "$budget_pmpi" "$OUT/pmpi.log" "${ompi_env[@]}" \
    "${mpirun[@]}" "${tr[@]}" -x handpack -n 20 -W 3
  ml=("$C/bin/mpi_layouts" -m device -f csv -D "${UCXDT_PMPI_LAYOUTS:-nas_mg_y,milc_su3_zdown,wrf_y_sa,fft2_scatter}")
  [ "$alone" = n ] || run_step "mpi_layouts[$tag,ompi5]" "$budget_pmpi" "$OUT/pmpi.log" "${ompi_env[@]}" \
    "${mpirun[@]}" "${ml[@]}" -n 5 -W 1
  run_step "mpi_layouts[$tag,pmpi]" "$budget_pmpi" "$OUT/pmpi.log" "${ompi_env[@]}" \
    "${mpirun[@]}" "${pre[@]}" "${ml[@]}" -n 50 -W 5
done
mpirun=("$O/bin/mpirun" -np 2 -x LD_LIBRARY_PATH -x UCX_MODULE_DIR)
# The interposer's GPU work under memcheck, on a small grid. API errors off: Open MPI's
# accelerator component probes every buffer with cuMemRetainAllocationHandle and
# cuPointerGetAttribute calls that fail by design on memory not of that kind.
run_step "memcheck[halo3d s27, pmpi]" "$budget_pmpi" "$OUT/pmpi.log" "${ompi_env[@]}" \
  "${mpirun[@]}" "${pre[@]}" "$sanitizer" --tool memcheck --report-api-errors no \
  --error-exitcode 86 --print-limit 20 \
  "$C/bin/halo3d" -g 32,32,32 -s 27 -m device -x datatype -n 2 -W 1
for tool in memcheck racecheck; do
  run_step "$tool[halo3d s27 -P, pmpi]" "$budget_pmpi" "$OUT/pmpi.log" "${ompi_env[@]}" \
    "${mpirun[@]}" "${pre[@]}" "$sanitizer" --tool $tool --report-api-errors no \
    --error-exitcode 86 --print-limit 20 \
    "$C/bin/halo3d" -g 32,32,32 -s 27 -m device -x datatype -P -n 2 -W 1
done
