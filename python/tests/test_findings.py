"""Findings are computed from the points: each test builds the measurements a
finding rests on and checks its numbers and its evidence (file#index)."""

from conftest import gpu_system, noisy, point

from xferbench_report.analysis import analyze
from xferbench_report.findings import headlines, sweep_findings
from xferbench_report.load import load_runs


def findings_of(write_result, points, system=None, **top):
    path = write_result("run.json", points, system=system, **top)
    return sweep_findings(analyze(load_runs([path])))


def only(findings, word):
    got = [f for f in findings if word in f.title]
    assert len(got) == 1, [f.title for f in findings]
    return got[0]


def gbps_point(gb_per_s, nbytes, **kw):
    return point(nbytes=nbytes, samples=[nbytes / (gb_per_s * 1e9)] * 5, **kw)  # exact: the text is checked


def gpu(p):
    return dict(p, device_type="gpu", backend="cuda-rt", route="copy-sync")


def test_a_collapse_that_holds_at_the_next_size_is_named_with_its_numbers(write_result):
    sizes = ((10, 256), (80, 4096), (60, 65536), (5, 262144), (6, 1 << 20))
    f = only(findings_of(write_result, [gpu(gbps_point(g, n)) for g, n in sizes]), "collapse")
    assert f.kind == "anomaly" and f.title == "Curves collapse at large sizes"
    # The factor is the smaller of the two sizes that show it (80 / 6), so a rerun finds at least as much.
    assert "80.00 GB/s at 4 KiB falls to 5.00 GB/s at 256 KiB and stays down (13.3x)" in f.text
    assert f.evidence == ["run.json#1", "run.json#3"]


def test_a_fall_at_one_size_only_is_no_collapse(write_result):
    # The largest size alone falls: nothing after it confirms it, so a rerun could contradict it.
    sizes = ((10, 256), (80, 4096), (60, 65536), (5, 262144))
    assert not [f for f in findings_of(write_result, [gpu(gbps_point(g, n)) for g, n in sizes]) if "ollapse" in f.title]
    # Nor a dip between two good sizes.
    sizes = ((10, 256), (80, 4096), (5, 65536), (60, 262144))
    assert not [f for f in findings_of(write_result, [gpu(gbps_point(g, n)) for g, n in sizes]) if "ollapse" in f.title]


def test_a_steady_curve_does_not_collapse(write_result):
    pts = [gpu(gbps_point(g, n)) for g, n in ((10, 256), (80, 4096), (60, 65536), (30, 262144), (30, 1 << 20))]
    assert not [f for f in findings_of(write_result, pts) if "collapse" in f.title]


def test_a_cpu_falling_out_of_its_caches_is_context_never_a_headline(write_result):
    pts = [gbps_point(g, n) for g, n in ((10, 256), (80, 4096), (60, 65536), (5, 262144), (5, 1 << 20))]
    fs = findings_of(write_result, pts)
    f = only(fs, "Stand-in curves fall")
    assert f.kind == "context" and "the CPU's caches against its DRAM" in f.text
    assert [h.title for h in headlines(fs)] == ["No accelerator measured"]


def misaligned(gbps_by_size, aligned=20.0, **kw):
    out = []
    for n, g in gbps_by_size:
        out += [gbps_point(aligned, n, memory="pageable", **kw), gbps_point(g, n, memory="pageable-unaligned", **kw)]
    return out


def on_gpu(points, route):
    return [dict(p, device_type="gpu", backend="cuda-rt", route=route) for p in points]


def test_misalignment_that_holds_at_two_neighbouring_sizes_on_two_routes(write_result):
    sizes = [(64, 0.1), (1 << 20, 10.0), (4 << 20, 8.0), (16 << 20, 20.0)]  # 64 B: ignored
    pts = on_gpu(misaligned(sizes), "copy-sync") + on_gpu(misaligned(sizes[:3]), "copy-async")
    f = only(findings_of(write_result, pts, config={"argv": ["x"], "unaligned_offset": 16}), "Unaligned")
    assert f.kind == "guide" and f.title == "Unaligned buffers are slower"
    # The median over the sizes where it holds (2.0x and 2.5x), at the middle one of them.
    assert "cuda-rt copy-sync h2d: a buffer 16 B off a page boundary takes 2.25x the time" in f.text
    assert "over 1 MiB to 4 MiB; at 4 MiB 8.00 against 20.00 GB/s" in f.text
    assert "also cuda-rt copy-async h2d (2.25x)" in f.text
    assert f.evidence == ["run.json#4", "run.json#5"]


