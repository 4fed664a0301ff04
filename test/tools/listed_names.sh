#!/bin/sh
# Every layout that `ucxdt_perftest -L` names is a -D spec as listed, its size in parentheses
# and commas included: one verified pack of each succeeds, and two such names make a pair.
# Usage: listed_names.sh <ucxdt_perftest>
set -u
bin=$1
names=$("$bin" -L | sed '/^$/q' | awk 'NR > 1 && NF > 0 {print $1}')
n=$(printf '%s\n' "$names" | grep -c .)
[ "$n" -ge 40 ] || { echo "only $n layouts listed"; exit 1; }
fails=0
for name in $names; do  # names hold no spaces
  "$bin" -t pack -D "$name" -n 1 -w 0 -f csv >/dev/null 2>&1 || { echo "not a spec: $name"; fails=$((fails + 1)); }
done
pair='nas_mg_x(34,18,18),nas_mg_x(34,18,18)'
"$bin" -t pack -D "$pair" -n 1 -w 0 -f csv >/dev/null 2>&1 || { echo "not a pair: $pair"; fails=$((fails + 1)); }
echo "$n listed names and one pair, $fails refused"
[ "$fails" -eq 0 ]
