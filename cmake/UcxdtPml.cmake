# pml ucxdt (src/pml_ucxdt): Open MPI 5's point-to-point component on ucxdt, built as the DSO
# <build>/ompi5/mca_pml_ucxdt.so when UCXDT_OMPI5_PREFIX names an Open MPI 5 installed with
# --with-devel-headers (scripts/setup-deps --ompi5 prints it). Open MPI's internal headers are
# C; the component is C, against ucxdt's C API and a bridge (ucxdt_mpi_ompi5) built against
# that Open MPI's mpi.h.
set(UCXDT_OMPI5_PREFIX "" CACHE PATH "Open MPI 5 with developer headers, for pml ucxdt")
if(NOT UCXDT_OMPI5_PREFIX)
  return()
endif()
set(_p "${UCXDT_OMPI5_PREFIX}")
if(NOT EXISTS "${_p}/include/openmpi/ompi/mca/pml/pml.h")
  message(FATAL_ERROR "UCXDT_OMPI5_PREFIX=${_p}: no ompi/mca/pml/pml.h under include/openmpi "
                      "(Open MPI must be configured --with-devel-headers: scripts/setup-deps --ompi5)")
endif()
enable_language(C)
add_library(ucxdt_ompi5 INTERFACE IMPORTED)
# The bundled PMIx's headers live under include/openmpi too (opal/mca/pmix/pmix-internal.h).
target_include_directories(ucxdt_ompi5 INTERFACE "${_p}/include" "${_p}/include/openmpi")
target_link_libraries(ucxdt_ompi5 INTERFACE "${_p}/lib/libmpi.so" "${_p}/lib/libopen-pal.so")
ucxdt_add_mpi_bridge(ucxdt_mpi_ompi5 ucxdt_ompi5)
set_target_properties(ucxdt_mpi_ompi5 PROPERTIES BUILD_RPATH "${PROJECT_BINARY_DIR};${_p}/lib")

file(GLOB _pml_sources CONFIGURE_DEPENDS "${PROJECT_SOURCE_DIR}/src/pml_ucxdt/*.c")
add_library(pml_ucxdt MODULE ${_pml_sources})
set_target_properties(pml_ucxdt PROPERTIES
  OUTPUT_NAME mca_pml_ucxdt
  PREFIX ""
  LIBRARY_OUTPUT_DIRECTORY "${PROJECT_BINARY_DIR}/ompi5"
  C_STANDARD 11
  C_VISIBILITY_PRESET hidden
  BUILD_RPATH "${PROJECT_BINARY_DIR};${_p}/lib"
  INSTALL_RPATH "$ORIGIN/..")
target_link_libraries(pml_ucxdt PRIVATE ucxdt ucxdt_mpi_ompi5 ucxdt_ompi5 PkgConfig::UCX)
# Open MPI's free lists (opal_free_list_get) compare-and-swap 128 bits inline, as Open MPI's own
# build does with -mcx16 (OPAL_HAVE_SYNC_BUILTIN_CSWAP_INT128); without it the builtin is an
# undefined libatomic call.
if(CMAKE_SYSTEM_PROCESSOR MATCHES "x86_64|AMD64")
  target_compile_options(pml_ucxdt PRIVATE -mcx16)
endif()
# ThreadSanitizer's build (scripts/sanitize): the order Open MPI's inline free lists and request
# completion give, which its fences hide from ThreadSanitizer, told to it (test/tsan/).
if(UCXDT_SANITIZE MATCHES "thread")
  target_compile_options(pml_ucxdt PRIVATE "SHELL:-include ${PROJECT_SOURCE_DIR}/test/tsan/ompi_inline_sync.h")
endif()
# coll ucxdt (src/coll_ucxdt): the self block of the collectives, through the PML.
file(GLOB _coll_sources CONFIGURE_DEPENDS "${PROJECT_SOURCE_DIR}/src/coll_ucxdt/*.c")
add_library(coll_ucxdt MODULE ${_coll_sources})
# Open MPI built by gcc types MPI_SHORT_FLOAT as _Float16 (opal_config.h), which clang before 15
# does not know on x86 (ThreadSanitizer's build, scripts/sanitize, uses Debian's clang 14). The
# components only need its size and alignment, which __fp16, a storage type everywhere in clang,
# shares (2 and 2).
if(CMAKE_C_COMPILER_ID STREQUAL "Clang" AND CMAKE_C_COMPILER_VERSION VERSION_LESS 15)
  target_compile_definitions(pml_ucxdt PRIVATE _Float16=__fp16)
  target_compile_definitions(coll_ucxdt PRIVATE _Float16=__fp16)
endif()
set_target_properties(coll_ucxdt PROPERTIES
  OUTPUT_NAME mca_coll_ucxdt
  PREFIX ""
  LIBRARY_OUTPUT_DIRECTORY "${PROJECT_BINARY_DIR}/ompi5"
  C_STANDARD 11
  C_VISIBILITY_PRESET hidden
  BUILD_RPATH "${_p}/lib")
target_link_libraries(coll_ucxdt PRIVATE ucxdt_ompi5)
message(STATUS "ucxdt: pml ucxdt against Open MPI 5 at ${_p}")
# Installed into <prefix>/lib/openmpi: Open MPI's component directory when ucxdt shares its prefix.
install(TARGETS pml_ucxdt coll_ucxdt LIBRARY DESTINATION "${CMAKE_INSTALL_LIBDIR}/openmpi")
install(TARGETS ucxdt_mpi_ompi5 LIBRARY DESTINATION "${CMAKE_INSTALL_LIBDIR}")
