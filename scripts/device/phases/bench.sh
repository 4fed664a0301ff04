# run-on-device.sh bench: ucxdt_packbench, CSV and JSON to $OUT
# Sourced by run-on-device.sh, whose settings and run_step it uses; `return` ends the phase.
# packbench starts no new layout after -t seconds, which leaves time for the one running.
left=$((deadline - (SECONDS - t0) - 5)); b=$budget_bench
[ "$b" -lt "$left" ] || b=$left
run_step "ucxdt_packbench" "$b" "$OUT/bench.log" "${with_libs[@]}" "$C/bin/ucxdt_packbench" \
  -o "$OUT/packbench.csv" -j "$OUT/packbench.json" -t $((b > 90 ? b - 60 : b / 2))
