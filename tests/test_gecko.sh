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
strict() { # strict PROFILE [OPTION...]: 0 errors and 0 warnings
	f=$1
	shift
	"$py" "$src/gecko_check.py" --require-samples --werror "$@" "$f" ||
	    fail "gecko_check.py --werror rejects $f"
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
strict "$dir/rec.json"
strict "$dir/rec.json.gz"
"$py" "$src/test_gecko_content.py" "$dir/rec.json" || fail "content"
"$py" "$src/test_gecko_content.py" "$dir/rec.json.gz" || fail "content (gz)"
# Without --quiet a conversion says where it wrote; with it, nothing.
grep -q "^msgpack2gecko: wrote $dir/rec.json; open it at" "$dir/rec.json.err" ||
    fail "no 'wrote' message without --quiet"
"$m2g" --quiet "$dir/rec.rtprof" -o "$dir/quiet.json" >"$dir/quiet.out" \
    2>"$dir/quiet.err" || fail "--quiet: exit $?"
[ ! -s "$dir/quiet.err" ] && [ ! -s "$dir/quiet.out" ] ||
    fail "--quiet: output on stderr/stdout: $(cat "$dir/quiet.err")"
cmp -s "$dir/rec.json" "$dir/quiet.json" || fail "--quiet: other profile"
# stdin to stdout gives the same profile.
"$m2g" --quiet - -o - <"$dir/rec.rtprof" >"$dir/stdio.json" \
    2>"$dir/stdio.err" || fail "stdin/stdout conversion"
[ ! -s "$dir/stdio.err" ] || fail "--quiet to stdout: $(cat "$dir/stdio.err")"
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
strict "$dir/nomain.json"
"$py" - "$dir/nomain.json" <<'PY' || fail "nomain: threads"
import json, sys
t = json.load(open(sys.argv[1]))["threads"]
assert [x["name"] for x in t] == ["GeckoMain", "worker"], [x["name"] for x in t]
assert t[0]["tid"] == t[0]["pid"] and t[0]["processName"] == "gecko_rec"
assert len(t[0]["samples"]["data"]) == 1 and t[0]["markers"]["data"] == []
assert t[1]["unregisterTime"] is not None
PY

# The fuzz corpus and the demo's dump. Not --werror: the corpus's
# sampler-one/two (tests/fuzz/gen_seeds.c) record a "request" interval that
# is begun and never ended, on purpose, which gecko_check.py rightly warns
# about (marker-unpaired).
for f in "$src"/fuzz/corpus/*.rtprof; do
	convert "$f" "$dir/$(basename "$f").json" 0
	check "$dir/$(basename "$f").json"
done
"$demo" -o "$dir/demo.rtprof" -s 1 >/dev/null || fail "rtprof-demo failed"
convert "$dir/demo.rtprof" "$dir/demo.json.gz" 0
check "$dir/demo.json.gz"

# Damage: a cut copy and a copy with flipped bytes still convert (exit 1)
# and list the damage; a file that is not a dump exits 2 naming it. Damaged
# profiles get no --werror: a lost frame may leave an interval unpaired.
d="$dir/demo.rtprof"
size=$(stat -c %s "$d")
head -c $((size - 7)) "$d" >"$dir/cut.rtprof"
convert "$dir/cut.rtprof" "$dir/cut.json" 1
check "$dir/cut.json"
grep -q '"kind":"truncated"' "$dir/cut.json" || fail "cut: no truncated entry"
grep -q 'cut.rtprof: offset [0-9]*: damaged' "$dir/cut.json.err" ||
    fail "cut: stderr does not name the file and offset"
# Four bytes inverted inside the payload of the middle DATA frame (not in a
# header, whose CRC would make it a hunt for the next sync instead): the
# frame at offset $off is lost to its payload CRC, and said so.
off=$("$py" "$src/test_gecko_errors.py" flip "$d" "$dir/flipped.rtprof") ||
    fail "flip"
convert "$dir/flipped.rtprof" "$dir/flipped.json" 1
check "$dir/flipped.json"
grep -q "^msgpack2gecko: $dir/flipped.rtprof: offset $off: damaged: damaged \
frames skipped (payload CRC mismatch) (2 report(s);" "$dir/flipped.json.err" ||
    fail "flipped: stderr does not name the file, offset $off and the CRC"
"$py" - "$dir/flipped.json" "$off" <<'PY' || fail "flipped: gathering log"
import json, sys
log = json.load(open(sys.argv[1]))["profileGatheringLog"]
off = int(sys.argv[2])
assert log["damagedFrames"] >= 1, log["damagedFrames"]
assert [(d["kind"], d["offset"], d["count"], d["message"])
        for d in log["damage"]][0] == (
    "skipped", off, 1, "damaged frames skipped (payload CRC mismatch)"), log
assert log["damage"][1]["kind"] == "seq-gap", log["damage"]
assert log["damageReports"] == 2, log["damageReports"]
PY
head -c 4096 /dev/urandom >"$dir/random.bin"
convert "$dir/random.bin" "$dir/random.json" 2
grep -q "random.bin" "$dir/random.json.err" ||
    fail "not a dump: error does not name the file"
[ ! -e "$dir/random.json" ] || fail "not a dump: output left behind"

# Several dumps and sessions (processes), --from/--to, --thread.
"$py" "$src/test_gecko_multi.py" "$rec" "$m2g" "$src" "$dir/multi" ||
    fail "several processes / filters"
strict "$dir/multi/two.json" --expect-processes 2
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
# No thread's string table holds a string twice.
"$py" "$src/test_gecko_content.py" --unique-strings "$dir/nomain.json" \
    "$dir/demo.json.gz" "$dir/multi/two.json" "$dir/multi/twice.json" \
    "$dir/flipped.json" "$dir/three.json" || fail "string tables"
# Edited dumps (newer version, repeated and swapped frames, drops), outputs
# that cannot be written, --info's values, the progress bar on a terminal.
"$py" "$src/test_gecko_errors.py" "$m2g" "$src" "$dir" || fail "errors"
echo "test_gecko: ok"
