#!/bin/sh
# Cross builds for aarch64 and armhf Linux, unit tests under qemu-user.
#   scripts/cross.sh [aarch64|armhf|all]      (default: all)
#
# For each architecture: installs what is missing (Debian's cross compilers
# gcc/g++-<triplet> and qemu-user with apt-get; the target's libraries, see
# below), configures build-cross-<arch> with cmake/toolchain-<arch>.cmake
# (warnings are errors, as in test.sh), builds, and runs ctest under
# qemu-user (CMAKE_CROSSCOMPILING_EMULATOR), leaving out the tests labelled
# native-only (tests/CMakeLists.txt says which and why; in short: tests that
# start the cross-built programs from a shell or Python script, or exec them
# again, need binfmt_misc, which containers and CI do not have; the
# seccomp proof that the recording path makes no system call cannot hold
# under an emulator that makes system calls of its own; the sampler's
# timing checks need a real CPU, and its root-frame check libc symbols
# that the cross libc lacks; host-only tests cross-build nothing), and any
# test that a script starts and is not labelled yet (named when skipped).
# Needs root, or sudo, for apt-get and /opt.
#
# The target's libraries: Debian's own <debarch> packages (libck, libunwind,
# msgpack-c, elfutils, zlib and their dependencies), fetched with apt-get
# download and unpacked into RTPROF_CROSS_ROOT_BASE/<debarch> (default
# /opt/rtprof-cross), not installed multiarch with apt-get install
# libck-dev:<debarch>: a Multi-Arch: same package must have exactly the
# version of its installed amd64 twin, and on this project's machines the
# amd64 ones (linux-libc-dev, liblzma5, libssl3 ...) are at versions the
# archive does not carry for arm64/armhf, while the security archive's armhf
# index fails to download, so apt-get cannot resolve them. Unpacked, the
# target's libraries never touch the machine's own packages. The foreign
# architectures are added for the download only and removed again (if this
# script added them): left configured, every later apt-get update would
# fail on that index, and scripts/deps.sh with it.
set -eu
cd "$(dirname "$0")/.."
src=$(pwd)

case "${1:-all}" in
aarch64 | armhf) arches=$1 ;;
all) arches="aarch64 armhf" ;;
*)
	echo "usage: $0 [aarch64|armhf|all]" >&2
	exit 2
	;;
esac

base=${RTPROF_CROSS_ROOT_BASE:-/opt/rtprof-cross}
# The target's libraries and what they need at run time (libc, libstdc++
# and libgcc_s come with the cross compilers, in /usr/<triplet>).
LIBPKGS="libck-dev libck0 libunwind-dev libunwind8 liblzma-dev liblzma5 \
libmsgpack-dev libmsgpackc2 zlib1g-dev zlib1g libelf-dev libelf1 libdw-dev \
libdw1 libbz2-1.0"
STAMP=.rtprof-cross-packages

triplet() {
	case $1 in
	aarch64) echo aarch64-linux-gnu ;;
	armhf) echo arm-linux-gnueabihf ;;
	esac
}
debarch() {
	case $1 in
	aarch64) echo arm64 ;;
	armhf) echo armhf ;;
	esac
}
qemu_of() {
	case $1 in
	aarch64-linux-gnu) echo qemu-aarch64 ;;
	arm-linux-gnueabihf) echo qemu-arm ;;
	esac
}

SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO=sudo

# What is missing.
host_pkgs="cmake make pkg-config qemu-user"
for a in $arches; do
	host_pkgs="$host_pkgs gcc-$(triplet "$a") g++-$(triplet "$a")"
done
missing=""
for p in $host_pkgs; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" ||
		missing="$missing $p"
done
roots=""
for a in $arches; do
	d=$(debarch "$a")
	[ "$(head -n 1 "$base/$d/$STAMP" 2>/dev/null)" = "$LIBPKGS" ] ||
		roots="$roots $d"
done

