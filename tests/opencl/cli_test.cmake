# End-to-end checks of `xferbench` with OpenCL: picking platforms by name, a
# name that matches nothing, and a machine with no OpenCL platform at all.
# Run as: cmake -DXFERBENCH=... -DWORK=... -DNO_ICD=<empty dir> -P cli_test.cmake
include(${CMAKE_CURRENT_LIST_DIR}/../cli/cli_expect.cmake)

# A platform name that matches nothing: usage error listing what exists.
run_xferbench(rc text ${XFERBENCH} sweep -b opencl:nope --sizes 4K -q)
expect("unknown platform" "${rc}" "${text}" 2 "unknown backend 'opencl:nope'" "opencl:pocl")

# `list` shows the platform with the details that matter.
run_xferbench(rc text ${XFERBENCH} list)
expect("list" "${rc}" "${text}" 0 "opencl:pocl" "profiling_timer_resolution_ns" "host_unified_memory"
       "max allocation" "alloc-host-ptr" "is a CPU")

# A real point by exact name, with the device type in the result file.
run_xferbench(rc text ${XFERBENCH} sweep -b opencl:pocl -r copy-async -d h2d,bidir -m alloc-host-ptr --sizes 4K
              --max-time 0.02 -q --json ${WORK}/pocl.json)
expect("sweep opencl:pocl" "${rc}" "${text}" 0 "opencl:pocl" "points: 2 ok (" ", 0 skipped, 0 failed")
file(READ ${WORK}/pocl.json json)
string(JSON type GET "${json}" results 0 device_type)
string(JSON timer GET "${json}" results 0 timer)
string(JSON q2e GET "${json}" results 0 parts queued_to_end median_s)
string(JSON h2d GET "${json}" results 1 parts h2d median_s)
if(NOT type STREQUAL "cpu" OR NOT timer STREQUAL "event")
  message(FATAL_ERROR "result file: device_type '${type}', timer '${timer}'; expected cpu, event")
endif()
message(STATUS "ok: result file names the device type (${type}), the timer (${timer}) and the parts")

# The family name selects every platform.
run_xferbench(rc text ${XFERBENCH} sweep -b opencl -r kernel-device -d d2d --sizes 64K --max-time 0.02 -q)
expect("sweep opencl" "${rc}" "${text}" 0 "opencl:pocl" "kernel-device")

# The vadd application: every strategy runs verified and the seed's table is
# printed; the result file has each phase that applies; a device the platform
# lacks is a usage error.
run_xferbench(rc text ${XFERBENCH} app vadd -b opencl:pocl --size 4K --repeat 1 --json ${WORK}/vadd.json)
expect("app vadd opencl:pocl" "${rc}" "${text}" 0 "| Phase | pageable | Δ pageable | pageable-unaligned |"
       "alloc-host-ptr" "svm-fine" "Kernel runtime")
file(READ ${WORK}/vadd.json json)
string(JSON n LENGTH "${json}" results)
math(EXPR last "${n} - 1")
foreach(i RANGE ${last})
  string(JSON strategy GET "${json}" results ${i} strategy)
  string(JSON status GET "${json}" results ${i} status)
  string(JSON verified GET "${json}" results ${i} verified)
  string(JSON kernel GET "${json}" results ${i} phases kernel median_s)
  if(NOT status STREQUAL "ok" OR NOT verified)
    message(FATAL_ERROR "vadd result file: ${strategy} is ${status}, verified ${verified}")
  endif()
endforeach()
message(STATUS "ok: vadd result file has ${n} strategies, each ok, verified and with its kernel timed")
run_xferbench(rc text ${XFERBENCH} app vadd -b opencl:pocl --device 9 --size 4K)
expect("app vadd on a missing device" "${rc}" "${text}" 2 "opencl:pocl has no device 9")

# No platform installed: `list` says why, selecting it is a runtime failure with the reason.
set(ENV{OCL_ICD_VENDORS} ${NO_ICD})
set(ENV{OCL_ICD_FILENAMES} "")
run_xferbench(rc text ${XFERBENCH} list)
expect("list without platforms" "${rc}" "${text}" 0 "opencl: unavailable: no OpenCL platform is installed")
run_xferbench(rc text ${XFERBENCH} sweep -b opencl --sizes 4K -q)
expect("sweep without platforms" "${rc}" "${text}" 1 "backend opencl is unavailable")
