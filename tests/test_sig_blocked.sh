#!/bin/sh
# test_sig_blocked: threads that block the sampling signal, as the tools
# report them (test_sig_fallback.c, case "blocked", writes the dump).
#   test_sig_blocked.sh TEST_SIG_FALLBACK MSGPACK2GECKO RTPROF WORKDIR
set -u
tsf=$1 m2g=$2 rtprof=$3 dir=$4
rm -rf "$dir"
mkdir -p "$dir"
fail() { echo "test_sig_blocked: $*" >&2; exit 1; }
RTPROF_SAMPLER=signal "$tsf" blocked "$dir/blocked.rtprof" \
    2>"$dir/rec.err" || { cat "$dir/rec.err" >&2; fail "recording failed"; }
"$m2g" --info "$dir/blocked.rtprof" >"$dir/info.txt" 2>&1 ||
    { cat "$dir/info.txt" >&2; fail "msgpack2gecko --info failed"; }
"$rtprof" summarize "$dir/blocked.rtprof" >"$dir/sum.txt" 2>&1 ||
    { cat "$dir/sum.txt" >&2; fail "rtprof summarize failed"; }
for n in 1 2; do
    grep -Eq "^  [1-9][0-9]* samples of thread \"blocked-$n\" \(tid [0-9]+\) had the signal blocked$" \
        "$dir/info.txt" || { cat "$dir/info.txt" >&2;
        fail "--info does not say blocked-$n had the signal blocked"; }
    grep -Eq "^  [1-9][0-9]* samples of thread \"blocked-$n\" \(tid [0-9]+, .* pid [0-9]+\) had the signal blocked$" \
        "$dir/sum.txt" || { cat "$dir/sum.txt" >&2;
        fail "summarize does not say blocked-$n had the signal blocked"; }
done
grep -q 'thread "free"' "$dir/info.txt" "$dir/sum.txt" &&
    fail "the free thread is reported with the signal blocked"
# "with a stack" excludes them: the total less the blocked ones.
blk=$(sed -n 's/^samples: .* truncated, \([0-9]*\) with the signal blocked$/\1/p' \
    "$dir/info.txt")
[ -n "$blk" ] && [ "$blk" -gt 0 ] ||
    fail "--info's samples line has no blocked count"
sum=$(sed -n 's/^  \([0-9]*\) samples of thread "blocked-.*/\1/p' \
    "$dir/info.txt" | awk '{ n += $1 } END { print n }')
[ "$sum" = "$blk" ] || fail "per-thread blocked counts $sum, total $blk"
# No sample of theirs counted as a function's self sample: "(no stack)"
# holds at most the free thread's samples whose handler came too late
# (a loaded machine, TSan: 1 of 2580 seen), far fewer than the blocked.
nost=$(sed -n 's/^ *\([0-9]*\) .*%  (no stack)$/\1/p' "$dir/sum.txt")
[ -z "$nost" ] || [ $((nost * 20)) -lt "$blk" ] ||
    { cat "$dir/sum.txt" >&2;
    fail "blocked samples counted as (no stack): $nost of $blk"; }
echo "test_sig_blocked: ok"
