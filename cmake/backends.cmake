# Decides XFER_HAVE_CUDA / XFER_HAVE_OPENCL / XFER_HAVE_VULKAN (0/1) from the
# AUTO|ON|OFF options.
include(CheckLanguage)

set(XFER_HAVE_CUDA 0)
if(NOT XFER_ENABLE_CUDA STREQUAL "OFF")
  check_language(CUDA)
  # Kernels for every GPU the toolkit supports, not nvcc's default (one old
  # architecture): real code for each major architecture (a minor one runs its
  # major's code) and PTX of the newest, which the driver compiles for GPUs
  # newer than this toolkit. CMAKE_CUDA_ARCHITECTURES or CUDAARCHS, when
  # given, win.
  if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES AND NOT DEFINED ENV{CUDAARCHS})
    set(CMAKE_CUDA_ARCHITECTURES all-major)
  endif()
  if(CMAKE_CUDA_COMPILER)
    enable_language(CUDA)
    find_package(CUDAToolkit)
  endif()
  if(CMAKE_CUDA_COMPILER AND CUDAToolkit_FOUND)
    set(XFER_HAVE_CUDA 1)
    # Spelled out for `xferbench list` (CMake names all, all-major, native).
    set(XFER_CUDA_ARCH_LIST "${CMAKE_CUDA_ARCHITECTURES}")
    if(CMAKE_CUDA_ARCHITECTURES STREQUAL "all-major")
      set(XFER_CUDA_ARCH_LIST "${CMAKE_CUDA_ARCHITECTURES_ALL_MAJOR}")
    elseif(CMAKE_CUDA_ARCHITECTURES STREQUAL "all")
      set(XFER_CUDA_ARCH_LIST "${CMAKE_CUDA_ARCHITECTURES_ALL}")
    endif()
    string(REPLACE ";" " " XFER_CUDA_ARCH_LIST "${XFER_CUDA_ARCH_LIST}")
    message(STATUS "xferbench CUDA architectures: ${XFER_CUDA_ARCH_LIST}")
  elseif(XFER_ENABLE_CUDA STREQUAL "ON")
    message(FATAL_ERROR "XFER_ENABLE_CUDA=ON but no CUDA compiler/toolkit was found")
  endif()
endif()

set(XFER_HAVE_OPENCL 0)
if(NOT XFER_ENABLE_OPENCL STREQUAL "OFF")
  find_package(OpenCL)
  if(OpenCL_FOUND)
    set(XFER_HAVE_OPENCL 1)
  elseif(XFER_ENABLE_OPENCL STREQUAL "ON")
    message(FATAL_ERROR "XFER_ENABLE_OPENCL=ON but no OpenCL headers/ICD loader were found")
  endif()
endif()
# XRT: Xilinx's runtime (Debian's libxrt-dev; Xilinx's packages under
# /opt/xilinx/xrt). Its native C++ API is in libxrt_coreutil.
set(XFER_HAVE_XRT 0)
if(NOT XFER_ENABLE_XRT STREQUAL "OFF")
  find_path(XRT_INCLUDE_DIR xrt/xrt_bo.h PATHS /usr/include/xrt /opt/xilinx/xrt/include)
  find_library(XRT_COREUTIL_LIBRARY xrt_coreutil PATHS /opt/xilinx/xrt/lib)
  if(XRT_INCLUDE_DIR AND XRT_COREUTIL_LIBRARY)
    set(XFER_HAVE_XRT 1)
  elseif(XFER_ENABLE_XRT STREQUAL "ON")
    message(FATAL_ERROR "XFER_ENABLE_XRT=ON but XRT's headers (xrt/xrt_bo.h) or libxrt_coreutil were not found")
  endif()
endif()

set(XFER_HAVE_MPI 0)
if(NOT XFER_ENABLE_MPI STREQUAL "OFF")
  # The C interface only (MPI's C++ bindings are gone from MPI 3); FindMPI
  # needs the C language to look for it.
  enable_language(C)
  find_package(MPI COMPONENTS C)
  if(MPI_C_FOUND)
    set(XFER_HAVE_MPI 1)
    find_program(XFER_MPIEXEC NAMES mpirun mpiexec)
  elseif(XFER_ENABLE_MPI STREQUAL "ON")
    message(FATAL_ERROR "XFER_ENABLE_MPI=ON but no MPI was found (Debian: apt-get install libopenmpi-dev openmpi-bin)")
  endif()
endif()

# Vulkan: the headers at build time (libvulkan-dev); the loader is opened at
# run time (dlopen), so a binary built here still starts where no loader is
# installed and reports the backend unavailable with the reason. The compute
# shader of route kernel-host is compiled to SPIR-V at build time by glslc
# (or glslangValidator); without either the backend is built without it and
# the route is skipped with that reason.
set(XFER_HAVE_VULKAN 0)
set(XFER_VULKAN_SPIRV 0)
if(NOT XFER_ENABLE_VULKAN STREQUAL "OFF")
  find_package(Vulkan QUIET OPTIONAL_COMPONENTS glslc glslangValidator)
  if(Vulkan_FOUND)
    set(XFER_HAVE_VULKAN 1)
    # A compiler carried from another distribution may not run here (its
    # libshaderc missing, a newer glibc): one that does not answer --version
    # counts as absent, so the build goes on without the shader.
    foreach(_xfer_spvc Vulkan_GLSLC_EXECUTABLE Vulkan_GLSLANG_VALIDATOR_EXECUTABLE)
      if(${_xfer_spvc})
        execute_process(COMMAND ${${_xfer_spvc}} --version RESULT_VARIABLE _xfer_spvc_rc OUTPUT_QUIET ERROR_QUIET)
        if(NOT _xfer_spvc_rc EQUAL 0)
          message(STATUS "xferbench Vulkan: ${${_xfer_spvc}} does not run here (exit ${_xfer_spvc_rc}); not using it")
          unset(${_xfer_spvc})
          unset(${_xfer_spvc} CACHE)
        endif()
      endif()
    endforeach()
    if(Vulkan_GLSLC_EXECUTABLE OR Vulkan_GLSLANG_VALIDATOR_EXECUTABLE)
      set(XFER_VULKAN_SPIRV 1)
    else()
      message(STATUS "xferbench Vulkan: no glslc or glslangValidator: route kernel-host will be skipped")
    endif()
  elseif(XFER_ENABLE_VULKAN STREQUAL "ON")
    message(FATAL_ERROR "XFER_ENABLE_VULKAN=ON but no Vulkan headers were found (install libvulkan-dev)")
  endif()
endif()
message(STATUS "xferbench backends: host CUDA=${XFER_HAVE_CUDA} OpenCL=${XFER_HAVE_OPENCL} Vulkan=${XFER_HAVE_VULKAN} XRT=${XFER_HAVE_XRT}; fleet over MPI=${XFER_HAVE_MPI}")

# Adds the subdirectory of each named API (cuda, opencl, xrt, vulkan) that
# this build has (XFER_HAVE_<API>): the folders that hold one API's part of a
# layer (src/mem, tests) are named after it.
function(xfer_add_api_subdirectories)
  foreach(api IN LISTS ARGN)
    string(TOUPPER "${api}" have)
    if(XFER_HAVE_${have})
      add_subdirectory(${api})
    endif()
  endforeach()
endfunction()
