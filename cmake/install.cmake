# `cmake --install`: libxfer (the host memory kinds, the caching pool, and the
# CUDA and OpenCL kinds where they were built), its public headers, a package
# config for find_package(xfer), and the xferbench tool. The benchmark's own
# libraries (core, backends, studies) are not installed: they are the tool's
# insides, not an interface anyone links.
#
#   <prefix>/include/xfer/config.hpp           which backends this build has
#   <prefix>/include/xfer/mem/...               host kinds, pool, buffer, errors
#   <prefix>/include/xfer/mem/cuda/...          the CUDA ones (when built)
#   <prefix>/lib/libxfer_mem*.a
#   <prefix>/lib/cmake/xfer/xferConfig.cmake, xferConfigVersion.cmake,
#     xferTargets.cmake (xfer::mem), xferCudaTargets.cmake (xfer::mem_cuda),
#     xferOpenCLTargets.cmake (xfer::mem_opencl)
#   <prefix>/bin/xferbench
#
# One export set per component, so the config can load the CUDA or OpenCL
# targets only where their toolkit is found (components cuda, opencl).
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set(XFER_INSTALL_CMAKEDIR ${CMAKE_INSTALL_LIBDIR}/cmake/xfer CACHE STRING "where the package config is installed")

install(TARGETS xfer_mem EXPORT xferTargets
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(EXPORT xferTargets NAMESPACE xfer:: DESTINATION ${XFER_INSTALL_CMAKEDIR})

# The vendor folders go only with their libraries.
set(_xfer_header_excludes)
if(NOT XFER_HAVE_CUDA)
  list(APPEND _xfer_header_excludes PATTERN cuda EXCLUDE)
endif()
if(NOT XFER_HAVE_OPENCL)
  list(APPEND _xfer_header_excludes PATTERN opencl EXCLUDE)
endif()
install(DIRECTORY include/xfer/mem DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/xfer ${_xfer_header_excludes})
install(FILES ${PROJECT_BINARY_DIR}/generated/xfer/config.hpp DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/xfer)

if(XFER_HAVE_CUDA)
  install(TARGETS xfer_mem_cuda EXPORT xferCudaTargets ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR})
  install(EXPORT xferCudaTargets NAMESPACE xfer:: DESTINATION ${XFER_INSTALL_CMAKEDIR})
endif()
if(XFER_HAVE_OPENCL)
  install(TARGETS xfer_mem_opencl EXPORT xferOpenCLTargets
    ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
    LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
    RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
  install(EXPORT xferOpenCLTargets NAMESPACE xfer:: DESTINATION ${XFER_INSTALL_CMAKEDIR})
endif()

install(TARGETS xferbench RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})

configure_package_config_file(cmake/xferConfig.cmake.in ${PROJECT_BINARY_DIR}/xferConfig.cmake
  INSTALL_DESTINATION ${XFER_INSTALL_CMAKEDIR})
# 0.x: a new minor version may break the interface.
write_basic_package_version_file(${PROJECT_BINARY_DIR}/xferConfigVersion.cmake COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/xferConfig.cmake ${PROJECT_BINARY_DIR}/xferConfigVersion.cmake
  DESTINATION ${XFER_INSTALL_CMAKEDIR})