added=""
drop_added() {
	for d in $added; do
		$SUDO dpkg --remove-architecture "$d" || true
	done
	added=""
}
if [ -n "$missing$roots" ]; then
	trap 'drop_added; exit 1' INT TERM HUP
	trap drop_added EXIT
	for d in $roots; do
		if ! dpkg --print-foreign-architectures | grep -qx "$d"; then
			$SUDO dpkg --add-architecture "$d"
			added="$added $d"
		fi
	done
	# One update. It may report an index it could not fetch (the
	# security archive's armhf one, see above): go on with the others;
	# a package that is really missing fails below.
	$SUDO apt-get update -qq ||
		echo "cross.sh: apt-get update reported errors; going on" >&2
	if [ -n "$missing" ]; then
		echo "Installing:$missing"
		# shellcheck disable=SC2086
		DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq \
			--no-install-recommends $missing >/dev/null
	fi
	for d in $roots; do
		echo "Unpacking the $d libraries into $base/$d"
		tmp=$(mktemp -d)
		chmod 755 "$tmp"
		# apt-get download drops root privileges to _apt for the fetch.
		$SUDO chown _apt "$tmp" 2>/dev/null || true
		list=""
		for p in $LIBPKGS; do
			list="$list $p:$d"
		done
		# shellcheck disable=SC2086
		(cd "$tmp" && $SUDO apt-get download -qq $list)
		$SUDO rm -rf "$base/$d"
		$SUDO mkdir -p "$base/$d"
		for deb in "$tmp"/*.deb; do
			$SUDO dpkg-deb -x "$deb" "$base/$d"
		done
		# Absolute symlinks (libz.so -> /lib/<triplet>/libz.so.1...)
		# point into the root, not into this machine's /.
		$SUDO find "$base/$d" -type l | while read -r l; do
			t=$(readlink "$l")
			case $t in
			/*) $SUDO ln -sfn "$base/$d$t" "$l" ;;
			esac
		done
		# The stamp last: an interrupted unpack is done again.
		{
			echo "$LIBPKGS"
			for deb in "$tmp"/*.deb; do basename "$deb"; done
		} | $SUDO tee "$base/$d/$STAMP" >/dev/null
		$SUDO rm -rf "$tmp"
	done
	drop_added
	trap - INT TERM HUP EXIT
fi

# ctest under qemu-user, without the tests labelled native-only. A test
# that ctest does not start through the emulator (a script runs the
# cross-built programs by path, which needs binfmt_misc) and that nobody
# labelled yet is left out too, by name, and said so.
run_tests() {
	skip=""
	if command -v python3 >/dev/null; then
		skip=$(cd "$1" && ctest --show-only=json-v1 -LE native-only |
			python3 -c 'import json, sys
print("|".join(t["name"] for t in json.load(sys.stdin)["tests"]
    if not t.get("command") or
    not t["command"][0].rsplit("/", 1)[-1].startswith("qemu-")))')
	fi
	[ -z "$skip" ] ||
		echo "not under qemu-user (started by a script): $skip" | tr '|' ' '
	# RTPROF_TEST_EMULATED: the emulator's own threads and system calls
	# make context switches no recording call made (test_sink_faults).
	(cd "$1" && PATH="$src/$1/cross-bin:$PATH" RTPROF_TEST_EMULATED=1 \
		ctest --output-on-failure -j"$jobs" -LE native-only \
		${skip:+-E "^($skip)\$"})
}

# A board's dump symbolized on the desktop: board_app, cross-built, runs
# under qemu-user with the target's libc into a dump; the host's
# msgpack2gecko (built in build-cross-host) resolves the board's libc only
# from --sysroot, matched by build id (tests/cross_symbols.py).
symbols() {
	dir=$1 t=$2 ld=$3
	cmake -S "$src" -B build-cross-host -DCMAKE_BUILD_TYPE=RelWithDebInfo \
		-DRTPROF_BUILD_BENCH=OFF >/dev/null &&
		cmake --build build-cross-host -j"$jobs" --target msgpack2gecko \
		>/dev/null || return 1
	RTPROF_FD=3 "$(qemu_of "$t")" -L "/usr/$t" -E LD_LIBRARY_PATH="$ld" \
		"$dir/tests/board_app" 1 3>"$dir/board.rtprof" >/dev/null &&
		python3 "$src/tests/cross_symbols.py" \
		build-cross-host/msgpack2gecko "$dir/board.rtprof" "/usr/$t" \
		"$dir/symbols"
}

jobs=$(nproc)
failed=""
for a in $arches; do
	dir=build-cross-$a
	t=$(triplet "$a")
	echo "== $dir: $t, tests under qemu-user"
	# A test that runs binutils on its own binary (test_symbolize:
	# objcopy) gets the target's.
	mkdir -p "$dir/cross-bin"
	ln -sf "/usr/bin/$t-objcopy" "$dir/cross-bin/objcopy"
	if cmake -S "$src" -B "$dir" \
		-DCMAKE_TOOLCHAIN_FILE="$src/cmake/toolchain-$a.cmake" \
		-DRTPROF_CROSS_ROOT="$base/$(debarch "$a")" \
		-DCMAKE_BUILD_TYPE=RelWithDebInfo -DRTPROF_WERROR=ON \
		-DRTPROF_BUILD_BENCH=OFF >/dev/null &&
		cmake --build "$dir" -j"$jobs" >/dev/null &&
		run_tests "$dir" &&
		symbols "$dir" "$t" "$base/$(debarch "$a")/usr/lib/$t:$base/$(debarch "$a")/lib/$t"; then
		:
	else
		failed="$failed $a"
	fi
done
if [ -n "$failed" ]; then
	echo "cross builds failed:$failed" >&2
	exit 1
fi
echo "cross builds passed: $arches"
