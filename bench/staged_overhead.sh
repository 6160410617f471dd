#!/usr/bin/env bash
# Where a staged copy's time goes beyond its bytes (issue 15: 64 MiB took
# about 0.5 ms longer than its chunks need on a GPU machine), in one device
# command: the staged route beside pinned copy-async at 8, 64 and 256 MiB with
# one fixed tuning, for several spin-before-sleep settings (XFER_SPIN_US), each
# copy's stages traced (XFER_STAGED_TRACE) and summarised as medians; then the
# pinning probe. Everything lands in $OUT (default results/staged-overhead).
#
#   SPINS="0 200 2000" bench/staged_overhead.sh
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-$PWD/results/staged-overhead}
mkdir -p "$OUT"
scripts/build.sh >/dev/null 2>"$OUT/build.log" || { tail -30 "$OUT/build.log"; exit 1; }
bench=build/apps/xferbench/xferbench
for spin in ${SPINS:-0 200 2000}; do
  echo "== XFER_SPIN_US=$spin"
  rm -f "$OUT/trace-spin$spin.txt"
  XFER_SPIN_US=$spin XFER_STAGED_TUNING_CACHE=off XFER_STAGED_CHUNK_BYTES=${CHUNK:-8388608} \
    XFER_STAGED_THREADS=${THREADS:-12} XFER_STAGED_RING_DEPTH=4 XFER_STAGED_TRACE="$OUT/trace-spin$spin.txt" \
    "$bench" sweep -b cuda-rt -r staged,copy-async -m pageable,pinned -d h2d,d2h --sizes 8M,64M,256M \
    --max-time 0.3 -q --json "$OUT/spin$spin.json" >"$OUT/spin$spin.txt" 2>&1
  grep -E "^\s+(staged|copy-async) " "$OUT/spin$spin.txt"
  python3 - "$OUT/trace-spin$spin.txt" <<'PY' | tee "$OUT/trace-spin$spin-summary.txt"
import collections, statistics, sys
rows = collections.defaultdict(lambda: collections.defaultdict(list))
for line in open(sys.argv[1]):
    f = line.split()
    key = (f[0], int(f[1]))
    for kv in f[5:]:
        k, v = kv.split("=")
        if k != "joined":  # per thread "us:pieces,...", not one figure
            rows[key][k].append(float(v))
order = ["picked_up", "staging_ready", "first_piece", "first_dma", "pieces_done", "dmas_done", "completed", "caller_woke"]
print("median us after submission (copies): " + " ".join(order))
for (d, b), m in sorted(rows.items()):
    n = len(m["completed"])
    print(f"{d} {b >> 20:5d} MiB ({n:4d}): " + " ".join(f"{statistics.median(m[k]):8.1f}" if m[k] else "       -" for k in order))
PY
done
build/bench/xfer_bench_pin_probe >"$OUT/pin-probe.txt" 2>&1
grep -E "library|threads" "$OUT/pin-probe.txt"
gzip -f "$OUT"/*.json "$OUT"/trace-spin*[0-9].txt
