"""Panels a person reads: one backend and route each, at most eight curves, suspect points apart."""

from conftest import gpu_system, point

from xferbench_report.analysis import analyze
from xferbench_report.load import load_runs
from xferbench_report.plots import MAX_CURVES, facets


def test_routes_get_their_own_panels_and_no_panel_has_more_than_eight_curves(write_result):
    kinds = [f"kind{i}" for i in range(11)]
    pts = [point(route=r, memory=k, nbytes=n) for r in ("copy-sync", "copy-async") for k in kinds
           for n in (16, 4096)]
    pts += [point(route="kernel-host", memory="pinned", nbytes=n) for n in (16, 4096)]
    report = analyze(load_runs([write_result("many.json", pts)]))
    panels = facets(report, "h2d")
    assert [(g.name, route, len(cs)) for g, route, cs in panels] == [
        ("host", "copy-sync (1/2)", 6), ("host", "copy-sync (2/2)", 5),
        ("host", "copy-async (1/2)", 6), ("host", "copy-async (2/2)", 5), ("host", "kernel-host", 1)]
    assert all(len(cs) <= MAX_CURVES for _, _, cs in panels)
    assert all(len({c.route for c in cs}) == 1 for _, _, cs in panels)


def test_a_curve_whose_every_point_is_suspect_gets_no_main_panel(write_result):
    fast = [dict(point(backend="cuda-rt", route="copy-async", memory="pinned", nbytes=n, samples=[n / 40e9]),
                 device_type="gpu") for n in (1 << 20, 1 << 24)]  # 40 GB/s on a 31.5 GB/s link
    ok = [dict(point(backend="cuda-rt", route="copy-async", memory="pageable", nbytes=n, samples=[n / 10e9]),
               device_type="gpu") for n in (1 << 20, 1 << 24)]
    report = analyze(load_runs([write_result("fast.json", fast + ok, system=gpu_system(31.5))]))
    panels = facets(report, "h2d")
    assert [[c.host_memory for c in cs] for _, _, cs in panels] == [["pageable"]]
