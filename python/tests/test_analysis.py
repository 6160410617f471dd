import math

import pytest

from xferbench_report.analysis import analyze
from xferbench_report.load import load_runs

GEN5_X16 = 32 * 16 * 128 / 130 / 8


@pytest.fixture(scope="module")
def report():
    from conftest import DATA

    return analyze(load_runs([DATA / "multi_backend.json", DATA / "host_small.json"]))


def curve(report, backend, route, direction, memory, part=""):
    pool = report.part_curves if part else report.curves
    return next(c for c in pool if (c.group.backend, c.route, c.direction, c.host_memory, c.part)
                == (backend, route, direction, memory, part))


def test_groups_and_directions(report):
    assert [g.name for g in report.groups] == ["cuda-rt", "cuda-drv", "opencl:nvidia", "host"]
    assert report.directions == ["h2d", "d2h", "bidir", "d2d"]


def test_peak_and_half_peak(report):
    c = curve(report, "cuda-rt", "copy-async", "h2d", "pinned")
    # The fixture's model: t = 2 us + n / 53 GB/s; the peak is at the largest size.
    assert c.peak.bytes == 1 << 30
    assert c.gbps(c.peak) == pytest.approx(53, rel=0.02)
    # Half of ~53 GB/s is first reached at 1 MiB (256 KiB is not among the sizes: 64 KiB gives ~20).
    assert c.half_peak.bytes == 1 << 20


def test_fit_recovers_the_fixture_model(report):
    for backend, route, L in (("cuda-rt", "copy-async", 2.0), ("cuda-drv", "copy-sync", 7.0)):
        c = curve(report, backend, route, "h2d", "pinned")
        assert c.fit.latency_us == pytest.approx(L, rel=0.03)
        assert c.fit.bandwidth_gbps == pytest.approx(53, rel=0.03)
        assert c.fit.rms_rel_err < 0.02


def test_bidir_parts_are_curves_of_their_own(report):
    h2d = curve(report, "cuda-rt", "copy-async", "bidir", "pinned", part="h2d")
    assert h2d.fit.bandwidth_gbps == pytest.approx(53, rel=0.03)
    assert h2d.link_limit == pytest.approx(GEN5_X16, rel=1e-4)
    assert curve(report, "cuda-rt", "copy-async", "bidir", "pinned").link_limit == pytest.approx(2 * GEN5_X16, rel=1e-4)


def test_link_limit_only_where_the_link_is_crossed(report):
    assert curve(report, "cuda-rt", "copy-async", "h2d", "pinned").link_limit == pytest.approx(GEN5_X16, rel=1e-4)
    assert curve(report, "cuda-rt", "d2d", "d2d", "none").link_limit is None
    assert curve(report, "host", "memcpy", "h2d", "pageable").link_limit is None  # a CPU device
    assert not any(c.above_limit for c in report.curves)


def test_not_converged_are_marked(report):
    c = curve(report, "cuda-rt", "copy-sync", "h2d", "pageable")
    assert [p.bytes for p in c.not_converged] == [1 << 30]
    fixture = [p for c in report.curves if c.group.run_label == "multi_backend" for p in c.not_converged]
    assert len(fixture) == 8  # the largest pageable copies of both CUDA backends


def test_skipped_and_failed_grouped_with_reasons(report):
    skipped = [p for p in report.problems if p.status == "skipped"]
    failed = [p for p in report.problems if p.status == "failed"]
    assert len(skipped) == 8 and all(len(p.sizes) == 9 and p.host_memory == "managed" for p in skipped)
    assert [(p.group_name, p.route, p.sizes) for p in failed] == [("opencl:nvidia", "write", [1 << 30]),
                                                                    ("opencl:nvidia", "read", [1 << 30])]
    assert "CL_MEM_OBJECT_ALLOCATION_FAILURE" in failed[0].reason


def test_api_comparison_ratios(report):
    h2d = next(a for a in report.api if a.direction == "h2d")
    assert h2d.reference.backend == "cuda-rt"
    drv = next(pc for pc in h2d.pairs if pc.other.backend == "cuda-drv")
    # Fastest at 1 B: copy-async pinned on both, 1.6 us against 2.0 us.
    assert drv.ratio[1] == pytest.approx(0.8, rel=0.03)
    assert drv.ratio[1 << 30] == pytest.approx(1.0, rel=0.03)
    matched = {(r, k) for r, k, _ in drv.matched}
    assert matched == {("copy-sync", "pageable"), ("copy-sync", "pinned"), ("copy-async", "pageable"),
                       ("copy-async", "pinned")}
    ocl = next(pc for pc in h2d.pairs if pc.other.backend == "opencl:nvidia")
    assert ocl.matched == []  # other route names: compared only best against best
    assert ocl.ratio[1] == pytest.approx(3.0, rel=0.03)


