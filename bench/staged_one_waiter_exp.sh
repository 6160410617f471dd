set -uo pipefail
scripts/build.sh >/dev/null 2>$OUT/build.log || { tail -20 $OUT/build.log; exit 1; }
b=build/apps/xferbench/xferbench
for round in 1 2; do for aw in 0 1; do
  XFER_STAGED_ALL_WAIT=$aw XFER_STAGED_TUNING_CACHE=off XFER_STAGED_CHUNK_BYTES=8388608 XFER_STAGED_THREADS=12 XFER_STAGED_RING_DEPTH=4 \
    $b sweep -b cuda-rt -r staged -m pageable -d h2d,d2h --sizes 16M,64M,256M,1G --max-time 0.4 -q --json $OUT/allwait$aw-r$round.json > $OUT/allwait$aw-r$round.txt 2>&1
  python3 - $OUT/allwait$aw-r$round.json $aw $round <<'PY'
import json,sys
d=json.load(open(sys.argv[1]))
print("all_wait",sys.argv[2],"round",sys.argv[3]," ".join(f'{r["direction"]}/{r["bytes"]>>20}M={r["gbps"]:.2f}' for r in d["results"] if r["status"]=="ok"))
PY
done; done
gzip -f $OUT/*.json
