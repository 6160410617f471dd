"""The GPU gate's summary (scripts/gpu_check.sh calls it last): what the test log and the
sweep's result file in OUT say, in a few lines that come back from the device machine even
when the logs themselves do not.

    gate_summary.py OUT COMMIT TEST_RC TEST_S RUN_RC RUN_S TOTAL_S PHASE RUN_ARGS
"""
import json, os, re, sys
out, commit, test_rc, test_s, run_rc, run_s, total_s, phase, run_args = sys.argv[1:10]
print(f"== GPU gate at {commit}: {total_s} s in all" + ("" if phase == "all" else f" (phase {phase} only)")
      + (f"; run.sh {run_args}" if run_args and not phase.startswith("tests") else "") + " ==")
def run_summary():
    if phase.startswith("tests"):
        print(f"run: not in this phase (XFER_GATE_PHASE={phase})")
        sys.exit(0)
if phase == "run":
    print("tests: not in this phase (XFER_GATE_PHASE=run)")
    log = ""
else:
    log = open(os.path.join(out, "test.log"), errors="replace").read()
# The stages' logs that gpu_check.sh appends to test.log, each after "== build/NAME.log".
# ctest: "100% tests passed, 0 tests failed out of 412" (or "100% tests passed out of 412");
# pytest: "70 passed, 1 skipped in 28.03s"
ctest = re.findall(r"(\d+)% tests passed(?:, (\d+) tests? failed)? out of (\d+)", log)
passed = sum(int(n) - int(f or 0) for _, f, n in ctest)
failed = sum(int(f or 0) for _, f, _ in ctest)
skipped = len(re.findall(r"^\s*\d+ - \S+ \(Skipped\)", log, re.M))
py = re.findall(r"^(?:=+ )?(\d+) passed(?:, (\d+) failed)?(?:, (\d+) skipped)?", log, re.M)
py_passed = sum(int(p) for p, _, _ in py)
py_failed = sum(int(f or 0) for _, f, _ in py) + len(re.findall(r"^(?:=+ )?(\d+) failed", log, re.M))
if phase != "run":
    print(f"tests (scripts/test.sh, exit {test_rc}, {test_s} s): ctest {passed} passed, {failed} failed "
          f"({skipped} skipped); pytest {py_passed} passed, {py_failed} failed")
for name in re.findall(r"\d+ - (\S+) \((?:Failed|Timeout|SEGFAULT|Subprocess aborted)\)", log)[:12]:
    print(f"  FAILED {name}")
# A pytest that dies (a fatal signal) prints no summary line: "0 passed, 0
# failed" would read as nothing wrong, so say so, with its last lines (the
# whole test.log may not come back from the device machine).
if phase != "run" and not py and "== build/pytest.log" in log:
    tail = log.split("== build/pytest.log", 1)[1].splitlines()[-12:]
    print("  FAILED pytest: no summary line (it died or was killed); its last lines:")
    for line in tail:
        print(f"    {line[:300]}")
run_summary()
try:
    doc = json.load(open(os.path.join(out, "sweep.json")))
except (OSError, ValueError) as e:
    print(f"run (scripts/run.sh, exit {run_rc}, {run_s} s): no result file ({e})")
    sys.exit(0)
res = doc.get("results", [])
count = {s: sum(r["status"] == s for r in res) for s in ("ok", "skipped", "failed")}
nc = sum(1 for r in res if r["status"] == "ok" and not r.get("converged", True))
# v2 files carry core's verdict; v1 files flagged at the top level.
above = sum(1 for r in res if (r.get("verdict") or r).get("above_link_limit"))
print(f"run (scripts/run.sh, exit {run_rc}, {run_s} s): {len(res)} points: {count['ok']} ok, {count['skipped']} skipped, "
      f"{count['failed']} failed; {nc} ok but not converged; {above} above the link's limit"
      + ("; INTERRUPTED" if doc.get("interrupted") else ""))
backends = {}
for r in res:
    b = backends.setdefault(r["backend"], {"ok": 0, "skipped": 0, "failed": 0})
    b[r["status"]] += 1
for name, c in sorted(backends.items()):
    print(f"  {name}: {c['ok']} ok, {c['skipped']} skipped, {c['failed']} failed")
for r in [r for r in res if r["status"] == "failed"][:8]:
    print(f"  FAILED {r['backend']} {r['route']} {r['direction']} {r['host_memory']} {r['bytes']} B: {r.get('reason', '')[:160]}")
