# ctest install_consumer: installs the build into a fresh prefix, then builds consumer.c twice,
# once through find_package(ucxdt) and once through `pkg-config --cflags --libs ucxdt`, and
# runs both. Run with cmake -P; the -D arguments come from test/CMakeLists.txt.
foreach(v BUILD_DIR CONSUMER_SOURCE_DIR WORK_DIR GENERATOR C_COMPILER PKG_CONFIG UCX_PKGCONFIG_DIR
          UCX_LIBDIR)
  if(NOT DEFINED ${v} OR "${${v}}" STREQUAL "")
    message(FATAL_ERROR "run_install_test.cmake: -D${v}=... is required")
  endif()
endforeach()

function(run)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    string(REPLACE ";" " " cmd "${ARGN}")
    message(FATAL_ERROR "failed (${rc}): ${cmd}")
  endif()
endfunction()

set(prefix "${WORK_DIR}/prefix")
file(REMOVE_RECURSE "${WORK_DIR}")
file(MAKE_DIRECTORY "${WORK_DIR}")

set(config_args)
if(CONFIG)
  set(config_args --config "${CONFIG}")
endif()
run("${CMAKE_COMMAND}" --install "${BUILD_DIR}" --prefix "${prefix}" ${config_args})

foreach(f include/ucxdt/ucxdt.h)
  if(NOT EXISTS "${prefix}/${f}")
    message(FATAL_ERROR "not installed: ${f}")
  endif()
endforeach()
file(GLOB_RECURSE pc_files "${prefix}/ucxdt.pc")
file(GLOB_RECURSE config_files "${prefix}/ucxdtConfig.cmake")
if(NOT pc_files OR NOT config_files)
  message(FATAL_ERROR "ucxdt.pc or ucxdtConfig.cmake not installed under ${prefix}")
endif()

# 1. CMake package. UCX is found through the location recorded in the package.
message(STATUS "consumer via find_package(ucxdt)")
run("${CMAKE_COMMAND}" -S "${CONSUMER_SOURCE_DIR}" -B "${WORK_DIR}/cmake-consumer"
    -G "${GENERATOR}" "-DCMAKE_C_COMPILER=${C_COMPILER}" "-DCMAKE_PREFIX_PATH=${prefix}"
    -DCMAKE_BUILD_TYPE=Release)
run("${CMAKE_COMMAND}" --build "${WORK_DIR}/cmake-consumer")
run("${WORK_DIR}/cmake-consumer/consumer_cmake")

# 2. pkg-config. ucxdt.pc requires ucx.pc, so both directories are on the search path; the
# rpaths make the program load this ucxdt and this UCX rather than any system copy.
message(STATUS "consumer via pkg-config")
get_filename_component(pc_dir "${pc_files}" DIRECTORY)
set(ENV{PKG_CONFIG_PATH} "${pc_dir}:${UCX_PKGCONFIG_DIR}")
execute_process(COMMAND "${PKG_CONFIG}" --cflags --libs ucxdt
                OUTPUT_VARIABLE flags OUTPUT_STRIP_TRAILING_WHITESPACE RESULT_VARIABLE rc)
execute_process(COMMAND "${PKG_CONFIG}" --variable=libdir ucxdt
                OUTPUT_VARIABLE libdir OUTPUT_STRIP_TRAILING_WHITESPACE)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "pkg-config --cflags --libs ucxdt failed (${rc})")
endif()
message(STATUS "pkg-config --cflags --libs ucxdt: ${flags}")
separate_arguments(flags UNIX_COMMAND "${flags}")
run("${C_COMPILER}" -std=c11 -Wall -Wextra -Werror "${CONSUMER_SOURCE_DIR}/consumer.c" ${flags}
    "-Wl,-rpath,${libdir}:${UCX_LIBDIR}" -o "${WORK_DIR}/consumer_pkgconfig")
run("${WORK_DIR}/consumer_pkgconfig")
