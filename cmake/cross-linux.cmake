# Shared part of cmake/toolchain-aarch64.cmake and cmake/toolchain-armhf.cmake:
# a Linux cross build with Debian's cross compilers (gcc-<triplet>,
# g++-<triplet>, their libc in /usr/<triplet>) and the target's libraries
# (libck, libunwind, msgpack-c, elfutils, zlib) from Debian's <debarch>
# packages, which scripts/cross.sh unpacks into RTPROF_CROSS_ROOT (default
# /opt/rtprof-cross/<debarch>; the script says why not multiarch).
#
# Tests run under qemu-user through CMAKE_CROSSCOMPILING_EMULATOR:
# qemu-<arch> -L /usr/<triplet> (the cross libc) with the root's libraries
# on LD_LIBRARY_PATH.
#
# Input (set by the including file): RTPROF_CROSS_TRIPLET,
# RTPROF_CROSS_PROCESSOR, RTPROF_CROSS_DEBARCH, RTPROF_CROSS_QEMU.

set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR ${RTPROF_CROSS_PROCESSOR})
set(CMAKE_C_COMPILER ${RTPROF_CROSS_TRIPLET}-gcc)
set(CMAKE_CXX_COMPILER ${RTPROF_CROSS_TRIPLET}-g++)

if(NOT RTPROF_CROSS_ROOT)
  if(DEFINED ENV{RTPROF_CROSS_ROOT})
    set(RTPROF_CROSS_ROOT "$ENV{RTPROF_CROSS_ROOT}")
  else()
    set(RTPROF_CROSS_ROOT /opt/rtprof-cross/${RTPROF_CROSS_DEBARCH})
  endif()
endif()
set(RTPROF_CROSS_ROOT "${RTPROF_CROSS_ROOT}" CACHE PATH
  "Unpacked ${RTPROF_CROSS_DEBARCH} packages (scripts/cross.sh)")
# try_compile projects read this file again: hand them the same root.
list(APPEND CMAKE_TRY_COMPILE_PLATFORM_VARIABLES RTPROF_CROSS_ROOT)

set(_t ${RTPROF_CROSS_TRIPLET})
set(_r "${RTPROF_CROSS_ROOT}")

# pkg-config (the host's) reads the target's .pc files only.
set(ENV{PKG_CONFIG_PATH} "")
set(ENV{PKG_CONFIG_LIBDIR} "${_r}/usr/lib/${_t}/pkgconfig:${_r}/usr/share/pkgconfig")
set(ENV{PKG_CONFIG_SYSROOT_DIR} "${_r}")

# The compiler searches /usr/<triplet> (libc) and the multiarch dirs under
# /usr, not the root: name the root's headers and libraries. rpath-link:
# the libraries' own dependencies (libdw.so -> liblzma.so.5, ...).
set(_ld "${_r}/usr/lib/${_t}:${_r}/lib/${_t}")
set(_inc "-isystem ${_r}/usr/include/${_t} -isystem ${_r}/usr/include")
set(CMAKE_C_FLAGS_INIT "${_inc}")
set(CMAKE_CXX_FLAGS_INIT "${_inc}")
set(_link "-L${_r}/usr/lib/${_t} -L${_r}/lib/${_t} -Wl,-rpath-link,${_ld}")
set(CMAKE_EXE_LINKER_FLAGS_INIT "${_link}")
set(CMAKE_SHARED_LINKER_FLAGS_INIT "${_link}")
set(CMAKE_MODULE_LINKER_FLAGS_INIT "${_link}")
set(CMAKE_FIND_ROOT_PATH "${_r}" /usr/${_t})
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)

set(CMAKE_CROSSCOMPILING_EMULATOR
  ${RTPROF_CROSS_QEMU} -L /usr/${_t} -E LD_LIBRARY_PATH=${_ld})
