"""The report selects by the catalogue (family, role, traits), never by a route's or a kind's name: a grep keeps
route and kind names out of the rules, and a file with a route and a kind no backend has enters them."""

import io
import tokenize
from pathlib import Path

from xferbench_report import legacy
from xferbench_report.analysis import analyze
from xferbench_report.findings import sweep_findings
from xferbench_report.load import load_runs

from conftest import v2_doc, v2_point, write_doc

RULES = Path(__file__).resolve().parent.parent / "xferbench_report"


def _rule_files():
    return sorted((RULES / "findings").glob("*.py")) + [RULES / "analysis.py"]


def test_no_route_or_kind_name_in_the_rules():
    """Every route and kind name a build has (the v1 reader's table is today's catalogue) is absent from the
    rules as a string literal of its own; display text may still mention one in a sentence."""
    cat = legacy.catalogue()
    names = set(cat.routes) | set(cat.kinds)
    found = []
    for path in _rule_files():
        for tok in tokenize.generate_tokens(io.StringIO(path.read_text()).readline):
            if tok.type == tokenize.STRING:
                text = tok.string.lstrip("rbuRBU")
                if text[:1] in "'\"" and text.strip("'\"") in names:
                    found.append(f"{path.name}:{tok.start[0]}: {tok.string}")
    assert not found, "route or kind names in the report's rules:\n" + "\n".join(found)


def test_the_grep_finds_a_name(tmp_path):
    """The check above can fail: a rule that names a kind is caught."""
    cat = legacy.catalogue()
    src = 'x = c.host_memory == "pinned"\n'
    hits = [t.string for t in tokenize.generate_tokens(io.StringIO(src).readline)
            if t.type == tokenize.STRING and t.string.strip("'\"") in set(cat.kinds)]
    assert hits == ['"pinned"']


def _new_names_doc():
    """A run of a route and two kinds no backend has: "warp-copy" (family copy, the API's queued copy),
    "plain-heap" (the program's default memory) and "locked-heap" (moved in place by the copy engine), on a
    GPU; the locked memory moves 6x as fast as the plain memory from 64 KiB on, in two sizes' steps."""
    routes = {"warp-copy": {"family": "copy", "role": "api-copy-queued", "directions": ["h2d"],
                            "description": "a route no backend has", "uses_host_memory": True,
                            "block_workload": False}}
    kinds = {"plain-heap": {"summary": "the program's heap", "maker": "plain", "pinned": False,
                            "device_accessible": False, "write_combined": False, "dma_direct": False,
                            "api_pinned": False, "program_default": True, "offset_of": "", "device_memory": False},
             "locked-heap": {"summary": "page-locked heap", "maker": "plain", "pinned": True,
                             "device_accessible": False, "write_combined": False, "dma_direct": True,
                             "api_pinned": True, "program_default": False, "offset_of": "", "device_memory": False}}
    points = []
    for n in (1 << 16, 1 << 20, 1 << 24, 1 << 26):
        points.append(v2_point("warp-copy", "plain-heap", n, gbps=8.0))
        points.append(v2_point("warp-copy", "locked-heap", n, gbps=48.0))
    return v2_doc(points, routes, kinds)


def test_a_new_route_and_kind_enter_pin_or_stage_and_the_peaks(tmp_path):
    path = write_doc(tmp_path / "new.json", _new_names_doc())
    report = analyze(load_runs([path]))
    found = [f for f in sweep_findings(report) if f.title.startswith("Pin or stage")]
    assert len(found) == 1, [f.line() for f in sweep_findings(report)]
    assert "locked-heap memory moves" in found[0].text
    peaks = {c.host_memory: c.gbps(c.peak) for c in report.curves}
    assert round(peaks["locked-heap"]) == 48 and round(peaks["plain-heap"]) == 8


def test_the_files_verdict_decides_trust(tmp_path):
    """A point core did not trust stays out of the peak, whatever its speed; the report does not judge again."""
    doc = _new_names_doc()
    fast = doc["results"][-1]
    fast["gbps"] = 500.0
    fast["median_s"] = fast["bytes"] / 500e9
    fast["samples_s"] = [fast["median_s"]] * 5
    fast["verdict"] = {"trusted": False, "why_not": ["above-link-limit"], "above_link_limit": True,
                       "clock_misses_host_work": False}
    report = analyze(load_runs([write_doc(tmp_path / "v.json", doc)]))
    locked = next(c for c in report.curves if c.host_memory == "locked-heap")
    assert round(locked.gbps(locked.peak)) == 48 and locked.peak.bytes != 1 << 26
    assert [p.bytes for p in locked.above_limit] == [1 << 26]
    # The same point trusted by core is the peak: the verdict, not the speed, decided.
    fast["verdict"] = {"trusted": True, "why_not": [], "above_link_limit": False, "clock_misses_host_work": False}
    report = analyze(load_runs([write_doc(tmp_path / "t.json", doc)]))
    locked = next(c for c in report.curves if c.host_memory == "locked-heap")
    assert locked.peak.bytes == 1 << 26 and not locked.above_limit


def test_a_point_core_did_not_settle_is_quoted_as_its_range(tmp_path):
    """Two modes in one point's samples: the headline quotes the range they support, never one of them."""
    doc = _new_names_doc()
    page = next(p for p in doc["results"] if p["host_memory"] == "plain-heap" and p["bytes"] == 1 << 26)
    page["verdict"].update(settled=False, gbps_range=[7.5, 9.25])
    report = analyze(load_runs([write_doc(tmp_path / "r.json", doc)]))
    text = next(f.text for f in sweep_findings(report) if f.title.startswith("Pin or stage"))
    assert "at 64 MiB it moves 7.50-9.25 GB/s where locked-heap memory moves 48.00" in text, text
    page["verdict"]["settled"] = True
    report = analyze(load_runs([write_doc(tmp_path / "s.json", doc)]))
    text = next(f.text for f in sweep_findings(report) if f.title.startswith("Pin or stage"))
    assert "at 64 MiB it moves 8.00 GB/s" in text, text