def test_misalignment_on_one_route_alone_is_not_a_finding(write_result):
    # The second route is the measurement again: on one route alone it flipped between two runs on the H100.
    pts = on_gpu(misaligned([(1 << 20, 10.0), (4 << 20, 8.0)]), "copy-sync")
    pts += on_gpu(misaligned([(1 << 20, 20.0), (4 << 20, 20.0)]), "copy-async")
    assert not [f for f in findings_of(write_result, pts) if "naligned" in f.title]


def test_misalignment_at_one_size_alone_is_not_a_finding(write_result):
    sizes = [(1 << 20, 10.0), (4 << 20, 20.0), (16 << 20, 8.0)]
    pts = on_gpu(misaligned(sizes), "copy-sync") + on_gpu(misaligned(sizes), "copy-async")
    assert not [f for f in findings_of(write_result, pts) if "naligned" in f.title]


def test_misalignment_on_a_cpu_device_is_context(write_result):
    sizes = [(1 << 20, 10.0), (4 << 20, 8.0)]
    pts = misaligned(sizes) + [dict(p, route="memcpy-mt") for p in misaligned(sizes)]
    f = only(findings_of(write_result, pts), "naligned")
    assert f.kind == "context" and "not a DMA rule" in f.text


def pinned_run(pageable, pinned, staged=None):
    """cuda-rt h2d curves at 64 KiB, 1 MiB, 16 MiB, 64 MiB: GB/s per size for each kind."""
    pts = []
    sizes = (1 << 16, 1 << 20, 1 << 24, 1 << 26)
    for i, n in enumerate(sizes):
        pts.append(dict(gbps_point(pageable[i], n, backend="cuda-rt", route="copy-sync", memory="pageable"),
                        device_type="gpu"))
        pts.append(dict(gbps_point(pinned[i], n, backend="cuda-rt", route="copy-async", memory="pinned"),
                        device_type="gpu"))
        if staged:
            pts.append(dict(gbps_point(staged[i], n, backend="cuda-rt", route="staged", memory="pageable"),
                            device_type="gpu"))
    return pts


def test_pin_or_stage_says_from_which_size_and_what_each_buys(write_result):
    pts = pinned_run(pageable=(5, 10, 8, 6.8), pinned=(6, 30, 50, 54.7), staged=(4, 9, 30, 37))
    fs = findings_of(write_result, pts)
    f = only(fs, "Pin or stage")
    assert f.title == "Pin or stage large buffers (h2d)" and f.kind == "guide"
    assert ("from 1 MiB on a pageable buffer costs: at 64 MiB it moves 6.80 GB/s where pinned memory moves 54.70 "
            "(8.0x, cuda-rt)") in f.text
    assert "the staged copier moves it at 37.00 GB/s (68% of pinned) from 16 MiB on" in f.text
    assert f.evidence == ["run.json#9", "run.json#10", "run.json#11"]
    assert headlines(fs)[0] is f  # the most the user gains, first


def test_pinned_memory_that_pays_only_at_the_largest_size_is_no_headline(write_result):
    fs = findings_of(write_result, pinned_run(pageable=(5, 10, 8, 6.8), pinned=(5, 10, 8, 54.7)))
    assert not [f for f in fs if "Pin or stage" in f.title]


def test_api_overhead_opencl_against_cuda_on_the_wall_clock(write_result):
    pts = [point(backend="cuda-rt", route="copy-sync", nbytes=1, samples=noisy(5e-6, 0.01)),
           point(backend="cuda-rt", route="copy-sync", nbytes=4, samples=noisy(5e-6, 0.01)),
           point(backend="opencl:nvidia", route="copy-sync", nbytes=1, samples=noisy(15e-6, 0.01)),
           point(backend="opencl:nvidia", route="copy-sync", nbytes=4, samples=noisy(15e-6, 0.01))]
    f = only(findings_of(write_result, pts), "API overhead")
    assert f.title == "API overhead: opencl:nvidia against CUDA"
    assert "a 1 B copy-sync h2d costs" in f.text and "through cuda-rt" in f.text
    assert "(3.00x)" in f.text and f.evidence == ["run.json#2", "run.json#0"]


