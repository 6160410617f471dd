# End-to-end checks of `xferbench` with Vulkan on lavapipe: the backend by
# name in list and sweep, its result file, and a machine with no driver.
# Run as: cmake -DXFERBENCH=... -DWORK=... -P cli_test.cmake
include(${CMAKE_CURRENT_LIST_DIR}/../cli/cli_expect.cmake)

run_xferbench(rc text ${XFERBENCH} list)
string(FIND "${text}" "vulkan:llvmpipe" at)
if(at EQUAL -1)
  message(STATUS "no vulkan:llvmpipe here (lavapipe is mesa-vulkan-drivers): skipped")
  return()
endif()
expect("list" "${rc}" "${text}" 0 "vulkan:llvmpipe" "memory_types" "host-coherent" "device-local-host-visible"
       "imported")

# copy h2d and bidir on a kind of the device's own, and pageable staged by the application.
run_xferbench(rc text ${XFERBENCH} sweep -b vulkan:llvmpipe -r copy -d h2d,bidir -m host-coherent,pageable --sizes 64K
              --max-time 0.02 -q --json ${WORK}/lavapipe.json)
expect("sweep vulkan:llvmpipe" "${rc}" "${text}" 0 "points: 4 ok (" ", 0 skipped, 0 failed")
file(READ ${WORK}/lavapipe.json json)
string(JSON timer GET "${json}" results 0 timer)
string(JSON verified GET "${json}" results 0 verified)
string(JSON h2d GET "${json}" results 2 parts h2d median_s)
if(NOT timer STREQUAL "event" OR NOT verified)
  message(FATAL_ERROR "result file: timer '${timer}', verified '${verified}'; expected event, true")
endif()
message(STATUS "ok: result file names the timer (${timer}) and bidir's parts")

# The round trip of a store into the BAR: given no sizes, an 8-byte and a 64-byte store, checked.
run_xferbench(rc text ${XFERBENCH} sweep -b vulkan:llvmpipe -r cpu-store-latency -m device-local-host-visible
              --max-time 0.02 -q --json ${WORK}/latency.json)
expect("sweep cpu-store-latency" "${rc}" "${text}" 0 "points: 2 ok (" ", 0 skipped, 0 failed")
file(READ ${WORK}/latency.json json)
string(JSON b0 GET "${json}" results 0 bytes)
string(JSON b1 GET "${json}" results 1 bytes)
string(JSON verified GET "${json}" results 0 verified)
if(NOT b0 EQUAL 8 OR NOT b1 EQUAL 64 OR NOT verified)
  message(FATAL_ERROR "cpu-store-latency without --sizes: sizes ${b0}, ${b1}, verified '${verified}'; expected 8, 64, true")
endif()
message(STATUS "ok: cpu-store-latency measures 8 and 64 B by default, verified")

# A name that matches nothing: usage error.
run_xferbench(rc text ${XFERBENCH} sweep -b vulkan:nope --sizes 4K -q)
expect("unknown device" "${rc}" "${text}" 2 "unknown backend 'vulkan:nope'" "vulkan:llvmpipe")

# No driver at all: list says why, selecting it is a runtime failure with the reason.
set(ENV{VK_DRIVER_FILES} ${WORK}/no-such-icd.json)
set(ENV{VK_ICD_FILENAMES} ${WORK}/no-such-icd.json)
run_xferbench(rc text ${XFERBENCH} list)
expect("list without a driver" "${rc}" "${text}" 0 "vulkan: unavailable: ")
run_xferbench(rc text ${XFERBENCH} sweep -b vulkan --sizes 4K -q)
expect("sweep without a driver" "${rc}" "${text}" 1 "backend vulkan is unavailable")
