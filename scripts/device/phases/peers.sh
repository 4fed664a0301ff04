# run-on-device.sh peers: table l of docs/performance.md in one call, one rank per GPU, on
# UCXDT_PEERS_NP ranks (default "2 4"): halo3d (7- and 27-point, Isend and persistent), transpose
# and mpi_layouts under MPICH alone, MPICH + libucxdt_pmpi, Open MPI 5 alone, Open MPI 5 +
# libucxdt_pmpi and pml ucxdt, with hand packing (mpi_layouts: the contiguous send) under each MPI,
# and mpi_layouts under MPICH + libucxdt_pmpi with device staging at every size; the MPIs alone 3
# exchanges (MPICH 5) or 2 (Open MPI) and 5 ping-pongs
# Sourced by run-on-device.sh, whose settings and run_step it uses; `return` ends the phase.
M=$C/mpich
P=$C/lib/pmpi/libucxdt_pmpi.so P5=$C/lib/pmpi-mpich5/libucxdt_pmpi.so
if [ ! -x "$M/bin/mpiexec" ] || [ ! -e "$P5" ] || [ ! -x "$O/bin/mpirun" ] || [ ! -e "$P" ] ||
   [ ! -e "$O/pml/mca_pml_ucxdt.so" ]; then
  summary+=("peers|MISSING|0|MPICH 5, Open MPI 5, pml ucxdt or an interposer not carried"); failed=1; return
fi
mpich_env=(env LD_LIBRARY_PATH="$M/lib:$libs" UCX_MODULE_DIR="$C/lib/ucx" PATH="$M/bin:$PATH")
layouts=${UCXDT_PMPI_LAYOUTS:-nas_mg_y,milc_su3_zdown,wrf_y_sa,fft2_scatter}
for np in ${UCXDT_PEERS_NP:-2 4}; do
  mpiexec=("$M/bin/mpiexec" -n "$np")
  mpirun=("$O/bin/mpirun" --oversubscribe -np "$np" -x LD_LIBRARY_PATH -x UCX_MODULE_DIR)
  # step NAME ARGS...: MPICH's runs (mpich*) under Hydra, the others under Open MPI's mpirun.
  step() {
    local name=$1; shift
    case "$name" in
      mpich*) run_step "$name,np$np]" "$budget_pmpi" "$OUT/peers.log" "${mpich_env[@]}" "${mpiexec[@]}" "$@" ;;
      *) run_step "$name,np$np]" "$budget_pmpi" "$OUT/peers.log" "${ompi_env[@]}" "${mpirun[@]}" "$@" ;;
    esac
  }
  for s in 7 27; do
    g=256,256,256; [ $s = 7 ] || g=128,128,128
    h5=("$C/bin/halo3d_mpich5" -g "$g" -s "$s" -m device -f csv -x datatype)
    h=("$C/bin/halo3d" -g "$g" -s "$s" -m device -f csv -x datatype)
    fast=(-n 50 -W 5)
    step "mpich alone[halo3d s$s" "${h5[@]}" -n 3 -W 1
    step "mpich alone[halo3d s$s -P" "${h5[@]}" -n 3 -W 1 -P
    step "mpich+pmpi[halo3d s$s" env LD_PRELOAD="$P5" "${h5[@]}" "${fast[@]}"
    step "mpich+pmpi[halo3d s$s -P" env LD_PRELOAD="$P5" "${h5[@]}" "${fast[@]}" -P
    step "mpich handpack[halo3d s$s" "${h5[@]/datatype/handpack}" "${fast[@]}"
    step "ompi5 alone[halo3d s$s" "${h[@]}" -n 2 -W 1
    step "ompi5+pmpi[halo3d s$s" env LD_PRELOAD="$P" "${h[@]}" "${fast[@]}"
    step "ompi5+pmpi[halo3d s$s -P" env LD_PRELOAD="$P" "${h[@]}" "${fast[@]}" -P
    step "pml ucxdt[halo3d s$s" "${ucxdt_pml[@]}" "${h[@]}" "${fast[@]}"
    step "pml ucxdt[halo3d s$s -P" "${ucxdt_pml[@]}" "${h[@]}" "${fast[@]}" -P
    step "ompi5 handpack[halo3d s$s" "${h[@]/datatype/handpack}" "${fast[@]}"
  done
  t5=("$C/bin/transpose_mpich5" -N 4096 -m device -f csv -x alltoallw)
  t=("$C/bin/transpose" -N 4096 -m device -f csv -x alltoallw)
  fast=(-n 20 -W 3)
  step "mpich alone[transpose" "${t5[@]}" -n 3 -W 1
  step "mpich+pmpi[transpose" env LD_PRELOAD="$P5" "${t5[@]}" "${fast[@]}"
  step "mpich handpack[transpose" "${t5[@]/alltoallw/handpack}" "${fast[@]}"
  step "ompi5 alone[transpose" "${t[@]}" -n 3 -W 1
  step "ompi5+pmpi[transpose" env LD_PRELOAD="$P" "${t[@]}" "${fast[@]}"
  step "pml ucxdt[transpose" "${ucxdt_pml[@]}" "${t[@]}" "${fast[@]}"
  step "ompi5 handpack[transpose" "${t[@]/alltoallw/handpack}" "${fast[@]}"
  m5=("$C/bin/mpi_layouts_mpich5" -m device -f csv -D "$layouts")
  m=("$C/bin/mpi_layouts" -m device -f csv -D "$layouts")
  fast=(-n 50 -W 5)
  step "mpich alone[mpi_layouts" "${m5[@]}" -n 5 -W 1
  step "mpich+pmpi[mpi_layouts" env LD_PRELOAD="$P5" UCXDT_PMPI_VERBOSE=y "${m5[@]}" "${fast[@]}"
  step "mpich+pmpi device staging[mpi_layouts" env LD_PRELOAD="$P5" UCXDT_PMPI_PINNED_MAX=0 "${m5[@]}" "${fast[@]}"
  step "mpich contig[mpi_layouts" "${m5[@]}" "${fast[@]}" -c
  step "ompi5 alone[mpi_layouts" "${m[@]}" -n 5 -W 1
  step "ompi5+pmpi[mpi_layouts" env LD_PRELOAD="$P" UCXDT_PMPI_VERBOSE=y "${m[@]}" "${fast[@]}"
  step "pml ucxdt[mpi_layouts" "${ucxdt_pml[@]}" "${m[@]}" "${fast[@]}"
  step "ompi5 contig[mpi_layouts" "${m[@]}" "${fast[@]}" -c
done
