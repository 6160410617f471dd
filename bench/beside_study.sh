#!/usr/bin/env bash
# A copy beside compute on the GPU (issue 53's targets): every way beside
# gpu-compute and gpu-memory for 4096 x 16 KiB and 16384 x 4 KiB pinned blocks,
# both directions, in interleaved rounds; then the staged copier, the plain copy
# and one pinned copy beside a CPU team of every CPU. One result file each,
# rendered together. Everything lands in $OUT (default results/beside-study).
#
#   ROUNDS=9 PHASE_S=0.25 bench/beside_study.sh
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-$PWD/results/beside-study}
mkdir -p "$OUT"
scripts/build.sh >/dev/null 2>"$OUT/build.log" || { tail -30 "$OUT/build.log"; exit 1; }
x=build/apps/xferbench/xferbench
common=(-b cuda-rt --rounds "${ROUNDS:-5}" --seconds "${PHASE_S:-0.25}" -q)
status=0
for shape in "16K 4096" "4K 16384"; do
  read -r size count <<<"$shape"
  for dir in h2d d2h; do
    "$x" beside "${common[@]}" --workloads gpu-compute,gpu-memory --block-size "$size" --blocks "$count" \
      --direction "$dir" --json "$OUT/beside-$size-$dir.json" 2>&1 | tee "$OUT/beside-$size-$dir.log" || status=1
  done
done
"$x" beside "${common[@]}" --workloads cpu-compute --ways plain,staged,copy --block-size 1M --blocks 256 \
  --json "$OUT/beside-cpu-team.json" 2>&1 | tee "$OUT/beside-cpu-team.log" || status=1
build/bin/xferbench-report render "$OUT"/beside-*.json -o "$OUT/report" >"$OUT/report.log" 2>&1 || status=1
exit "$status"
