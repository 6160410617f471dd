#!/usr/bin/env bash
# The gate's tests phase at a commit (scripts/gpu_check.sh, XFER_GATE_PHASE=tests).
set -u
sha=$1
export PATH=/opt/torch/.venv/bin:$PATH
XFER_COMMIT=$sha XFER_GATE_PHASE=tests OUT=/tmp/gate-tests timeout 560 scripts/gpu_check.sh > /tmp/gate-tests.console 2>&1
echo "tests rc=$?"
cp /tmp/gate-tests/gate-summary.txt $OUT/gate-summary-$sha-tests.txt 2>/dev/null
gzip -c /tmp/gate-tests/test.log > $OUT/test-$sha.log.gz 2>/dev/null
grep -E "BlocksCudaQueue|tests passed|tests failed|FAILED" /tmp/gate-tests/test.log | head -20
tail -12 /tmp/gate-tests.console
