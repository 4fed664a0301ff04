# The MPI libraries that the bridge (ucxdt_mpi) and the MPI oracle tests are built against: each
# installed one of Open MPI and MPICH, so that each can check ucxdt and the other. Both install
# an mpi.h, so every target sees exactly one MPI's headers and library, never both.
#
# Defines, when UCXDT_WITH_MPI is on:
#   UCXDT_HAVE_MPI              whether FindMPI found an MPI: it backs the installed ucxdt_mpi
#   UCXDT_FINDMPI_FLAVOR        which one that is (openmpi, mpich), if known
#   UCXDT_MPI_FLAVORS           the flavors found: openmpi, mpich, and mpich5 when
#                               UCXDT_MPICH5_PREFIX names a CUDA-aware MPICH 5
#                               (scripts/setup-deps --mpich-cuda prints one)
#   UCXDT_MPI_TARGET_<flavor>   the target carrying that MPI's headers and library
#   UCXDT_MPIEXEC_mpich5        that MPICH's own mpiexec
#   UCXDT_TEST_ENV_mpich5       the environment its host tests need
# and the functions ucxdt_add_mpi_bridge and ucxdt_add_pmpi.
# FindMPI's MPI (the mpicc alternative) is one flavor; the other comes from pkg-config
# (ompi-c, mpich), or for MPICH from its include and library directories (Debian's
# <include>/<arch>/mpich and libmpich). A flavor not found is reported and its targets are
# skipped.

# The functions come first: pml ucxdt (cmake/UcxdtPml.cmake) builds its bridge against the Open
# MPI 5 it is given even when UCXDT_WITH_MPI is off (ThreadSanitizer's build, scripts/sanitize).
# A shared library of src/mpi: hidden symbols but for what it exports on purpose, versioned like
# libucxdt, found beside it, seeing base/ (the error slot, settings) and no other internal folder.
function(_ucxdt_mpi_library target)
  add_library(${target} SHARED ${ARGN})
  set_target_properties(${target} PROPERTIES
    CXX_VISIBILITY_PRESET hidden
    VISIBILITY_INLINES_HIDDEN ON
    VERSION ${PROJECT_VERSION}
    SOVERSION ${PROJECT_VERSION_MAJOR}.${PROJECT_VERSION_MINOR}
    INSTALL_RPATH "$ORIGIN")
  get_property(_base_view GLOBAL PROPERTY UCXDT_LAYER_INCLUDE_base)
  target_include_directories(${target} PRIVATE "${_base_view}")
  # A sanitized library leaves the sanitizer's runtime to the executable, as libucxdt does.
  if(NOT UCXDT_SANITIZE)
    target_link_options(${target} PRIVATE "LINKER:--no-undefined")
  endif()
endfunction()

# ucxdt_add_mpi_bridge(TARGET MPI_TARGET): the bridge (src/mpi/mpi_import.cpp) as the
# shared library TARGET, compiled and linked against MPI_TARGET's MPI only.
function(ucxdt_add_mpi_bridge target mpi_target)
  _ucxdt_mpi_library(${target} "${PROJECT_SOURCE_DIR}/src/mpi/mpi_import.cpp")
  # include/ucxdt/mpi.h speaks MPI_Datatype, so MPI is part of its interface.
  target_link_libraries(${target} PUBLIC ucxdt ${mpi_target})
  # Only MPI's C API: keep mpi.h from declaring the C++ bindings, whose library is not linked.
  target_compile_definitions(${target} PUBLIC OMPI_SKIP_MPICXX=1 MPICH_SKIP_MPICXX=1)
endfunction()

