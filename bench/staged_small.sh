#!/usr/bin/env bash
# The staged copier at 1 to 16 MiB (issue 37: 2x torch's pageable copy from 1 MiB, 90% of pinned
# from 16 MiB), on a CUDA machine in one command: the staged route from pageable memory for each
# threads/chunk setting in SETTINGS (chunk "rule": the copier's per-size rule), every size forced through the pipeline (handoff 1 byte,
# calibration off), beside copy-sync and copy-async from the same pageable memory and copy-async
# from pinned memory in each run. The question: do fewer threads and bigger pieces cost less at
# these sizes, where each piece has a fixed cost of some microseconds (docs/decisions/0001-staged-copier-shape.md)?
# Everything lands in $OUT (default results/staged-small); summary.tsv has each ok point's median GB/s.
#
#   SETTINGS="2/1M 4/1M 12/4M" SIZES=1M,4M,16M bench/staged_small.sh
#   BACKEND=host ROUTES=staged,memcpy KINDS=pageable SETTINGS=2/1M SIZES=1M bench/staged_small.sh  # any machine
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-$PWD/results/staged-small}
mkdir -p "$OUT"
scripts/build.sh >/dev/null 2>"$OUT/build.log" || { tail -30 "$OUT/build.log"; exit 1; }
bench=build/apps/xferbench/xferbench
size() { python3 -c "import sys; s=sys.argv[1]; m={'K':1<<10,'M':1<<20,'G':1<<30}; print(int(s[:-1])*m[s[-1]] if s[-1] in m else int(s))" "$1"; }
for s in ${SETTINGS:-"12/rule 12/8M 12/4M 12/1M 8/4M 4/8M 4/4M 2/8M"}; do
  IFS=/ read -r threads chunk <<<"$s"
  name="t$threads-c$chunk"
  echo "== $name ($(date +%T))"
  # "rule": the per-size rule's chunks (at most 4 MiB), as the copier cuts by default; else
  # chunks of the size given, ramped up and down (tuning.hpp: staged_chunk_starts), a copy too
  # short for both ramps cut evenly at chunk/8: so a 1 MiB copy is 1 chunk with 8M, 2 with
  # 4M, 8 with 1M, and a 4 MiB copy 4 with 8M.
  if [ "$chunk" = rule ]; then bytes=4194304 by_size=1; else bytes=$(size "$chunk") by_size=0; fi
  XFER_STAGED_TUNING_CACHE=off XFER_STAGED_THREADS=$threads XFER_STAGED_CHUNK_BYTES=$bytes \
    XFER_STAGED_SIZE_CHUNKS=$by_size XFER_STAGED_RING_DEPTH=4 XFER_STAGED_HANDOFF_BYTES=1 \
    "$bench" sweep -b "${BACKEND:-cuda-rt}" -r "${ROUTES:-staged,copy-sync,copy-async}" -m "${KINDS:-pageable,pinned}" -d h2d,d2h \
    --sizes "${SIZES:-1M,4M,16M}" --max-time 0.3 -q --json "$OUT/$name.json" >"$OUT/$name.txt" 2>&1 ||
    { echo "$name: sweep failed"; tail -5 "$OUT/$name.txt"; }
done
python3 - "$OUT" <<'PY' | tee "$OUT/summary.tsv"
import glob, json, os, sys
print("setting\troute\tmemory\tdir\tbytes\tmedian_GBps\tverified")
for f in sorted(glob.glob(os.path.join(sys.argv[1], "t*.json"))):
    name = os.path.basename(f)[:-5]
    for p in json.load(open(f)).get("results", []):
        if p.get("status") == "ok":
            print(f"{name}\t{p['route']}\t{p['host_memory']}\t{p['direction']}\t{p['bytes']}\t{p['gbps']:.2f}\t{p['verified']}")
PY