def test_link_below_its_ceiling_and_a_downtrained_link(write_result):
    system = gpu_system(31.5)
    system["accelerators"][0]["link_current"]["width"] = 8
    pts = [dict(gbps_point(12, n, backend="cuda-rt", route="copy-async", memory="pinned"), device_type="gpu",
                link_ceiling_gbps=28.0) for n in (1 << 20, 1 << 24)]
    fs = findings_of(write_result, pts, system=system)
    below = only(fs, "below the link ceiling")
    assert below.kind == "anomaly" and "best 12.00 GB/s" in below.text and "= 43% of the 28.00 GB/s" in below.text
    down = only(fs, "downtrained")
    assert "Gen4 x8 of its Gen4 x16" in down.text
    assert headlines(fs)[0] is down  # the link comes first: it caps everything else


def test_kernel_reading_host_memory_beats_a_copy_up_to_a_size(write_result):
    pts = []
    for n, tk, tc in ((64, 3e-6, 6e-6), (4096, 4e-6, 7e-6), (1 << 20, 200e-6, 40e-6)):
        pts.append(dict(point(backend="cuda-rt", route="kernel-host", memory="pinned", nbytes=n,
                              samples=noisy(tk, 0.01)), device_type="gpu"))
        pts.append(dict(point(backend="cuda-rt", route="copy-async", memory="pinned", nbytes=n,
                              samples=noisy(tc, 0.01)), device_type="gpu"))
    f = only(findings_of(write_result, pts), "Crossover")
    assert "kernel-host vs copy-async (pinned)" in f.title
    assert "beats a copy up to 4 KiB" in f.text and "at 2 of 3 sizes" in f.text
    assert f.evidence == ["run.json#2", "run.json#3"]


def test_unconverged_share(write_result):
    pts = [point(nbytes=n, converged=n > 64) for n in (16, 32, 64, 128, 256)]
    f = only(findings_of(write_result, pts), "unconverged")
    assert f.title == "host: 60% unconverged" and f.text.startswith("3 of 5 ok points")
    assert f.kind == "context"  # how sure the medians are: never a headline


def test_a_step_of_a_transfer_is_no_bandwidth_above_the_link(write_result, tmp_path):
    # OpenCL's map route: the "map" step of 64 MiB takes microseconds (nothing moves), far "above" the link.
    n = 64 << 20
    pts = [dict(gbps_point(20, n, backend="opencl:nvidia", route="map"), device_type="gpu",
                parts={"map": {"median_s": 5e-6, "gbps": n / 5e-6 / 1e9}, "unmap": {"median_s": 3e-3, "gbps": 22.4}})]
    path = write_result("map.json", pts, system=gpu_system(31.5))
    report = analyze(load_runs([path]))
    assert not [f for f in sweep_findings(report) if "above the link" in f.title]
    from xferbench_report.cli import main

    out = tmp_path / "r"
    assert main(["render", str(path), "-o", str(out)]) == 0
    row = next(line for line in (out / "summary.md").read_text().splitlines() if "(map part)" in line)
    assert "a step of the transfer, not a transfer: times only" in row and "13421" not in row


def test_staged_and_plain_against_the_drivers_batched_copy(write_result):
    pts = []
    for n, ts, tb, tp in ((1 << 20, 60e-6, 82e-6, 80e-6), (1 << 24, 500e-6, 1300e-6, 1300e-6)):
        for route, t in (("staged", ts), ("batch-any-order", tb), ("copy-sync", tp)):
            pts.append(dict(point(backend="cuda-rt", route=route, memory="pageable", nbytes=n, samples=[t] * 5),
                            device_type="gpu"))
    fs = findings_of(write_result, pts)
    f = only(fs, "staged vs batch-any-order")
    assert f.title == "Crossover: cuda-rt h2d: staged vs batch-any-order (pageable)"
    assert f.text == "staged copy beats the driver's batched copy from 1 MiB on (60.0 us against 82.0 us there)"
    assert f.evidence == ["run.json#0", "run.json#1"]
    g = only(fs, "batch-any-order vs copy-sync")
    assert g.title == "No crossover: cuda-rt h2d: batch-any-order vs copy-sync (pageable)"


def small_and_big(curves, big, **fields):
    """Two points per curve (backend, route, kind, seconds at 4 KiB, seconds at `big` bytes), small first, each
    with `fields` added: two APIs' curves on one device, for the API-against-API findings."""
    return [dict(point(backend=backend, route=route, memory=kind, nbytes=n, samples=[t] * 5), **fields)
            for backend, route, kind, t_small, t_big in curves for n, t in ((4096, t_small), (big, t_big))]


