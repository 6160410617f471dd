#!/usr/bin/env bash
# The GPU gate: on the GPU machine, from a tree with no build, run the
# README's two commands as a new user would (scripts/test.sh: build and every
# test, the gpu-labelled ones included; scripts/run.sh: the default sweep of
# every backend found and its report), then write a short summary: tests
# passed/failed, points ok/skipped/failed/not converged, wall times.
#
#   scripts/gpu_check.sh          (writes under $OUT, or results/gate/ without it)
#
#   XFER_GATE_PHASE=tests|run     one half only (default: all). The whole gate fills more than
#                                 one 10-minute device command even on one GPU: run `tests`,
#                                 then `run` on the same warm machine (it reuses the build), and
#                                 commit both summaries. On several GPUs each half is longer
#                                 again (below). Why this shape: docs/decisions/0006-gpu-gate.md.
#   XFER_GATE_PHASE=tests-host|tests-gpu   the tests phase in two (scripts/test.sh's
#                                 XFER_GPU_TESTS=off, then =only on the same warm machine,
#                                 reusing the build): where the host tests and the GPU tests
#                                 together with the build outlast one command (several GPUs).
#   XFER_GATE_RUN_ARGS="-b host cuda-rt"   arguments for run.sh's sweep (default: none, the
#                                 README's command). On four GPUs the default sweep alone outlasts
#                                 a device command (a couple of minutes a GPU): split the run
#                                 phase by backend, every backend in one of the parts.
#   XFER_GATE_TEST_S / XFER_GATE_RUN_S / XFER_GATE_FLEET_S   each phase's bound in seconds
#
# Writes: test.log, run.log, sweep.json, fleet.log, fleet-1.json, gate-summary.txt
# (the summary is also the last thing printed). Exit 0 only when every test
# passed, the run ended with no failed point and fleet mode's one rank was healthy.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-$PWD/results/gate}
phase=${XFER_GATE_PHASE:-all}
case $phase in
  all | tests | tests-host | tests-gpu | run) ;;
  *) echo "gpu_check.sh: XFER_GATE_PHASE is '$phase': all, tests, tests-host, tests-gpu or run" >&2; exit 2 ;;
esac
mkdir -p "$OUT"
start=$SECONDS
# From a tree with no build: a warm machine keeps an earlier call's build/,
# whose configuration (tests off, say) scripts/build.sh would keep. The run
# and tests-gpu phases keep the build of the phase before them.
case $phase in run | tests-gpu) ;; *) rm -rf build ;; esac
# The Vulkan loader from .gl/ where the lead carried it, NVIDIA's ICD named
# (scripts/lib/vulkan_loader.sh says how); the Vulkan tests (ctest -L vulkan)
# then run on the GPU instead of lavapipe.
. scripts/lib/vulkan_loader.sh
if [ "$vulkan_loader_named_nvidia" = 1 ]; then
  export XFER_VULKAN_TEST_DEVICE=${XFER_VULKAN_TEST_DEVICE:-vulkan:nvidia}
fi
# The device machine's copy of the tree may have no .git, or one that does not follow
# later commits (a gate once read an older commit from it): give XFER_COMMIT as a literal sha.
commit=${XFER_COMMIT:-$(git rev-parse --short HEAD 2>/dev/null || echo "unknown")}

# Each step gets its own bound so that a hang still leaves a summary.
test_rc=0 test_s=0 run_rc=0 run_s=0 fleet_rc=0 fleet_s=0 fleet_line="not in this phase"
if [ "$phase" != run ]; then
  t0=$SECONDS
  # The sanitizer stage of test.sh is host code only, and CI runs it: left out
  # here, where the gate's ten minutes go to the GPU.
  gpu_tests=on
  case $phase in tests-host) gpu_tests=off ;; tests-gpu) gpu_tests=only ;; esac
  XFER_GPU_TESTS=$gpu_tests XFER_SANITIZERS=off timeout "${XFER_GATE_TEST_S:-450}" scripts/test.sh >"$OUT/test.log" 2>&1
  test_rc=$?
  # test.sh's console is a line a stage; its stages' own logs are what the summary counts.
  for f in build/ctest-host.log build/ctest-gpu.log build/pytest.log; do
    [ -f "$f" ] && { echo "== $f"; cat "$f"; } >>"$OUT/test.log"
  done
  test_s=$((SECONDS - t0))
fi

if [ "$phase" = all ] || [ "$phase" = run ]; then
  t0=$SECONDS
  # Unquoted on purpose: the arguments are words for the sweep.
  # shellcheck disable=SC2086
  timeout "${XFER_GATE_RUN_S:-250}" scripts/run.sh ${XFER_GATE_RUN_ARGS:-} >"$OUT/run.log" 2>&1
  run_rc=$?
  run_s=$((SECONDS - t0))
  # run.sh names its folder last; if it was cut short, its newest folder.
  result_dir=$(sed -n 's/^results: \([^ ]*\).*/\1/p' "$OUT/run.log" | tail -n1)  # run.sh: 'results: DIR (sweep and report: N s)'
  [ -n "$result_dir" ] || result_dir=$(ls -td results/2*/ 2>/dev/null | head -n1)
  [ -n "$result_dir" ] && [ -f "$result_dir/sweep.json" ] && cp "$result_dir/sweep.json" "$OUT/sweep.json"
  # Fleet mode with one rank on the default backend (issue 20: the gate runs
  # it): the health set, judged; its verdict line goes into the summary.
  t0=$SECONDS
  fleet_rc=127
  if [ -x build/apps/xferbench/xferbench ]; then
    timeout "${XFER_GATE_FLEET_S:-60}" build/apps/xferbench/xferbench fleet --size 256M --json "$OUT/fleet-1.json" \
      >"$OUT/fleet.log" 2>&1
    fleet_rc=$?
  fi
  fleet_s=$((SECONDS - t0))
  fleet_line=$(grep -m1 -E "^fleet (healthy|unhealthy)|^healthy|^xferbench:" "$OUT/fleet.log" 2>/dev/null || echo "no output")
fi

# The accelerators' configuration space, kept as test fixtures for the link
# ceilings (core/pcie_link.hpp): what a real device's capability list looks like.
for dev in /sys/bus/pci/devices/*; do
  case "$(cat "$dev/class" 2>/dev/null)" in 0x0302*|0x1200*|0x0300*) ;; *) continue ;; esac
  [ "$(cat "$dev/vendor" 2>/dev/null)" = 0x10de ] && cp "$dev/config" "$OUT/pci-config-$(basename "$dev" | tr : _).bin" 2>/dev/null
done

python3 scripts/gate_summary.py "$OUT" "$commit" "$test_rc" "$test_s" "$run_rc" "$run_s" "$((SECONDS - start))" "$phase" "${XFER_GATE_RUN_ARGS:-}" | tee "$OUT/gate-summary.txt"
echo "fleet (xferbench fleet, one rank, exit $fleet_rc, $fleet_s s): $fleet_line" | tee -a "$OUT/gate-summary.txt"

[ "$test_rc" = 0 ] && [ "$run_rc" = 0 ] && [ "$fleet_rc" = 0 ]
