#!/usr/bin/env bash
# Issue 37, item 4: the staged copier on every GPU at once, with the process's
# one staging budget (the default) against a team per device
# (XFER_STAGED_SHARED=0, as before the budget), in one device command on the
# several-GPU machine (four GPUs of one host). Each sweep is issue 37's command:
#
#   xferbench sweep -b cuda-rt -r copy-async,staged -m pinned,pageable -d h2d,d2h --sizes 64M,256M --together
#
# whose --together measures each GPU alone first (the staged copier alone per
# GPU: a shared budget must not slow it), then all GPUs at once. The summary
# prints, per direction and size, the staged (pageable) aggregate over the
# pinned copy-async aggregate of the same run (the target: at least 70%), and
# each GPU's staged figure alone, from the JSON files; and the staging team
# each run used (the staged points' notes: the shared team grows with the
# GPUs copying at once, to the sum of their teams up to 3/4 of the physical
# cores; "team" on each line is the team's size when that point finished).
#
#   OUT=/some/dir bench/staged_together.sh [--skip-build]
#
#   XFER_BACKEND      the backend (default cuda-rt)
#   XFER_SIZES        sizes (default 64M,256M)
#   XFER_REPEAT       runs of each way, interleaved (default 2)
#   XFER_BUDGETS      then runs with the shared team fixed at each count (XFER_STAGED_BUDGET_THREADS),
#                     all devices at once only (default "16 24 32"; empty: none). By default the team
#                     grows with the devices copying at once: the sum of their calibrated teams (12
#                     each on 16 CPUs and more), at most 3/4 of the physical cores (24 on 32 cores)
#   XFER_PINNED_ROUTE, XFER_PINNED_MEMORY  the route and host memory the pinned aggregate is
#                     read from (default copy-async, pinned; memcpy, aligned to try it on the host backend)
#   XFER_HOST_DEVICES --host-devices, to try it on the host backend (XFER_BACKEND=host)
#   XFER_SKIP_OWN=1   skip the team-per-device run
#   XFERBENCH_BIN     the xferbench to run (default: $XFER_BUILD_DIR, build-gpu, built here)
#
# Writes under $OUT: build.log, shared-<r>.json/.log (the default), own-<r>.json/.log
# (XFER_STAGED_SHARED=0), budget-<n>.json/.log, summary.txt (also printed),
# steps.txt (each step's exit code and seconds). Exit 0 when every step did.
# About 40 s a run on four H100s (multi_gpu_run.sh's together step with bidir
# took 39), so under 10 minutes with the build.
set -uo pipefail
cd "$(dirname "$0")/.."

skip_build=${XFER_SKIP_BUILD:-0}
case "${1:-}" in
  "") ;;
  --skip-build) skip_build=1 ;;
  -h | --help) sed -n '2,/^set /p' "$0" | sed '$d'; exit 0 ;;
  *) echo "staged_together.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
