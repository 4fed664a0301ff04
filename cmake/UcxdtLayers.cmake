# The folders of the library as layers whose includes point one way (docs/design.md, "The
# house"). Each folder is an object library that reaches headers only as "<folder>/<name>.hpp",
# through a directory of links made for that folder (build/layers/<folder>/<folder>/), and sees
# only the folders it names in DEPENDS and what those depend on. An include of any other folder
# does not resolve, so a dependency that points back fails the build instead of growing a cycle.
#
#   ucxdt_add_layer(NAME [DEPENDS layer...] [LIBS target...])
#     Object library ucxdt_<NAME> of src/<NAME>/*.cpp, its headers at "<NAME>/..." for itself
#     and for every layer or target that links it; LIBS are the outside libraries whose headers
#     it includes. Adds NAME to UCXDT_LAYERS, and the link directories it sees, its own and
#     those of its dependencies, to UCXDT_LAYER_SEES_<NAME> (global properties).
#   ucxdt_layer_headers(NAME DIR)
#     Only the link directory: "<NAME>/..." reaches DIR's headers. Returns it in
#     UCXDT_LAYER_INCLUDE_<NAME> (global property); used for kernels/, which nvcc builds apart.

function(ucxdt_layer_headers name dir)
  set(_view "${PROJECT_BINARY_DIR}/layers/${name}")
  file(GLOB _headers CONFIGURE_DEPENDS "${dir}/*.hpp" "${dir}/*.cuh" "${dir}/*.h")
  # Made afresh at each configure, so that a removed header does not linger as a stale link.
  file(REMOVE_RECURSE "${_view}")
  file(MAKE_DIRECTORY "${_view}/${name}")
  foreach(_h IN LISTS _headers)
    get_filename_component(_n "${_h}" NAME)
    file(CREATE_LINK "${_h}" "${_view}/${name}/${_n}" SYMBOLIC)
  endforeach()
  set_property(GLOBAL PROPERTY UCXDT_LAYER_INCLUDE_${name} "${_view}")
  set_property(GLOBAL APPEND PROPERTY UCXDT_LAYER_INCLUDES "${_view}")
endfunction()

function(ucxdt_add_layer name)
  cmake_parse_arguments(PARSE_ARGV 1 _l "" "" "DEPENDS;LIBS")
  set(_dir "${PROJECT_SOURCE_DIR}/src/${name}")
  ucxdt_layer_headers(${name} "${_dir}")
  get_property(_view GLOBAL PROPERTY UCXDT_LAYER_INCLUDE_${name})
  file(GLOB _sources CONFIGURE_DEPENDS "${_dir}/*.cpp")
  add_library(ucxdt_${name} OBJECT ${_sources})
  set_target_properties(ucxdt_${name} PROPERTIES
    POSITION_INDEPENDENT_CODE ON
    CXX_VISIBILITY_PRESET hidden
    VISIBILITY_INLINES_HIDDEN ON)
  target_include_directories(ucxdt_${name} PUBLIC "${_view}" "${PROJECT_SOURCE_DIR}/include")
  set(_sees "${_view}")
  # Object libraries pass on include directories and link usage, never their objects: libucxdt
  # links every layer itself.
  foreach(_dep IN LISTS _l_DEPENDS)
    get_property(_dep_view GLOBAL PROPERTY UCXDT_LAYER_INCLUDE_${_dep})
    if(NOT _dep_view)
      message(FATAL_ERROR "ucxdt layer ${name} depends on ${_dep}, which is not defined before it")
    endif()
    get_property(_dep_sees GLOBAL PROPERTY UCXDT_LAYER_SEES_${_dep})
    list(APPEND _sees "${_dep_view}" ${_dep_sees})
    if(TARGET ucxdt_${_dep})
      target_link_libraries(ucxdt_${name} PUBLIC ucxdt_${_dep})
    else()
      target_include_directories(ucxdt_${name} PUBLIC "${_dep_view}")
    endif()
  endforeach()
  if(_l_LIBS)
    target_link_libraries(ucxdt_${name} PUBLIC ${_l_LIBS})
  endif()
  list(REMOVE_DUPLICATES _sees)
  set_property(GLOBAL PROPERTY UCXDT_LAYER_SEES_${name} "${_sees}")
  set_property(GLOBAL APPEND PROPERTY UCXDT_LAYERS ${name})
endfunction()
