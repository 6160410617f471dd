import copy
import gzip
import json
import math
import random

import pytest

from xferbench_report import load
from xferbench_report.cli import main
from xferbench_report.compare import TOO_FEW, compare_runs
from xferbench_report.load import load_run

from conftest import gpu_system, noisy, point


def run_of(write_result, name, points, **kw):
    return load_run(write_result(name, points, **kw))


def scaled(p, factor):
    """A copy of point dict p with every sample (and the median) times factor."""
    q = copy.deepcopy(p)
    q["samples_s"] = [s * factor for s in q["samples_s"]]
    q["median_s"] *= factor
    return q


def sweep(seed, n_points=40, spread=0.03, samples=20):
    rng = random.Random(seed)
    return [point(nbytes=1 << k, samples=noisy(1e-6 * (1 << k) / 1024 * (1 + rng.random()), spread, n=samples,
                                               seed=seed * 1000 + k))
            for k in range(n_points)]


def test_identical_samples_are_the_same_and_exit_0(write_result, capsys):
    pts = sweep(1)
    base = write_result("base.json", pts)
    new = write_result("new.json", pts)
    assert main(["compare", str(base), str(new)]) == 0
    out = capsys.readouterr().out
    assert "compared 40 points: 0 faster, 0 slower, 40 same" in out


def test_ten_percent_slower_on_part_of_real_samples_is_caught(data, tmp_path, capsys):
    # Real samples (a host sweep on the 2-core CI machine), a quarter of the points made 10% slower.
    doc = json.loads((data / "host_small.json").read_text())
    slowed = set(range(0, len(doc["results"]), 4))
    new = copy.deepcopy(doc)
    new["results"] = [scaled(p, 1.10) if i in slowed else p for i, p in enumerate(doc["results"])]
    (tmp_path / "new.json").write_text(json.dumps(new))
    base_run, new_run = load_run(data / "host_small.json"), load_run(tmp_path / "new.json")
    cmp = compare_runs(base_run, new_run)
    verdicts = {r.base.index: r.verdict for r in cmp.rows}
    flagged = {i for i, v in verdicts.items() if v == "slower"}
    # All but one of the six are caught, and nothing else: point 20's 26 samples spread from -12% to +25%
    # (and two outliers at 8x and 23x), so 10% more is not significant alone (p = 0.016) nor after BH.
    assert flagged == slowed - {20}
    assert all(v == "same" for i, v in verdicts.items() if i not in slowed)
    assert main(["compare", str(data / "host_small.json"), str(tmp_path / "new.json")]) == 1
    assert capsys.readouterr().out.count("SLOWER") == len(flagged)


def test_ten_percent_slower_on_part_of_an_independent_resample_is_caught(write_result):
    # NEW's samples are fresh draws (3% spread), centred on BASE's medians (no run-to-run shift: that case
    # is docs/compare.md's "rerun" figure), with an eighth of its points 10% slower.
    base = sweep(1)
    new = _recentred(base, sweep(2))
    cmp = compare_runs(run_of(write_result, "b.json", base), run_of(write_result, "n.json", new))
    slow = {i for i, r in enumerate(cmp.rows) if r.verdict == "slower"}
    assert slow == set(range(0, 40, 8))
    assert cmp.regressed


def _recentred(base, new):
    """new's points moved so their medians match base's, except those scaled by 1.10 (kept 10% above)."""
    out = []
    for i, (b, n) in enumerate(zip(base, new)):
        factor = b["median_s"] / n["median_s"] * (1.10 if i % 8 == 0 else 1.0)
        q = copy.deepcopy(n)
        q["samples_s"] = [s * factor for s in n["samples_s"]]
        q["median_s"] = b["median_s"] * (1.10 if i % 8 == 0 else 1.0)
        out.append(q)
    return out


def test_faster_is_reported_and_exits_0(write_result, capsys):
    base = write_result("base.json", [point(samples=noisy(2e-6, 0.01, seed=7))])
    new = write_result("new.json", [point(samples=noisy(1e-6, 0.01, seed=8))])
    assert main(["compare", str(base), str(new)]) == 0
    out = capsys.readouterr().out
    assert "1 faster, 0 slower" in out and "0.50" in out


