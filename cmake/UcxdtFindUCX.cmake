# Finds UCX >= 1.13 through pkg-config and defines:
#   PkgConfig::UCX            imported target (ucp, uct, ucs, ucm)
#   UCXDT_UCX_PREFIX          install prefix of the UCX found
#   UCXDT_UCX_LIBDIR          its library directory
#   UCXDT_UCX_PKGCONFIG_DIR   directory of its ucx.pc (recorded in the installed package)
#   UCXDT_UCX_HAS_CUDA        cache BOOL: whether UCX was built with its CUDA transports
# UCX_ROOT (CMake variable or environment) names a UCX prefix to use before any other.

set(UCX_ROOT "$ENV{UCX_ROOT}" CACHE PATH "UCX install prefix; empty: pkg-config's search path")

find_package(PkgConfig REQUIRED)

if(UCX_ROOT)
  if(NOT EXISTS "${UCX_ROOT}/lib/pkgconfig/ucx.pc" AND NOT EXISTS "${UCX_ROOT}/lib64/pkgconfig/ucx.pc")
    message(FATAL_ERROR "UCX_ROOT=${UCX_ROOT} has no lib/pkgconfig/ucx.pc")
  endif()
  # Re-run pkg-config when UCX_ROOT changes: its result and the library paths it found are
  # cached, and would keep pointing at the previous UCX.
  if(NOT "${UCX_ROOT}" STREQUAL "${_UCXDT_UCX_ROOT_USED}")
    unset(__pkg_config_checked_UCX CACHE)
    get_cmake_property(_ucxdt_cache_vars CACHE_VARIABLES)
    foreach(_v IN LISTS _ucxdt_cache_vars)
      if(_v MATCHES "^pkgcfg_lib_UCX_")
        unset(${_v} CACHE)
      endif()
    endforeach()
    set(_UCXDT_UCX_ROOT_USED "${UCX_ROOT}" CACHE INTERNAL "")
  endif()
  set(ENV{PKG_CONFIG_PATH} "${UCX_ROOT}/lib/pkgconfig:${UCX_ROOT}/lib64/pkgconfig:$ENV{PKG_CONFIG_PATH}")
endif()

pkg_check_modules(UCX IMPORTED_TARGET "ucx>=1.13")
if(NOT UCX_FOUND)
  message(FATAL_ERROR "UCX >= 1.13 not found by pkg-config. Set UCX_ROOT to a UCX install "
                      "prefix, or run scripts/setup-deps, which builds one with CUDA.")
endif()
pkg_get_variable(UCXDT_UCX_PREFIX ucx prefix)
pkg_get_variable(UCXDT_UCX_LIBDIR ucx libdir)
pkg_get_variable(UCXDT_UCX_PKGCONFIG_DIR ucx pcfiledir)

# UCX loads its transports as modules from $libdir/ucx; CUDA support is the uct_cuda module.
if(EXISTS "${UCXDT_UCX_LIBDIR}/ucx/libuct_cuda.so")
  set(_ucxdt_has_cuda ON)
else()
  set(_ucxdt_has_cuda OFF)
endif()
set(UCXDT_UCX_HAS_CUDA ${_ucxdt_has_cuda} CACHE BOOL
    "Whether the UCX found has CUDA transports (libuct_cuda.so); detected, not settable" FORCE)
message(STATUS "ucxdt: UCX ${UCX_VERSION} at ${UCXDT_UCX_PREFIX}, CUDA transports: ${UCXDT_UCX_HAS_CUDA}")
if(NOT UCXDT_UCX_HAS_CUDA)
  message(STATUS "ucxdt: this UCX moves only host memory; GPU buffers need a UCX built --with-cuda "
                 "(scripts/setup-deps builds one)")
endif()
