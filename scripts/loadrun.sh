#!/bin/sh
# scripts/loadrun.sh [RUNS] - ./test.sh RUNS times in a row (5 by default)
# on a fresh clone of this checkout's HEAD, while stress-ng --cpu 2 keeps
# two CPU-bound processes running beside it (RELIABILITY.md, "The suite
# under load"). Each run's output in /tmp/rtprof-loadrun/runN.out, a line
# per run (result, seconds, load average) on stdout. Exit 0 when all
# passed.
set -u
runs=${1:-5}
src=$(cd "$(dirname "$0")/.." && pwd)
dir=/tmp/rtprof-loadrun
command -v stress-ng >/dev/null || apt-get install -y stress-ng >/dev/null
rm -rf "$dir" && git clone -q "$src" "$dir" || exit 1
cd "$dir" || exit 1
stress-ng --cpu 2 --timeout 6h >/dev/null 2>&1 &
hogs=$!
trap 'kill $hogs 2>/dev/null' EXIT INT TERM
echo "commit $(git rev-parse --short HEAD), stress-ng --cpu 2"
fails=0
for i in $(seq 1 "$runs"); do
	t0=$(date +%s)
	if ./test.sh > "$dir/run$i.out" 2>&1; then r=pass; else r=FAIL; fails=$((fails + 1)); fi
	echo "run $i $r $(( $(date +%s) - t0 )) s, load $(cut -d' ' -f1-3 /proc/loadavg)"
done
[ "$fails" -eq 0 ]
