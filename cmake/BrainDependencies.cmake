# brain_find_core_packages()
# The CMake packages the core links: Boost, nlohmann_json, spdlog, threads, and ONNX on protobuf. A macro, so the
# packages' variables stay in the caller's scope.
macro(brain_find_core_packages)
  find_package(Boost 1.71 REQUIRED)
  find_package(nlohmann_json 3.9 REQUIRED)
  find_package(spdlog REQUIRED)
  find_package(Threads REQUIRED)
  find_package(Protobuf 3.12 REQUIRED)
  find_package(ONNX 1.12 REQUIRED CONFIG)
endmacro()

# brain_find_header_dir(<var> HEADER <header> PACKAGE <package> TARGET <target> FAILURE <message>...)
# The folder holding <header> of a header-only dependency, into the cache variable <var>: the include directories
# of <target> when the CMake package <package> provides it, else the usual places. Stops with <message> (its parts
# joined) when the header is nowhere.
function(brain_find_header_dir var)
  cmake_parse_arguments(ARG "" "HEADER;PACKAGE;TARGET" "FAILURE" ${ARGN})
  find_package(${ARG_PACKAGE} QUIET)
  set(hint "")
  if(TARGET ${ARG_TARGET})
    get_target_property(hint ${ARG_TARGET} INTERFACE_INCLUDE_DIRECTORIES)
  endif()
  find_path(${var} ${ARG_HEADER} HINTS ${hint})
  if(NOT ${var})
    string(CONCAT failure ${ARG_FAILURE})
    message(FATAL_ERROR "${failure}")
  endif()
endfunction()
