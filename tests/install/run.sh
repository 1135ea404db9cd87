#!/bin/sh
# test_install: install rtprof into a temporary prefix, then build a consumer
# with find_package(rtprof) and another with pkg-config (compiler and flags:
# $4 and $5, a sanitizer build's own), and run both; the
# prefix's bin/rtprof record profiles a program, and exits 2 without
# running it when its preload library is gone.
set -eu
src=$1 build=$2 work=$3 cc=${4:-cc} flags=${5:-}
rm -rf "$work"
mkdir -p "$work"
cmake --install "$build" --prefix "$work/prefix" >/dev/null
libdir=$(ls -d "$work"/prefix/lib*/ | head -n 1)
test -f "$work/prefix/include/rtprof.h"
test -f "$libdir/cmake/rtprof/rtprofConfig.cmake"
test -f "$libdir/pkgconfig/rtprof.pc"
test -x "$work/prefix/bin/rtprof-inspect"

cmake -S "$src/tests/install/consumer" -B "$work/cmake-consumer" \
	-DCMAKE_PREFIX_PATH="$work/prefix" -DCMAKE_C_COMPILER="$cc" \
	-DCMAKE_C_FLAGS="$flags" -DCMAKE_EXE_LINKER_FLAGS="$flags" >/dev/null
cmake --build "$work/cmake-consumer" >/dev/null
LD_LIBRARY_PATH="$libdir" "$work/cmake-consumer/consumer"

PKG_CONFIG_PATH="$libdir/pkgconfig" 
export PKG_CONFIG_PATH
# shellcheck disable=SC2086 # $flags: several flags
"$cc" $flags -std=c11 -Wall -Wextra -Werror $(pkg-config --cflags rtprof) \
	"$src/tests/install/consumer/consumer.c" $(pkg-config --libs rtprof) \
	-o "$work/pkgconfig-consumer"
LD_LIBRARY_PATH="$libdir" "$work/pkgconfig-consumer"
# @1 and every process below it.
tree() {
	echo "$1"
	for c in $(pgrep -P "$1"); do
		tree "$c"
	done
}

# Run "$@"; past 120 s (a hang, seen once under ASan: RELIABILITY.md)
# say where every process of it waits, with stacks when gdb is there,
# kill them all and return 124, instead of leaving ctest's timeout to
# kill the test without a word.
watched() {
	"$@" &
	pid=$! ticks=0
	while kill -0 "$pid" 2>/dev/null; do
		ticks=$((ticks + 1))
		if [ "$ticks" -gt 1200 ]; then
			echo "test_install: still running after 120 s: $*" >&2
			procs=$(tree "$pid")
			# shellcheck disable=SC2086 # $procs: several pids
			kill -STOP $procs 2>/dev/null || :
			ps -o pid,ppid,stat,wchan:32,args \
			    -p "$(echo "$procs" | paste -sd , -)" >&2 || :
			for p in $procs; do
				command -v gdb >/dev/null 2>&1 || break
				gdb -p "$p" -batch -ex "thread apply all bt" \
				    </dev/null >&2 2>&1 || :
			done
			# shellcheck disable=SC2086
			kill -9 $procs 2>/dev/null || :
			wait "$pid" || :
			return 124
		fi
		sleep 0.1
	done
	wait "$pid"
}

# The installed rtprof finds its preload library from where it is (the
# prefix given at install time, not the one configured): a program is
# profiled. Without the library it refuses before running the program.
watched "$work/prefix/bin/rtprof" record -o "$work/gz.json.gz" -- \
	sh -c 'i=0; while [ $i -lt 20000 ]; do i=$((i+1)); done; touch '"$work/ran1"
test -s "$work/gz.json.gz"
test -f "$work/ran1"
mv "$libdir/librtprof-preload.so" "$work/moved.so"
rc=0
watched "$work/prefix/bin/rtprof" record -o "$work/none.json.gz" -- \
	touch "$work/ran2" 2>"$work/none.err" || rc=$?
mv "$work/moved.so" "$libdir/librtprof-preload.so"
test "$rc" -eq 2
test ! -e "$work/ran2"
grep -q "RTPROF_PRELOAD" "$work/none.err"
echo "test_install: ok"
