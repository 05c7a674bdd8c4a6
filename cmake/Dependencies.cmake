# Every dependency comes from a Debian 12 package; see README.md for the list.
find_package(PkgConfig REQUIRED)
find_package(nlohmann_json 3.10 REQUIRED)
find_package(yaml-cpp REQUIRED)
find_package(CLI11 REQUIRED)
find_package(CURL REQUIRED)
pkg_check_modules(LIBPCI REQUIRED IMPORTED_TARGET libpci)
pkg_check_modules(LIBELF REQUIRED IMPORTED_TARGET libelf)
pkg_check_modules(LIBYAML REQUIRED IMPORTED_TARGET yaml-0.1) # the rules loader (libyaml-dev)
pkg_check_modules(LIBSODIUM REQUIRED IMPORTED_TARGET libsodium)
find_package(Threads REQUIRED)
if(NVTE_BUILD_TESTS)
  find_package(GTest REQUIRED)
endif()

# Process start (issue 40, round 5; docs/records/performance.md): every command pays the dynamic
# loader before main, and most of it was the shared libstdc++ binding ~1,700 of its own symbols
# (the same in every C++ program) plus opening and relocating libyaml-cpp, libsodium, libelf and
# libgcc_s. nvte-doctor therefore links the C++ runtime statically (src/cli/CMakeLists.txt) and,
# where the distribution ships their archives (Debian's -dev packages do), these libraries; libpci
# (no archive in Debian), libyaml (lintian's embedded-library error: a copy of it in a binary is
# what Debian policy forbids) and glibc stay shared. With libstdc++ static, yaml-cpp must be too:
# its shared library would load libstdc++.so again.
# Not in sanitizer and fuzz builds (their runtimes replace the allocator) nor in the portable
# build, whose toolchain (packaging/portable/toolchain.cmake) makes its own choices.
set(nvte_static_deps OFF)
if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU" AND NOT NVTE_SANITIZE AND NOT NVTE_FUZZ AND NOT NVTE_PORTABLE_ROOT)
  find_library(NVTE_YAML_CPP_ARCHIVE NAMES libyaml-cpp.a)
  find_library(NVTE_SODIUM_ARCHIVE NAMES libsodium.a)
  find_library(NVTE_ELF_ARCHIVE NAMES libelf.a)
  find_library(NVTE_Z_LIBRARY NAMES z)
  get_target_property(nvte_yaml_cpp_type yaml-cpp TYPE)
  if(NVTE_YAML_CPP_ARCHIVE AND NVTE_SODIUM_ARCHIVE AND NVTE_ELF_ARCHIVE AND NVTE_Z_LIBRARY
     AND nvte_yaml_cpp_type STREQUAL "SHARED_LIBRARY")
    set(nvte_static_deps ON)
    # Debian's yaml-cpp package imports the shared library (configuration NONE); point it at the
    # archive and drop the soname, so that CMake links the file by its path.
    set_target_properties(yaml-cpp PROPERTIES IMPORTED_LOCATION "${NVTE_YAML_CPP_ARCHIVE}"
                          IMPORTED_LOCATION_NONE "${NVTE_YAML_CPP_ARCHIVE}")
    set_property(TARGET yaml-cpp PROPERTY IMPORTED_SONAME_NONE)
    set_property(TARGET yaml-cpp PROPERTY IMPORTED_SONAME)
    set_property(TARGET PkgConfig::LIBSODIUM PROPERTY INTERFACE_LINK_LIBRARIES "${NVTE_SODIUM_ARCHIVE};Threads::Threads")
    set_property(TARGET PkgConfig::LIBELF PROPERTY INTERFACE_LINK_LIBRARIES "${NVTE_ELF_ARCHIVE};${NVTE_Z_LIBRARY}")
  else()
    message(STATUS "nvte-doctor: no static archives of yaml-cpp, libsodium and libelf; linking them and libstdc++ shared")
  endif()
endif()
