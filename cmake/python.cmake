# Decides XFER_HAVE_PYTHON (0/1) from XFER_ENABLE_PYTHON (AUTO|ON|OFF): the
# native module xferbench._native (python/native) needs the interpreter's
# development headers and nanobind. nanobind is found where pip put it
# (`python -m nanobind --cmake_dir`), so the same CMake build works from
# scikit-build-core (pip install ./python) and from a plain cmake build on a
# machine with no network (the GPU machine has nanobind and no pip access).
set(XFER_HAVE_PYTHON 0)
set(_xfer_python_why "(XFER_ENABLE_PYTHON=OFF)")
if(NOT XFER_ENABLE_PYTHON STREQUAL "OFF")
  find_package(Python 3.9 COMPONENTS Interpreter Development.Module)
  if(NOT Python_FOUND)
    set(_xfer_python_why "no Python interpreter with development headers (Python.h)")
  else()
    execute_process(COMMAND "${Python_EXECUTABLE}" -m nanobind --cmake_dir
                    OUTPUT_VARIABLE _xfer_nb_dir OUTPUT_STRIP_TRAILING_WHITESPACE
                    RESULT_VARIABLE _xfer_nb_rc ERROR_QUIET)
    if(_xfer_nb_rc EQUAL 0 AND EXISTS "${_xfer_nb_dir}")
      find_package(nanobind CONFIG PATHS "${_xfer_nb_dir}" NO_DEFAULT_PATH)
    endif()
    if(nanobind_FOUND)
      set(XFER_HAVE_PYTHON 1)
    else()
      set(_xfer_python_why "nanobind is not importable by ${Python_EXECUTABLE} (pip install nanobind)")
    endif()
  endif()
  if(NOT XFER_HAVE_PYTHON AND XFER_ENABLE_PYTHON STREQUAL "ON")
    message(FATAL_ERROR "XFER_ENABLE_PYTHON=ON but ${_xfer_python_why}")
  endif()
endif()
if(XFER_HAVE_PYTHON)
  message(STATUS "xferbench Python module: yes (${Python_EXECUTABLE}, nanobind ${nanobind_VERSION})")
else()
  message(STATUS "xferbench Python module: no: ${_xfer_python_why}")
endif()
