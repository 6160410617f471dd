#!/usr/bin/env bash
# Many small blocks on the GPU (issue 38): loop vs batch vs kernel vs pack vs the
# block copier's choice, against one contiguous pinned copy of the same total,
# for 4096 x 16 KiB, 16384 x 4 KiB and 256 KiB..2 MiB blocks (64 MiB each),
# pinned and pageable, both ways (xfer_bench_blocks_study); then, if torch
# imports, torch's loop of copy_(non_blocking=True) beside xferbench.copy_blocks
# (bench/blocks_torch.py). Everything lands in $OUT (default results/blocks-study).
#
#   REPS=15 bench/blocks_study.sh
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-$PWD/results/blocks-study}
mkdir -p "$OUT"
scripts/build.sh >/dev/null 2>"$OUT/build.log" || { tail -30 "$OUT/build.log"; exit 1; }
# The choice is calibrated here, into a cache of this run's own (kept with the results).
export XFER_BLOCKS_CACHE="$OUT/block-ways"
rm -f "$XFER_BLOCKS_CACHE"
build/bench/xfer_bench_blocks_study "${REPS:-15}" | tee "$OUT/ways.tsv"
echo "== the choice's cache"; cat "$XFER_BLOCKS_CACHE"
py=${PYTHON:-python3}
if PYTHONPATH="$PWD/python:$PWD/build/python" "$py" -c "import torch, xferbench; assert torch.cuda.is_available()" 2>/dev/null; then
  PYTHONPATH="$PWD/python:$PWD/build/python" "$py" bench/blocks_torch.py "${REPS:-15}" | tee "$OUT/torch.tsv"
else
  echo "torch (with CUDA) does not import with $py: torch's loop not measured" | tee "$OUT/torch.tsv"
fi