def test_change_below_the_minimum_effect_is_the_same(write_result, capsys):
    # 3% slower with no spread at all: the U test is certain, but 3% < the default 5% minimum effect.
    base = write_result("base.json", [point(samples=[1.0e-6 * (1 + k * 1e-4) for k in range(20)])])
    new = write_result("new.json", [point(samples=[1.03e-6 * (1 + k * 1e-4) for k in range(20)])])
    assert main(["compare", str(base), str(new)]) == 0
    capsys.readouterr()
    assert main(["compare", "--min-effect", "0.02", str(base), str(new)]) == 1
    assert main(["compare", "--tolerance", "0.02", str(base), str(new)]) == 1  # the old name still works
    assert main(["compare", "--tolerance", "0.05", str(base), str(new)]) == 0
    capsys.readouterr()
    for bad in (["--tolerance", "2"], ["--min-effect", "-0.1"], ["--noise-floor", "-1"], ["--fdr", "0"],
                ["--min-effect", "nan"]):
        assert main(["compare", *bad, str(base), str(new)]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "must be" in err


def test_overlapping_samples_are_not_significant(write_result):
    # A 10% higher median, but both runs' samples spread +/-40% over only 6 samples: the U test is not convinced.
    b = run_of(write_result, "b.json", [point(samples=noisy(1e-6, 0.40, n=6, seed=5))])
    n = run_of(write_result, "n.json", [point(samples=[s * 1.10 for s in noisy(1e-6, 0.40, n=6, seed=6)])])
    cmp = compare_runs(b, n, min_effect=0.0)
    assert [r.verdict for r in cmp.rows] == ["same"]
    assert cmp.rows[0].q > 0.05


def test_noise_floor_keeps_a_noisy_rerun_quiet(write_result, capsys):
    # Every point's samples are tight (0.5%), but the run as a whole moved: each point's median by a random
    # factor with a 4% spread, as a busy machine does between runs. Without the noise floor, points beyond
    # the 5% minimum effect are flagged; with it, the allowance grows with that spread and none is.
    rng = random.Random(3)
    base = sweep(4, spread=0.005)
    new = [scaled(p, math.exp(rng.gauss(0, 0.04))) for p in base]
    b, n = run_of(write_result, "b.json", base), run_of(write_result, "n.json", new)
    loud = compare_runs(b, n, noise_floor=0)
    assert loud.count("slower") + loud.count("faster") > 0
    quiet = compare_runs(b, n)
    assert quiet.count("slower") == quiet.count("faster") == 0
    assert quiet.allowance == pytest.approx(math.expm1(25 * quiet.noise_sigma))
    assert 0.02 < quiet.noise_sigma < 0.06
    assert main(["compare", str(b.path), str(n.path)]) == 0
    assert "note: the noise floor sets the allowance" in capsys.readouterr().out


def test_a_machine_too_noisy_to_resolve_changes_says_so_first(write_result, capsys):
    """A pair whose medians move by ~30% point to point (a loaded machine): the allowance is x1000 and more, every
    point 'same'; the advice to measure on a quiet machine is the first line, before the verdicts, not after."""
    rng = random.Random(5)
    base = sweep(5, spread=0.005)
    new = [scaled(p, math.exp(rng.gauss(0, 0.3))) for p in base]
    b, n = write_result("b.json", base), write_result("n.json", new)
    assert main(["compare", str(b), str(n)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("note: the noise floor sets the allowance to x")
    assert float(lines[0].split(" to x", 1)[1].split(":")[0]) > 100
    assert "cannot resolve a change smaller than that" in lines[0] and "quiet machine" in lines[0]
    assert lines[1] == "settings: not compared: neither file records settings"  # then the settings, in one line
    assert lines[2].startswith("backend ") and all(line.endswith(" same") for line in lines[3:43])
    assert not any(line.startswith("note:") for line in lines[1:])  # said once, at the top


def test_the_note_follows_compares_own_threshold(write_result):
    """The note shows exactly where the rule's noise term exceeds the minimum effect (the allowance's own max), and a
    quiet pair gets none."""
    from xferbench_report.compare import format_comparison

    base = sweep(6, spread=0.005)
    for spread, noisy_pair in ((0.0, False), (0.001, False), (0.004, True), (0.05, True)):
        rng = random.Random(7)
        new = [scaled(p, math.exp(rng.gauss(0, spread))) for p in base]
        cmp = compare_runs(run_of(write_result, "b.json", base), run_of(write_result, "n.json", new))
        assert (cmp.noise_floor * cmp.noise_sigma > math.log1p(cmp.min_effect)) == noisy_pair, spread
        assert format_comparison(cmp).startswith("note: ") == noisy_pair
        assert (cmp.allowance > cmp.min_effect + 1e-12) == noisy_pair


def test_too_few_samples_cannot_be_judged(write_result, capsys):
    # Two samples a side: even all of NEW above all of BASE has p = 1/6, so no verdict is possible.
    base = write_result("base.json", [point(samples=[1e-6, 1.01e-6]), point(nbytes=8192, samples=noisy(1e-6, 0.01))])
    new = write_result("new.json", [point(samples=[2e-6, 2.01e-6]), point(nbytes=8192, samples=noisy(1e-6, 0.01))])
    assert main(["compare", str(base), str(new)]) == 0
    out = capsys.readouterr().out
    assert TOO_FEW in out and "1 too few samples to judge" in out


def test_newly_failed_point_is_a_regression(write_result, capsys):
    base = write_result("base.json", [point(), point(nbytes=8192)])
    new = write_result("new.json", [point(), point(nbytes=8192, status="failed", reason="cudaMemcpy: error 700",
                                                   samples=[])])
    assert main(["compare", str(base), str(new)]) == 1
    out = capsys.readouterr().out
    assert "FAILED: cudaMemcpy: error 700" in out and "1 now failed" in out


def test_skipped_new_and_unmatched_points_are_counted_not_judged(write_result, capsys):
    base = write_result("base.json", [point(), point(nbytes=8192), point(nbytes=16384, status="skipped", reason="x"),
                                      point(nbytes=1 << 20)])
    new = write_result("new.json", [point(), point(nbytes=8192, status="skipped", reason="no pinned memory"),
                                    point(nbytes=16384), point(nbytes=1 << 21)])
    assert main(["compare", "--changes-only", str(base), str(new)]) == 0
    out = capsys.readouterr().out
    assert "1 now skipped, 1 now ok, 1 only in BASE, 1 only in NEW" in out
    assert " same" not in out.splitlines()[1]  # --changes-only hides the unchanged


def test_no_common_points_is_one_line_and_exit_2(write_result, capsys):
    base = write_result("base.json", [point(backend="cuda-rt")])
    other = write_result("other.json", [point(backend="cuda-drv")])
    assert main(["compare", str(base), str(other)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "have no ok point in common" in err
    # A file with no ok point at all has nothing in common with anything either.
    none_ok = write_result("none.json", [point(status="skipped", reason="x")])
    assert main(["compare", str(base), str(none_ok)]) == 2


def test_other_machine_warns_and_same_machine_refuses(write_result, capsys):
    pts = [point(backend="cuda-rt", samples=noisy(1e-6, 0.01, seed=9))]
    base = write_result("base.json", pts, system=gpu_system())
    other_sys = gpu_system()
    other_sys["hostname"] = "h2"
    other_sys["accelerators"][0]["pci_address"] = "0000:41:00.0"
    new = write_result("new.json", pts, system=other_sys)
    same = write_result("same.json", pts, system=gpu_system())
    assert main(["compare", str(base), str(new)]) == 0
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "warning: the files come from different machines" in err
    assert "hostname g vs h2" in err and "0000:01:00.0 0x10de vs 0000:41:00.0 0x10de" in err
    assert main(["compare", "--same-machine", str(base), str(new)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "come from different machines" in err
    assert main(["compare", "--same-machine", str(base), str(same)]) == 0
    assert capsys.readouterr().err == ""


def test_gzipped_files_compare_like_plain_ones(write_result, tmp_path, capsys):
    pts = sweep(5, n_points=6)
    plain = write_result("base.json", pts)
    gz = tmp_path / "base.json.gz"
    gz.write_bytes(gzip.compress(plain.read_bytes()))
    new = write_result("new.json", [scaled(p, 1.2) if i == 0 else p for i, p in enumerate(pts)])
    assert main(["compare", str(plain), str(new)]) == 1
    expected = capsys.readouterr().out
    assert main(["compare", str(gz), str(new)]) == 1
    assert capsys.readouterr().out == expected


def test_unreadable_or_malformed_files_exit_3_in_one_line(data, tmp_path, monkeypatch, capsys):
    good = str(data / "single_point.json")
    cut = tmp_path / "cut.json.gz"
    cut.write_bytes(gzip.compress((data / "single_point.json").read_bytes())[:40])
    fake = tmp_path / "fake.json.gz"
    fake.write_bytes(b"\x1f\x8b this is not gzip data")
    bomb = tmp_path / "bomb.json.gz"
    bomb.write_bytes(gzip.compress(b" " * 5000 + (data / "single_point.json").read_bytes()))
    monkeypatch.setattr(load, "MAX_FILE_BYTES", 4096)  # the bound, made small so a small file exceeds it
    bad = [data / n for n in ("not_json.json", "wrong_schema.json", "future_version.json", "negative_samples.json")]
    bad += [tmp_path / "absent.json", tmp_path, cut, fake, bomb]
    for path in bad:
        for args in ([good, str(path)], [str(path), good]):
            assert main(["compare", *args]) == 3, path
            captured = capsys.readouterr()
            assert captured.err.startswith("xferbench-report: error: ") and captured.err.count("\n") == 1, path
            assert "Traceback" not in captured.err and captured.out == ""
    assert "larger than" in (main(["compare", good, str(bomb)]), capsys.readouterr().err)[1]
    big = tmp_path / "big.json"
    big.write_bytes(b" " * 5000)  # over the bound before any decompression
    assert main(["compare", good, str(big)]) == 3 and "larger than" in capsys.readouterr().err


def test_points_at_once_are_compared_with_their_own_kind(write_result):
    """A device's share at once (sweep --together) is not the same measurement as the device alone: each is
    matched with its own kind in the other file, and every point gets a row."""
    at = {"devices": [0, 1]}
    pts = [point(nbytes=1 << 20, samples=noisy(1e-4, 0.01), device_index=d) for d in (0, 1)]
    pts += [point(nbytes=1 << 20, samples=noisy(2e-4, 0.01, seed=d), device_index=d,
                  concurrent=dict(at, role="device")) for d in (0, 1)]
    pts.append(point(nbytes=1 << 20, samples=noisy(1e-4, 0.01), device_index=-1, concurrent=dict(at, role="aggregate")))
    cmp = compare_runs(run_of(write_result, "b.json", pts), run_of(write_result, "n.json", pts))
    assert len(cmp.rows) == 5
    assert sorted(r.key[0] for r in cmp.rows) == ["host", "host", "host all at once", "host at once", "host at once"]
    assert all(r.verdict == "same" for r in cmp.rows)
