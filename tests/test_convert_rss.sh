#!/bin/sh
# test_convert_rss.sh - the converter's memory stays bounded on a large dump.
#
#   tests/test_convert_rss.sh GEN_DUMP MSGPACK2GECKO [BYTES [LIMIT_KIB]]
#
# Pipes `gen_dump --size BYTES` (1 GiB) into `msgpack2gecko - -o /dev/null`
# and fails when the conversion fails (generator or converter exit status
# not 0) or when the converter's peak RSS exceeds LIMIT_KIB (262144: 256
# MiB). The peak RSS comes from GNU time (/usr/bin/time -v) when present,
# else from python3's resource.getrusage(RUSAGE_CHILDREN) around the
# converter alone (which then includes the ~10 MiB python had when it
# forked: exec keeps the child's high-water mark). A ctest entry in the
# optimised build (tests/CMakeLists.txt): the converter spills what grows
# with the dump (codec/spill.h). By hand, e.g.
#   tests/test_convert_rss.sh build/bench/gen_dump build/msgpack2gecko
set -u

if [ $# -lt 2 ] || [ $# -gt 4 ]; then
	echo "usage: $0 GEN_DUMP MSGPACK2GECKO [BYTES [LIMIT_KIB]]" >&2
	exit 2
fi
gen=$1
conv=$2
size=${3:-1073741824}
limit=${4:-262144}

tmp=$(mktemp -d "${TMPDIR:-/tmp}/convert-rss.XXXXXX") || exit 2
trap 'rm -rf "$tmp"' EXIT INT TERM

# The generator's status goes through a file: sh has no pipefail.
if [ -x /usr/bin/time ] && /usr/bin/time -v true >/dev/null 2>&1; then
	{ "$gen" --size "$size" --seed 1; echo $? >"$tmp/gen.rc"; } |
	    /usr/bin/time -v -o "$tmp/time.txt" "$conv" - -o /dev/null -q
	conv_rc=$?
	rss=$(sed -n 's/^[[:space:]]*Maximum resident set size (kbytes): //p' \
	    "$tmp/time.txt")
elif command -v python3 >/dev/null 2>&1; then
	{ "$gen" --size "$size" --seed 1; echo $? >"$tmp/gen.rc"; } |
	    python3 -c '
import resource, subprocess, sys
rc = subprocess.call(sys.argv[2:])
with open(sys.argv[1], "w") as f:
    print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, file=f)
sys.exit(rc)' "$tmp/rss.txt" "$conv" - -o /dev/null -q
	conv_rc=$?
	rss=$(cat "$tmp/rss.txt" 2>/dev/null)
else
	echo "test_convert_rss: needs GNU time or python3" >&2
	exit 2
fi

gen_rc=$(cat "$tmp/gen.rc" 2>/dev/null || echo missing)
fail=0
if [ "$gen_rc" != 0 ]; then
	echo "test_convert_rss: gen_dump failed (status $gen_rc)" >&2
	fail=1
fi
if [ "$conv_rc" != 0 ]; then
	echo "test_convert_rss: msgpack2gecko failed (status $conv_rc)" >&2
	fail=1
fi
if [ -z "$rss" ]; then
	echo "test_convert_rss: no peak RSS measured" >&2
	exit 1
fi
echo "test_convert_rss: $size bytes, msgpack2gecko status $conv_rc, peak" \
    "RSS $rss KiB ($((rss / 1024)) MiB), limit $limit KiB"
if [ "$rss" -gt "$limit" ]; then
	echo "test_convert_rss: peak RSS over the limit" >&2
	fail=1
fi
exit $fail
