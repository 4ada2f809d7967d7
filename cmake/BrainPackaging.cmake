# CPack: Debian packages built from the install components (cpack -G DEB in the build directory):
#   brain        core (libraries brain_core and brain_conformance, headers, CMake package, brain_bench), apps (brain,
#                brain-conformance), plugin_cpu
#   brain-cuda   plugin_cuda: installing the CUDA backend is installing one more package
#   brain-metal  plugin_metal
# Every plugin package depends on exactly this version of brain: the plugin ABI is checked at load time anyway,
# but a matching pair is what was tested.
set(CPACK_PACKAGE_NAME "brain")
set(CPACK_PACKAGE_VENDOR "brain project")
set(CPACK_PACKAGE_CONTACT "brain maintainers <brain-maintainers@example.invalid>")
set(CPACK_PACKAGE_VERSION "${PROJECT_VERSION}")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "${PROJECT_DESCRIPTION}")
set(CPACK_PACKAGING_INSTALL_PREFIX "/usr")
set(CPACK_GENERATOR "DEB")
set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_COMPONENTS_GROUPING ONE_PER_GROUP)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION "science")

# Only the components this configuration builds; anything installed without a component would be a bug.
set(CPACK_COMPONENTS_ALL core apps)
foreach(_plugin cpu cuda metal)
  if(TARGET brain_plugin_${_plugin})
    list(APPEND CPACK_COMPONENTS_ALL plugin_${_plugin})
  endif()
endforeach()

# The brain package: shared-library dependencies from dpkg-shlibdeps where it exists, plus OpenBLAS, which the
# CPU plugin opens at run time (so dpkg-shlibdeps cannot see it).
find_program(BRAIN_DPKG_SHLIBDEPS dpkg-shlibdeps)
set(CPACK_DEBIAN_BRAIN_PACKAGE_NAME "brain")
set(CPACK_DEBIAN_BRAIN_DESCRIPTION
    "Dense neural-network training with run-time backend plugins: libbrain_core, the CPU (OpenBLAS) plugin,\n"
    "the brain and brain-conformance commands, headers and the CMake package for hosts and plugin authors.")
if(BRAIN_DPKG_SHLIBDEPS)
  set(CPACK_DEBIAN_BRAIN_PACKAGE_SHLIBDEPS ON)
endif()
if(TARGET brain_plugin_cpu)
  set(CPACK_DEBIAN_BRAIN_PACKAGE_DEPENDS "libopenblas0 | libopenblas0-pthread | libopenblas0-openmp")
endif()

set(CPACK_DEBIAN_CUDA_PACKAGE_NAME "brain-cuda")
set(CPACK_DEBIAN_CUDA_PACKAGE_DEPENDS "brain (= ${PROJECT_VERSION})")
set(CPACK_DEBIAN_CUDA_DESCRIPTION
    "CUDA backend plugin for brain (libbrain_cuda.so). It links cuBLAS and NVRTC from the CUDA toolkit and\n"
    "needs an NVIDIA driver at run time; without one it loads and reports DriverUnavailable.")
# cuBLAS and NVRTC usually come from NVIDIA's installer, not from a Debian package dpkg-shlibdeps could name.
set(CPACK_DEBIAN_CUDA_PACKAGE_SHLIBDEPS OFF)

set(CPACK_DEBIAN_METAL_PACKAGE_NAME "brain-metal")
set(CPACK_DEBIAN_METAL_PACKAGE_DEPENDS "brain (= ${PROJECT_VERSION})")
set(CPACK_DEBIAN_METAL_DESCRIPTION
    "Metal backend plugin for brain (libbrain_metal.so). Off Apple systems it reports MetalFeatureDisabled.")

include(CPack)

cpack_add_component_group(brain DISPLAY_NAME "brain" DESCRIPTION "core library, CPU plugin, commands, SDK")
cpack_add_component(core GROUP brain REQUIRED)
cpack_add_component(apps GROUP brain DEPENDS core)
cpack_add_component(plugin_cpu GROUP brain DEPENDS core)
cpack_add_component_group(cuda DISPLAY_NAME "brain-cuda" DESCRIPTION "CUDA backend plugin")
cpack_add_component(plugin_cuda GROUP cuda DEPENDS core)
cpack_add_component_group(metal DISPLAY_NAME "brain-metal" DESCRIPTION "Metal backend plugin")
cpack_add_component(plugin_metal GROUP metal DEPENDS core)
