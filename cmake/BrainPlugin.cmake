# brain_add_plugin(<name> SOURCES <src>... [LINK <libs>...] [NO_INSTALL] [OUTPUT_DIRECTORY <dir>])
# Builds libbrain_<name>.so as a MODULE library against brain::sdk with hidden visibility (only the entry
# symbol, marked BRAIN_PLUGIN_EXPORT, is exported), and installs it into lib/brain/plugins.
# Installed with the brain package, so third-party plugins use the same function.
function(brain_add_plugin name)
  cmake_parse_arguments(ARG "NO_INSTALL" "OUTPUT_DIRECTORY" "SOURCES;LINK" ${ARGN})
  set(target brain_plugin_${name})
  add_library(${target} MODULE ${ARG_SOURCES})
  if(NOT ARG_OUTPUT_DIRECTORY)
    if(DEFINED BRAIN_PLUGIN_OUTPUT_DIR)
      set(ARG_OUTPUT_DIRECTORY "${BRAIN_PLUGIN_OUTPUT_DIR}")
    else()
      set(ARG_OUTPUT_DIRECTORY "${CMAKE_CURRENT_BINARY_DIR}")
    endif()
  endif()
  set_target_properties(${target} PROPERTIES
    PREFIX "lib"
    OUTPUT_NAME "brain_${name}"
    CXX_VISIBILITY_PRESET hidden
    C_VISIBILITY_PRESET hidden
    VISIBILITY_INLINES_HIDDEN ON
    LIBRARY_OUTPUT_DIRECTORY "${ARG_OUTPUT_DIRECTORY}")
  target_compile_features(${target} PRIVATE cxx_std_20)
  target_link_libraries(${target} PRIVATE brain::sdk ${ARG_LINK})
  if(CMAKE_SYSTEM_NAME STREQUAL "Linux")
    # Fail at link time, not at dlopen time, on an unresolved symbol of our own.
    target_link_options(${target} PRIVATE "LINKER:--no-undefined")
  endif()
  if(NOT ARG_NO_INSTALL)
    if(NOT DEFINED BRAIN_PLUGIN_INSTALL_DIR)
      set(BRAIN_PLUGIN_INSTALL_DIR "${CMAKE_INSTALL_LIBDIR}/brain/plugins")
    endif()
    install(TARGETS ${target} LIBRARY DESTINATION "${BRAIN_PLUGIN_INSTALL_DIR}" COMPONENT plugin_${name})
  endif()
endfunction()
