# build/bin: the two commands the README and docs/usage.md name, runnable from
# the build tree without an install: xferbench (a link to the tool) and
# xferbench-report (the report tool under the python the build found, which is
# setup.sh's pick where scripts/build.sh configured it, with the source tree's
# python/ and the native module's folder on its path).
if(NOT Python_EXECUTABLE)
  find_package(Python 3.9 COMPONENTS Interpreter QUIET)
endif()
set(XFER_REPORT_PYTHON "${Python_EXECUTABLE}")
if(NOT XFER_REPORT_PYTHON)
  set(XFER_REPORT_PYTHON python3)
endif()
file(MAKE_DIRECTORY ${PROJECT_BINARY_DIR}/bin)
file(CREATE_LINK ../apps/xferbench/xferbench ${PROJECT_BINARY_DIR}/bin/xferbench SYMBOLIC)
configure_file(${CMAKE_CURRENT_LIST_DIR}/xferbench-report.in ${PROJECT_BINARY_DIR}/bin/xferbench-report
               FILE_PERMISSIONS OWNER_READ OWNER_WRITE OWNER_EXECUTE GROUP_READ GROUP_EXECUTE WORLD_READ WORLD_EXECUTE
               @ONLY)
