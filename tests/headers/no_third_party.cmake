# Fails when a public header (include/xfer/...) includes a third-party or
# vendor header: what a library user sees must name only the standard
# library, the OS and xfer itself (JSON, formatting, CLI, CUDA and OpenCL
# types stay in src/). Run: cmake -DINCLUDE_DIR=<repo>/include -P no_third_party.cmake
if(NOT INCLUDE_DIR)
  message(FATAL_ERROR "INCLUDE_DIR is not set")
endif()
file(GLOB_RECURSE headers RELATIVE ${INCLUDE_DIR} ${INCLUDE_DIR}/*.hpp ${INCLUDE_DIR}/*.h)
if(NOT headers)
  message(FATAL_ERROR "no headers under ${INCLUDE_DIR}")
endif()
set(bad "")
foreach(h IN LISTS headers)
  file(STRINGS ${INCLUDE_DIR}/${h} lines REGEX "^[ \t]*#[ \t]*include")
  foreach(line IN LISTS lines)
    # <xfer/...>, the standard library (no dot, no slash: <vector>), and the
    # OS's C headers (<sys/types.h>, <unistd.h>) are allowed; anything else
    # (<nlohmann/json.hpp>, <fmt/format.h>, <CL/cl.h>, <cuda_runtime_api.h>,
    # a quoted include of a source-tree header) is not.
    if(line MATCHES "#[ \t]*include[ \t]*<xfer/" OR line MATCHES "#[ \t]*include[ \t]*<[a-z_]+>")
      continue()
    endif()
    if(line MATCHES "#[ \t]*include[ \t]*<(sys/[a-z_]+|unistd|pthread|sched|fcntl)\\.h>")
      continue()
    endif()
    string(STRIP "${line}" line)
    string(APPEND bad "  ${h}: ${line}\n")
  endforeach()
endforeach()
if(bad)
  message(FATAL_ERROR "public headers include what a library user may not have:\n${bad}")
endif()
list(LENGTH headers n)
message(STATUS "${n} public headers include only the standard library, the OS and xfer")
