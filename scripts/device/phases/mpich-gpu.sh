# run-on-device.sh mpich-gpu: MPICH 5.0.1's GPU lists (testlist.gpu; run_suite.py --gpu, carried in
# mpich-gpu/) under pml ucx (the reference: UCXDT_MPICH_GPU_REF) and pml ucxdt, all ranks on the
# GPUs present, judged as the host suite: what passes under the reference must pass under pml ucxdt,
# and every other failure is in known_failures_gpu.txt. Bounded by --gpu-subset
# (UCXDT_MPICH_GPU_FULL=y: the whole lists); the directories UCXDT_MPICH_GPU_DIRS (default "pt2pt
# rma coll") share the phase's time (UCXDT_MPICH_GPU_S, default 540 s) evenly, each ending its runs
# in time to report; verdicts and seconds of every run in $OUT/mpich-gpu-<dir>.json
# Sourced by run-on-device.sh, whose settings and run_step it uses; `return` ends the phase.
T=$C/mpich-gpu
if [ ! -x "$O/bin/mpirun" ] || [ ! -e "$O/pml/mca_pml_ucxdt.so" ] || [ ! -e "$T/run_suite.py" ]; then
  summary+=("mpich-gpu|MISSING|0|Open MPI 5, pml ucxdt or MPICH's GPU lists (mpich-gpu/) not carried"); failed=1; return
fi
# The reference is pml ucx (ompi_env: any transport, any device), Open MPI's CUDA path through
# UCX, as every other device check of pml ucxdt; UCXDT_MPICH_GPU_REF=ob1 takes ob1 (smcuda).
# UCX logs to stdout unless told, where MPICH's rules would count a transport's warning on
# this machine against the program: its log goes to stderr (shown with a failing run).
subset=(--gpu-subset); [ "${UCXDT_MPICH_GPU_FULL:-n}" = n ] || subset=()
dirs=(${UCXDT_MPICH_GPU_DIRS:-pt2pt rma coll})
end=$((SECONDS + budget_mpich_gpu))
for i in "${!dirs[@]}"; do
  d=${dirs[$i]}
  # An even share of what is left, and no later than the deadline; the runner stops 30 s
  # before its step's limit, so that its summary is written.
  b=$(( (end - SECONDS) / (${#dirs[@]} - i) )); left=$((deadline - (SECONDS - t0) - 5))
  [ "$b" -lt "$left" ] || b=$left
  run_step "mpich-gpu[$d]" "$b" "$OUT/mpich-gpu.log" "${ompi_env[@]}" PYTHONUNBUFFERED=1 \
    python3 "$T/run_suite.py" --tree "$T" --gpu "${subset[@]}" --ompi "$O" \
    --component-path "$O/pml:$O/lib/openmpi" --pmls "${UCXDT_MPICH_GPU_REF:-ucx},ucxdt" \
    --known "$T/known_failures_gpu.txt" --no-retry --deadline $((b > 60 ? b - 30 : b / 2)) \
    --mpirun-args "-x LD_LIBRARY_PATH -x UCX_MODULE_DIR -x UCX_LOG_FILE=stderr" --results "$OUT/mpich-gpu-${d//\//_}.json" "$d"
done
