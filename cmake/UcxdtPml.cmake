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
# src/ompi_missing: a header those headers include and the installation lacks (its README says which).
target_include_directories(ucxdt_ompi5 INTERFACE "${_p}/include" "${_p}/include/openmpi"
                                                 "${PROJECT_SOURCE_DIR}/src/ompi_missing")
target_link_libraries(ucxdt_ompi5 INTERFACE "${_p}/lib/libmpi.so" "${_p}/lib/libopen-pal.so")
ucxdt_add_mpi_bridge(ucxdt_mpi_ompi5 ucxdt_ompi5)
set_target_properties(ucxdt_mpi_ompi5 PROPERTIES BUILD_RPATH "${PROJECT_BINARY_DIR};${_p}/lib")

# What every piece built against Open MPI's internal headers shares: C11, hidden symbols (each
# component exports only its mca_<type>_ucxdt_component), and:
#  - -mcx16: Open MPI's free lists (opal_free_list_get) compare-and-swap 128 bits inline, as Open
#    MPI's own build does (OPAL_HAVE_SYNC_BUILTIN_CSWAP_INT128); without it the builtin is an
#    undefined libatomic call;
#  - _Float16=__fp16 under clang before 15: Open MPI built by gcc types MPI_SHORT_FLOAT as
#    _Float16 (opal_config.h), which that clang does not know on x86 (ThreadSanitizer's build,
#    scripts/sanitize, uses Debian's clang 14); only its size and alignment are needed, which
#    __fp16, a storage type everywhere in clang, shares (2 and 2);
#  - under ThreadSanitizer (scripts/sanitize), the order Open MPI's inline free lists and request
#    completion give, which its fences hide from ThreadSanitizer, told to it (test/tsan/).
function(ucxdt_ompi5_piece target)
  set_target_properties(${target} PROPERTIES C_STANDARD 11 C_VISIBILITY_PRESET hidden)
  if(CMAKE_SYSTEM_PROCESSOR MATCHES "x86_64|AMD64")
    target_compile_options(${target} PRIVATE -mcx16)
  endif()
  if(CMAKE_C_COMPILER_ID STREQUAL "Clang" AND CMAKE_C_COMPILER_VERSION VERSION_LESS 15)
    target_compile_definitions(${target} PRIVATE _Float16=__fp16)
  endif()
  if(UCXDT_SANITIZE MATCHES "thread")
    target_compile_options(${target} PRIVATE "SHELL:-include ${PROJECT_SOURCE_DIR}/test/tsan/ompi_inline_sync.h")
  endif()
endfunction()

# An Open MPI component: the DSO <build>/ompi5/mca_<type>_ucxdt.so of src/<type>_ucxdt/*.c.
function(ucxdt_ompi5_component type)
  file(GLOB _sources CONFIGURE_DEPENDS "${PROJECT_SOURCE_DIR}/src/${type}_ucxdt/*.c")
  add_library(${type}_ucxdt MODULE ${_sources})
  ucxdt_ompi5_piece(${type}_ucxdt)
  set_target_properties(${type}_ucxdt PROPERTIES
    OUTPUT_NAME mca_${type}_ucxdt
    PREFIX ""
    LIBRARY_OUTPUT_DIRECTORY "${PROJECT_BINARY_DIR}/ompi5"
    BUILD_RPATH "${PROJECT_BINARY_DIR};${UCXDT_OMPI5_PREFIX}/lib"
    INSTALL_RPATH "$ORIGIN/..")
endfunction()

# common ucxdt (src/common_ucxdt): the datatype cache and error classes the components share,
# linked into each.
file(GLOB _common_sources CONFIGURE_DEPENDS "${PROJECT_SOURCE_DIR}/src/common_ucxdt/*.c")
add_library(common_ucxdt STATIC ${_common_sources})
ucxdt_ompi5_piece(common_ucxdt)
set_target_properties(common_ucxdt PROPERTIES POSITION_INDEPENDENT_CODE ON)
target_include_directories(common_ucxdt PUBLIC "${PROJECT_SOURCE_DIR}/src/common_ucxdt")
target_link_libraries(common_ucxdt PUBLIC ucxdt ucxdt_mpi_ompi5 ucxdt_ompi5)

# pml ucxdt (src/pml_ucxdt): point-to-point on ucxdt's rendezvous.
ucxdt_ompi5_component(pml)
target_link_libraries(pml_ucxdt PRIVATE common_ucxdt ucxdt ucxdt_mpi_ompi5 ucxdt_ompi5 PkgConfig::UCX)
# coll ucxdt (src/coll_ucxdt): the self block of the collectives, through the PML.
ucxdt_ompi5_component(coll)
target_link_libraries(coll_ucxdt PRIVATE ucxdt_ompi5)
# osc ucxdt (src/osc_ucxdt): one-sided communication on ucxdt's one-sided layer.
ucxdt_ompi5_component(osc)
target_link_libraries(osc_ucxdt PRIVATE common_ucxdt ucxdt ucxdt_mpi_ompi5 ucxdt_ompi5 PkgConfig::UCX CUDA::cudart)
message(STATUS "ucxdt: pml ucxdt against Open MPI 5 at ${_p}")
# Installed into <prefix>/lib/openmpi: Open MPI's component directory when ucxdt shares its prefix.
install(TARGETS pml_ucxdt coll_ucxdt osc_ucxdt LIBRARY DESTINATION "${CMAKE_INSTALL_LIBDIR}/openmpi")
install(TARGETS ucxdt_mpi_ompi5 LIBRARY DESTINATION "${CMAKE_INSTALL_LIBDIR}")
