#!/usr/bin/env bash
# Installs what xferbench needs to build, test and report, and only what is
# missing: Debian packages through apt-get as root (Debian/Ubuntu); a current
# CMake and the Python packages through pip, into a virtual environment at
# .venv in the repository, never into the system Python (Debian 12 and Ubuntu
# 24.04 refuse that: PEP 668). On a machine with everything present (the GPU
# machine, which has no network) it installs nothing and creates no .venv.
#
# Run by build.sh (and so by test.sh and run.sh). On success it prints two
# lines on stdout, the cmake to use and then the python to use (.venv's where
# an earlier or this run made one, else $PYTHON); all else goes to stderr.
# PYTHON: the interpreter to check and to make .venv from (default python3).
set -euo pipefail

log() { printf 'setup: %s\n' "$*" >&2; }

have_header() {  # have_header <header>: compiles an #include of it
  echo "#include <$1>" | ${CXX:-c++} -std=c++20 -fsyntax-only -x c++ - >/dev/null 2>&1
}

version_ge() {  # version_ge A B: A >= B (dotted versions)
  [ "$(printf '%s\n%s\n' "$2" "$1" | sort -V | head -n1)" = "$2" ]
}

# Another apt or dpkg (unattended-upgrades, cloud-init on first boot, a
# second setup) may hold the locks: wait for them instead of failing at once.
# DPkg::Lock::Timeout makes install wait for the dpkg lock; apt 2.6 (Debian
# 12) does not apply it to update's lists lock, so a lock failure is also
# retried until the same deadline.
apt_lock_timeout=${XFER_APT_LOCK_TIMEOUT:-600}
apt_get() {  # apt_get ARGS...: apt-get, waiting up to $apt_lock_timeout s for its locks
  local deadline=$((SECONDS + apt_lock_timeout)) err holder
  err=$(mktemp)
  while :; do
    if apt-get -o DPkg::Lock::Timeout="$apt_lock_timeout" "$@" >&2 2>"$err"; then
      rm -f "$err"
      return 0
    fi
    if ! grep -q 'Could not get lock' "$err" || [ "$SECONDS" -ge "$deadline" ]; then
      cat "$err" >&2
      rm -f "$err"
      return 1
    fi
    holder=$(grep -o 'held by process.*' "$err" | head -n1 || true)
    log "apt/dpkg lock ${holder:-busy}: apt-get $1 again in 5 s (giving up $((deadline - SECONDS)) s from now)"
    sleep 5
  done
}

# ---- C++ toolchain and libraries (Debian package names) ----
missing_pkgs=()
command -v c++ >/dev/null || missing_pkgs+=(g++)
command -v ninja >/dev/null || command -v make >/dev/null || missing_pkgs+=(ninja-build)
command -v python3 >/dev/null || missing_pkgs+=(python3 python3-venv)
have_header fmt/format.h || missing_pkgs+=(libfmt-dev)
have_header nlohmann/json.hpp || missing_pkgs+=(nlohmann-json3-dev)
have_header CLI/CLI.hpp || missing_pkgs+=(libcli11-dev)
have_header gtest/gtest.h || missing_pkgs+=(libgtest-dev)
# OpenCL: headers, the ICD loader, and PoCL so OpenCL tests run on the CPU.
have_header CL/cl.h || missing_pkgs+=(opencl-headers)
# ldconfig lives in /sbin, which a normal user's PATH on Debian lacks. No
# grep -q: it would stop reading early, and with pipefail ldconfig's SIGPIPE
# then failed the check at random even where the library is installed.
"$(command -v ldconfig || echo /sbin/ldconfig)" -p 2>/dev/null | grep 'libOpenCL.so ' >/dev/null ||
  missing_pkgs+=(ocl-icd-opencl-dev)
# Python's headers, for the native module (python/native, built with nanobind).
"${PYTHON:-python3}" -c 'import os, sysconfig, sys; sys.exit(not os.path.exists(os.path.join(sysconfig.get_paths()["include"], "Python.h")))' 2>/dev/null ||
  missing_pkgs+=(python3-dev)
