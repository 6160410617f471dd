# What the backends' cmake -P end-to-end scripts (tests/opencl/cli_test.cmake,
# tests/vulkan/cli_test.cmake) share: run xferbench, then check its exit code
# and that its output says what it must. Included with
#   include(${CMAKE_CURRENT_LIST_DIR}/../cli/cli_expect.cmake)
# It also makes ${WORK}, the folder the script writes its result files into.
file(MAKE_DIRECTORY ${WORK})

# run_xferbench(RC TEXT command...): RC the exit code (or the error text
# when it could not run or timed out), TEXT stdout and stderr together.
function(run_xferbench out_rc out_text)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE o ERROR_VARIABLE e TIMEOUT 100)
  set(${out_rc} "${rc}" PARENT_SCOPE)
  set(${out_text} "${o}${e}" PARENT_SCOPE)
endfunction()

# expect(WHAT RC TEXT WANT_RC needles...): fails the script, naming WHAT and
# showing the output, unless RC is WANT_RC and TEXT holds every needle.
function(expect what rc text want_rc)
  if(NOT "${rc}" STREQUAL "${want_rc}")
    message(FATAL_ERROR "${what}: exit ${rc}, expected ${want_rc}\n${text}")
  endif()
  foreach(needle IN LISTS ARGN)
    string(FIND "${text}" "${needle}" at)
    if(at EQUAL -1)
      message(FATAL_ERROR "${what}: output lacks '${needle}'\n${text}")
    endif()
  endforeach()
  message(STATUS "ok: ${what}")
endfunction()
