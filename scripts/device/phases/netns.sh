# run-on-device.sh netns: two processes in two network namespaces joined by a veth pair (10.211.0.1
# and .2), the server in one and the client in the other. Over UCX_TLS=tcp,cuda_copy they stand in
# for two nodes: the README's main job (scripts/demo) UCXDT_NETNS_DEMOS times (default 10), each
# across a new pair, UCXDT_NETNS_PARALLEL (default: as many as GPUs) at once, failures and time-outs
# (naming the pair cut) counted apart; test/tools/netns_generic_tcp.sh on host and CUDA memory;
# compare-paths (UCXDT_TRANSPORT_LAYOUTS). Then compare-paths with UCX's own choice of transports,
# which reach across the namespaces as on one node (CUDA IPC, shared memory); paths
# UCXDT_NETNS_DEFAULT_PATHS (default packsend and pipeline: the generic path over CUDA IPC takes
# minutes)
# Sourced by run-on-device.sh, whose settings and run_step it uses; `return` ends the phase.
# Two network namespaces of one host joined by a veth pair. UCX sees one node there (its
# system ID is the boot ID), and so does ucxdt (src/ucp_rndv/ucx_reach.hpp): with UCX's own
# transports both use CUDA IPC and shared memory. UCX_TLS=tcp,cuda_copy leaves those out, and
# the pair is then the path between two nodes.
# The device's own ip runs with its own libraries, the carried one with the carried ones.
netns_ip=(env -u LD_LIBRARY_PATH ip)
command -v ip >/dev/null 2>&1 || netns_ip=(env LD_LIBRARY_PATH="$C/lib-ip" "$C/tools/ip")
. "$C/../scripts/netns-pair.sh"
demos=${UCXDT_NETNS_DEMOS:-10} par=${UCXDT_NETNS_PARALLEL:-$ngpu}
ns_down() { netns_down "ucxdt_a$1" "ucxdt_b$1"; }
ns_all_down() { local k; for k in $(seq 0 "$demos"); do ns_down "$k"; done; }
# ns_pair K: pair K made anew (ucxdt_aK with 10.211.0.1, ucxdt_bK with .2), its perftest-pair
# settings in pair_env. The processes get our libraries back after ip: a carried ip's own
# would shadow them.
ns_pair() {
  netns_pair "ucxdt_a$1" "ucxdt_b$1" "ucxdt_va$1" "ucxdt_vb$1" 10.211.0 >>"$OUT/netns.log" 2>&1 || return 1
  pair_env=(PAIR_SERVER_PREFIX="${netns_ip[*]} netns exec ucxdt_a$1 env LD_LIBRARY_PATH=$libs"
            PAIR_CLIENT_PREFIX="${netns_ip[*]} netns exec ucxdt_b$1 env LD_LIBRARY_PATH=$libs"
            PAIR_HOST=10.211.0.1)
}
trap ns_all_down EXIT  # also when this script is stopped in the middle
if ! ns_pair 0; then
  summary+=("netns|FAIL|0|no namespace pair (see netns.log)"); failed=1; ns_all_down; return
fi
# The main job over TCP, each time across a new pair, `par` at once (one per GPU: demos that
# share a GPU wait on each other's context switches and run past their budget). Every
# failure counts; a demo cut by its budget is counted, and named, as a time-out.
s=$SECONDS demo_fails=0 demo_timeouts=() k=0
while [ "$k" -lt "$demos" ] && [ $((deadline - (SECONDS - t0))) -gt $((budget_netns + 60)) ]; do
  pids=() ks=()
  for _ in $(seq "$par"); do
    [ "$k" -lt "$demos" ] || break
    k=$((k + 1))
    ns_pair "$k" || { demo_fails=$((demo_fails + 1)); continue; }
    ( "${with_libs[@]}" "${pair_env[@]}" UCX_TLS=tcp,cuda_copy DEMO_ITERS=100 UCXDT_BIN="$C/bin" \
        timeout -k 10 "$budget_netns" bash "$C/../scripts/demo" >"/tmp/netns-demo-$k.log" 2>&1 ) &
    pids+=($!) ks+=("$k")
  done
  for j in "${!pids[@]}"; do
    rc=0; wait "${pids[$j]}" || rc=$?
    case $rc in
      0) ;;
      124|137) demo_timeouts+=("${ks[$j]}")
               echo "=== demo across pair ${ks[$j]}: TIMED OUT after ${budget_netns} s" ;;
      *) demo_fails=$((demo_fails + 1)); echo "=== demo across pair ${ks[$j]}: FAILED ($rc)" ;;
    esac
    { echo "=== demo[netns tcp] across pair ${ks[$j]} (exit $rc)"; cat "/tmp/netns-demo-${ks[$j]}.log"; } >>"$OUT/netns.log"
    grep -a "\[demo\] failed" -A4 "/tmp/netns-demo-${ks[$j]}.log"
    ns_down "${ks[$j]}"
  done
done
detail="$demo_fails of $k runs of the main job failed (each 30 runs, in new pairs, $par at once)"
[ ${#demo_timeouts[@]} = 0 ] || detail+="; ${#demo_timeouts[@]} cut at ${budget_netns} s: pair(s) ${demo_timeouts[*]}"
if [ "$demo_fails" -gt 0 ]; then r=FAIL; failed=1
elif [ ${#demo_timeouts[@]} -gt 0 ]; then r=TIMEOUT; failed=1
elif [ "$k" -lt "$demos" ]; then r=SHORT; failed=1; detail+="; $((demos - k)) not started before the deadline"
else r=PASS; fi
summary+=("demo[netns tcp] x$k|$r|$((SECONDS - s))|$detail")
# The regression test of test/CMakeLists.txt (perftest_netns_generic_tcp), on both memories.
for m in host cuda; do
  run_step "netns_generic_tcp[$m]" "$budget_netns" "$OUT/netns.log" "${with_libs[@]}" \
    IP="${netns_ip[*]}" NS_EXEC_ENV="env LD_LIBRARY_PATH=$libs" \
    bash "$C/../test/tools/netns_generic_tcp.sh" "$C/bin/ucxdt_perftest" "$m" 5
done
tl=$transport_layouts
ns_pair 0
run_step "compare-paths[netns tcp]" "$budget_netns" "$OUT/netns.log" "${with_libs[@]}" \
  "${pair_env[@]}" UCX_TLS=tcp,cuda_copy BIN="$C/bin" UCX_PERFTEST="$C/bin/ucx_perftest" \
  CSV="$OUT/netns-tcp.csv" bash "$C/../scripts/compare-paths" $tl
run_step "compare-paths[netns UCX's]" "$budget_netns" "$OUT/netns.log" "${with_libs[@]}" \
  "${pair_env[@]}" PATHS="${UCXDT_NETNS_DEFAULT_PATHS:-packsend pipeline}" \
  BIN="$C/bin" UCX_PERFTEST="$C/bin/ucx_perftest" CSV="$OUT/netns-default.csv" \
  bash "$C/../scripts/compare-paths" $tl
ns_all_down