def test_opencl_against_xrt_on_the_same_card(write_result):
    pts = small_and_big((("opencl:xilinx", "copy-async", "pinned", 40e-6, 8e-3),
                         ("xrt", "bo-sync", "bo-normal", 20e-6, 6e-3)),
                        64 << 20, device_type="accelerator", device_pci="0000:3b:00.0")
    f = only(findings_of(write_result, pts), "OpenCL against XRT")
    assert f.title == "OpenCL against XRT (0000:3b:00.0 h2d)"
    assert f.text == ("one 4 KiB transfer costs 40.0 us through OpenCL and 20.0 us through XRT on the wall clock; "
                      "peaks: OpenCL 8.39 GB/s (copy-async, pinned, 64 MiB), XRT 11.18 GB/s (bo-sync, bo-normal, 64 MiB)")
    assert f.evidence == ["run.json#0", "run.json#2", "run.json#1", "run.json#3"]


def test_a_device_clock_that_misses_host_work(write_result):
    n = 16 << 20
    pts = [dict(gbps_point(40, n, backend="opencl:nvidia", route="copy-async"), device_type="gpu", timer="event",
                wall_stats={"median": n / 4e9, "count": 5})]
    f = only(findings_of(write_result, pts, system=gpu_system(63.0)), "clock misses")
    assert "1 points of 1 curves" in f.text and "40.00 GB/s on the device clock, 4.00 GB/s on the wall clock" in f.text
    assert f.evidence == ["run.json#0"]


def test_staged_copy_against_the_plain_pageable_copy(write_result):
    pts = []
    for n, ts, tp in ((4096, 9e-6, 6e-6), (1 << 20, 60e-6, 80e-6), (1 << 24, 500e-6, 1300e-6)):
        pts.append(dict(point(backend="cuda-rt", route="staged", memory="pageable", nbytes=n, samples=[ts] * 5),
                        device_type="gpu"))
        pts.append(dict(point(backend="cuda-rt", route="copy-sync", memory="pageable", nbytes=n, samples=[tp] * 5),
                        device_type="gpu"))
    f = only(findings_of(write_result, pts), "Crossover")
    assert f.kind == "context"  # the detail behind "Pin or stage large buffers", which has the margin
    assert f.title == "Crossover: cuda-rt h2d: staged vs copy-sync (pageable)"
    assert f.text == "staged copy beats the plain pageable copy from 1 MiB on (60.0 us against 80.0 us there)"
    assert f.evidence == ["run.json#2", "run.json#3"]


def test_vulkan_against_cuda_on_the_same_gpu_leaves_the_cpu_stores_out(write_result):
    pts = small_and_big((("vulkan:nvidia", "copy", "host-coherent", 12e-6, 5.4e-3),
                         ("cuda-rt", "copy-async", "pinned", 8e-6, 4.9e-3),
                         ("vulkan:nvidia", "cpu-store", "device-local-host-visible", 1e-7, 1e-4)),
                        256 << 20, device_type="gpu", device_pci="0000:00:06.0")
    f = only(findings_of(write_result, pts), "Vulkan against CUDA")
    assert f.title == "Vulkan against CUDA (0000:00:06.0 h2d)"
    # The cpu-store points (faster on paper: their time ends before the device has the data) are not the peak.
    assert f.text == ("one 4 KiB transfer costs 12.0 us through Vulkan and 8.00 us through CUDA on the wall clock; "
                      "peaks: Vulkan 49.71 GB/s (copy, host-coherent, 256 MiB), "
                      "CUDA 54.78 GB/s (copy-async, pinned, 256 MiB)")
    assert f.evidence == ["run.json#0", "run.json#2", "run.json#1", "run.json#3"]


