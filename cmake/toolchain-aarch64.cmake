# Cross build for aarch64 (arm64) Linux: cmake/cross-linux.cmake.
#   cmake -S . -B build-cross-aarch64 \
#     -DCMAKE_TOOLCHAIN_FILE=cmake/toolchain-aarch64.cmake
# scripts/cross.sh aarch64 installs what it needs, builds and tests.
set(RTPROF_CROSS_TRIPLET aarch64-linux-gnu)
set(RTPROF_CROSS_PROCESSOR aarch64)
set(RTPROF_CROSS_DEBARCH arm64)
set(RTPROF_CROSS_QEMU qemu-aarch64)
include(${CMAKE_CURRENT_LIST_DIR}/cross-linux.cmake)
