# brain_add_plugin(<name> SOURCES <src>... [LINK <libs>...] [NO_INSTALL] [OUTPUT_DIRECTORY <dir>])
# Builds libbrain_<name>.so as a MODULE library against brain::sdk with hidden visibility, and installs it into
# lib/brain/plugins (component plugin_<name>). On Linux the link fails on unresolved symbols of the plugin's own
# (--no-undefined), and a version script leaves brain_plugin_get_api as the only exported symbol (hidden
# visibility alone still exports libstdc++ template instantiations). A plugin that adds its own
# --version-script keeps it. Installed with the brain package, so third-party plugins use the same function.
function(brain_add_plugin name)
  cmake_parse_arguments(ARG "NO_INSTALL" "OUTPUT_DIRECTORY" "SOURCES;LINK" ${ARGN})
  if(NOT name MATCHES "^[a-z0-9_-]+$")
    message(FATAL_ERROR "brain_add_plugin: plugin name \"${name}\" must use only a-z, 0-9, '_' and '-' "
                        "(it becomes the backend name and the file libbrain_${name}.so)")
  endif()
  if(NOT ARG_SOURCES)
    message(FATAL_ERROR "brain_add_plugin(${name}): no SOURCES given")
  endif()
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
    SUFFIX ".so"
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
    # Deferred to the end of the directory, so a plugin that sets its own version script is left alone.
    # (Deferred arguments are expanded when the call runs, so the target name is baked in through EVAL.)
    cmake_language(EVAL CODE "cmake_language(DEFER CALL _brain_plugin_export_only_entry [[${target}]])")
  endif()
  if(NOT ARG_NO_INSTALL)
    if(NOT DEFINED BRAIN_PLUGIN_INSTALL_DIR)
      set(BRAIN_PLUGIN_INSTALL_DIR "${CMAKE_INSTALL_LIBDIR}/brain/plugins")
    endif()
    install(TARGETS ${target} LIBRARY DESTINATION "${BRAIN_PLUGIN_INSTALL_DIR}" COMPONENT plugin_${name})
  endif()
endfunction()

# Internal: export only the ABI entry symbol, unless the target already links with a version script.
function(_brain_plugin_export_only_entry target)
  get_target_property(options ${target} LINK_OPTIONS)
  if(options MATCHES "version-script")
    return()
  endif()
  set(map "${CMAKE_CURRENT_BINARY_DIR}/${target}_exports.map")
  file(WRITE "${map}" "{ global: brain_plugin_get_api; local: *; };\n")
  target_link_options(${target} PRIVATE "LINKER:--version-script=${map}")
  set_property(TARGET ${target} APPEND PROPERTY LINK_DEPENDS "${map}")
endfunction()
