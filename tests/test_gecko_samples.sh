#!/bin/sh
# test_gecko_samples: sampler records -> Gecko samples (tests/CMakeLists.txt,
# "gecko samples (helper A)"). Dumps from gecko_samples_gen (its own
# functions as native frames), converted with and without symbols, with
# --sysroot (the right program, and another one: build id mismatch) and
# --debug-dir; and its real.rtprof, recorded with the real recorder; every
# profile must pass gecko_check.py and test_gecko_samples.py.
#   test_gecko_samples.sh GEN MSGPACK2GECKO PYTHON TESTS_DIR WORKDIR OTHER
# OTHER: gecko_samples_other, another build of GEN (other code, build id).
set -u
gen=$1 m2g=$2 py=$3 src=$4 dir=$5 other=$6
rm -rf "$dir"
mkdir -p "$dir"
fail() { echo "test_gecko_samples: $*" >&2; exit 1; }
check() { # check PROFILE MODE: the strict checker, then the content
	"$py" "$src/gecko_check.py" --require-samples "$1" ||
	    fail "gecko_check.py rejects $1"
	"$py" "$src/test_gecko_samples.py" "$2" "$1" "$dir/expect.txt" ||
	    fail "$1: content ($2)"
}
convert() { # convert OUT WANT_RC ARGS...
	out=$1 want=$2
	shift 2
	"$m2g" "$@" -o "$out" 2>"$out.err"
	rc=$?
	[ $rc -eq "$want" ] || { cat "$out.err" >&2; fail "$*: exit $rc, want $want"; }
}

"$gen" "$dir" || fail "gecko_samples_gen failed"
exe=$(sed -n 's/^exe //p' "$dir/expect.txt")

convert "$dir/full.json" 0 "$dir/samples.rtprof"
check "$dir/full.json" full
convert "$dir/full.json.gz" 0 "$dir/samples.rtprof"
check "$dir/full.json.gz" full
convert "$dir/nosym.json" 0 --no-symbols "$dir/samples.rtprof"
check "$dir/nosym.json" nosym
# A sample-less process first: the top-level meta still gets sampleUnits.
convert "$dir/multi.json" 0 "$dir/plain.rtprof" "$dir/samples.rtprof"
check "$dir/multi.json" multi

# The program recorded at a path that exists only under a sysroot.
convert "$dir/nofile.json" 0 "$dir/sysroot.rtprof"
check "$dir/nofile.json" nofile
mkdir -p "$dir/root/rtprof-nonexistent/bin"
cp "$exe" "$dir/root/rtprof-nonexistent/bin/gecko_samples_gen" ||
    fail "copy into the sysroot"
convert "$dir/sysroot.json" 0 --sysroot "$dir/root" "$dir/sysroot.rtprof"
check "$dir/sysroot.json" sysroot
# Debug info in a separate file found by build id under --debug-dir.
if command -v objcopy >/dev/null 2>&1; then
	bid=$(readelf -n "$exe" 2>/dev/null | sed -n 's/.*Build ID: //p' | head -n 1)
	[ -n "$bid" ] || fail "no build id in $exe"
	sub=$(echo "$bid" | cut -c1-2) rest=$(echo "$bid" | cut -c3-)
	mkdir -p "$dir/debug/.build-id/$sub"
	f="$dir/root/rtprof-nonexistent/bin/gecko_samples_gen"
	objcopy --only-keep-debug "$f" "$dir/debug/.build-id/$sub/$rest.debug" &&
	    objcopy --strip-debug "$f" || fail "objcopy"
	convert "$dir/stripped.json" 0 --sysroot "$dir/root" "$dir/sysroot.rtprof"
	check "$dir/stripped.json" stripped
	convert "$dir/debugdir.json" 0 --sysroot "$dir/root" \
	    --debug-dir "$dir/debug" "$dir/sysroot.rtprof"
	check "$dir/debugdir.json" debugdir
else
	echo "test_gecko_samples: objcopy missing: --debug-dir part skipped"
fi

# Another build of the program at the recorded path under --sysroot
# (gecko_samples_other: its code moved, so its symbols would give wrong
# names): its build id differs from the dump's, so the module is reported
# and not used; its frames stay hex, never a name from the wrong file.
mkdir -p "$dir/root2/rtprof-nonexistent/bin"
cp "$other" "$dir/root2/rtprof-nonexistent/bin/gecko_samples_gen" ||
    fail "copy the other program into the sysroot"
if command -v readelf >/dev/null 2>&1; then
	fbid=$(readelf -n "$other" 2>/dev/null | sed -n 's/.*Build ID: //p' |
	    head -n 1)
	[ -n "$fbid" ] || fail "no build id in $other"
	echo "fakebid $fbid" >>"$dir/expect.txt"
fi
convert "$dir/mismatch.json" 0 --sysroot "$dir/root2" "$dir/sysroot.rtprof"
check "$dir/mismatch.json" mismatch

# The real recorder: a real-time thread's exact stacks and CPU deltas.
convert "$dir/real.json" 0 "$dir/real.rtprof"
"$py" "$src/gecko_check.py" --require-samples "$dir/real.json" ||
    fail "gecko_check.py rejects $dir/real.json"
"$py" "$src/test_gecko_samples.py" real "$dir/real.json" "$dir/real.txt" ||
    fail "$dir/real.json: content (real)"

# Options: a --sysroot or --debug-dir that is not a directory is an error.
convert "$dir/bad.json" 2 --sysroot "$dir/nonexistent" "$dir/samples.rtprof"
grep -q "not a directory" "$dir/bad.json.err" || fail "--sysroot message"
[ ! -e "$dir/bad.json" ] || fail "bad --sysroot: output left behind"
convert "$dir/bad.json" 2 --debug-dir "$dir/expect.txt" "$dir/samples.rtprof"
"$m2g" --help | grep -q -- "--no-symbols" || fail "--help lacks --no-symbols"
"$m2g" --help | grep -q -- "--debug-dir" || fail "--help lacks --debug-dir"

# --info counts samples per thread.
"$m2g" --info "$dir/samples.rtprof" >"$dir/info.txt" || fail "--info exit $?"
grep -q '"worker": .* 7 samples' "$dir/info.txt" || fail "--info: worker samples"
grep -q '"rtprof sampler" sampler: .* 0 samples' "$dir/info.txt" ||
    fail "--info: sampler thread"
grep -q '^samples: 13 with a stack, 7 same stack (2 unknown)' "$dir/info.txt" ||
    fail "--info: sample totals"
grep -q '^sampler overhead: 2 ticks, 18500 ns' "$dir/info.txt" ||
    fail "--info: overhead"
echo "test_gecko_samples: ok"
