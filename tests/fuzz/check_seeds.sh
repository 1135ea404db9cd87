#!/bin/sh
# The committed fuzz corpora are what tests/fuzz/gen_seeds.c writes:
#   check_seeds.sh FUZZ_GEN_SEEDS FUZZDIR WORKDIR
# runs the generator into WORKDIR (reading the recorder's dumps
# all-kinds.rtprof, demo-stream.rtprof and zones.rtprof from FUZZDIR/corpus)
# and fails when
#   - a file it writes differs from the committed one, or is missing;
#   - a committed file is neither written by it, nor one of the recorder's
#     dumps, nor a regression input (crash-*, leak-*, timeout-*, oom-*:
#     what tests/fuzz/run.sh saves; they stay as they were found).
# To regenerate: FUZZ_GEN_SEEDS tests/fuzz/corpus tests/fuzz/corpus-records
set -eu
gen=$1
src=$2
work=$3
rm -rf "$work"
mkdir -p "$work/corpus" "$work/corpus-records"
"$gen" "$work/corpus" "$work/corpus-records" "$src/corpus" >"$work/gen.log" ||
    { cat "$work/gen.log"; echo "check_seeds: the generator failed" >&2; exit 1; }
status=0
n=0
for d in corpus corpus-records; do
	for f in "$work/$d"/*; do
		name=$(basename "$f")
		n=$((n + 1))
		if [ ! -f "$src/$d/$name" ]; then
			echo "check_seeds: $d/$name is generated but not committed" >&2
			status=1
		elif ! cmp -s "$f" "$src/$d/$name"; then
			echo "check_seeds: $d/$name differs from what gen_seeds.c" \
			    "writes now (stale)" >&2
			status=1
		fi
	done
	for f in "$src/$d"/*; do
		name=$(basename "$f")
		case $d/$name in
		corpus/all-kinds.rtprof | corpus/demo-stream.rtprof | corpus/zones.rtprof) continue ;;
		*/crash-* | */leak-* | */timeout-* | */oom-*) continue ;;
		esac
		if [ ! -f "$work/$d/$name" ]; then
			echo "check_seeds: $d/$name is committed but no longer" \
			    "generated" >&2
			status=1
		fi
	done
done
if [ $status -ne 0 ]; then
	echo "check_seeds: regenerate with: $gen $src/corpus" \
	    "$src/corpus-records" >&2
	exit 1
fi
echo "check_seeds: $n generated files match the committed corpora"
