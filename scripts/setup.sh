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
# an earlier or this run made one, else $PYTHON); on stderr one line per step
# that installed something; the package managers' own output goes to
# build/setup.log (XFER_SETUP_LOG), and to stderr too where a step fails.
# PYTHON: the interpreter to check and to make .venv from (default python3).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
# shellcheck source-path=SCRIPTDIR source=lib/apt.sh
. "$here/lib/apt.sh"  # apt_candidate: the one "is this package reachable" check

# Quiet on the console, everything in the log: apt-get's, dpkg's and pip's own
# output goes to $setup_log, and the console gets one line per step (what it
# installed, how long it took, where the log is), or the step's whole output
# when it fails. fd 3 is the console's stderr, so that log() still reaches it
# from inside a step whose output is redirected (apt_get's lock messages).
exec 3>&2
log() { printf 'setup: %s\n' "$*" >&3; }
setup_log=${XFER_SETUP_LOG:-$root/build/setup.log}
mkdir -p "$(dirname "$setup_log")"
shown_log=${setup_log#"$root/"}
step() {  # step WHAT CMD...: runs CMD with its output appended to the log, one line on the console
  local what=$1 t0=$SECONDS out rc=0
  shift
  out=$(mktemp)
  "$@" >"$out" 2>&1 </dev/null || rc=$?
  { printf '==== %s %s: %s (exit %s, %s s)\n' "$(date -u +%FT%TZ)" "$what" "$*" "$rc" "$((SECONDS - t0))"
    cat "$out"; } >>"$setup_log"
  if [ "$rc" -eq 0 ]; then
    log "$what: $((SECONDS - t0)) s (log: $shown_log)"
  else
    log "$what: FAILED (exit $rc, $((SECONDS - t0)) s); its output, also in $shown_log:"
    cat "$out" >&3
  fi
  rm -f "$out"
  return "$rc"
}

have_header() {  # have_header <header>: compiles an #include of it
  echo "#include <$1>" | ${CXX:-c++} -std=c++20 -fsyntax-only -x c++ - >/dev/null 2>&1
}

version_ge() {  # version_ge A B: A >= B (dotted versions)
  [ "$(printf '%s\n%s\n' "$2" "$1" | sort -V | head -n1)" = "$2" ]
}

can_apt() { [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; }
export DEBIAN_FRONTEND=noninteractive

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
    if apt-get -o DPkg::Lock::Timeout="$apt_lock_timeout" "$@" 2>"$err"; then
      cat "$err"
      rm -f "$err"
      return 0
    fi
    if ! grep -q 'Could not get lock' "$err" || [ "$SECONDS" -ge "$deadline" ]; then
      cat "$err"
      rm -f "$err"
      return 1
    fi
    holder=$(grep -o 'held by process.*' "$err" | head -n1 || true)
    log "apt/dpkg lock ${holder:-busy}: apt-get $1 again in 5 s (giving up $((deadline - SECONDS)) s from now)"
    sleep 5
  done
}

# The package lists are refreshed at most once a run, and only when a package
# setup wants has no candidate (a fresh container has no lists at all).
apt_lists_updated=0
apt_reachable() {  # apt_reachable PKG...: every PKG has an install candidate (after one update if needed)
  local p
  for p; do
    apt_candidate "$p" && continue
    [ "$apt_lists_updated" = 1 ] && return 1
    apt_lists_updated=1
    step "apt-get update (package lists)" apt_get update || return 1
    apt_candidate "$p" || return 1
  done
}

# optional_apt WHAT PKG... [-- APT-GET OPTIONS]: installs PKGs for WHAT where
# they are reachable. Never a failure: without them WHAT is left out and the
# build and the test summary say so.
optional_apt() {
  local what=$1 pkgs=() opts=()
  shift
  while [ $# -gt 0 ] && [ "$1" != -- ]; do pkgs+=("$1"); shift; done
  [ $# -gt 0 ] && shift && opts=("$@")
  if ! can_apt; then
    log "missing for $what: ${pkgs[*]} (optional: install them, or run this as root on Debian/Ubuntu)"
  elif ! apt_reachable "${pkgs[@]}"; then
    log "no package ${pkgs[*]} reachable (no network?): $what is left out"
  else
    step "installed ${pkgs[*]} for $what" apt_get install -y -qq "${opts[@]}" "${pkgs[@]}" ||
      log "could not install ${pkgs[*]}: $what is left out"
  fi
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
  if can_apt; then
    apt_lists_updated=1
    step "apt-get update (package lists)" apt_get update || exit 1
    step "installed ${missing_pkgs[*]}" apt_get install -y -qq "${missing_pkgs[@]}" || exit 1
  else
    log "missing: ${missing_pkgs[*]} (install them with your package manager, or run this as root on Debian/Ubuntu)"
    exit 1
  fi
fi

# ---- Optional components: each installed where its package is reachable ----
# Without one, what needs it is left out and says why: the build leaves the
# backend out, its tests skip, and scripts/test.sh's component table names
# it. CI (.ci/run) requires them all. A machine without network (the GPU
# machine) keeps going. XFER_NO_<NAME>=1 leaves one out on purpose.

# XRT, for backend xrt (Xilinx's runtime; CI runs it through its no-op shim).
have_xrt() { [ -f /usr/include/xrt/xrt/xrt_bo.h ] || [ -f /opt/xilinx/xrt/include/xrt/xrt_bo.h ]; }
[ -n "${XFER_NO_XRT:-}" ] || have_xrt || optional_apt "backend xrt" libxrt-dev

# Open MPI, for fleet mode over MPI (xferbench fleet; tests/cli/test_fleet.py's mpirun cases).
[ -n "${XFER_NO_MPI:-}" ] || { command -v mpicc >/dev/null && command -v mpirun >/dev/null; } ||
  optional_apt "fleet mode over MPI" libopenmpi-dev openmpi-bin

# Vulkan: headers and loader, a SPIR-V compiler, and lavapipe.
# The Vulkan backend builds where the headers are (libvulkan-dev, which brings
# the loader libvulkan1), compiles its compute shader with glslc, and runs its
# tests on lavapipe (mesa-vulkan-drivers: Vulkan on the CPU) where no other
# driver is installed. A driver named through VK_DRIVER_FILES /
# VK_ICD_FILENAMES (the GPU machine's NVIDIA ICD) counts as one; Khronos'
# validation layer checks the backend's use of the API in its tests (test
# vulkan.validation). Mesa's recommends (X and Wayland pieces) are not needed.
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
[ -e /usr/share/vulkan/explicit_layer.d/VkLayer_khronos_validation.json ] || vk_missing+=(vulkan-validationlayers)
[ -n "${XFER_NO_VULKAN:-}" ] || [ ${#vk_missing[@]} -eq 0 ] ||
  optional_apt "the Vulkan backend on lavapipe" "${vk_missing[@]}" -- --no-install-recommends

# Chromium, for the report's browser test (python/tests/test_browser.py). Debian's package is "chromium".
have_chromium() { command -v chromium >/dev/null || command -v chromium-browser >/dev/null ||
  command -v google-chrome >/dev/null || [ -n "${XFER_CHROMIUM:-}" ]; }
[ -n "${XFER_NO_CHROMIUM:-}" ] || have_chromium || optional_apt "the report's browser test" chromium

# ---- Python: which interpreter, and .venv when something must be installed ----
venv=$root/.venv
python=${PYTHON:-python3}
command -v "$python" >/dev/null || { log "no python: '$python' is not a command"; exit 1; }
# A .venv from an earlier run sees the system's packages too
# (--system-site-packages) and holds what that run installed: prefer it, so
# a second run finds everything and installs nothing.
if "$venv/bin/python" -c '' 2>/dev/null; then python=$venv/bin/python; fi

shown_venv=${venv#"$root/"}
make_venv() {  # creates .venv from $python (a broken one is replaced) and switches $python to it
  [ "$python" = "$venv/bin/python" ] && return 0
  local how=("$python" -m venv --clear --system-site-packages "$venv")
  # Debian and Ubuntu ship venv's ensurepip in a package of its own: the
  # first try's failure is expected there, so it goes to the log only.
  if ! { echo "==== $(date -u +%FT%TZ) ${how[*]}"; "${how[@]}"; } >>"$setup_log" 2>&1; then
    if can_apt && step "installed python3-venv (Debian's python needs it for a venv with pip)" apt_get install -y -qq python3-venv; then
      step "created $shown_venv" "${how[@]}" || true
    fi
  else
    log "created $shown_venv (for the Python packages missing here)"
  fi
  if ! "$venv/bin/python" -m pip --version >/dev/null 2>&1; then
    rm -rf "$venv"  # a failed attempt leaves a venv without pip: do not let the next run prefer it
    log "cannot create $venv with $python (install python3-venv, or run this as root on Debian/Ubuntu)"
    exit 1
  fi
  python=$venv/bin/python
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

# ---- Python packages, from PyPI into .venv where missing ----
# pip_missing WHAT PKG...: installs into .venv (made on first need) those PKGs
# whose module does not import; PKG is "module=requirement" or a name that is both.
# Returns pip's status; nothing is run where every module imports.
pip_missing() {
  local what=$1 spec want=()
  shift
  for spec; do
    "$python" -c "import ${spec%%=*}" 2>/dev/null || want+=("${spec#*=}")
  done
  [ ${#want[@]} -gt 0 ] || return 0
  make_venv
  step "installed ${want[*]} into $shown_venv ($what)" "$python" -m pip install --progress-bar off "${want[@]}"
}

# Required: a current CMake where none is, the report tool and its test runner.
if ! XFER_CMAKE=$(pick_cmake); then
  make_venv
  step "installed cmake>=$need_cmake into $shown_venv (this machine's is older)" \
    "$python" -m pip install --progress-bar off "cmake>=$need_cmake" || exit 1
  XFER_CMAKE=$(pick_cmake) || { log "no cmake >= $need_cmake found after installing"; exit 1; }
fi
pip_missing "the report tool and its tests" matplotlib pytest || { log "pip install into $venv failed (no network?)"; exit 1; }

# Optional, so never a failure (the GPU machine has no network): where they
# are missing, what needs them is skipped, each test saying why, and the
# component table of scripts/test.sh shows it.
# nanobind builds xferbench._native (cmake/python.cmake finds it through this
# python), NumPy is what its tests exchange arrays with, scikit-build-core
# serves `pip install --no-build-isolation ./python` (an isolated pip install
# fetches it itself).
pip_missing "the native module" "nanobind=nanobind>=2.2" numpy "scikit_build_core=scikit-build-core>=0.10" ||
  log "could not install the native module's build (no network?): it or its tests will be skipped"
# pandas and scipy: xferbench.load's DataFrame and the rank test's cross-check against scipy.stats;
# pytest-xdist: scripts/test.sh's pytest on every core where there is no GPU.
pip_missing "the Python tests' extras" pandas scipy "xdist=pytest-xdist" ||
  log "could not install pandas, scipy, pytest-xdist (no network?): the tests that compare against them will skip"

printf '%s\n%s\n' "$XFER_CMAKE" "$(command -v "$python")"
