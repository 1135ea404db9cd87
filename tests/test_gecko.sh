#!/bin/sh
# test_gecko: msgpack2gecko end to end (see tests/CMakeLists.txt).
#   test_gecko.sh GECKO_REC MSGPACK2GECKO RTPROF_DEMO PYTHON TESTS_DIR WORKDIR
set -u
rec=$1 m2g=$2 demo=$3 py=$4 src=$5 dir=$6
rm -rf "$dir"
mkdir -p "$dir"
fail() { echo "test_gecko: $*" >&2; exit 1; }
check() { # check PROFILE: 0 errors from the strict checker
	"$py" "$src/gecko_check.py" --require-samples "$1" ||
	    fail "gecko_check.py rejects $1"
}
convert() { # convert DUMP OUT WANT_RC
	"$m2g" "$1" -o "$2" 2>"$2.err"
	rc=$?
	[ $rc -eq "$3" ] || { cat "$2.err" >&2; fail "$1: exit $rc, want $3"; }
}

# The deterministic dump: exact content, plain and gzipped.
"$rec" "$dir/rec.rtprof" || fail "gecko_rec failed"
convert "$dir/rec.rtprof" "$dir/rec.json" 0
convert "$dir/rec.rtprof" "$dir/rec.json.gz" 0
[ "$(head -c 2 "$dir/rec.json.gz" | od -An -tx1 | tr -d ' ')" = 1f8b ] ||
    fail "rec.json.gz is not gzip"
check "$dir/rec.json"
check "$dir/rec.json.gz"
"$py" "$src/test_gecko_content.py" "$dir/rec.json" || fail "content"
"$py" "$src/test_gecko_content.py" "$dir/rec.json.gz" || fail "content (gz)"
# stdin to stdout gives the same profile.
"$m2g" --quiet - -o - <"$dir/rec.rtprof" >"$dir/stdio.json" ||
    fail "stdin/stdout conversion"
sed 's/"input":"[^"]*"//' "$dir/rec.json" >"$dir/a.txt"
sed 's/"input":"[^"]*"//' "$dir/stdio.json" >"$dir/b.txt"
cmp -s "$dir/a.txt" "$dir/b.txt" || fail "stdin/stdout output differs"
"$m2g" --info "$dir/rec.rtprof" >"$dir/info.txt" || fail "--info exit $?"
grep -q '"worker"' "$dir/info.txt" || fail "--info lists no worker"
"$m2g" --help | grep -q "exit status" || fail "--help lists no exit codes"

# No main thread registered: a GeckoMain thread is made up (tid = pid, one
# sample) so that the process track and its counters show.
"$rec" "$dir/nomain.rtprof" nomain || fail "gecko_rec nomain failed"
convert "$dir/nomain.rtprof" "$dir/nomain.json" 0
check "$dir/nomain.json"
"$py" - "$dir/nomain.json" <<'PY' || fail "nomain: threads"
import json, sys
t = json.load(open(sys.argv[1]))["threads"]
assert [x["name"] for x in t] == ["GeckoMain", "worker"], [x["name"] for x in t]
assert t[0]["tid"] == t[0]["pid"] and t[0]["processName"] == "gecko_rec"
assert len(t[0]["samples"]["data"]) == 1 and t[0]["markers"]["data"] == []
assert t[1]["unregisterTime"] is not None
PY

# The fuzz corpus and the demo's dump.
for f in "$src"/fuzz/corpus/*.rtprof; do
	convert "$f" "$dir/$(basename "$f").json" 0
	check "$dir/$(basename "$f").json"
done
"$demo" -o "$dir/demo.rtprof" -s 1 >/dev/null || fail "rtprof-demo failed"
convert "$dir/demo.rtprof" "$dir/demo.json.gz" 0
check "$dir/demo.json.gz"

# Damage: a cut copy and a copy with flipped bytes still convert (exit 1)
# and list the damage; a file that is not a dump exits 2 naming it.
d="$dir/demo.rtprof"
size=$(stat -c %s "$d")
head -c $((size - 7)) "$d" >"$dir/cut.rtprof"
convert "$dir/cut.rtprof" "$dir/cut.json" 1
check "$dir/cut.json"
grep -q '"kind":"truncated"' "$dir/cut.json" || fail "cut: no truncated entry"
grep -q 'cut.rtprof: offset [0-9]*: damaged' "$dir/cut.json.err" ||
    fail "cut: stderr does not name the file and offset"
cp "$d" "$dir/flipped.rtprof"
printf '\377\377\377\377' | dd of="$dir/flipped.rtprof" bs=1 \
    seek=$((size / 2)) conv=notrunc 2>/dev/null
convert "$dir/flipped.rtprof" "$dir/flipped.json" 1
check "$dir/flipped.json"
grep -q '"damage":\[{"kind"' "$dir/flipped.json" ||
    fail "flipped: no damage listed"
head -c 4096 /dev/urandom >"$dir/random.bin"
convert "$dir/random.bin" "$dir/random.json" 2
grep -q "random.bin" "$dir/random.json.err" ||
    fail "not a dump: error does not name the file"
[ ! -e "$dir/random.json" ] || fail "not a dump: output left behind"

# Several dumps and sessions (processes), --from/--to, --thread.
"$py" "$src/test_gecko_multi.py" "$rec" "$m2g" "$src" "$dir/multi" ||
    fail "several processes / filters"
# Several dumps on the command line, damaged ones included: exit 1.
convert2() { # convert2 OUT WANT_RC DUMP...
	out=$1 want=$2
	shift 2
	"$m2g" "$@" -o "$out" 2>"$out.err"
	rc=$?
	[ $rc -eq "$want" ] || { cat "$out.err" >&2; fail "$*: exit $rc, want $want"; }
}
convert2 "$dir/three.json" 1 "$dir/rec.rtprof" "$d" "$dir/cut.rtprof"
"$py" "$src/gecko_check.py" --require-samples "$dir/three.json" ||
    fail "gecko_check.py rejects $dir/three.json"
grep -q 'cut.rtprof: offset [0-9]*: damaged' "$dir/three.json.err" ||
    fail "three: stderr does not name the damaged dump"
# A dump that is not a dump among others: exit 2, no output left behind.
convert2 "$dir/bad2.json" 2 "$dir/rec.rtprof" "$dir/random.bin"
grep -q "random.bin" "$dir/bad2.json.err" || fail "bad2: message"
[ ! -e "$dir/bad2.json" ] || fail "bad2: output left behind"
"$m2g" --info "$dir/rec.rtprof" "$d" >"$dir/info2.txt" || fail "--info two"
[ "$(grep -c '^session 1:' "$dir/info2.txt")" -eq 2 ] || fail "--info two dumps"
echo "test_gecko: ok"
