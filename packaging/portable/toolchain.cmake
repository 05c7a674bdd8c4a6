# Toolchain of the portable build (scripts/build-portable.sh): Debian 12's GCC 12 and CMake compile
# against an older Debian root (bullseye, glibc 2.31) used as the sysroot, so the binary asks for
# no glibc symbol newer than that root's. Key idea: only glibc and the compiled dependencies come
# from the root; C++20 needs GCC 12's libstdc++, whose headers come from the host and whose
# archive is linked statically (-static-libstdc++), like libgcc (-static-libgcc). Two symbols of
# GCC 12's archives are newer than glibc 2.31 and are answered by glibc-compat.cpp; GCC 12's
# libgcc_eh asks for _dl_find_object (glibc 2.35), so libgcc and libgcc_eh come from the root's
# GCC 10 (libgcc-10-dev), which finds unwind tables with dl_iterate_phdr as every GCC did before.
#   NVTE_PORTABLE_ROOT   the root (required)
#   NVTE_PORTABLE_COMPAT the compiled glibc-compat.o, linked into every executable
# try_compile projects read this file again: they get both variables passed on.
list(APPEND CMAKE_TRY_COMPILE_PLATFORM_VARIABLES NVTE_PORTABLE_ROOT NVTE_PORTABLE_COMPAT)
if(NOT NVTE_PORTABLE_ROOT)
  message(FATAL_ERROR "portable toolchain: -DNVTE_PORTABLE_ROOT=DIR (scripts/build-portable.sh sets it)")
endif()
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR x86_64)
set(CMAKE_C_COMPILER gcc-12)
set(CMAKE_CXX_COMPILER g++-12)
set(CMAKE_SYSROOT ${NVTE_PORTABLE_ROOT})
set(CMAKE_FIND_ROOT_PATH ${NVTE_PORTABLE_ROOT})
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER) # scdoc, gzip, pkg-config: the host's
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)
# The sysroot's /usr/include has no C++ headers of GCC 12: the host's, ahead of the root's C headers.
set(CMAKE_CXX_FLAGS_INIT "-nostdinc++ -isystem /usr/include/c++/12 -isystem /usr/include/x86_64-linux-gnu/c++/12 -isystem /usr/include/c++/12/backward")
# Debian's GCC searches its own ../../../x86_64-linux-gnu (this machine's libc.so, crt1.o) before
# the sysroot's: -B and -L name the root's first, or the binary would bind glibc 2.34's symbols.
set(nvte_root_libs "-B${NVTE_PORTABLE_ROOT}/usr/lib/x86_64-linux-gnu/ -L${NVTE_PORTABLE_ROOT}/usr/lib/gcc/x86_64-linux-gnu/10 -L${NVTE_PORTABLE_ROOT}/usr/lib/x86_64-linux-gnu -L${NVTE_PORTABLE_ROOT}/lib/x86_64-linux-gnu")
# -pthread: glibc 2.31 keeps the pthread functions in libpthread (2.34 moved them into libc), and
# GCC 12's static libstdc++ calls them (std::pmr's pthread_rwlock_*): the driver puts -lpthread
# after the archives, where the link needs it.
set(CMAKE_EXE_LINKER_FLAGS_INIT "-pthread -static-libstdc++ -static-libgcc ${nvte_root_libs} ${NVTE_PORTABLE_COMPAT}")
set(CMAKE_SHARED_LINKER_FLAGS_INIT "-pthread -static-libstdc++ -static-libgcc ${nvte_root_libs}")
