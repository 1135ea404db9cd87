#!/bin/sh
# The main job on the bundled demo: install what is needed, build, record.
#   ./demo.sh            -> build/demo.rtprof (and the command to inspect it)
set -eu
cd "$(dirname "$0")"
sh scripts/deps.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build -j"$(nproc)" >/dev/null
./build/rtprof-demo -o build/demo.rtprof -s 3
./build/msgpack2gecko build/demo.rtprof -o build/demo.json.gz
echo
echo "Dump:    $(pwd)/build/demo.rtprof   (./build/rtprof-inspect -v build/demo.rtprof)"
echo "Profile: $(pwd)/build/demo.json.gz"
echo "Open https://profiler.firefox.com, choose 'Load a profile from file' and pick it."
