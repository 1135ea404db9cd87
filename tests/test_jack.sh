#!/bin/sh
# test_jack: the audio callback API against a real JACK server.
#   test_jack.sh JACK_CLIENT MSGPACK2GECKO PYTHON TESTS_DIR WORKDIR
#
# Starts its own jackd (dummy driver, 48 kHz, 128 frames, synchronous mode,
# no real-time scheduling, a private server name), runs the example client
# through light / heavy / light load phases, converts its dump and checks
# the profile (test_jack.py). jackd is stopped whatever happens (an EXIT
# trap; SIGTERM, then SIGKILL after 5 s and its files in /dev/shm removed),
# and the test checks it: after the run no jackd of its server name is
# left, nor its files; then it runs itself again with a client that fails
# (RTPROF_JACK_FAILRUN=1, the client `false`), wants exit 1 and checks the
# same for that run's server.
set -u
client=$1 m2g=$2 py=$3 src=$4 dir=$5
name="rtprof-test-$$"
rm -rf "$dir"
mkdir -p "$dir"
fail() { echo "test_jack: $*" >&2; exit 1; }
command -v jackd >/dev/null 2>&1 || { echo "test_jack: no jackd: skipped"; exit 77; }
export JACK_NO_AUDIO_RESERVATION=1 JACK_NO_START_SERVER=1

# jackd processes still running with server name $1 (their pid and args).
jackd_of() {
	ps -eo pid=,args= | awk -v n="$1" \
	    '$2 ~ /(^|\/)jackd$/ { for (i = 3; i < NF; i++)
	        if ($i == "-n" && $(i + 1) == n) { print; break } }'
}
# Files in /dev/shm of server name $1 (sockets, semaphores).
jack_files_of() {
	ls -d /dev/shm/jack_"$1"_* /dev/shm/jack_sem.*_"$1"_* 2>/dev/null
}
# Assert that no jackd of server name $1 is left, nor its files.
assert_gone() {
	left=$(jackd_of "$1")
	[ -z "$left" ] || fail "a jackd of ours is left: $left"
	left=$(jack_files_of "$1")
	[ -z "$left" ] || fail "jackd's files are left: $left"
}

jpid=
# Stop our jackd: SIGTERM, SIGKILL after 5 s (a watchdog: `wait` would
# hang on a jackd that ignores SIGTERM), reaped; the files a killed jackd
# leaves are removed.
stop_jackd() {
	[ -n "$jpid" ] || return 0
	kill "$jpid" 2>/dev/null
	(sleep 5; kill -9 "$jpid" 2>/dev/null) &
	wd=$!
	wait "$jpid" 2>/dev/null
	kill "$wd" 2>/dev/null
	wait "$wd" 2>/dev/null
	jpid=
	for f in $(jack_files_of "$name"); do
		echo "test_jack: removing $f (jackd did not)" >&2
		rm -f "$f"
	done
}
trap 'stop_jackd' EXIT
trap 'stop_jackd; exit 1' INT TERM

jackd -S -R -P 70 -n "$name" -d dummy -r 48000 -p 128 \
    >"$dir/jackd.log" 2>&1 &
jpid=$!
# Wait until the server takes clients (at most 10 s).
i=0
until JACK_DEFAULT_SERVER="$name" jack_lsp >/dev/null 2>&1; do
	i=$((i + 1))
	[ $i -lt 100 ] || { cat "$dir/jackd.log" >&2; fail "jackd did not start"; }
	kill -0 "$jpid" 2>/dev/null || { cat "$dir/jackd.log" >&2; fail "jackd exited"; }
	sleep 0.1
done
[ -n "$(jackd_of "$name")" ] || fail "jackd_of does not see our jackd"

if [ "${RTPROF_JACK_FAILRUN-}" = 1 ]; then
	# The failing run: the EXIT trap must stop jackd.
	"$client" || fail "client failed (on purpose)"
	fail "the client meant to fail succeeded"
fi

"$client" -o "$dir/jack.rtprof" -n "$name" -p light:1.5,heavy:1,light:1.5 \
    -H 1.3 >"$dir/client.out" 2>"$dir/client.err" ||
    { cat "$dir/client.err" >&2; fail "client failed"; }
cat "$dir/client.out"
"$m2g" -q "$dir/jack.rtprof" -o "$dir/jack.json" || fail "msgpack2gecko exit $?"
"$py" "$src/gecko_check.py" --require-samples "$dir/jack.json" ||
    fail "gecko_check.py rejects the profile"
PYTHONPATH="$src" "$py" "$src/test_jack.py" "$dir/jack.json" "$dir/client.out"
rc=$?

# Cleanup: jackd stopped, none of ours left (after a skip too).
stop_jackd
assert_gone "$name"
# ... and on a failure: a run whose client fails (its own server name).
RTPROF_JACK_FAILRUN=1 sh "$0" false "$m2g" "$py" "$src" "$dir/fail-run" \
    >"$dir/fail-run.log" 2>&1 </dev/null &
fpid=$!
wait "$fpid"
frc=$?
grep -q "client failed (on purpose)" "$dir/fail-run.log" ||
    { cat "$dir/fail-run.log" >&2; fail "the failing run did not fail as meant (exit $frc)"; }
[ $frc -eq 1 ] || fail "the failing run exited $frc, want 1"
assert_gone "rtprof-test-$fpid"
echo "test_jack: no jackd left (run and failing run)"

[ $rc -ne 77 ] || exit 77       # the machine cannot keep JACK's time
[ $rc -eq 0 ] || fail "content"
echo "test_jack: ok"
