"""Runs a real host-backend sweep with the xferbench binary and renders it.

Set XFERBENCH_BIN to the binary (e.g. build/apps/xferbench/xferbench)."""

import os
import subprocess
from pathlib import Path

import pytest

from xferbench_report.cli import main

BIN = os.environ.get("XFERBENCH_BIN")


@pytest.mark.skipif(not BIN, reason="XFERBENCH_BIN is not set (path to the xferbench binary)")
def test_host_sweep_renders_and_compares_with_itself(tmp_path, capsys):
    assert Path(BIN).is_file(), f"XFERBENCH_BIN={BIN} is not a file"
    result = tmp_path / "host.json"
    # A quick sweep of one route over every direction and two host memory kinds (a few seconds).
    subprocess.run([BIN, "sweep", "-b", "host", "--quick", "-r", "memcpy", "-m", "pageable,huge", "-q", "--json",
                    str(result)], check=True,
                   stdout=subprocess.DEVNULL, timeout=120)
    out = tmp_path / "report"
    assert main(["render", str(result), "-o", str(out)]) == 0
    html = (out / "index.html").read_text()
    md = (out / "summary.md").read_text()
    for d in ("h2d", "d2h", "bidir", "rw", "d2d"):
        assert (out / "plots" / f"bandwidth-{d}.png").exists()
        assert f"fig-bandwidth-{d}" in html
    assert "| host | memcpy | pageable |" in md
    capsys.readouterr()
    # A run against itself: every point the same, exit 0.
    assert main(["compare", str(result), str(result)]) == 0
    out_text = capsys.readouterr().out
    assert " 0 faster, 0 slower," in out_text
