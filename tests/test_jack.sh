#!/bin/sh
# test_jack: the audio callback API against a real JACK server.
#   test_jack.sh JACK_CLIENT MSGPACK2GECKO PYTHON TESTS_DIR WORKDIR
#
# Starts its own jackd (dummy driver, 48 kHz, 128 frames, synchronous mode,
# no real-time scheduling, a private server name), runs the example client
# through light / heavy / light load phases, converts its dump and checks
# the profile (test_jack.py). jackd is stopped whatever happens.
set -u
client=$1 m2g=$2 py=$3 src=$4 dir=$5
name="rtprof-test-$$"
rm -rf "$dir"
mkdir -p "$dir"
fail() { echo "test_jack: $*" >&2; exit 1; }
command -v jackd >/dev/null 2>&1 || { echo "test_jack: no jackd: skipped"; exit 77; }
export JACK_NO_AUDIO_RESERVATION=1 JACK_NO_START_SERVER=1
jackd -S -R -P 70 -n "$name" -d dummy -r 48000 -p 128 \
    >"$dir/jackd.log" 2>&1 &
jpid=$!
trap 'kill "$jpid" 2>/dev/null; wait "$jpid" 2>/dev/null' EXIT INT TERM
# Wait until the server takes clients (at most 10 s).
i=0
until JACK_DEFAULT_SERVER="$name" jack_lsp >/dev/null 2>&1; do
	i=$((i + 1))
	[ $i -lt 100 ] || { cat "$dir/jackd.log" >&2; fail "jackd did not start"; }
	kill -0 "$jpid" 2>/dev/null || { cat "$dir/jackd.log" >&2; fail "jackd exited"; }
	sleep 0.1
done
"$client" -o "$dir/jack.rtprof" -n "$name" -p light:1.5,heavy:1,light:1.5 \
    -H 1.3 >"$dir/client.out" 2>"$dir/client.err" ||
    { cat "$dir/client.err" >&2; fail "client failed"; }
cat "$dir/client.out"
"$m2g" -q "$dir/jack.rtprof" -o "$dir/jack.json" || fail "msgpack2gecko exit $?"
"$py" "$src/gecko_check.py" --require-samples "$dir/jack.json" ||
    fail "gecko_check.py rejects the profile"
"$py" "$src/test_jack.py" "$dir/jack.json" "$dir/client.out"
rc=$?
[ $rc -ne 77 ] || exit 77       # the machine cannot keep JACK's time
[ $rc -eq 0 ] || fail "content"
echo "test_jack: ok"
