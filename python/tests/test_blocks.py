"""The many-blocks workload in the report (`xferbench sweep --blocks`, docs/blocks.md): block points kept out of
the plain sweep's curves, a figure of GB/s against block size per way, and the finding that says which way wins at
which block size and by how much, on constructed points and on a real host-backend run."""

import json
import os
import subprocess
from pathlib import Path

import pytest

from conftest import gpu_system, noisy, point
from xferbench_report.blocks import block_sets
from xferbench_report.findings import headline_agreement
from xferbench_report.units import format_size
from xferbench_report.load import load_run
from xferbench_report.render import judge, render
from xferbench_report.spread import quantile

BIN = os.environ.get("XFERBENCH_BIN")
TOTAL = 64 << 20
SIZES = [4096, 16384, 65536, 262144, 1 << 20]


def block_point(route, block, seconds, direction="h2d", memory="pinned", device_type="gpu", spread=0.02, seed=0):
    p = point(backend="cuda-rt", route=route, direction=direction, memory=memory, nbytes=TOTAL,
              samples=noisy(seconds, spread, seed=seed), block_bytes=block, blocks=TOTAL // block)
    p["device_type"] = device_type
    return p


def fixture_points(device_type="gpu", pack_until=16384):
    """pack wins at the small blocks (by 3x over loop), loop at the large ones (by 1.5x over pack); batch always
    between; the choice follows the winner; one contiguous copy is the ceiling."""
    pts = []
    for i, b in enumerate(SIZES):
        loop = 3e-3 if b <= pack_until else 1e-3
        pack = 1e-3 if b <= pack_until else 1.5e-3
        for route, t in (("blocks-loop", loop), ("blocks-pack", pack), ("blocks-batch", 2e-3 if b <= pack_until
                                                                           else 1.2e-3),
                         ("blocks-auto", min(loop, pack) * 1.02)):
            pts.append(block_point(route, b, t, device_type=device_type, seed=i))
    pts.append(block_point("blocks-contiguous", TOTAL, 0.9e-3, device_type=device_type))
    skipped = point(backend="cuda-rt", route="blocks-kernel", nbytes=TOTAL, status="skipped",
                    reason="the kernel way needs page-locked memory")
    skipped.update(block_bytes=4096, host_memory="pinned", device_type=device_type)
    return pts + [skipped]


def block_finding(findings):
    found = [f for f in findings if f.title.startswith("Fastest way to move many blocks")]
    assert len(found) <= 1
    return found[0] if found else None


def test_block_points_stay_out_of_the_plain_curves(write_result):
    path = write_result("b.json", fixture_points() + [point(route="memcpy", nbytes=4096)], system=gpu_system())
    run = load_run(path)
    assert [p.route for p in run.points] == ["memcpy"]
    assert len(run.block_points) == len(fixture_points())
    (s,) = block_sets([run])
    assert s.block_sizes == SIZES
    assert s.contiguous.gbps == pytest.approx(TOTAL / 0.9e-3 / 1e9, rel=0.05)
    win, other = s.winner(4096)
    assert (win.route, other.route) == ("blocks-pack", "blocks-batch")
    win, other = s.winner(1 << 20)
    assert (win.route, other.route) == ("blocks-loop", "blocks-batch")


def test_the_finding_names_each_ways_block_sizes_and_its_factor(write_result):
    path = write_result("b.json", fixture_points(), system=gpu_system())
    _, _, findings = judge([path])
    f = block_finding(findings)
    assert f is not None and f.kind == "guide"
    assert "blocks-pack from 4 KiB to 16 KiB (2.00x the next way, blocks-batch)" in f.text
    assert "blocks-loop from 64 KiB to 1 MiB (1.20x the next way, blocks-batch)" in f.text
    assert "library's choice (blocks-auto) was within the noise of the best way at each of 5 block sizes" in f.text
    assert f.claims == {f"cuda-rt dev0, h2d, pinned, 64 MiB arrays at {format_size(b)}":
                        "blocks-pack" if b <= 16384 else "blocks-loop" for b in SIZES}
    assert f.evidence and all(e.startswith("b.json#") for e in f.evidence)


def test_no_finding_from_one_block_size_or_within_the_spread(write_result):
    # pack wins at 4 KiB alone: one size is what a rerun contradicts; loop's range stays.
    path = write_result("one.json", fixture_points(pack_until=4096), system=gpu_system())
    f = block_finding(judge([path])[2])
    assert "blocks-pack" not in f.text.split(";")[0] and "blocks-loop from 16 KiB to 1 MiB" in f.text
    # Every way within the others' spread: no winner anywhere, no finding.
    flat = [block_point(r, b, 1e-3, spread=0.3, seed=k) for b in SIZES
            for k, r in enumerate(("blocks-loop", "blocks-pack"))]
    assert block_finding(judge([write_result("flat.json", flat, system=gpu_system())])[2]) is None


def two_ways(kernel_s, batch_s, n, spread, seed):
    """kernel and batch at every size of SIZES, n samples each around the given medians."""
    return [block_point(r, b, t, spread=spread, seed=seed + 10 * i + k)
            for i, b in enumerate(SIZES) for k, (r, t) in enumerate((("blocks-kernel", kernel_s),
                                                                    ("blocks-batch", batch_s)))]


def with_samples(points, n):
    return [dict(p, samples_s=p["samples_s"][:n]) for p in points]


def test_a_winner_a_rerun_turns_over_is_not_claimed(write_result):
    """Two runs of two ways whose times overlap (each around 1 ms, 8% apart in the first run's draw and the other
    way round in the second's): as one sample a point each, the first run's kernel wins everywhere and the second
    run's batch does; the finding must claim neither, and the two runs must not contradict each other."""
    runs = []
    for name, (kernel_s, batch_s), seed in (("one.json", (1.00e-3, 1.08e-3), 1), ("two.json", (1.08e-3, 1.00e-3), 2)):
        pts = with_samples(two_ways(kernel_s, batch_s, 20, 0.12, seed), 1)
        runs.append(write_result(name, pts, system=gpu_system()))
    first, second = (judge([r])[2] for r in runs)
    for fs, path in ((first, runs[0]), (second, runs[1])):
        assert block_finding(fs) is None
        (s,) = block_sets([load_run(path)])
        assert all(s.winner(b)[0] is None for b in SIZES)
    agreed = headline_agreement(first, second)
    assert not agreed.claims_contradicted and agreed.agrees
    # The table says why there is no winner.
    out, _, _ = render([runs[0]], runs[0].parent / "report")
    assert "too few samples (1): blocks-kernel, blocks-batch" in (out / "summary.md").read_text()


def test_a_difference_inside_the_margin_is_not_claimed_however_tight_the_samples(write_result):
    # 20 samples within 0.5% of each median, 6% apart: beyond the samples' spread, not beyond what moves between
    # two runs (the margin, 10%).
    path = write_result("tight.json", two_ways(1.00e-3, 1.06e-3, 20, 0.005, 3), system=gpu_system())
    assert block_finding(judge([path])[2]) is None
    out, _, _ = render([path], path.parent / "report")
    assert "within the noise: blocks-kernel, blocks-batch" in (out / "summary.md").read_text()
    # 12% apart: claimed at every size.
    path = write_result("apart.json", two_ways(1.00e-3, 1.12e-3, 20, 0.005, 3), system=gpu_system())
    f = block_finding(judge([path])[2])
    assert f is not None and "blocks-kernel from 4 KiB to 1 MiB (1.12x the next way, blocks-batch)" in f.text


def test_two_runs_that_name_different_winners_disagree(write_result, capsys):
    from xferbench_report.cli import main

    one = write_result("one.json", two_ways(1.0e-3, 1.5e-3, 20, 0.02, 4), system=gpu_system())
    same = write_result("same.json", two_ways(1.0e-3, 1.4e-3, 20, 0.02, 5), system=gpu_system())
    other = write_result("other.json", two_ways(1.5e-3, 1.0e-3, 20, 0.02, 6), system=gpu_system())
    agreed = headline_agreement(judge([one])[2], judge([same])[2])
    assert len(agreed.claims_repeated) == len(SIZES) and agreed.agrees
    turned = headline_agreement(judge([one])[2], judge([other])[2])
    assert len(turned.claims_contradicted) == len(SIZES) and not turned.agrees
    subject, first, second = turned.claims_contradicted[0]
    assert (subject, first, second) == ("cuda-rt dev0, h2d, pinned, 64 MiB arrays at 4 KiB", "blocks-kernel",
                                        "blocks-batch")
    assert main(["headlines", str(one), str(same)]) == 0
    assert "claims: 5 repeated, 0 contradicted" in capsys.readouterr().out
    assert main(["headlines", str(one), str(other)]) == 1
    out = capsys.readouterr().out
    assert ("contradicted: cuda-rt dev0, h2d, pinned, 64 MiB arrays at 4 KiB: blocks-kernel in the first, "
            "blocks-batch in the second") in out and "the runs disagree" in out


def test_the_choice_below_the_best_way_is_named_only_beyond_the_noise(write_result):
    pts = two_ways(1.0e-3, 1.5e-3, 20, 0.02, 7)
    # The choice: the kernel's time at the small sizes, 1.3x it from 256 KiB, 1.05x at 64 KiB (within the margin).
    pts += [block_point("blocks-auto", b, 1.0e-3 * (1.3 if b >= 262144 else 1.05 if b == 65536 else 1.0),
                        spread=0.02, seed=50 + i) for i, b in enumerate(SIZES)]
    f = block_finding(judge([write_result("auto.json", pts, system=gpu_system())])[2])
    assert ("the library's choice (blocks-auto) was within the noise of the best way at 3 of 5 block sizes, below it "
            "at 256 KiB (77% of blocks-kernel), 1 MiB (77% of blocks-kernel)") in f.text


def test_a_cpu_stand_in_is_context(write_result):
    path = write_result("cpu.json", fixture_points(device_type="cpu"))
    f = block_finding(judge([path])[2])
    assert f.kind == "context" and "CPU stand-in" in f.text


def test_the_report_draws_a_figure_per_set_and_tables_each_way(write_result, tmp_path):
    pts = fixture_points() + [dict(p, direction="d2h") for p in fixture_points()]
    path = write_result("b.json", pts, system=gpu_system())
    out, nfig, _ = render([path], tmp_path / "report")
    summary = (out / "summary.md").read_text()
    assert "## Many small blocks" in summary
    assert (out / "plots" / "blocks-0.png").is_file() and (out / "plots" / "blocks-1.png").is_file()
    assert "| 4 KiB |" in summary and "blocks-pack (2.00x blocks-batch)" in summary
    assert "blocks-kernel did not run: the kernel way needs page-locked memory" in summary
    assert nfig >= 2


def test_a_block_run_alone_says_what_it_holds_and_has_no_empty_sections(write_result, tmp_path):
    """A `sweep --blocks` file has block points only: the report said "0 backends ()" and opened empty sweep
    sections (bandwidth, time, first use, API, peaks, "None: every point ran" beside a skipped block point)."""
    path = write_result("b.json", fixture_points(), system=gpu_system())
    out, _, _ = render([path], tmp_path / "report")
    md = (out / "summary.md").read_text()
    assert "0 backends" not in md and "()" not in md
    assert ("A many-blocks run (xferbench sweep --blocks): 22 block points of cuda-rt (21 ok, 1 skipped), under "
            "'Many small blocks'.") in md
    headings = [line for line in md.splitlines() if line.startswith("## ")]
    assert headings == ["## Findings", "## Many small blocks", "## Runs and system"], headings
    row = next(line for line in md.splitlines() if line.startswith("| b.json |"))
    assert row.endswith("| cuda-rt | 21 / 1 / 0 |")
    # Beside a plain sweep the sweep's sections are back, and the block points are counted apart.
    path = write_result("both.json", fixture_points() + [point(route="memcpy", nbytes=n) for n in (16, 4096)],
                        system=gpu_system())
    md = (render([path], tmp_path / "both")[0] / "summary.md").read_text()
    assert "1 backend (host), 2 ok / 0 skipped / 0 failed points. 22 block points of cuda-rt (21 ok, 1 skipped)" in md
    assert "## Bandwidth against size" in md and "## Peaks and cost model" in md


@pytest.mark.skipif(not BIN, reason="XFERBENCH_BIN is not set (path to the xferbench binary)")
def test_a_real_host_run_is_drawn_and_judged(tmp_path):
    """A real run: every point verified, one figure, a table row per block size, and the finding exactly where the
    raw samples put a winner beyond the noise (five samples each, beyond the runner-up's spread, by 10%) at two
    neighbouring block sizes (on a loaded 2-core machine the spread decides whether there is one; what the report
    says must follow from the samples)."""
    result = tmp_path / "blocks.json"
    env = dict(os.environ, XFER_BLOCKS_CACHE="off")
    sizes = [256 << 10, 1 << 20, 2 << 20]
    subprocess.run([BIN, "sweep", "-b", "host", "-r", "blocks-loop,blocks-pack,blocks-contiguous", "-m", "pageable",
                    "-d", "h2d", "--block-sizes", "256K,1M,2M", "--blocks-total", "16M", "--max-time", "0.3", "-q",
                    "--json", str(result)], check=True, env=env, timeout=120)
    doc = json.loads(result.read_text())
    ways = [p for p in doc["results"] if p["route"] != "blocks-contiguous"]
    assert sorted({p["block_bytes"] for p in ways}) == sizes
    assert all(p["verified"] and p["blocks"] * p["block_bytes"] == p["bytes"] for p in doc["results"])
    out, nfig, findings = render([result], tmp_path / "report")
    assert nfig == 1 and (out / "plots" / "blocks-0.png").is_file()
    summary = (out / "summary.md").read_text()
    assert all(f"| {s} |" in summary for s in ("256 KiB", "1 MiB", "2 MiB"))

    def p95_p5(p):  # the spread as docs/findings.md defines it
        return quantile(p["samples_s"], 0.95), quantile(p["samples_s"], 0.05)

    winners = []
    for b in sizes:
        loop, pack = ([p for p in ways if p["route"] == r and p["block_bytes"] == b][0]
                      for r in ("blocks-loop", "blocks-pack"))
        fast, slow = (loop, pack) if loop["median_s"] < pack["median_s"] else (pack, loop)
        apart = (p95_p5(fast)[0] < p95_p5(slow)[1] and slow["median_s"] >= 1.1 * fast["median_s"]
                 and min(len(fast["samples_s"]), len(slow["samples_s"])) >= 5)
        winners.append(fast["route"] if apart else None)
    runs = [(w, k) for k, w in enumerate(winners) if w and k + 1 < len(winners) and winners[k + 1] == w]
    f = block_finding(findings)
    if not runs:
        assert f is None, f.text
    else:
        assert f is not None and f.kind == "context"
        route, k = runs[0]
        assert f.text.startswith(f"host dev0, h2d, pageable, 16 MiB arrays: {route} from ")
        assert "one contiguous copy of the same bytes moves" in f.text
