#!/usr/bin/env bash
# Issue 54: what holds the staged copier to the device on this machine, in
# one device command of about four minutes, from an existing Release build
# (the gate's build/, or BUILD=...):
#   1. the machine: CPU, caches, NUMA, transparent huge pages, the GPU's link;
#   2. the contention probe (bench/roofline_contention.cpp): the copy
#      engine's rate alone, while N threads copy through a ring it does not
#      read ("separate"), and while it reads the ring they have just written
#      ("shared"), with the threads' own rate: the roofline the copier sits on;
#   3. the sweep's staged route from pageable memory under each DESIGN,
#      beside copy-async from pinned memory, ROUNDS rounds with the designs
#      interleaved, both directions, data verified by the sweep;
#   4. the copier from Python beside torch (python/benchmarks/staged_vs_torch.py)
#      under the calibration and under each of TORCH_DESIGNS;
#   5. the Python call's layers at small sizes (python/benchmarks/copy_call_overhead.py).
# A design is a name and the environment it runs under: "cal" is the
# calibration (a cache of its own, filled at its first use), any other is
# chunk/ring/threads[/nodemote][/nt] with the calibration off.
# Everything lands in $OUT as staged-gap.tgz.
#
#   OUT=/tmp/gap BUILD=build bench/staged_gap.sh
#   BACKEND=host ROUNDS=1 DESIGNS=4M/4/2 TORCH_DESIGNS= bench/staged_gap.sh   (no GPU: the sweeps on the host backend)
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
OUT=${OUT:-$PWD/results/staged-gap}
BUILD=${BUILD:-build}
DESIGNS=${DESIGNS:-"cal 4M/4/12 8M/4/12 8M/4/12/nodemote 16M/4/12 8M/4/16"}
TORCH_DESIGNS=${TORCH_DESIGNS-"8M/4/12"}
SIZES=${SIZES:-16M,64M,256M,1G}
ROUNDS=${ROUNDS:-2}
BACKEND=${BACKEND:-cuda-rt}
work=$(mktemp -d)
mkdir -p "$OUT"
bench=$BUILD/apps/xferbench/xferbench
export PYTHONPATH=$PWD/python:$PWD/$BUILD/python

step() { echo "== $* ($(date +%T))"; }
# shellcheck source=bench/machine_facts.sh
. bench/machine_facts.sh
size() { python3 -c "import sys; s=sys.argv[1]; m={'K':1<<10,'M':1<<20,'G':1<<30}; print(int(s[:-1])*m[s[-1]] if s[-1] in m else int(s))" "$1"; }
# The environment of one design, as words for env(1).
design_env() {
  if [ "$1" = cal ]; then echo "XFER_STAGED_TUNING_CACHE=$work/cal.cache"; return; fi
  IFS=/ read -r chunk ring threads rest <<<"$1"
  echo "XFER_STAGED_TUNING_CACHE=off XFER_STAGED_CHUNK_BYTES=$(size "$chunk") XFER_STAGED_RING_DEPTH=$ring" \
    "XFER_STAGED_THREADS=$threads XFER_STAGED_DEMOTE=$([[ $rest == *nodemote* ]] && echo 0 || echo 1)" \
    "XFER_STAGED_STREAM_STORES=$([[ $rest == *nt* ]] && echo 1 || echo 0)"
}
slug() { echo "$1" | tr / -; }

step machine
machine_facts "$work/machine.txt"

step contention
no_device=()
[ "$BACKEND" = host ] && no_device=(--no-device)
"$BUILD/bench/xfer_bench_roofline" --contention-only "${no_device[@]}" --json "$work/contention.json" >"$work/contention.txt" 2>&1
tail -n 25 "$work/contention.txt"

for r in $(seq 1 "$ROUNDS"); do
  for d in $DESIGNS; do
    step "sweep $d, round $r"
    # shellcheck disable=SC2046  # the design's words are separate variables
    env $(design_env "$d") "$bench" sweep -b "$BACKEND" -r staged -m pageable -d h2d,d2h --sizes "$SIZES" \
      --max-time 0.2 -q --json "$work/sweep-$(slug "$d")-r$r.json" >"$work/sweep-$(slug "$d")-r$r.txt" 2>&1
    echo "exit $?"
  done
  step "pinned copy-async, round $r"
  "$bench" sweep -b "$BACKEND" -r copy-async -m pinned -d h2d,d2h --sizes "$SIZES" --max-time 0.2 -q \
    --json "$work/sweep-pinned-r$r.json" >"$work/sweep-pinned-r$r.txt" 2>&1
  echo "exit $?"
done
python3 - "$work" <<'EOF' | tee "$work/sweeps.tsv"
import glob, json, os, re, statistics, sys
work = sys.argv[1]
rows = {}
for f in sorted(glob.glob(os.path.join(work, "sweep-*-r*.json"))):
    design = re.sub(r"-r\d+\.json$", "", os.path.basename(f))[len("sweep-"):]
    for p in json.load(open(f)).get("results", []):
        if p.get("status") != "ok":
            continue
        key = (design, p["direction"], p["bytes"])
        rows.setdefault(key, []).append(p["gbps"] if p.get("verified") else float("nan"))
print("design\tdirection\tbytes\tGB/s per round (the sweep's median; nan: not verified)")
for (d, di, b), v in sorted(rows.items(), key=lambda kv: (kv[0][1], kv[0][2], kv[0][0])):
    print(f"{d}\t{di}\t{b >> 20} MiB\t" + " ".join(f"{x:.1f}" for x in v))
EOF

step "beside torch, the calibration"
XFER_STAGED_TUNING_CACHE="$work/cal.cache" python3 python/benchmarks/staged_vs_torch.py --rounds 5 \
  -o "$work/torch-cal.json" >"$work/torch-cal.txt" 2>&1; echo "exit $?"; tail -n 16 "$work/torch-cal.txt"
for d in $TORCH_DESIGNS; do
  step "beside torch, $d"
  # shellcheck disable=SC2046
  env $(design_env "$d") python3 python/benchmarks/staged_vs_torch.py --rounds 5 \
    -o "$work/torch-$(slug "$d").json" >"$work/torch-$(slug "$d").txt" 2>&1; echo "exit $?"
  tail -n 16 "$work/torch-$(slug "$d").txt"
done

step "the Python call's layers"
XFER_STAGED_TUNING_CACHE="$work/cal.cache" python3 python/benchmarks/copy_call_overhead.py --reps 200 \
  >"$work/copy-call-overhead.txt" 2>&1; echo "exit $?"; tail -n 12 "$work/copy-call-overhead.txt"

cp "$work/cal.cache" "$work/cal.cache.txt" 2>/dev/null
tar -C "$work" -czf "$OUT/staged-gap.tgz" . && echo "wrote $OUT/staged-gap.tgz"
