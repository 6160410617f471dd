import pytest

from xferbench_report.cli import main
from xferbench_report.compare import compare_runs, verdict
from xferbench_report.load import load_run

from conftest import noisy, point


def run_of(write_result, name, points):
    return load_run(write_result(name, points))


def test_identical_runs_are_the_same(write_result, capsys):
    pts = [point(nbytes=n, samples=noisy(1e-6 * n / 1024, 0.02, seed=n)) for n in (1024, 4096, 65536)]
    base = write_result("base.json", pts)
    new = write_result("new.json", pts)
    assert main(["compare", str(base), str(new)]) == 0
    out = capsys.readouterr().out
    assert "compared 3 points: 0 faster, 0 slower, 3 same" in out
    assert out.count(" same") >= 3


def test_slower_beyond_both_spreads_exits_1(write_result, capsys):
    base = write_result("base.json", [point(samples=noisy(1e-6, 0.02, seed=1)),
                                      point(nbytes=8192, samples=noisy(2e-6, 0.02, seed=2))])
    new = write_result("new.json", [point(samples=noisy(1.10e-6, 0.02, seed=3)),  # 10% slower, spreads 2%
                                    point(nbytes=8192, samples=noisy(2e-6, 0.02, seed=4))])
    assert main(["compare", str(base), str(new)]) == 1
    out = capsys.readouterr().out
    assert "SLOWER" in out
    assert "compared 2 points: 0 faster, 1 slower, 1 same" in out


def test_change_within_spread_is_the_same(write_result):
    # 5% slower median, but each run's samples spread +/-10%: the intervals overlap.
    b = run_of(write_result, "b.json", [point(samples=noisy(1e-6, 0.10, seed=5))])
    n = run_of(write_result, "n.json", [point(samples=noisy(1.05e-6, 0.10, seed=6))])
    cmp = compare_runs(b, n)
    assert [r.verdict for r in cmp.rows] == ["same"]
    assert cmp.rows[0].ratio == pytest.approx(1.05, rel=0.05)
    assert not cmp.regressed


def test_faster_exits_0(write_result, capsys):
    base = write_result("base.json", [point(samples=noisy(2e-6, 0.01, seed=7))])
    new = write_result("new.json", [point(samples=noisy(1e-6, 0.01, seed=8))])
    assert main(["compare", str(base), str(new)]) == 0
    out = capsys.readouterr().out
    assert "1 faster, 0 slower" in out and "0.50" in out


def test_spread_rule_is_p5_to_p95(write_result):
    # One outlier in 20 samples does not widen p5..p95 enough to hide a clear change.
    base_samples = [1.0e-6] * 19 + [5e-6]
    new_samples = [1.3e-6] * 20  # above base p95 = 1.0 + 0.05 x (5 - 1.0) = 1.2 us
    b = run_of(write_result, "b.json", [point(samples=base_samples)]).points[0]
    n = run_of(write_result, "n.json", [point(samples=new_samples)]).points[0]
    assert verdict(b, n) == "slower"
    assert verdict(n, b) == "faster"
    # Overlapping intervals: the same.
    wide = run_of(write_result, "w.json", [point(samples=[0.9e-6, 1.0e-6, 1.1e-6, 1.3e-6])]).points[0]
    assert verdict(b, wide) == "same"


def test_tolerance(write_result, capsys):
    base = write_result("base.json", [point(samples=[1.0e-6] * 10)])
    new = write_result("new.json", [point(samples=[1.03e-6] * 10)])  # 3% slower, no spread at all
    assert main(["compare", str(base), str(new)]) == 1
    capsys.readouterr()
    assert main(["compare", "--tolerance", "0.05", str(base), str(new)]) == 0
    assert main(["compare", "--tolerance", "2", str(base), str(new)]) == 2


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


def test_device_name_may_differ_but_backend_must_match(write_result, capsys):
    base = write_result("base.json", [point(backend="cuda-rt")])
    new = write_result("new.json", [dict(point(backend="cuda-rt"), device="another GPU")])
    assert main(["compare", str(base), str(new)]) == 0
    capsys.readouterr()
    other = write_result("other.json", [point(backend="cuda-drv")])
    assert main(["compare", str(base), str(other)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "have no ok point in common" in err


def test_bad_inputs_exit_2(data, capsys):
    good = str(data / "single_point.json")
    for bad in ("not_json.json", "wrong_schema.json", "future_version.json", "no_ok_points.json"):
        assert main(["compare", good, str(data / bad)]) == 2
        err = capsys.readouterr().err
        assert err.startswith("xferbench-report: error: ") and err.count("\n") == 1
