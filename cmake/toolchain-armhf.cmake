# Cross build for 32-bit ARM hard-float (armhf, ARMv7-A) Linux:
# cmake/cross-linux.cmake.
#   cmake -S . -B build-cross-armhf \
#     -DCMAKE_TOOLCHAIN_FILE=cmake/toolchain-armhf.cmake
# scripts/cross.sh armhf installs what it needs, builds and tests.
set(RTPROF_CROSS_TRIPLET arm-linux-gnueabihf)
set(RTPROF_CROSS_PROCESSOR armv7l)
set(RTPROF_CROSS_DEBARCH armhf)
set(RTPROF_CROSS_QEMU qemu-arm)
include(${CMAKE_CURRENT_LIST_DIR}/cross-linux.cmake)