if ! ls /etc/OpenCL/vendors/*.icd >/dev/null 2>&1 && [ -z "${OCL_ICD_FILENAMES:-}" ]; then
  missing_pkgs+=(pocl-opencl-icd)
fi

if [ ${#missing_pkgs[@]} -gt 0 ]; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    log "installing ${missing_pkgs[*]} (waiting up to ${apt_lock_timeout} s for the apt/dpkg lock if another process holds it)"
    export DEBIAN_FRONTEND=noninteractive
    apt_get update -qq
    apt_get install -y -qq "${missing_pkgs[@]}"
  else
    log "missing: ${missing_pkgs[*]} (install them with your package manager, or run this as root on Debian/Ubuntu)"
    exit 1
  fi
fi

# ---- XRT, for backend xrt (Xilinx's runtime; CI runs it through its no-op shim) ----
# Optional like Chromium below: where Debian's libxrt-dev cannot be installed
# (no network, another distribution) the backend is not built and says so.
# XFER_NO_XRT=1 leaves it out.
have_xrt() { [ -f /usr/include/xrt/xrt/xrt_bo.h ] || [ -f /opt/xilinx/xrt/include/xrt/xrt_bo.h ]; }
if [ -z "${XFER_NO_XRT:-}" ] && ! have_xrt && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
  xrt_known() { apt-cache policy libxrt-dev 2>/dev/null | grep -q 'Candidate: [0-9]'; }
  export DEBIAN_FRONTEND=noninteractive
  xrt_known || apt_get update -qq || true
  if xrt_known; then
    log "installing libxrt-dev for backend xrt (waiting up to ${apt_lock_timeout} s for the apt/dpkg lock)"
    apt_get install -y -qq libxrt-dev || log "could not install libxrt-dev: backend xrt will not be built"
  else
    log "no libxrt-dev package to install: backend xrt will not be built"
  fi
fi

# ---- Open MPI, for fleet mode over MPI (xferbench fleet; tests/cli/test_fleet.py) ----
# Optional: without it fleet mode runs one rank, or one file per rank, and its
# mpirun tests skip. A machine without network (the GPU machine) keeps going;
# XFER_NO_MPI=1 leaves it out.
if [ -z "${XFER_NO_MPI:-}" ] && ! { command -v mpicc >/dev/null && command -v mpirun >/dev/null; }; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    export DEBIAN_FRONTEND=noninteractive
    mpi_known() { apt-cache policy libopenmpi-dev 2>/dev/null | grep -q 'Candidate: [0-9]'; }
    mpi_known || apt_get update -qq || true
    if mpi_known; then
      log "installing libopenmpi-dev openmpi-bin for fleet mode over MPI"
      apt_get install -y -qq libopenmpi-dev openmpi-bin || log "could not install Open MPI: fleet mode builds without MPI"
    else
      log "no Open MPI package reachable: fleet mode builds without MPI (its mpirun tests skip)"
    fi
  else
    log "no Open MPI (libopenmpi-dev, openmpi-bin): fleet mode builds without MPI and its mpirun tests skip"
  fi
fi

# ---- Vulkan: headers, a SPIR-V compiler and lavapipe (optional) ----
# The Vulkan backend builds where the headers are (libvulkan-dev, which brings
# the loader libvulkan1), compiles its compute shader with glslc, and runs its
# tests on lavapipe (mesa-vulkan-drivers: Vulkan on the CPU) where no other
# driver is installed. Optional, so never a failure: without them the backend
# (or its kernel-host route) is left out and says why. A driver named through
# VK_DRIVER_FILES / VK_ICD_FILENAMES (the GPU machine's NVIDIA ICD) counts as one;
# Khronos' validation layer checks the backend's use of the API in its tests.
vk_missing=()
have_header vulkan/vulkan_core.h || vk_missing+=(libvulkan-dev)
command -v glslc >/dev/null || command -v glslangValidator >/dev/null || vk_missing+=(glslc)
have_vk_driver() {  # an ICD file where the loader looks, or one named in the environment
  [ -n "${VK_DRIVER_FILES:-}${VK_ICD_FILENAMES:-}" ] && return 0
  local f
  for f in /usr/share/vulkan/icd.d/*.json /etc/vulkan/icd.d/*.json /usr/local/share/vulkan/icd.d/*.json; do
    [ -e "$f" ] && return 0
  done
  return 1
}
have_vk_driver || vk_missing+=(mesa-vulkan-drivers)
# Khronos' validation layer: test vulkan.validation runs the Vulkan tests under it.
ls /usr/share/vulkan/explicit_layer.d/VkLayer_khronos_validation.json >/dev/null 2>&1 ||
  vk_missing+=(vulkan-validationlayers)
if [ ${#vk_missing[@]} -gt 0 ] && [ -z "${XFER_NO_VULKAN:-}" ]; then
  # grep reads all of it (no -q): apt-cache cut off by SIGPIPE would fail the pipe under pipefail.
  vk_known() { apt-cache policy "$1" 2>/dev/null | grep 'Candidate: [0-9]' >/dev/null; }
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    export DEBIAN_FRONTEND=noninteractive
    vk_known "${vk_missing[0]}" || apt_get update -qq || true
    if vk_known "${vk_missing[0]}"; then
      log "installing ${vk_missing[*]} for the Vulkan backend (waiting up to ${apt_lock_timeout} s for the apt/dpkg lock)"
      apt_get install -y -qq --no-install-recommends "${vk_missing[@]}" ||
        log "could not install ${vk_missing[*]}: the Vulkan backend may be left out"
    else
      log "no package lists for ${vk_missing[*]} (no network?): the Vulkan backend may be left out"
    fi
  else
    log "missing for the Vulkan backend: ${vk_missing[*]} (optional; it is left out without them)"
  fi
fi

# ---- Chromium, for the report's browser test (python/tests/test_browser.py) ----
# Optional: the test skips where no Chromium is found, so a machine without it
# (or without network, like the GPU machine) still builds and tests. Debian's
# package is "chromium"; XFER_NO_CHROMIUM=1 leaves it out.
have_chromium() { command -v chromium >/dev/null || command -v chromium-browser >/dev/null ||
  command -v google-chrome >/dev/null || [ -n "${XFER_CHROMIUM:-}" ]; }
if [ -z "${XFER_NO_CHROMIUM:-}" ] && ! have_chromium; then
  chromium_known() { apt-cache policy chromium 2>/dev/null | grep -q 'Candidate: [0-9]'; }
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    export DEBIAN_FRONTEND=noninteractive
    # A fresh container has no package lists yet; without network the update fails and the test skips.
    chromium_known || apt_get update -qq || true
    if chromium_known; then
      log "installing chromium for the report's browser test (waiting up to ${apt_lock_timeout} s for the apt/dpkg lock)"
      apt_get install -y -qq chromium || log "could not install chromium: the browser test will skip"
    else
      log "no chromium package to install: the report's browser test will skip"
    fi
  else
    log "no chromium (Debian's package): the report's browser test will skip"
  fi
fi

# ---- Python: which interpreter, and .venv when something must be installed ----
venv=$(cd "$(dirname "$0")/.." && pwd)/.venv
python=${PYTHON:-python3}
command -v "$python" >/dev/null || { log "no python: '$python' is not a command"; exit 1; }
# A .venv from an earlier run sees the system's packages too
# (--system-site-packages) and holds what that run installed: prefer it, so
# a second run finds everything and installs nothing.
if "$venv/bin/python" -c '' 2>/dev/null; then python=$venv/bin/python; fi

make_venv() {  # creates .venv from $python (a broken one is replaced)
  log "creating a virtual environment at $venv for the missing Python packages"
  "$python" -m venv --clear --system-site-packages "$venv" >&2 && return 0
  # Debian and Ubuntu ship venv's ensurepip in a package of its own.
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    log "installing python3-venv (Debian's python needs it for a venv with pip)"
    export DEBIAN_FRONTEND=noninteractive
    apt_get update -qq
    apt_get install -y -qq python3-venv
    "$python" -m venv --clear --system-site-packages "$venv" >&2 && return 0
  fi
  rm -rf "$venv"  # a failed attempt leaves a venv without pip: do not let the next run prefer it
  log "cannot create $venv with $python (install python3-venv, or run this as root on Debian/Ubuntu)"
  exit 1
}

# ---- CMake: CUDA 13's headers need a newer CMake than Debian 12's 3.25 ----
need_cmake=3.24
command -v nvcc >/dev/null && need_cmake=3.31
pick_cmake() {
  for c in "$(command -v cmake 2>/dev/null)" "$("$python" -c 'import cmake,os;print(os.path.join(cmake.CMAKE_BIN_DIR,"cmake"))' 2>/dev/null)"; do
    [ -n "$c" ] && [ -x "$c" ] || continue
    v=$("$c" --version | awk 'NR == 1 {print $3}')  # awk reads it all: no SIGPIPE under pipefail
    if version_ge "$v" "$need_cmake"; then echo "$c"; return 0; fi
  done
  return 1
}

# ---- Python packages: a current CMake where none is, the report tool and its tests ----
py_missing=()
XFER_CMAKE=$(pick_cmake) || py_missing+=("cmake>=$need_cmake")
"$python" -c 'import matplotlib' 2>/dev/null || py_missing+=(matplotlib)
"$python" -c 'import pytest' 2>/dev/null || py_missing+=(pytest)
if [ ${#py_missing[@]} -gt 0 ]; then
  if [ "$python" != "$venv/bin/python" ]; then
    make_venv
    python=$venv/bin/python
  fi
  log "installing ${py_missing[*]} from PyPI into $venv"
  "$python" -m pip install -q "${py_missing[@]}" >&2 || { log "pip install into $venv failed (no network?)"; exit 1; }
  [ -n "$XFER_CMAKE" ] || XFER_CMAKE=$(pick_cmake) || { log "no cmake >= $need_cmake found after installing"; exit 1; }
fi
# ---- The Python package's native module: optional, so never a failure ----
# nanobind builds xferbench._native (cmake/python.cmake finds it through this
# python), NumPy is what its tests exchange arrays with, scikit-build-core
# serves `pip install --no-build-isolation ./python` (an isolated pip install
# fetches it itself). Installed into .venv where missing; where that fails
# (the GPU machine has no network) the module or its tests are skipped, each
# saying why, and the rest of the build goes on.
py_optional=()
"$python" -c 'import nanobind' 2>/dev/null || py_optional+=("nanobind>=2.2")
"$python" -c 'import numpy' 2>/dev/null || py_optional+=(numpy)
"$python" -c 'import scikit_build_core' 2>/dev/null || py_optional+=("scikit-build-core>=0.10")
if [ ${#py_optional[@]} -gt 0 ]; then
  if [ "$python" != "$venv/bin/python" ]; then
    make_venv
    python=$venv/bin/python
  fi
  log "installing ${py_optional[*]} from PyPI into $venv (for the Python package's native module)"
  "$python" -m pip install -q "${py_optional[@]}" >&2 ||
    log "could not install ${py_optional[*]} (no network?): the native module or its tests will be skipped"
fi

printf '%s\n%s\n' "$XFER_CMAKE" "$(command -v "$python")"
