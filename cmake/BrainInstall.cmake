# Install + export: find_package(brain) gives brain::core (hosts) and brain::sdk (plugin authors); with COMPONENTS
# conformance also brain::conformance (exported by conformance/CMakeLists.txt). The tree is relocatable: the
# config finds everything relative to itself, binaries use $ORIGIN RPATHs, and the core looks for plugins in
# brain/plugins beside itself.
include(CMakePackageConfigHelpers)

# The ABI version, read from the header so the package can never disagree with it.
file(STRINGS "${PROJECT_SOURCE_DIR}/sdk/include/brain/plugin_abi.h" _brain_abi_lines
     REGEX "^#define BRAIN_ABI_VERSION_(MAJOR|MINOR) ")
string(REGEX REPLACE ".*MAJOR ([0-9]+).*" "\\1" _brain_abi_major "${_brain_abi_lines}")
string(REGEX REPLACE ".*MINOR ([0-9]+).*" "\\1" _brain_abi_minor "${_brain_abi_lines}")
set(BRAIN_ABI_VERSION "${_brain_abi_major}.${_brain_abi_minor}")

install(EXPORT brainTargets NAMESPACE brain:: DESTINATION "${CMAKE_INSTALL_LIBDIR}/cmake/brain"
        COMPONENT core)
configure_package_config_file("${CMAKE_CURRENT_LIST_DIR}/brainConfig.cmake.in"
  "${CMAKE_BINARY_DIR}/brainConfig.cmake" INSTALL_DESTINATION "${CMAKE_INSTALL_LIBDIR}/cmake/brain")
write_basic_package_version_file("${CMAKE_BINARY_DIR}/brainConfigVersion.cmake"
  VERSION ${PROJECT_VERSION} COMPATIBILITY SameMajorVersion)
install(FILES "${CMAKE_BINARY_DIR}/brainConfig.cmake" "${CMAKE_BINARY_DIR}/brainConfigVersion.cmake"
              "${CMAKE_CURRENT_LIST_DIR}/BrainPlugin.cmake"
        DESTINATION "${CMAKE_INSTALL_LIBDIR}/cmake/brain" COMPONENT core)

include(BrainPackaging)
