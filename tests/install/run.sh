#!/bin/sh
# test_install: install rtprof into a temporary prefix, then build a consumer
# with find_package(rtprof) and another with pkg-config, and run both.
set -eu
src=$1 build=$2 work=$3
rm -rf "$work"
mkdir -p "$work"
cmake --install "$build" --prefix "$work/prefix" >/dev/null
libdir=$(ls -d "$work"/prefix/lib*/ | head -n 1)
test -f "$work/prefix/include/rtprof.h"
test -f "$libdir/cmake/rtprof/rtprofConfig.cmake"
test -f "$libdir/pkgconfig/rtprof.pc"
test -x "$work/prefix/bin/rtprof-inspect"

cmake -S "$src/tests/install/consumer" -B "$work/cmake-consumer" \
	-DCMAKE_PREFIX_PATH="$work/prefix" >/dev/null
cmake --build "$work/cmake-consumer" >/dev/null
LD_LIBRARY_PATH="$libdir" "$work/cmake-consumer/consumer"

PKG_CONFIG_PATH="$libdir/pkgconfig" 
export PKG_CONFIG_PATH
cc -std=c11 -Wall -Wextra -Werror $(pkg-config --cflags rtprof) \
	"$src/tests/install/consumer/consumer.c" $(pkg-config --libs rtprof) \
	-o "$work/pkgconfig-consumer"
LD_LIBRARY_PATH="$libdir" "$work/pkgconfig-consumer"
echo "test_install: ok"
