# libFuzzer target for test/fuzz/fuzz_types.cpp and its bounded ctest run (label `fuzz`).
#
# libFuzzer is clang's, and coverage guidance only sees code compiled with
# -fsanitize=fuzzer-no-link, so the harness and the datatype engine are compiled together by
# clang in a separate CMake build (cmake/fuzz), run as an ExternalProject. GPU kernels, which
# only nvcc compiles, are linked from this build's ucxdt_kernels archive.
# The fuzzer is outside ALL: the bounded run's fixture builds it, so the default build and the
# default test run do not pay for a second, sanitized compile of the engine.

set(_fuzz_src "${PROJECT_SOURCE_DIR}/test/fuzz/fuzz_types.cpp")
if(NOT EXISTS "${_fuzz_src}")
  return()
endif()

if(CMAKE_CXX_COMPILER_ID MATCHES "Clang")
  set(_clangxx "${CMAKE_CXX_COMPILER}")
else()
  find_program(UCXDT_FUZZ_CXX NAMES clang++ clang++-19 clang++-18 clang++-17 clang++-16
               clang++-15 clang++-14 DOC "clang++ used for the libFuzzer build")
  set(_clangxx "${UCXDT_FUZZ_CXX}")
endif()
if(NOT _clangxx)
  message(STATUS "ucxdt: fuzzer not built (no clang++)")
  return()
endif()

# clang without its runtime libraries (libclang-rt-*-dev on Debian) cannot link -fsanitize=fuzzer.
set(_probe_dir "${CMAKE_CURRENT_BINARY_DIR}/fuzz_probe")
file(WRITE "${_probe_dir}/probe.cpp"
  "#include <cstddef>\n#include <cstdint>\n"
  "extern \"C\" int LLVMFuzzerTestOneInput(const uint8_t *, size_t) { return 0; }\n")
execute_process(
  COMMAND "${_clangxx}" -fsanitize=fuzzer,address,undefined "${_probe_dir}/probe.cpp"
          -o "${_probe_dir}/probe"
  RESULT_VARIABLE _probe_rc OUTPUT_QUIET ERROR_VARIABLE _probe_err)
if(NOT _probe_rc EQUAL 0)
  message(STATUS "ucxdt: fuzzer not built (${_clangxx} cannot link -fsanitize=fuzzer: ${_probe_err})")
  return()
endif()
message(STATUS "ucxdt: fuzzer built with ${_clangxx} on demand (ctest -L fuzz)")

include(ExternalProject)
set(_fuzz_bin "${CMAKE_CURRENT_BINARY_DIR}/fuzz-build")
get_filename_component(_cuda_root "${CUDAToolkit_BIN_DIR}" DIRECTORY)
set(_fuzz_args
  "-DCMAKE_CXX_COMPILER=${_clangxx}"
  "-DCMAKE_BUILD_TYPE=RelWithDebInfo"
  "-DUCXDT_SOURCE_DIR=${PROJECT_SOURCE_DIR}"
  "-DUCXDT_UCX_PKGCONFIG_DIR=${UCXDT_UCX_PKGCONFIG_DIR}"
  "-DCUDAToolkit_ROOT=${_cuda_root}")
set(_fuzz_depends)
if(TARGET ucxdt_kernels)
  list(APPEND _fuzz_args "-DUCXDT_KERNELS_ARCHIVE=$<TARGET_FILE:ucxdt_kernels>")
  list(APPEND _fuzz_depends ucxdt_kernels)
endif()
ExternalProject_Add(fuzz_types_build
  SOURCE_DIR "${PROJECT_SOURCE_DIR}/cmake/fuzz"
  BINARY_DIR "${_fuzz_bin}"
  CMAKE_ARGS ${_fuzz_args}
  DEPENDS ${_fuzz_depends}
  INSTALL_COMMAND ""
  BUILD_ALWAYS ON
  EXCLUDE_FROM_ALL ON
  BUILD_BYPRODUCTS "${_fuzz_bin}/fuzz_types")

# libFuzzer writes new inputs into its first corpus directory; seeds, if any, come second.
set(_corpus "${CMAKE_CURRENT_BINARY_DIR}/fuzz_corpus")
set(_artifacts "${CMAKE_CURRENT_BINARY_DIR}/fuzz_artifacts")
file(MAKE_DIRECTORY "${_corpus}" "${_artifacts}")
set(_seeds)
if(IS_DIRECTORY "${PROJECT_SOURCE_DIR}/test/fuzz/corpus")
  set(_seeds "${PROJECT_SOURCE_DIR}/test/fuzz/corpus")
endif()

add_test(NAME fuzz_types_compile
  COMMAND "${CMAKE_COMMAND}" --build "${PROJECT_BINARY_DIR}" --target fuzz_types_build)
set_tests_properties(fuzz_types_compile PROPERTIES
  LABELS fuzz FIXTURES_SETUP fuzz_types_bin TIMEOUT 1800)

# Started through `cmake -E env` because the binary exists only once the fixture has built it,
# and ctest would otherwise complain about it whenever it lists tests.
# protect_shadow_gap=0: the CUDA runtime maps memory where ASan's shadow gap would be.
add_test(NAME fuzz_types_bounded
  COMMAND "${CMAKE_COMMAND}" -E env
          "ASAN_OPTIONS=protect_shadow_gap=0:detect_leaks=1"
          "UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1"
          "${_fuzz_bin}/fuzz_types" -max_total_time=60 -timeout=30 -rss_limit_mb=4096
          -print_final_stats=1 "-artifact_prefix=${_artifacts}/" "${_corpus}" ${_seeds})
set_tests_properties(fuzz_types_bounded PROPERTIES
  LABELS fuzz FIXTURES_REQUIRED fuzz_types_bin TIMEOUT 300)