def bar_points(latency=True, store=True, cuda=True, pci="0000:00:06.0"):
    """Vulkan's BAR routes and CUDA's copies on one GPU, as issue 18's H100 sweep writes them."""
    pts = []

    def add(backend, route, memory, nbytes, t, **kw):
        pts.append(dict(point(backend=backend, route=route, memory=memory, nbytes=nbytes, samples=[t] * 5, **kw),
                        device_type="gpu", device_pci=pci))

    if latency:  # round trips: the store made visible plus the device's answer
        for n, t_plain, t_nt in ((8, 1.5e-6, 1.4e-6), (64, 1.9e-6, 1.7e-6)):
            add("vulkan:nvidia", "cpu-store-latency", "device-local-host-visible", n, t_plain)
            add("vulkan:nvidia", "cpu-store-nt-latency", "device-local-host-visible", n, t_nt)
    if store:  # the CPU's time to store N bytes
        for n, t in ((8, 0.16e-6), (64, 0.2e-6), (4096, 1e-6), (65536, 12e-6), (1 << 20, 200e-6)):
            add("vulkan:nvidia", "cpu-store", "device-local-host-visible", n, t)
    if cuda:  # copy-async timed by events, its wall clock beside
        for n, t_sync, t_async in ((4, 4.2e-6, 5e-6), (8, 4.2e-6, 5e-6), (64, 4.3e-6, 5e-6), (4096, 5e-6, 6e-6),
                                   (65536, 8e-6, 9e-6), (1 << 20, 40e-6, 30e-6)):
            add("cuda-rt", "copy-sync", "pinned", n, t_sync)
            add("cuda-rt", "copy-async", "pinned", n, 2e-6, timer="event",
                wall_stats={"median": t_async, "count": 5})
    return pts


def test_bar_store_against_cudas_copy_says_where_each_wins(write_result):
    pts = bar_points()
    f = only(findings_of(write_result, pts), "BAR store")
    assert f.title == "BAR store against CUDA's copy (0000:00:06.0 h2d)"
    # 4 KiB: cpu-store's 1 us plus the 8 B round trip (1.4 us) = 2.4 us < 5 us; 64 KiB: 13.4 us > 8 us (copy-sync);
    # copy-async's 2 us on its event clock never counts: what a program waits for is its wall clock.
    assert f.text == ("a CPU store of 8 B into device memory is seen by the device within 1.40 us "
                      "(cpu-store-nt-latency: a round trip, an upper bound) against 4.20 us for CUDA's 8 B copy (copy-sync, pinned, wall "
                      "clock); the BAR store is faster up to 4 KiB (2.40 us against 5.00 us), CUDA's copy from "
                      "64 KiB (8.00 us against 13.4 us); above 64 B the BAR's time is cpu-store's plus the 8 B "
                      "round trip")
    idx = {(p["route"], p["bytes"]): i for i, p in enumerate(pts)}
    want = [idx[("cpu-store-nt-latency", 8)], idx[("copy-sync", 8)], idx[("cpu-store", 4096)],
            idx[("copy-sync", 4096)], idx[("cpu-store", 65536)], idx[("copy-sync", 65536)]]
    assert f.evidence == [f"run.json#{i}" for i in want]


def test_bar_store_needs_both_sides_on_the_same_gpu(write_result):
    for pts in (bar_points(latency=False), bar_points(cuda=False),
                bar_points(cuda=False) + [p for p in bar_points(latency=False, store=False)
                                          if p.update(device_pci="0000:41:00.0") is None]):
        assert not [f for f in findings_of(write_result, pts) if "BAR store" in f.title]


def test_bar_store_faster_at_every_common_size_without_the_bandwidth_curve(write_result):
    f = only(findings_of(write_result, bar_points(store=False)), "BAR store")
    assert f.text.endswith("the BAR store is faster up to 64 B (1.70 us against 4.30 us), at every size both measured")


def together_points(alone=True, agg=(30.0, 50.0), shares=((15.0, 25.0), (15.0, 25.0)), alone_gbps=(28.0, 28.0)):
    """`sweep --together` on two GPUs (copy-async, pinned, h2d, 1 and 16 MiB): each alone, then each device's share
    at once and the aggregate (device -1), as the C++ tool writes them."""
    pts = []
    sizes = (1 << 20, 1 << 24)
    at = {"devices": [0, 1]}
    base = dict(backend="cuda-rt", route="copy-async", memory="pinned")
    if alone:
        for dev, g in enumerate(alone_gbps):
            pts += [dict(gbps_point(g * (0.5 if n == sizes[0] else 1), n, **base), device_index=dev,
                         device_type="gpu") for n in sizes]
    for k, n in enumerate(sizes):
        pts += [dict(gbps_point(shares[dev][k], n, **base), device_index=dev, device_type="gpu",
                     concurrent=dict(at, role="device")) for dev in (0, 1)]
        pts.append(dict(gbps_point(agg[k], n, **base), device_index=-1, device="2 devices at once",
                        device_type="gpu", concurrent=dict(at, role="aggregate", sum_of_devices_gbps=sum(
                            s[k] for s in shares))))
    return pts


