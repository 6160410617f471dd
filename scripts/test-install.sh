#!/usr/bin/env bash
# libxfer as an application sees it: installs build/ into a temporary prefix,
# builds examples/ as a project of its own against that copy
# (find_package(xfer)), and runs the examples that need no GPU. Proves that
# the installed headers, libraries and package config stand on their own:
# nothing of the source or build tree is on the example's include path.
# Usage: scripts/test-install.sh [cmake]   (after build/ is built; scripts/test.sh calls it)
# Prints one summary line; exits non-zero when a step fails (its log: build/test-install.log).
set -uo pipefail
cd "$(dirname "$0")/.."
cmake_bin=${1:-cmake}
ctest_bin="$(dirname "$cmake_bin")/ctest"
[ -x "$ctest_bin" ] || ctest_bin=ctest
log=$PWD/build/test-install.log
: >"$log"
work=$(mktemp -d "${TMPDIR:-/tmp}/xfer-install.XXXXXX")
trap 'rm -rf "$work"' EXIT

# The example is built with what built the tree: same compiler (and
# launcher), generator, and the packages the tree found (fmt, the CUDA
# toolkit, OpenCL), so a failure here is about the install, not the machine.
cache() { sed -n "s/^$1:[A-Z]*=//p" build/CMakeCache.txt | head -n1; }
args=(-DCMAKE_BUILD_TYPE=Release "-DCMAKE_PREFIX_PATH=$work/prefix")
args+=(-G "$(cache CMAKE_GENERATOR)")
for v in CMAKE_CXX_COMPILER CMAKE_CXX_COMPILER_LAUNCHER CMAKE_MAKE_PROGRAM fmt_DIR OpenCL_LIBRARY OpenCL_INCLUDE_DIR; do
  value=$(cache "$v")
  [ -n "$value" ] && args+=("-D$v=$value")
done
nvcc=$(cache CMAKE_CUDA_COMPILER)
[ -n "$nvcc" ] && args+=("-DCUDAToolkit_ROOT=$(dirname "$(dirname "$nvcc")")")

fail() {
  tail -n 25 "$log"
  echo "install + examples: FAILED while $1 (all of it: $log)"
  exit 1
}

"$cmake_bin" --install build --prefix "$work/prefix" >>"$log" 2>&1 || fail "installing build/"
# Each installed header compiles on its own with only the prefix's include/
# on the path: none needs a header of the source or build tree. As many
# compilers at once as there are cores: one after another, the headers took
# most of this stage's time.
cxx=$(cache CMAKE_CXX_COMPILER)
mapfile -t hdrs < <(find "$work/prefix/include" -name '*.hpp' | sort)
headers=${#hdrs[@]}
[ "$headers" -gt 0 ] || fail "looking for installed headers (none)"
check_header() {  # check_header INDEX PATH: leaves header-INDEX.ok beside its log when it compiles
  printf '#include <%s>\n' "${2#"$work/prefix/include/"}" >"$work/header-$1.cpp"
  "${cxx:-c++}" -std=c++20 -fsyntax-only -I"$work/prefix/include" "$work/header-$1.cpp" >"$work/header-$1.log" 2>&1 &&
    : >"$work/header-$1.ok"
}
for i in "${!hdrs[@]}"; do
  while [ "$(jobs -rp | wc -l)" -ge "$(nproc)" ]; do wait -n; done
  check_header "$i" "${hdrs[$i]}" &
done
wait
for i in "${!hdrs[@]}"; do
  cat "$work/header-$i.log" >>"$log"
  [ -f "$work/header-$i.ok" ] || fail "compiling the installed ${hdrs[$i]#"$work/prefix/"} on its own"
done
"$cmake_bin" -S examples -B "$work/examples" "${args[@]}" >>"$log" 2>&1 || fail "configuring examples/ against the install"
"$cmake_bin" --build "$work/examples" >>"$log" 2>&1 || fail "building examples/ against the install"
(cd "$work/examples" && "$ctest_bin" --output-on-failure --timeout 60) >>"$log" 2>&1 || fail "running the examples"

files=$(find "$work/prefix" -type f | wc -l)
components=$(sed -n 's/^-- xfer components: //p' "$log")
examples=$(cd "$work/examples" && "$ctest_bin" -N | sed -n 's/^Total Tests: //p')
echo "install + examples: ok ($files files installed, $headers headers compile alone${components:+; $components}; $examples example(s) built against the install and run)"
