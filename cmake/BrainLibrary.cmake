# brain_shared_library(<target> NAME <name> DEFINE_SYMBOL <macro> EXPORT <export set> SOURCES <src>...)
# Builds brain::<name>, the versioned shared library libbrain_<name>.so, from a folder holding include/ (public
# headers) and src/ (sources and private headers), with the project's warnings; installs the library and its
# headers (component core) into the export set. <macro> is defined while building it (its export macro's switch).
function(brain_shared_library target)
  cmake_parse_arguments(ARG "" "NAME;DEFINE_SYMBOL;EXPORT" "SOURCES" ${ARGN})
  add_library(${target} SHARED ${ARG_SOURCES})
  add_library(brain::${ARG_NAME} ALIAS ${target})
  set_target_properties(${target} PROPERTIES
    EXPORT_NAME ${ARG_NAME}
    OUTPUT_NAME brain_${ARG_NAME}
    VERSION ${PROJECT_VERSION}
    SOVERSION ${PROJECT_VERSION_MAJOR}
    DEFINE_SYMBOL ${ARG_DEFINE_SYMBOL})
  target_include_directories(${target}
    PUBLIC $<BUILD_INTERFACE:${CMAKE_CURRENT_SOURCE_DIR}/include> $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>
    PRIVATE ${CMAKE_CURRENT_SOURCE_DIR}/src)
  target_compile_features(${target} PUBLIC cxx_std_20)
  brain_target_warnings(${target})
  install(TARGETS ${target} EXPORT ${ARG_EXPORT}
    LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT core
    ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT core)
  install(DIRECTORY "${CMAKE_CURRENT_SOURCE_DIR}/include/" DESTINATION "${CMAKE_INSTALL_INCLUDEDIR}" COMPONENT core)
endfunction()
