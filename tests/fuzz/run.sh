#!/bin/sh
# Fuzz every target for a long time (not in CI; CI fuzzes each target for
# 20 s in the clang ASan build, tests/CMakeLists.txt):
#   tests/fuzz/run.sh [-j JOBS] [SECONDS] [TARGET...]
#     SECONDS  per target (default 3600)
#     TARGET   fuzz_dump_reader, fuzz_convert, fuzz_records: default every
#              tests/fuzz/fuzz_*.c (each is a libFuzzer target of that name)
#     -j JOBS  targets fuzzed at once (default: one per CPU, at most one per
#              target); wall time is SECONDS * ceil(targets / JOBS)
# Builds the clang ASan+UBSan tree in build-fuzz/ ($FUZZ_BUILD to change
# it), fuzzes each target from its seed corpus (tests/fuzz/corpus-NAME/
# for fuzz_NAME when there is one, as tests/fuzz/corpus-records/ for
# fuzz_records; else tests/fuzz/corpus/) plus its own working corpus
# build-fuzz/corpus/TARGET/ (kept between runs, so a second run goes on
# where the first stopped), and writes its log to
# build-fuzz/logs/TARGET.log. A crash, leak, timeout or out-of-memory input
# is saved as build-fuzz/crashes/TARGET-crash-*, -leak-*, -timeout-*,
# -oom-*: copy it into the target's seed corpus under the same name (crash-*
# etc.) so that it stays a regression test (fuzz_replay_* run every corpus
# file in every build; check_seeds.sh leaves such files alone). Prints each
# target's executions and exits 1 when any target found something or
# stopped early.
set -eu
cd "$(dirname "$0")/../.."
src=$(pwd)
jobs=
while getopts j: opt; do
	case $opt in
	j) jobs=$OPTARG ;;
	*) sed -n '2,10p' "$0" >&2; exit 2 ;;
	esac
done
shift $((OPTIND - 1))
secs=${1:-3600}
case $secs in
'' | *[!0-9]*) echo "run.sh: SECONDS must be a number: $secs" >&2; exit 2 ;;
esac
[ $# -gt 0 ] && shift
targets=$*
if [ -z "$targets" ]; then
	for f in tests/fuzz/fuzz_*.c; do
		targets="$targets $(basename "$f" .c)"
	done
fi
ntargets=$(echo "$targets" | wc -w)
[ -n "$jobs" ] || jobs=$(nproc)
[ "$jobs" -gt "$ntargets" ] && jobs=$ntargets
[ "$jobs" -ge 1 ] || jobs=1

build=${FUZZ_BUILD:-build-fuzz}
cmake -S . -B "$build" -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ \
	-DRTPROF_SANITIZE=address,undefined -DRTPROF_BUILD_BENCH=OFF \
	-DRTPROF_BUILD_EXAMPLES=OFF >/dev/null
# shellcheck disable=SC2086
cmake --build "$build" --target $targets -j"$(nproc)" >/dev/null
mkdir -p "$build/logs" "$build/crashes"

# fuzz TARGET: one libFuzzer run of SECONDS; its exit status in
# $build/logs/TARGET.rc.
fuzz() {
	t=$1
	seeds=$src/tests/fuzz/corpus-${t#fuzz_}
	[ -d "$seeds" ] || seeds=$src/tests/fuzz/corpus
	mkdir -p "$build/corpus/$t"
	touch "$build/logs/$t.start"
	rc=0
	# -timeout: an input that takes 60 s is a hang; -rss_limit_mb as in CI.
	"$build/tests/$t" -max_total_time="$secs" -rss_limit_mb=1024 \
	    -timeout=60 -print_final_stats=1 \
	    -artifact_prefix="$build/crashes/$t-" \
	    "$build/corpus/$t" "$seeds" \
	    >"$build/logs/$t.log" 2>&1 || rc=$?
	echo $rc >"$build/logs/$t.rc"
}

echo "run.sh: fuzzing$targets for $secs s each, $jobs at a time" \
    "(logs in $build/logs/)"
running=0
pids=
for t in $targets; do
	fuzz "$t" &
	pids="$pids $!"
	running=$((running + 1))
	if [ $running -ge "$jobs" ]; then
		# shellcheck disable=SC2086
		wait $pids
		pids=
		running=0
	fi
done
# shellcheck disable=SC2086
[ -z "$pids" ] || wait $pids

status=0
for t in $targets; do
	rc=$(cat "$build/logs/$t.rc")
	log=$build/logs/$t.log
	execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
	speed=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)
	corpus=$(find "$build/corpus/$t" -type f | wc -l)
	found=$(find "$build/crashes" -name "$t-*" -type f \
	    -newer "$build/logs/$t.start" | wc -l)
	echo "run.sh: $t: exit $rc, ${execs:-?} executions (${speed:-?}/s)," \
	    "$corpus inputs in its working corpus, $found artifacts"
	if [ "$rc" -ne 0 ] || [ "$found" -ne 0 ]; then
		status=1
		grep -m 5 -A 3 'ERROR:\|Assertion\|abort\|deadly signal' "$log" >&2 ||
		    tail -20 "$log" >&2
		find "$build/crashes" -name "$t-*" -type f \
		    -newer "$build/logs/$t.start" >&2
	fi
done
exit $status
