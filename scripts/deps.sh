#!/bin/sh
# Install the Debian packages rtprof needs to build, test and benchmark.
# Runs apt-get only when something is missing; uses sudo when not root.
set -eu
# chromium: headless, for the test that the browser accepts the CORS
# headers of `rtprof view` (tests/test_view.py --chromium). jackd2 and its
# headers: the JACK example client and its test against a real server.
# valgrind: no uninitialised byte reaches a dump (tests/test_memcheck.sh).
# libisal-dev: ISA-L's igzip for the converter's .json.gz (tools/gzout.h;
# optional in CMake: zlib without it, as on armhf).
# golang-go: `go tool pprof` reads the pprof export (tests/test_pprof.py).
PKGS="build-essential cmake pkg-config clang libclang-rt-14-dev python3 \
libck-dev libunwind-dev libmsgpack-dev zlib1g-dev libelf-dev libdw-dev \
chromium jackd2 libjack-jackd2-dev valgrind golang-go libisal-dev"
missing=""
for p in $PKGS; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" ||
		missing="$missing $p"
done
[ -z "$missing" ] && exit 0
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO=sudo
echo "Installing:$missing"
$SUDO apt-get update -qq
# shellcheck disable=SC2086
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq $missing
