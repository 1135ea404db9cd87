#!/bin/sh
# test_sampler_profile: the sampler's dump through msgpack2gecko.
#   test_sampler_profile.sh TEST_SAMPLER MSGPACK2GECKO PYTHON TESTS_DIR WORKDIR
set -u
ts=$1 m2g=$2 py=$3 src=$4 dir=$5
rm -rf "$dir"
mkdir -p "$dir"
fail() { echo "test_sampler_profile: $*" >&2; exit 1; }
"$ts" "$dir/sampler.rtprof" 2>"$dir/test_sampler.err" ||
    { cat "$dir/test_sampler.err" >&2; fail "test_sampler failed"; }
"$m2g" "$dir/sampler.rtprof" -o "$dir/sampler.json.gz" 2>"$dir/m2g.err" ||
    { cat "$dir/m2g.err" >&2; fail "msgpack2gecko exit $?"; }
"$py" "$src/gecko_check.py" --require-samples "$dir/sampler.json.gz" ||
    fail "gecko_check.py rejects the profile"
# The share of the sleepy thread's samples taken while it slept, by its
# own clock (test_sampler prints it).
own=$(sed -n "s/.*at the samples' times \([0-9.]*\)).*/\1/p" "$dir/test_sampler.err")
[ -n "$own" ] || fail "test_sampler printed no sleepy share"
"$py" "$src/test_sampler_profile.py" "$dir/sampler.json.gz" "$own" ||
    fail "content"
echo "test_sampler_profile: ok"