def test_devices_at_once_against_their_sum_alone(write_result):
    pts = together_points()
    fs = findings_of(write_result, pts, system=gpu_system(31.5))
    f = only(fs, "devices at once")
    assert f.kind == "guide" and "is the limit" not in f.text  # 89% scales (AT_ONCE_SCALES: 80%)
    assert f.title == "cuda-rt h2d, 2 devices at once: 89% of their sum alone"
    assert f.text.startswith("2 devices at once move 50.00 GB/s in all (copy-async · pinned, 16 MiB), 89% of the "
                             "56.00 GB/s they reach one at a time (28.00 each); at once each ran 25.00.")
    # The aggregate, the two alone and the two shares at 16 MiB: positions in the file.
    assert f.evidence == ["run.json#9", "run.json#1", "run.json#3", "run.json#7", "run.json#8"]
    # 50 GB/s in all is over one link's 31.5 but under the two links': not a point above the ceiling.
    assert not [x for x in fs if "above the link ceiling" in x.title]


def test_devices_at_once_that_share_a_bottleneck_are_an_anomaly(write_result):
    pts = together_points(agg=(20.0, 30.0), shares=((10.0, 15.0), (10.0, 15.0)))
    f = only(findings_of(write_result, pts, system=gpu_system(31.5)), "devices at once")
    assert f.kind == "anomaly" and "54%" in f.title  # 30 of 56
    assert "something they share (host memory, the root complex, the CPUs) is the limit" in f.text


def test_together_only_has_no_sum_to_hold_the_aggregate_to(write_result):
    pts = together_points(alone=False)
    f = only(findings_of(write_result, pts, system=gpu_system(31.5)), "devices at once")
    assert f.title == "cuda-rt h2d, 2 devices at once" and f.kind == "guide"
    assert "one at a time was not measured (--together-only)" in f.text


def test_points_at_once_stay_out_of_the_devices_own_curves(write_result):
    report = analyze(load_runs([write_result("run.json", together_points(), system=gpu_system(31.5))]))
    names = [g.name for g in report.groups]
    assert names == ["cuda-rt dev0", "cuda-rt dev1", "cuda-rt dev0 (2 at once)", "cuda-rt dev1 (2 at once)",
                     "cuda-rt all 2 at once"]
    alone0 = next(c for c in report.curves if c.group.name == "cuda-rt dev0")
    assert [round(alone0.gbps(p), 2) for p in alone0.points] == [14.0, 28.0]  # alone, not its share at once
    agg = next(c for c in report.curves if c.group.at_once == "aggregate")
    assert agg.link_limit == 2 * alone0.link_limit


def peer_points(rates, path="peer (peer access on: the devices' own link)"):
    """`xferbench peer` as the C++ tool writes it: one d2d point per (source, destination), 256 MiB."""
    return [dict(gbps_point(g, 1 << 28, backend="cuda-rt", route="peer", direction="d2d", memory="none"),
                 device_index=a, peer_device_index=b, device_type="gpu",
                 peer_path="local (device memory to device memory on one device)" if a == b else path)
            for (a, b), g in rates.items()]


def test_the_peer_matrix_keeps_every_pair_and_names_a_slow_one(write_result):
    rates = {(a, b): (1400.0 if a == b else 390.0) for a in range(3) for b in range(3)}
    rates[(1, 2)] = 50.0  # through the host, say
    report = analyze(load_runs([write_result("run.json", peer_points(rates))]))
    assert sum(len(c.points) for c in report.curves) == 9  # no pair dropped behind another at the same size
    f = only(sweep_findings(report), "peer matrix")
    assert f.title == "cuda-rt peer matrix (3 devices)" and f.kind == "anomaly"
    assert f.text.startswith("between two devices 50.00-390.0 GB/s (256 MiB copies; peer (peer access on: the "
                             "devices' own link)); within one device 1400.0 GB/s. 1 of 6 pairs run under 80% of the "
                             "pairs' median (390.0 GB/s); the slowest, dev1 to dev2, at 50.00")
    assert f.evidence == ["run.json#5"]


def test_an_even_peer_matrix_is_guidance(write_result):
    rates = {(a, b): (1400.0 if a == b else 390.0 + a + b) for a in range(2) for b in range(2)}
    f = only(findings_of(write_result, peer_points(rates)), "peer matrix")
    assert f.kind == "guide" and "between two devices 391.0 GB/s" in f.text and "slowest" not in f.text
