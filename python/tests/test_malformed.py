"""Malformed result files (made by data/make_fixtures.py; each once crashed the
tool with a traceback): one line on stderr, exit 2, and nothing left behind."""

import subprocess
import sys

import pytest

# file -> what the one line must say after the file's name
MALFORMED = {
    "negative_samples.json": "results[0].samples_s[0]: cannot be negative, got -4.96344e-07",
    "huge_bytes.json": "results[0].bytes: out of range (at most 2^64 - 1), got a 401-digit number",
    "deeply_nested.json": "not JSON this tool can read (nested too deeply)",
    "stats_min_string.json": "results[0].stats.min: expected a number, got \"fast\"",
    "ok_without_samples.json": "results[0].samples_s: an ok point needs at least one sample",
    "link_max_string.json": "system.accelerators[0].link_max: expected an object, got \"Gen5 x16\"",
    "unknown_direction.json": "results[0].direction: unknown direction 'sideways' (expected h2d, d2h, bidir, rw or d2d)",
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
    assert r.returncode == 2
    assert r.stdout == ""
    assert r.stderr == f"xferbench-report: error: {bad}: {MALFORMED[name]}\n"
    assert list(tmp_path.iterdir()) == []  # no report, no temporary directory
