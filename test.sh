#!/bin/sh
# Every test, three ways: optimised (-O2, gcc, warnings are errors),
# AddressSanitizer + UndefinedBehaviorSanitizer, and ThreadSanitizer (clang).
#   ./test.sh            all three
#   ./test.sh fast       the optimised build only
#   ./test.sh release    a Release build only (-O3, no -g: gcc clones and
#                        inlines more; RELIABILITY.md, "Release build")
set -eu
cd "$(dirname "$0")"
sh scripts/deps.sh
jobs=$(nproc)
run() {
	dir=$1
	shift
	echo "== $dir: $*"
	cmake -S . -B "$dir" -DRTPROF_WERROR=ON -DRTPROF_BUILD_BENCH=OFF "$@" >/dev/null
	cmake --build "$dir" -j"$jobs" >/dev/null
	(cd "$dir" && ctest --output-on-failure -j"$jobs")
}
if [ "${1:-}" = release ]; then
	run build-release -DCMAKE_BUILD_TYPE=Release
	exit 0
fi
run build-test -DCMAKE_BUILD_TYPE=RelWithDebInfo
[ "${1:-}" = fast ] && exit 0
run build-asan -DCMAKE_BUILD_TYPE=Debug -DCMAKE_C_COMPILER=clang \
	-DCMAKE_CXX_COMPILER=clang++ -DRTPROF_SANITIZE=address,undefined
run build-tsan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_C_COMPILER=clang \
	-DCMAKE_CXX_COMPILER=clang++ -DRTPROF_SANITIZE=thread
echo "all three builds passed"
