"""A report rendered from committed results, opened in headless Chromium: no
console error, no broken image or link, and the first image on the first
screen. Skips where Chromium is absent (scripts/setup.sh installs Debian's
package where it can)."""

from pathlib import Path

import pytest

from xferbench_report.browser import BrowserError, check_report, find_chromium
from xferbench_report.cli import main

H100 = Path(__file__).resolve().parents[2] / "docs" / "results" / "h100"

pytestmark = pytest.mark.skipif(not find_chromium(), reason="no Chromium (Debian's chromium package)")


def test_report_from_committed_results_reads_in_a_browser(tmp_path, capsys):
    out = tmp_path / "report"
    files = [H100 / "opencl_routes.json.gz", H100 / "cpu.json.gz", H100 / "app-vadd-cuda.json.gz"]
    assert main(["render", *map(str, files), "-o", str(out), "-j", "2"]) == 0
    shot = tmp_path / "first-screen.png"
    assert check_report(out, screenshot=shot) == []
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_the_check_finds_what_a_reader_would_meet(tmp_path):
    (tmp_path / "index.html").write_text(
        '<!DOCTYPE html><html><body><div style="height:3000px">text</div><a href="#nowhere">a</a>'
        '<a href="plots/gone.png">b</a><img src="plots/missing.png" alt="x">'
        '<script>console.error("boom")</script></body></html>')
    problems = check_report(tmp_path)
    assert "console error: boom" in problems
    assert "broken image: plots/missing.png" in problems
    assert "broken link: #nowhere (no element with that id)" in problems
    assert "broken link: plots/gone.png (no such file)" in problems
    assert any(p.startswith("the first image starts at 30") and "below the first screen" in p for p in problems)


def test_no_report_is_a_clear_error(tmp_path):
    with pytest.raises(BrowserError, match="no report there"):
        check_report(tmp_path)
