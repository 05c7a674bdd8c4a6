# nvte_settings: compile options every target of the project uses.
add_library(nvte_settings INTERFACE)
target_compile_options(nvte_settings INTERFACE
  -Wall -Wextra -Wpedantic -Wshadow -Wnon-virtual-dtor -Wold-style-cast -Wcast-align
  -Wunused -Woverloaded-virtual -Wconversion -Wno-sign-conversion
  -Wimplicit-fallthrough)
if(NVTE_WERROR)
  target_compile_options(nvte_settings INTERFACE -Werror)
endif()
# Debug information of RelWithDebInfo builds: line tables and function names (-g1) are what
# backtraces, perf and sanitizer reports use, and compile about a third faster than CMake's -g,
# which keeps a first build of the binary within minutes on two cores. -DNVTE_DEBUG_INFO=-g for a
# debugger session with local variables (it comes after CMake's flags, so it wins).
set(NVTE_DEBUG_INFO "-g1" CACHE STRING "Debug information of RelWithDebInfo builds (-g1, -g, -g3)")
target_compile_options(nvte_settings INTERFACE $<$<CONFIG:RelWithDebInfo>:${NVTE_DEBUG_INFO}>)
if(NVTE_SANITIZE)
  target_compile_options(nvte_settings INTERFACE -fsanitize=address,undefined -fno-omit-frame-pointer
                         -fno-sanitize-recover=undefined)
  target_link_options(nvte_settings INTERFACE -fsanitize=address,undefined)
  # ASan's defaults of the sanitized build, compiled into every executable (not the shared fake
  # libraries the tests dlopen), so that a plain ctest sees a crashed child die by a signal, as
  # scripts/sanitize.sh does. An executable with its own defaults sets NVTE_OWN_ASAN_DEFAULTS.
  target_sources(nvte_settings INTERFACE
                 $<$<AND:$<STREQUAL:$<TARGET_PROPERTY:TYPE>,EXECUTABLE>,$<NOT:$<BOOL:$<TARGET_PROPERTY:NVTE_OWN_ASAN_DEFAULTS>>>>:${PROJECT_SOURCE_DIR}/cmake/asan_default_options.cpp>)
  # GCC's -Wmaybe-uninitialized misfires on the instrumented code of libstdc++ headers (std::regex's
  # NFA states in GCC 12); the unsanitized build keeps the warning.
  if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
    target_compile_options(nvte_settings INTERFACE -Wno-maybe-uninitialized)
  endif()
endif()
# The tests' time and memory guards are set for the normal build. Instrumented code (NVTE_SANITIZE
# above, NVTE_FUZZ below) does the same work several times slower and, with ASan's redzones,
# shadow memory and quarantine of freed blocks, in several times the memory; a guard on the
# work of the project's code multiplies its limit by these factors, so that it still fails on a
# gross regression (a quadratic loop, every report held at once) but not on the instrumentation.
# tests/support/build_factors.hpp.in says which guards scale. Time: the sanitized work measured 3
# to 11 times the normal build's CPU time; memory: ASan holds about 100 MB in a process that does
# nothing and up to 256 MB of freed blocks, which the 40 MB limit of bench_fleet (15 MB normally,
# 242 MB sanitized) needs 8 times. docs/reliability.md ("Sanitizers") has the measurements.
if(NVTE_SANITIZE OR NVTE_FUZZ)
  set(NVTE_TEST_TIME_FACTOR 10)
  set(NVTE_TEST_MEMORY_FACTOR 8)
else()
  set(NVTE_TEST_TIME_FACTOR 1)
  set(NVTE_TEST_MEMORY_FACTOR 1)
endif()
if(NVTE_FUZZ)
  if(NOT CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
    message(FATAL_ERROR "NVTE_FUZZ needs clang (libFuzzer): -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_C_COMPILER=clang")
  endif()
  # Coverage instrumentation for every library; the fuzzers add -fsanitize=fuzzer at link time.
  target_compile_options(nvte_settings INTERFACE -fsanitize=fuzzer-no-link,address,undefined
                         -fno-omit-frame-pointer -fno-sanitize-recover=undefined)
  target_link_options(nvte_settings INTERFACE -fsanitize=address,undefined)
endif()
target_include_directories(nvte_settings INTERFACE ${PROJECT_SOURCE_DIR}/src)

# Third-party headers are system headers: their warnings are not ours to fix.
# nvte_library(NAME [OBJECT] files...): a static library, or with OBJECT an object library (a
# library's code that a build-time generator links too, src/rules/CMakeLists.txt).
function(nvte_library name)
  set(kind STATIC)
  if(ARGV1 STREQUAL "OBJECT")
    set(kind OBJECT)
    list(REMOVE_AT ARGN 0)
  endif()
  add_library(${name} ${kind} ${ARGN})
  target_link_libraries(${name} PUBLIC nvte_settings)
  if(NVTE_UNITY_BUILD)
    set_target_properties(${name} PROPERTIES UNITY_BUILD ON UNITY_BUILD_BATCH_SIZE 16)
    target_precompile_headers(${name} REUSE_FROM nvte_pch)
  endif()
endfunction()
# Unity builds: a first build without a compiler cache spends most of its CPU time parsing the
# same headers (the standard library, nlohmann/json, yaml-cpp) once per file. Each library then
# compiles as batches of 16 files, each batch one translation unit (CMake's UNITY_BUILD): the
# binary's 156 steps become 24, 388 s of CPU where the first 130 steps file by file took 737 s,
# measured under load (docs/records/performance.md, "Unity batches for every library"). On by default where no compiler cache is used (a
# fresh machine: README command 1, CI, the portable build); off with ccache, where a change
# recompiles one file rather than its batch and a clean rebuild is all cache hits. No file-local
# name may be defined in two files of one library: ctest architecture_unity_names checks that in
# milliseconds on every run (tests/architecture/check_unity.py), and CI's build compiles the batches.
if(nvte_ccache)
  set(nvte_unity_default OFF)
else()
  set(nvte_unity_default ON)
endif()
option(NVTE_UNITY_BUILD "Compile each library as unity batches (default: on without ccache)" ${nvte_unity_default})
# With the batches, one precompiled header (cmake/pch.hpp: the standard containers, strings,
# filesystem and nlohmann/json) compiled once and reused by every library: each batch parsed
# them again before (parsing is about a quarter of a batch's CPU time; timed by hand per batch,
# docs/records/performance.md, "README command 1 in three minutes"). Only with the batches: file by file (ccache) a header loaded into every file
# costs the small files what it saves the large ones.
if(NVTE_UNITY_BUILD)
  add_library(nvte_pch OBJECT ${PROJECT_SOURCE_DIR}/cmake/pch.cpp)
  target_link_libraries(nvte_pch PUBLIC nvte_settings)
  target_precompile_headers(nvte_pch PRIVATE ${PROJECT_SOURCE_DIR}/cmake/pch.hpp)
endif()
