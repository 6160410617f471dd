"""The device-side scripts refuse a value they do not know, with one line and
exit 2, before they build or measure anything (the GPU gate's phases and the
test stages it picks run only on the GPU machine, so this is what CI can check)."""
import os
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("script, env, args, names", [
    ("scripts/gpu_check.sh", {"XFER_GATE_PHASE": "bogus"}, [], "tests-host, tests-gpu or run"),
    ("scripts/test.sh", {"XFER_GPU_TESTS": "bogus"}, [], "on, off or only"),
    ("scripts/multi_gpu_run.sh", {}, ["--bogus"], "unknown argument"),
    ("bench/staged_together.sh", {}, ["--bogus"], "unknown argument"),
])
def test_an_unknown_value_is_one_line_and_exit_2(tmp_path, script, env, args, names):
    p = subprocess.run([str(ROOT / script), *args], capture_output=True, text=True, timeout=60, cwd=tmp_path,
                       env={**os.environ, "OUT": str(tmp_path / "out"), **env})
    assert p.returncode == 2, p.stderr
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1 and "bogus" in lines[0] and names in lines[0], p.stderr
    assert p.stdout == ""
    assert not (tmp_path / "out").exists()  # nothing written before the refusal


def _gate_summary(tmp_path, test_log):
    (tmp_path / "test.log").write_text(test_log)
    p = subprocess.run(["python3", str(ROOT / "scripts/gate_summary.py"), str(tmp_path), "abc1234", "1", "10", "0", "0",
                        "10", "tests", ""], capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    return p.stdout


def test_gate_summary_says_when_pytest_died_without_its_summary_line(tmp_path):
    out = _gate_summary(tmp_path, "100% tests passed, 0 tests failed out of 5\n"
                                  "== build/pytest.log\n....F\nFatal Python error: Segmentation fault\n")
    assert "ctest 5 passed, 0 failed" in out
    assert "FAILED pytest: no summary line" in out
    assert "Fatal Python error: Segmentation fault" in out  # its last lines come back in the summary


def test_gate_summary_counts_a_finished_pytest_and_flags_nothing(tmp_path):
    out = _gate_summary(tmp_path, "== build/ctest-host.log\n100% tests passed out of 5\n"
                                  "== build/pytest.log\n....\n70 passed, 1 skipped in 28.03s\n")
    assert "pytest 70 passed, 0 failed" in out
    assert "FAILED" not in out


@pytest.mark.skipif(not os.environ.get("XFERBENCH_BIN"), reason="needs XFERBENCH_BIN (a built xferbench)")
def test_staged_together_prints_the_aggregate_ratio_per_direction(tmp_path):
    # The four-GPU command on the host backend's stand-in devices: its
    # summary reads the at-once aggregates and each device alone from the JSON.
    env = {**os.environ, "OUT": str(tmp_path / "out"), "XFER_BACKEND": "host", "XFER_HOST_DEVICES": "2",
           "XFER_PINNED_ROUTE": "memcpy", "XFER_PINNED_MEMORY": "aligned", "XFER_SIZES": "1M",
           "XFER_SKIP_OWN": "1", "XFER_REPEAT": "1", "XFER_BUDGETS": "2", "XFER_STAGED_TUNING_CACHE": "off"}
    p = subprocess.run([str(ROOT / "bench/staged_together.sh"), "--skip-build"], capture_output=True, text=True,
                       timeout=300, env=env)
    assert p.returncode == 0, p.stdout + p.stderr
    summary = (tmp_path / "out" / "summary.txt").read_text()
    assert "== shared-1 (staging team: alone " in summary and "== own" not in summary, summary
    # The fixed team's size, from the staged points' notes, on its header and on each line.
    assert "== budget-2 (staging team: at once 2 threads (shared, limit 2))" in summary, summary
    budget = summary.split("== budget-2")[1]
    assert budget.count(" team   2 |") == 2, summary
    for d in ("h2d", "d2h"):
        line = next(x for x in summary.splitlines() if x.startswith(f"{d}     1 MiB"))  # shared-1 comes first
        assert "ratio" in line and "ratio     -" not in line, summary
        assert line.count("alone staged [") == 1 and "[-]" not in line.split("alone staged")[1], summary


def _ctest_outcome(tmp_path, log):
    """test.sh's one line for a ctest stage, from CTest's own log (the functions as test.sh defines them)."""
    (tmp_path / "ctest.log").write_text(log)
    script = (ROOT / "scripts/test.sh").read_text()
    fns = script[script.index("ctest_outcome() {"):script.index("# ctest_stage NAME")]
    p = subprocess.run(["bash", "-c", fns + '\nctest_outcome "$1"; ctest_failures "$1"', "_", str(tmp_path / "ctest.log")],
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    return p.stdout


def test_test_sh_counts_a_clean_ctest_and_a_failing_one(tmp_path):
    skipped = "\nThe following tests did not run:\n\t917 - Ways/Blocks.Batch (Skipped)\n"
    assert _ctest_outcome(tmp_path, "100% tests passed out of 1217\n" + skipped) == "1216 passed, 0 failed, 1 skipped\n"
    out = _ctest_outcome(tmp_path, "99% tests passed, 2 tests failed out of 1217\n" + skipped
                         + "The following tests FAILED:\n\t 12 - Foo.Bar (Failed)\n\t 13 - Foo.Baz (Timeout)\n")
    assert out.splitlines() == ["1214 passed, 2 failed, 1 skipped", "    12 - Foo.Bar (Failed)", "    13 - Foo.Baz (Timeout)"]
    assert _ctest_outcome(tmp_path, "ninja: build stopped\n") == "no summary (see the log)\n"


def test_test_sh_names_the_failing_cases_inside_a_failed_test(tmp_path):
    # CI keeps the console only: the case and its assertion must reach it, not just "cli.fleet".
    log = ("514: test_ok (__main__.A.test_ok) ... ok\n514: ERROR: test_hang (__main__.FleetMpi.test_hang)\n"
           "ERROR: test_a_rank_that_hangs (__main__.FleetMpi.test_a_rank_that_hangs)\nTraceback (most recent call last):\n"
           "AssertionError: [1, 3] != [1]\n[  FAILED  ] Ways.Batch (3 ms)\n[  FAILED  ] 1 test, listed below:\n"
           "99% tests passed, 1 tests failed out of 2\nThe following tests FAILED:\n\t514 - cli.fleet (Failed)\n")
    assert _ctest_outcome(tmp_path, log).splitlines()[1:] == [
        "    514 - cli.fleet (Failed)", "      ERROR: test_a_rank_that_hangs (__main__.FleetMpi.test_a_rank_that_hangs)",
        "      AssertionError: [1, 3] != [1]", "      [  FAILED  ] Ways.Batch (3 ms)"]