# ucxdt_add_pmpi(TARGET BRIDGE MPI_TARGET): the PMPI interposer (src/mpi/pmpi_*.cpp) as the
# shared library TARGET, libucxdt_pmpi.so in <build>/pmpi/<TARGET>/, against MPI_TARGET's MPI and
# that MPI's bridge BRIDGE. It exports the MPI_* calls it interposes and nothing else of its own.
function(ucxdt_add_pmpi target bridge mpi_target)
  file(GLOB _sources CONFIGURE_DEPENDS "${PROJECT_SOURCE_DIR}/src/mpi/pmpi_*.cpp")
  _ucxdt_mpi_library(${target} ${_sources})
  set_target_properties(${target} PROPERTIES
    OUTPUT_NAME ucxdt_pmpi
    LIBRARY_OUTPUT_DIRECTORY "${PROJECT_BINARY_DIR}/pmpi/${target}")
  target_link_libraries(${target} PRIVATE ${bridge} ucxdt ${mpi_target} CUDA::cudart ${CMAKE_DL_LIBS})
endfunction()

set(UCXDT_HAVE_MPI OFF)
set(UCXDT_MPI_FLAVORS)
if(NOT UCXDT_WITH_MPI)
  return()
endif()

include(CheckSymbolExists)

find_package(MPI COMPONENTS C)
set(UCXDT_FINDMPI_FLAVOR "")
if(MPI_C_FOUND)
  set(UCXDT_HAVE_MPI ON)
  # Which implementation FindMPI found, by the macro its mpi.h defines.
  set(CMAKE_REQUIRED_INCLUDES ${MPI_C_INCLUDE_DIRS})
  set(CMAKE_REQUIRED_QUIET ON)
  check_symbol_exists(OPEN_MPI "mpi.h" UCXDT_FINDMPI_IS_OPENMPI)
  check_symbol_exists(MPICH "mpi.h" UCXDT_FINDMPI_IS_MPICH)
  unset(CMAKE_REQUIRED_INCLUDES)
  unset(CMAKE_REQUIRED_QUIET)
  if(UCXDT_FINDMPI_IS_OPENMPI)
    set(UCXDT_FINDMPI_FLAVOR openmpi)
  elseif(UCXDT_FINDMPI_IS_MPICH)
    set(UCXDT_FINDMPI_FLAVOR mpich)
  endif()
endif()

# An MPI as an imported target of its headers and its one C library, from its pkg-config
# module (whose --libs would also name MPICH's private dependencies, such as Debian's libucp),
# else from `include_suffix` under the include directories and `library` in the library ones.
function(_ucxdt_mpi_find flavor module library include_suffix)
  pkg_check_modules(UCXDT_PC_${flavor} QUIET ${module})
  if(UCXDT_PC_${flavor}_FOUND)
    pkg_get_variable(_libdir ${module} libdir)
    find_library(UCXDT_MPI_LIBRARY_${flavor} NAMES ${library}
                 HINTS ${UCXDT_PC_${flavor}_LIBRARY_DIRS} "${_libdir}" NO_DEFAULT_PATH)
    set(_include ${UCXDT_PC_${flavor}_INCLUDE_DIRS})
  elseif(include_suffix)
    # <suffix>/mpi.h, never another MPI's mpi.h in the include directory itself.
    find_path(UCXDT_MPI_INCLUDE_DIR_${flavor} NAMES "${include_suffix}/mpi.h")
    find_library(UCXDT_MPI_LIBRARY_${flavor} NAMES ${library})
    if(UCXDT_MPI_INCLUDE_DIR_${flavor})
      set(_include "${UCXDT_MPI_INCLUDE_DIR_${flavor}}/${include_suffix}")
    endif()
  endif()
  if(NOT UCXDT_MPI_LIBRARY_${flavor} OR NOT _include)
    return()
  endif()
  add_library(ucxdt_mpi_iface_${flavor} INTERFACE IMPORTED)
  target_include_directories(ucxdt_mpi_iface_${flavor} INTERFACE ${_include})
  target_link_libraries(ucxdt_mpi_iface_${flavor} INTERFACE "${UCXDT_MPI_LIBRARY_${flavor}}")
  set(UCXDT_MPI_TARGET_${flavor} ucxdt_mpi_iface_${flavor} PARENT_SCOPE)
