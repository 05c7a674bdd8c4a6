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
  # GCC's -Wmaybe-uninitialized misfires on the instrumented code of libstdc++ headers (std::regex's
  # NFA states in GCC 12); the unsanitized build keeps the warning.
  if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
    target_compile_options(nvte_settings INTERFACE -Wno-maybe-uninitialized)
  endif()
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
function(nvte_library name)
  add_library(${name} STATIC ${ARGN})
  target_link_libraries(${name} PUBLIC nvte_settings)
endfunction()
