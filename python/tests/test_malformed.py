"""Malformed result files (made by data/make_fixtures.py; each once crashed the
tool with a traceback) and signals during a render: one line on stderr, the
documented exit status, and nothing left behind."""

import os
import signal
import subprocess
import sys
import time

import pytest

from xferbench_report.cli import main

# file -> what the one line must say after the file's name
MALFORMED = {
    "negative_samples.json": "results[0].samples_s[0]: cannot be negative, got -4.96344e-07",
    "huge_bytes.json": "results[0].bytes: out of range (at most 2^64 - 1), got a 401-digit number",
    "deeply_nested.json": "not JSON this tool can read (nested too deeply)",
    "stats_min_string.json": "results[0].stats.min: expected a number, got \"fast\"",
    "ok_without_samples.json": "results[0].samples_s: an ok point needs at least one sample",
    "link_max_string.json": "system.accelerators[0].link_max: expected an object, got \"Gen5 x16\"",
    "unknown_direction.json": "results[0].direction: unknown direction 'sideways' "
                              "(expected h2d, d2h, bidir, rw or d2d)",
    "lone_surrogate.json": "results[0].backend: not valid Unicode text: 'host\\ud800'",
}


def tool(*args):
    return subprocess.run([sys.executable, "-m", "xferbench_report", *map(str, args)], capture_output=True,
                          text=True, timeout=120)


@pytest.mark.parametrize("name", sorted(MALFORMED))
@pytest.mark.parametrize("how", ["render", "compare-base", "compare-new"])
def test_malformed_file_is_refused_in_one_line(data, tmp_path, name, how):
    bad, good = data / name, data / "single_point.json"
    out = tmp_path / "report"
    args = {"render": ["render", good, bad, "-o", out], "compare-base": ["compare", bad, good],
            "compare-new": ["compare", good, bad]}[how]
    r = tool(*args)
    assert r.returncode == (2 if how == "render" else 3)  # compare tells a broken file from an incomparable pair
    assert r.stdout == ""
    assert r.stderr == f"xferbench-report: error: {bad}: {MALFORMED[name]}\n"
    assert list(tmp_path.iterdir()) == []  # no report, no temporary directory


# Stands in for the drawing of the figures: says it has begun, then never ends,
# so the signal always arrives mid-render. Patched before the pool forks, so the
# workers draw with it too.
STUCK_RENDER = """
import pathlib, sys, time
from xferbench_report import cli, plots

def stuck(task):
    pathlib.Path(sys.argv[1]).touch()
    time.sleep(120)

plots._draw = stuck
sys.exit(cli.main(sys.argv[2:]))
"""


@pytest.mark.parametrize("sig,jobs,group", [
    pytest.param(signal.SIGTERM, 2, False, id="SIGTERM-workers"),
    pytest.param(signal.SIGTERM, 1, False, id="SIGTERM-in-process"),
    pytest.param(signal.SIGHUP, 2, False, id="SIGHUP-workers"),
    pytest.param(signal.SIGINT, 2, True, id="SIGINT-to-the-group"),  # Ctrl-C: to the workers too
])
def test_signal_mid_render_removes_the_temporary_directory(data, tmp_path, sig, jobs, group):
    out = tmp_path / "report"
    assert main(["render", str(data / "single_point.json"), "-o", str(out)]) == 0
    earlier = (out / "index.html").read_text()
    drawing = tmp_path / "drawing"
    proc = subprocess.Popen([sys.executable, "-c", STUCK_RENDER, str(drawing), "render",
                             str(data / "multi_backend.json"), "-o", str(out), "-j", str(jobs)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        deadline = time.monotonic() + 60
        while not drawing.exists():
            assert proc.poll() is None, proc.communicate()
            assert time.monotonic() < deadline, "the render never started drawing"
            time.sleep(0.02)
        assert len(list(tmp_path.glob(".report.tmp-*"))) == 1  # mid-render, in its temporary directory
        if group:
            os.killpg(proc.pid, sig)
        else:
            proc.send_signal(sig)
        stdout, stderr = proc.communicate(timeout=60)
        with pytest.raises(ProcessLookupError):  # its workers are gone too
            os.killpg(proc.pid, 0)
    finally:
        try:
            os.killpg(proc.pid, signal.SIGKILL)  # the session it was started in: it and its workers
        except ProcessLookupError:
            pass
    assert proc.returncode == 128 + sig
    assert stdout == ""
    assert stderr == f"xferbench-report: interrupted by {signal.Signals(sig).name}\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["drawing", "report"]
    assert (out / "index.html").read_text() == earlier  # the earlier report is kept whole