esac
[ $# -le 1 ] || { echo "staged_together.sh: one argument at most (see --help)" >&2; exit 2; }

OUT=${OUT:-$PWD/results/staged-together}
mkdir -p "$OUT"
BUILD=${XFER_BUILD_DIR:-build-gpu}
XB=${XFERBENCH_BIN:-$PWD/$BUILD/apps/xferbench/xferbench}
B=${XFER_BACKEND:-cuda-rt}
SIZES=${XFER_SIZES:-64M,256M}
PINNED_ROUTE=${XFER_PINNED_ROUTE:-copy-async}
PINNED_MEMORY=${XFER_PINNED_MEMORY:-pinned}
HD=()
[ -n "${XFER_HOST_DEVICES:-}" ] && HD=(--host-devices "$XFER_HOST_DEVICES")
start=$SECONDS
failed=0
: >"$OUT/steps.txt"
log() { echo "[staged_together +$((SECONDS - start))s] $*"; }
# step NAME LIMIT_S [VAR=value ...] -- ARGS...: one sweep under `env VARS`, output to $OUT/NAME.log/.json.
step() {
  local name=$1 limit=$2
  shift 2
  local vars=()
  while [ "$1" != -- ]; do vars+=("$1"); shift; done
  shift
  local t0=$SECONDS
  log "$name: ${vars[*]} xferbench $*"
  env "${vars[@]}" timeout --signal=INT --kill-after=20 "$limit" "$XB" "$@" --json "$OUT/$name.json" -q \
    >"$OUT/$name.log" 2>&1
  local rc=$?
  echo "$name rc=$rc seconds=$((SECONDS - t0)) :: ${vars[*]} xferbench $*" >>"$OUT/steps.txt"
  [ $rc -eq 0 ] || failed=1
  tail -n 3 "$OUT/$name.log"
}

if [ "$skip_build" != 1 ]; then
  log "configure + build xferbench -> $OUT/build.log"
  # The configuration of scripts/multi_gpu_run.sh and gpu_run.sh, so they share build-gpu.
  if ! { cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release -DXFER_ENABLE_CUDA="${XFER_CUDA:-ON}" \
           -DXFER_ENABLE_OPENCL="${XFER_OPENCL:-AUTO}" &&
         cmake --build "$BUILD" -j"$(nproc 2>/dev/null || echo 4)" --target xferbench; } >"$OUT/build.log" 2>&1; then
    tail -40 "$OUT/build.log"
    log "build failed"
    exit 1
  fi
fi
[ -x "$XB" ] || { log "no $XB: build first"; exit 1; }

sweep=(sweep -b "$B" "${HD[@]}" -r "$PINNED_ROUTE,staged" -m "$PINNED_MEMORY,pageable" -d h2d,d2h --sizes "$SIZES")
# Interleaved, so a slow moment of the host (10 to 20% on one point in a
# four-GPU run) falls on both ways of running.
for r in $(seq 1 "${XFER_REPEAT:-2}"); do
  step "shared-$r" 150 XFER_STAGED_SHARED=1 -- "${sweep[@]}" --together
  [ "${XFER_SKIP_OWN:-0}" = 1 ] || step "own-$r" 150 XFER_STAGED_SHARED=0 -- "${sweep[@]}" --together
done
for n in ${XFER_BUDGETS-16 24 32}; do
  step "budget-$n" 100 XFER_STAGED_SHARED=1 "XFER_STAGED_BUDGET_THREADS=$n" -- "${sweep[@]}" --together-only
done

python3 - "$OUT" "$PINNED_ROUTE" "$PINNED_MEMORY" <<'PY' | tee "$OUT/summary.txt"
import json, os, re, sys
out, pinned_route, pinned_memory = sys.argv[1:4]

def team(p):
    """The staging team a staged point finished with, from its note: (threads, 'shared'/'own', limit)."""
    m = re.match(r"staging team: (\d+) threads (shared \(grows to (\d+)|of its own)", p.get("note") or "")
    if not m:
        return None
    return int(m.group(1)), "shared" if m.group(3) else "own", int(m.group(3) or m.group(1))


def teams(points):
    """'alone 12, at once 24 (shared, limit 24)': the largest team of the staged points alone and at once."""
    alone = [t for p in points if not p.get("concurrent") and (t := team(p))]
    together = [t for p in points if p.get("concurrent") and (t := team(p))]
    if not alone and not together:
        return "no staging team noted"
    last = max(alone + together)
    parts = [f"{label} {max(t[0] for t in ts)}" for label, ts in (("alone", alone), ("at once", together)) if ts]
    return f"staging team: {', '.join(parts)} threads ({last[1]}" + (f", limit {last[2]})" if last[1] == "shared" else ")")

names = [line.split()[0] for line in open(os.path.join(out, "steps.txt"))]  # the steps, in order
print(f"staged (pageable) against {pinned_route} ({pinned_memory}), GB/s; target: aggregate ratio >= 70%")
for name in names:
    path = os.path.join(out, name + ".json")
    if not os.path.exists(path):
        continue
    try:
        points = [p for p in json.load(open(path))["results"] if p.get("status") == "ok"]
    except (OSError, ValueError, KeyError) as e:
        print(f"{name}: unreadable ({e})")
        continue
    def pick(route, memory, role):
        got = {}
        for p in points:
            c = p.get("concurrent")
            if p["route"] != route or p["host_memory"] != memory or (c or {}).get("role") != role:
                continue
            got.setdefault((p["direction"], p["bytes"]), []).append((p["device"], p["gbps"]))
        return got
    staged, pinned = pick("staged", "pageable", "aggregate"), pick(pinned_route, pinned_memory, "aggregate")
    # The team each staged point at once finished with: its aggregate's note, or its devices' largest.
    at_once_team = {}
    for p in points:
        if p["route"] == "staged" and p.get("concurrent") and (t := team(p)):
            key = (p["direction"], p["bytes"])
            at_once_team[key] = max(at_once_team.get(key, 0), t[0])
    alone_staged, alone_pinned = pick("staged", "pageable", None), pick(pinned_route, pinned_memory, None)
    print(f"\n== {name} ({teams([p for p in points if p['route'] == 'staged'])})")
    for key in sorted(set(staged) | set(pinned) | set(alone_staged)):
        d, b = key
        s = staged.get(key, [(None, None)])[0][1]
        p = pinned.get(key, [(None, None)])[0][1]
        ratio = f"{100 * s / p:5.1f}%" if s and p else "    -"
        each = " ".join(f"{g:.1f}" for _, g in sorted(alone_staged.get(key, [])))
        each_p = " ".join(f"{g:.1f}" for _, g in sorted(alone_pinned.get(key, [])))
        fmt = lambda v: f"{v:6.1f}" if v else "     -"
        t = at_once_team.get(key)
        print(f"{d} {b >> 20:5d} MiB: at once staged {fmt(s)} pinned {fmt(p)} ratio {ratio} team {t or '-':>3}"
              f" | alone staged [{each or '-'}] pinned [{each_p or '-'}]")
PY
log "done in $((SECONDS - start)) s"
cat "$OUT/steps.txt"
exit $failed