endfunction()

# The peer of issue 46: a CUDA-aware MPICH 5 with Yaksa, beside Debian's MPICH 4 (both speak
# MPICH's ABI, but Debian's library is libmpich.so.12 and MPICH 5's libmpi.so.12, or libmpi.so.0
# when built from a git archive, so each gets its own builds). It also carries Yaksa's static library (ucxdt_packbench_yaksa).
set(UCXDT_MPICH5_PREFIX "" CACHE PATH "A CUDA-aware MPICH 5 (scripts/setup-deps --mpich-cuda)")
if(UCXDT_MPICH5_PREFIX)
  set(_p "${UCXDT_MPICH5_PREFIX}")
  if(NOT EXISTS "${_p}/include/mpi.h" OR NOT EXISTS "${_p}/lib/libmpi.so")
    message(FATAL_ERROR "UCXDT_MPICH5_PREFIX=${_p}: no include/mpi.h and lib/libmpi.so there")
  endif()
  add_library(ucxdt_mpi_iface_mpich5 INTERFACE IMPORTED)
  target_include_directories(ucxdt_mpi_iface_mpich5 INTERFACE "${_p}/include")
  target_link_libraries(ucxdt_mpi_iface_mpich5 INTERFACE "${_p}/lib/libmpi.so")
  # libmpi needs the driver's libcuda.so.1: on a machine without one, the toolkit's stub that
  # setup-deps puts in lib/stubs stands in at link time (not at run time).
  if(EXISTS "${_p}/lib/stubs/libcuda.so.1")
    target_link_options(ucxdt_mpi_iface_mpich5 INTERFACE "LINKER:-rpath-link,${_p}/lib/stubs")
  endif()
  set(UCXDT_MPI_TARGET_mpich5 ucxdt_mpi_iface_mpich5)
  set(UCXDT_MPIEXEC_mpich5 "${_p}/bin/mpiexec")
  # What its host tests run with: MPICH's GPU support off, and, where this machine has no driver
  # (CI), the stub as libcuda.so.1 so that libmpi loads.
  set(UCXDT_TEST_ENV_mpich5 MPIR_CVAR_ENABLE_GPU=0)
  find_library(UCXDT_LIBCUDA_DRIVER NAMES libcuda.so.1)
  if(NOT UCXDT_LIBCUDA_DRIVER AND EXISTS "${_p}/lib/stubs/libcuda.so.1")
    list(APPEND UCXDT_TEST_ENV_mpich5 "LD_LIBRARY_PATH=${_p}/lib/stubs")
  endif()
endif()

foreach(_flavor IN ITEMS openmpi mpich mpich5)
  if(_flavor STREQUAL "mpich5")
    # Set above, or not at all.
  elseif(_flavor STREQUAL UCXDT_FINDMPI_FLAVOR)
    set(UCXDT_MPI_TARGET_${_flavor} MPI::MPI_C)
  elseif(_flavor STREQUAL "openmpi")
    _ucxdt_mpi_find(openmpi ompi-c mpi "")
  else()
    _ucxdt_mpi_find(mpich mpich mpich mpich)
  endif()
  if(UCXDT_MPI_TARGET_${_flavor})
    list(APPEND UCXDT_MPI_FLAVORS ${_flavor})
    message(STATUS "ucxdt: MPI flavor ${_flavor}: ${UCXDT_MPI_TARGET_${_flavor}}")
  elseif(_flavor STREQUAL "mpich5")
    message(STATUS "ucxdt: no UCXDT_MPICH5_PREFIX: the tests and builds against MPICH 5 are skipped")
  else()
    message(STATUS "ucxdt: MPI flavor ${_flavor} not found: its oracle tests are skipped")
  endif()
endforeach()

