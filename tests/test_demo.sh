#!/bin/sh
# test_demo: the demo runs and leaves a dump that decodes cleanly with every
# thread; its profile shows the audio view the README promises (callbacks,
# overruns, load and jitter graphs, the values the demo logged with -l, no
# Idle sample inside a callback: test_audio_demo.py); rtprof-inspect
# reports damage in a corrupted copy (exit 1), a cut copy (exit 1), and
# refuses a file that is not a dump (exit 2).
#   test_demo.sh DEMO INSPECT WORKDIR [MSGPACK2GECKO PYTHON TESTS_DIR]
# Without the last three (no Python found) the audio view is not checked.
set -u
demo=$1 inspect=$2 dir=$3 m2g=${4-} py=${5-} src=${6-}
mkdir -p "$dir"
d="$dir/demo-test.rtprof"
fail() { echo "test_demo: $*" >&2; exit 1; }

"$demo" -o "$d" -s 1 -l "$dir/demo-test.log" >/dev/null || fail "rtprof-demo failed"
out=$("$inspect" "$d") || fail "inspect of a good dump exited $?"
for name in '"audio" real-time' '"worker"' '"main" main'; do
	echo "$out" | grep -q "$name" || fail "thread $name missing"
done
echo "$out" | grep -q "MISMATCH" && fail "trailer mismatch in a good dump"

# The audio view: converted as demo.sh does, then checked.
if [ -n "$py" ]; then
	"$m2g" -q "$d" -o "$dir/demo-test.json" || fail "msgpack2gecko exit $?"
	"$py" "$src/gecko_check.py" "$dir/demo-test.json" ||
		fail "gecko_check.py rejects the demo's profile"
	PYTHONPATH="$src" "$py" "$src/test_audio_demo.py" "$dir/demo-test.json" 1 \
	    "$dir/demo-test.log" ||
		fail "the demo's audio view"
else
	echo "test_demo: no Python: the audio view is not checked"
fi

size=$(stat -c %s "$d")
cp "$d" "$dir/flipped.rtprof"
printf '\377\377\377\377' | dd of="$dir/flipped.rtprof" bs=1 seek=$((size / 2)) conv=notrunc 2>/dev/null
"$inspect" "$dir/flipped.rtprof" >"$dir/flipped.txt" 2>&1
rc=$?
[ $rc -eq 1 ] || fail "flipped bytes: exit $rc, want 1"
grep -qi "damage" "$dir/flipped.txt" || fail "flipped bytes: no damage reported"

head -c $((size - 7)) "$d" >"$dir/cut.rtprof"
"$inspect" "$dir/cut.rtprof" >"$dir/cut.txt" 2>&1
rc=$?
[ $rc -eq 1 ] || fail "cut file: exit $rc, want 1"
grep -qi "truncated" "$dir/cut.txt" || fail "cut file: truncation not reported"

head -c 4096 /dev/urandom >"$dir/random.bin"
"$inspect" "$dir/random.bin" >/dev/null 2>"$dir/random.txt"
rc=$?
[ $rc -eq 2 ] || fail "not a dump: exit $rc, want 2"
grep -q "random.bin" "$dir/random.txt" || fail "not a dump: error does not name the file"
echo "test_demo: ok"
