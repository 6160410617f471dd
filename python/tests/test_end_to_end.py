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
    # A quick sweep of one route over every direction (--full: the overview has h2d and d2h) and two host memory
    # kinds (a few seconds).
    subprocess.run([BIN, "sweep", "-b", "host", "--quick", "--full", "-r", "memcpy", "-m", "pageable,huge", "-q",
                    "--json", str(result)], check=True,
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


@pytest.mark.skipif(not BIN, reason="XFERBENCH_BIN is not set (path to the xferbench binary)")
def test_devices_at_once_render_as_their_own_panels_with_the_aggregate_finding(tmp_path):
    """sweep --together on two stand-in devices of the host backend: the report names each device's share at once
    and the aggregate apart from the devices alone, and holds the aggregate to their sum alone."""
    result = tmp_path / "together.json"
    subprocess.run([BIN, "sweep", "-b", "host", "--host-devices", "2", "-r", "memcpy", "-m", "pageable", "-d", "h2d",
                    "--sizes", "1M", "--max-time", "0.01", "--together", "-q", "--json", str(result)], check=True,
                   stdout=subprocess.DEVNULL, timeout=120)
    out = tmp_path / "report"
    assert main(["render", str(result), "-o", str(out)]) == 0
    md = (out / "summary.md").read_text()
    assert "host dev0, host dev1, host dev0 (2 at once), host dev1 (2 at once), host all 2 at once" in md
    assert "host h2d, 2 devices at once" in md
    assert "2 devices at once move" in md and "they reach one at a time" in md


@pytest.mark.skipif(not BIN, reason="XFERBENCH_BIN is not set (path to the xferbench binary)")
def test_a_peer_matrix_renders_as_a_table_with_its_finding(tmp_path):
    result = tmp_path / "peer.json"
    subprocess.run([BIN, "peer", "-b", "host", "--host-devices", "2", "--sizes", "1M", "-q", "--json", str(result)],
                   check=True, stdout=subprocess.DEVNULL, timeout=120)
    out = tmp_path / "report"
    assert main(["render", str(result), "-o", str(out)]) == 0
    md = (out / "summary.md").read_text()
    assert "## Peer matrix" in md and "| host, 1 MiB: from (row) to (column) | dev0 | dev1 |" in md
    rows = [line for line in md.splitlines() if line.startswith("| dev")]
    assert len(rows) == 2 and all(line.count("|") == 4 and " - " not in line for line in rows)
    assert "host peer matrix (2 devices): between two devices" in md