def test_reference_backend_can_be_chosen():
    from conftest import DATA

    rep = analyze(load_runs([DATA / "multi_backend.json"]), reference_backend="opencl:nvidia")
    assert all(a.reference.backend == "opencl:nvidia" for a in rep.api if a.direction in ("h2d", "d2h"))


def test_break_even_against_pageable(report):
    rows = [b for b in report.break_even if (b.group.backend, b.route, b.direction) == ("cuda-rt", "copy-async",
                                                                                          "h2d")]
    assert [(b.host_memory, b.baseline) for b in rows] == [("pinned", "pageable")]
    by_size = rows[0].by_size
    # At 256 MiB (the fixture's model): pageable setup = alloc 13.4 ms + touch 26.8 ms + first - t (2 t + 20 us),
    # t = 10.74 ms; pinned setup = alloc 67.4 ms + 0 + 2 t + 1 us, t = 5.07 ms: (77.5 - 61.7) / 5.67 -> 3 transfers.
    assert by_size[1 << 28] == 3
    # At 1 B the transfers are equally fast (within their spread): it never pays off.
    assert math.isinf(by_size[1])
    assert all(v == 1 or v > 1 for v in by_size.values())


def test_single_point_report():
    from conftest import DATA

    rep = analyze(load_runs([DATA / "single_point.json"]))
    (c,) = rep.curves
    assert c.fit is None and c.peak is c.half_peak
    assert rep.api == [] and rep.break_even == []


def test_points_above_the_link_stay_out_of_peaks_and_fits(write_result):
    """A point faster than the link measured something else: it is flagged, and
    never the peak, the half-peak size or a point of the fitted model."""
    from conftest import point, gpu_system

    sizes = [1 << 16, 1 << 20, 1 << 24]
    pts = [point("cuda-rt", "copy-async", "h2d", "pinned", n, samples=[2e-6 + n / 25e9], device_type="gpu")
           for n in sizes]
    pts.append(point("cuda-rt", "copy-async", "h2d", "pinned", 1 << 26, samples=[(1 << 26) / 400e9],
                     device_type="gpu"))  # 400 GB/s over a 31.5 GB/s link
    c = analyze(load_runs([write_result("above.json", pts, gpu_system())])).curves[0]
    assert [p.bytes for p in c.above_limit] == [1 << 26]
    assert c.peak.bytes == 1 << 24
    assert c.gbps(c.peak) < 31.5
    assert c.fit.bandwidth_gbps == pytest.approx(25, rel=0.02)
    assert c.half_peak.bytes in sizes


def test_a_curve_wholly_above_the_link_has_no_peak(write_result):
    from conftest import point, gpu_system

    pts = [point("opencl:nvidia", "kernel-host", "h2d", "alloc-host-ptr", n, samples=[n / 900e9], device_type="gpu")
           for n in (1 << 20, 1 << 24)]
    c = analyze(load_runs([write_result("all_above.json", pts, gpu_system())])).curves[0]
    assert len(c.above_limit) == 2
    assert c.peak is None and c.half_peak is None and c.fit is None


def _event_point(memory, nbytes, event_s, wall_s):
    from conftest import point

    return point(backend="opencl:nvidia", route="copy-async", memory=memory, nbytes=nbytes, samples=[event_s] * 5,
                 timer="event", device_type="gpu", wall_stats={"min": wall_s, "median": wall_s, "mean": wall_s,
                                                               "p95": wall_s, "max": wall_s, "stddev": 0.0, "count": 5})


def test_a_device_clock_that_misses_host_work_is_left_out_of_the_peak(write_result):
    # NVIDIA's OpenCL at 1 MiB of pageable memory: 47 GB/s on its events, 4.9 on the wall clock.
    mib = 1 << 20
    points = [_event_point("pageable", mib, mib / 47e9, mib / 4.9e9),
              _event_point("pageable", 16 * mib, 16 * mib / 6.6e9, 16 * mib / 6.4e9),
              # A device-to-device copy: the wall clock is the launch, not missing work.
              _event_point("none", mib, mib / 400e9, mib / 120e9) | {"direction": "d2d"}]
    rep = analyze(load_runs([write_result("clocks.json", points)]))
    c = next(c for c in rep.curves if c.host_memory == "pageable")
    assert [p.bytes for p in c.clock_misses_work] == [mib]
    assert c.peak.bytes == 16 * mib  # not the 47 GB/s point
    d2d = next(c for c in rep.curves if c.direction == "d2d")
    assert d2d.clock_misses_work == []
