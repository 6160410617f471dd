#!/usr/bin/env bash
# The staged copier on the machine's memory roofline (issue 37), in one
# command that fits about 6 minutes on a one-GPU machine:
#   1. a Release build of xferbench and xfer_bench_roofline;
#   2. the machine: lscpu, the caches from sysfs, the GPU's link;
#   3. xfer_bench_roofline: memory bandwidth (STREAM-style), the CPU side of
#      rings from 256 KiB to 64 MiB, DRAM bytes per byte delivered (counted
#      where uncore_imc is readable, else the model, labelled), and the real
#      staged copier under each design of SETTINGS beside a pinned copy of
#      the same size, 16 MiB to 1 GiB, both directions, data verified;
#   4. for each design of SETTINGS, the sweep's staged route against
#      copy-async from pageable and pinned memory at SIZES, both directions;
#   5. with CONTENTION=1, the contention probe in step 3's run (the copy
#      engine's rate while N CPU threads copy through a ring, and theirs
#      meanwhile: bench/roofline_contention.cpp); CONTENTION_ONLY=1 runs
#      steps 1, 2 and it alone (about 40 s on a one-GPU machine), into
#      contention.json/.txt. CONTENTION_ARGS adds the probe's options
#      (--contention-threads 0,12 --contention-paces 0,55 ...).
# A design is chunk/ring[/threads][/nt][/size]: nt turns on streaming stores
# (XFER_STAGED_STREAM_STORES=1), size the chunk chosen per copy size
# (XFER_STAGED_SIZE_CHUNKS=1); threads default to the library's default for
# this machine. The calibration is off (every field fixed; the handoff at
# 1 MiB, so every size measured goes through the pipeline).
# Everything lands in $OUT (default results/staged-roofline), bundled as
# staged-roofline.tar.gz beside the console log.
#
#   SETTINGS="1M/8 8M/4" SIZES=16M,64M bench/staged_roofline.sh
#   CPU_ONLY=1 bench/staged_roofline.sh     # steps 1-3 without a GPU
#   CONTENTION_ONLY=1 bench/staged_roofline.sh   # the contention probe alone
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-$PWD/results/staged-roofline}
BUILD=${BUILD:-build-roofline}
CMAKE=${CMAKE:-cmake}
work=$(mktemp -d)
mkdir -p "$OUT"
# Today's 8M/4 with and without the per-size rule and streaming stores;
# LLC-sized rings; 4M/4 (what the rule gives a 16 MiB copy) and 2M/8.
SETTINGS=${SETTINGS:-"8M/4 8M/4/size 8M/4/nt 8M/4/nt/size 8M/8/size 4M/4 2M/8 2M/4 1M/8 512K/8 256K/8"}
SIZES=${SIZES:-16M,64M,256M,1G}
jobs=$(nproc)
# The library's default thread count (default_staged_threads): 3/4 of the CPUs, 4 to 12.
default_threads=$(( jobs * 3 / 4 )); (( default_threads < 4 )) && default_threads=4; (( default_threads > 12 )) && default_threads=12

step() { echo "== $* ($(date +%T))"; }
# shellcheck source=bench/machine_facts.sh
. bench/machine_facts.sh
size() { python3 -c "import sys; s=sys.argv[1]; m={'K':1<<10,'M':1<<20,'G':1<<30}; print(int(s[:-1])*m[s[-1]] if s[-1] in m else int(s))" "$1"; }

step build
"$CMAKE" -S . -B "$BUILD" -DCMAKE_BUILD_TYPE=Release >"$work/configure.log" 2>&1 &&
  "$CMAKE" --build "$BUILD" -j "$jobs" --target xfer_bench_roofline \
    $([ "${CONTENTION_ONLY:-0}" = 1 ] || echo xferbench) >"$work/build.log" 2>&1 ||
  { tail -30 "$work/configure.log" "$work/build.log"; exit 1; }

step machine
machine_facts "$work/machine.txt"

device_flag=()
[ "${CPU_ONLY:-0}" = 1 ] && device_flag=(--no-device)
read -r -a contention <<<"${CONTENTION_ARGS:-}"
if [ "${CONTENTION_ONLY:-0}" = 1 ]; then
  step contention
  "$BUILD/bench/xfer_bench_roofline" --contention-only "${contention[@]}" "${device_flag[@]}" \
    --json "$work/contention.json" 2>&1 | tee "$work/contention.txt"
else
  step roofline
  [ "${CONTENTION:-0}" = 1 ] && contention=(--contention "${contention[@]}")
  "$BUILD/bench/xfer_bench_roofline" --copier-threads "4,8,$default_threads" --designs "$SETTINGS" --sizes "$SIZES" \
    "${contention[@]}" "${device_flag[@]}" --json "$work/roofline.json" 2>&1 | tee "$work/roofline.txt"
fi

if [ "${CPU_ONLY:-0}" != 1 ] && [ "${CONTENTION_ONLY:-0}" != 1 ]; then
  bench=$BUILD/apps/xferbench/xferbench
  for s in $SETTINGS; do
    IFS=/ read -r chunk ring rest <<<"$s"
    threads=$default_threads nt=0 sized=0
    for part in ${rest//\// }; do
      case $part in
        nt) nt=1 ;;
        size) sized=1 ;;
        *) threads=$part ;;
      esac
    done
    name="tune-${s//\//-}"
    step "$name"
    XFER_STAGED_TUNING_CACHE=off XFER_STAGED_CHUNK_BYTES=$(size "$chunk") XFER_STAGED_RING_DEPTH=$ring \
      XFER_STAGED_THREADS=$threads XFER_STAGED_STREAM_STORES=$nt XFER_STAGED_SIZE_CHUNKS=$sized \
      XFER_STAGED_HANDOFF_BYTES=1048576 "$bench" sweep -b cuda-rt -r staged,copy-async -m pageable,pinned \
      -d h2d,d2h --sizes "$SIZES" --max-time 0.3 -q --json "$work/$name.json" >"$work/$name.txt" 2>&1
    grep -E "staged|copy-async" "$work/$name.txt" | grep -v "^#" | head -20
  done
fi

tar -C "$work" -czf "$OUT/staged-roofline.tar.gz" . && echo "wrote $OUT/staged-roofline.tar.gz"
