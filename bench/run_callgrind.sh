#!/bin/sh
# run_callgrind.sh - instructions per operation of every bench_hotpath case,
# counted by callgrind (this machine has no hardware counters).
#
#   bench/run_callgrind.sh BUILD_DIR [OUT_FILE [K1 K2]]
#
# Each case runs twice under `valgrind --tool=callgrind`, with K1 and K2
# operations (default 100000 and 200000). Only the timed loop functions
# (bench_loop_*) are counted (--collect-atstart=no --toggle-collect), and
# only on the threads that run them: collection state is per thread, so the
# rtprof writer thread is not counted. Ir/op = (Ir(K2) - Ir(K1)) /
# ((K2 - K1) * threads), which removes fixed costs (first calls, lazy PLT
# binding, the first chunk); what stays per op includes the amortised chunk
# switches. For mutex_2t valgrind runs the two threads one at a time, so the
# figure has no lock contention in it.
#
# Writes "case ir_per_op" lines to OUT_FILE (default
# BUILD_DIR/bench/ir.txt), prints a table, and the file can then be merged
# into a timing run: BUILD_DIR/bench/bench_hotpath --json --ir OUT_FILE
set -eu

build=${1:?usage: run_callgrind.sh BUILD_DIR [OUT_FILE [K1 K2]]}
out=${2:-$build/bench/ir.txt}
k1=${3:-100000}
k2=${4:-200000}
bin=$build/bench/bench_hotpath
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

command -v valgrind >/dev/null || { echo "valgrind not found" >&2; exit 1; }
[ -x "$bin" ] || { echo "$bin not built" >&2; exit 1; }

ir_of() {
	valgrind --tool=callgrind --collect-atstart=no \
	    --toggle-collect='bench_loop_*' \
	    --callgrind-out-file="$tmp/cg.out" \
	    "$bin" --callgrind "$1" --events "$2" >"$tmp/log" 2>&1 ||
	    { cat "$tmp/log" >&2; exit 1; }
	sed -n 's/^summary: *\([0-9]*\).*/\1/p' "$tmp/cg.out"
}

{
	echo "# bench_hotpath instructions per operation (callgrind Ir)"
	echo "# (Ir($k2 ops) - Ir($k1 ops)) / ($k2 - $k1) / threads; $(valgrind --version)"
} >"$out.tmp"
printf '%-18s %14s %14s %10s\n' case "Ir($k1)" "Ir($k2)" "Ir/op"
"$bin" --list >"$tmp/list"
while IFS="$(printf '\t')" read -r name threads desc; do
	a=$(ir_of "$name" "$k1")
	b=$(ir_of "$name" "$k2")
	per=$(awk -v a="$a" -v b="$b" -v k1="$k1" -v k2="$k2" -v t="$threads" \
	    'BEGIN { printf "%.2f", (b - a) / (k2 - k1) / t }')
	printf '%-18s %14s %14s %10s\n' "$name" "$a" "$b" "$per"
	echo "$name $per" >>"$out.tmp"
done <"$tmp/list"
mv "$out.tmp" "$out"
echo "wrote $out"
