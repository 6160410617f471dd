"""Points measured under emulation (XRT's no-op shim) are kept apart: in no curve,
peak or finding, listed in a section of their own."""

from conftest import point

from xferbench_report.analysis import analyze
from xferbench_report.findings import sweep_findings
from xferbench_report.load import load_runs
from xferbench_report.document import to_markdown
from xferbench_report.render import build_document


def emulated(nbytes, t):
    return dict(point(backend="xrt", route="bo-sync", memory="bo-normal", nbytes=nbytes, samples=[t] * 5,
                      reason="emulated (noop): no data crossed a link; the time is the API's own cost per call"),
                emulation="noop", device_type="accelerator")


def test_emulated_points_are_in_no_curve_and_listed_apart(write_result):
    # 64 MiB "synced" in 30 ns: 2 PB/s, what a peak table would show if it took them.
    pts = [emulated(4096, 3e-8), emulated(64 << 20, 3e-8), point(nbytes=4096, samples=[1e-6] * 5)]
    report = analyze(load_runs([write_result("run.json", pts)]))
    assert [c.group.backend for c in report.curves] == ["host"]
    assert [p.bytes for p in report.emulated] == [4096, 64 << 20]
    assert report.counts["emulated"] == 2
    assert not [f for f in sweep_findings(report) if "xrt" in f.title or "xrt" in f.text]
    doc = build_document(report, {"bandwidth": [], "latency": [], "first_use": [], "api": []})
    md = to_markdown(doc)
    assert "Emulated points (no data crossed a link)" in md
    assert "64 MiB: 30.0 ns" in md or "64 MiB: 0.03 us" in md, md[md.find("Emulated"):][:600]
