#!/usr/bin/env bash
# The whole gate in one command (tests, then the run on its build), its summary and logs to $OUT.
set -u
sha=$1
export PATH=/opt/torch/.venv/bin:$PATH
XFER_COMMIT=$sha XFER_GATE_RUN_S=150 OUT=/tmp/gate timeout 585 scripts/gpu_check.sh > /tmp/gate.console 2>&1
echo "gate rc=$?"
cp /tmp/gate/gate-summary.txt $OUT/gate-summary-$sha.txt 2>/dev/null
for f in test run; do gzip -c /tmp/gate/$f.log > $OUT/$f-$sha.log.gz 2>/dev/null; done
cp /tmp/gate/fleet.log $OUT/fleet-$sha.log 2>/dev/null; gzip -c /tmp/gate/fleet-1.json > $OUT/fleet-1-$sha.json.gz 2>/dev/null
gzip -c /tmp/gate/sweep.json > $OUT/sweep-$sha.json.gz 2>/dev/null
grep -E "BlocksCudaQueue|BlockCalibration" /tmp/gate/test.log | grep -v Start | head
cat /tmp/gate/gate-summary.txt
