# Install + export: find_package(brain) gives brain::core (hosts) and brain::sdk (plugin authors).
include(CMakePackageConfigHelpers)

install(EXPORT brainTargets NAMESPACE brain:: DESTINATION "${CMAKE_INSTALL_LIBDIR}/cmake/brain"
        COMPONENT core)
configure_package_config_file("${CMAKE_CURRENT_LIST_DIR}/brainConfig.cmake.in"
  "${CMAKE_BINARY_DIR}/brainConfig.cmake" INSTALL_DESTINATION "${CMAKE_INSTALL_LIBDIR}/cmake/brain")
write_basic_package_version_file("${CMAKE_BINARY_DIR}/brainConfigVersion.cmake"
  VERSION ${PROJECT_VERSION} COMPATIBILITY SameMajorVersion)
install(FILES "${CMAKE_BINARY_DIR}/brainConfig.cmake" "${CMAKE_BINARY_DIR}/brainConfigVersion.cmake"
              "${CMAKE_CURRENT_LIST_DIR}/BrainPlugin.cmake"
        DESTINATION "${CMAKE_INSTALL_LIBDIR}/cmake/brain" COMPONENT core)
