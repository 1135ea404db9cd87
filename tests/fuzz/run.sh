#!/bin/sh
# Fuzz the dump decoder for a long time (not in CI):
#   tests/fuzz/run.sh [SECONDS]      default 3600
# Builds the clang ASan+UBSan tree in build-fuzz/, fuzzes with the seed
# corpus, and keeps new inputs in build-fuzz/corpus. Copy any crash-* file
# into tests/fuzz/corpus/ so it stays a regression test.
set -eu
cd "$(dirname "$0")/../.."
cmake -S . -B build-fuzz -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ \
	-DRTPROF_SANITIZE=address,undefined -DRTPROF_BUILD_BENCH=OFF >/dev/null
cmake --build build-fuzz --target fuzz_dump_reader -j"$(nproc)" >/dev/null
mkdir -p build-fuzz/corpus
./build-fuzz/tests/fuzz_dump_reader -max_total_time="${1:-3600}" -rss_limit_mb=1024 \
	-print_final_stats=1 build-fuzz/corpus tests/fuzz/corpus
