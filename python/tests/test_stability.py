"""A finding an immediate rerun contradicts is a defect (docs/findings.md): two default runs made back to back on
the H100 by the README's run command (scripts/default_runs.sh) must give the same headlines."""

from pathlib import Path

from xferbench_report.findings import headline_agreement, headlines
from xferbench_report.render import judge


def findings_of(path):
    return judge([path])[2]

RUNS = Path(__file__).resolve().parents[2] / "docs" / "results" / "default-run" / "h100-9bee91e"


def test_two_default_runs_on_the_h100_agree_on_their_headlines():
    first, second = (findings_of(RUNS / f"sweep-{i}.json.gz") for i in (1, 2))
    agreed = headline_agreement(first, second)
    assert len(agreed.first) == 6 and len(agreed.second) == 6
    assert len(agreed.common) >= 5, (agreed.first, agreed.second)
    assert not agreed.contradicted
    assert agreed.agrees
    # What a user of that H100 most needs leads, in both.
    for fs in (first, second):
        titles = [f.title for f in headlines(fs)]
        assert "Pin or stage large buffers (h2d)" in titles and "Pin or stage large buffers (d2h)" in titles
        assert not [f for f in headlines(fs) if f.kind == "context"]


def test_a_rerun_that_lost_a_headline_or_said_the_opposite_disagrees():
    first = findings_of(RUNS / "sweep-1.json.gz")
    top = headlines(first)
    # Two headlines gone: fewer than five of six in common.
    assert not headline_agreement(first, [f for f in first if f not in top[:2]]).agrees
    # The same title said as another kind is a contradiction.
    import dataclasses

    turned = [dataclasses.replace(f, kind="anomaly") if f is top[0] else f for f in first]
    assert headline_agreement(first, turned).contradicted


def test_the_headlines_command_exits_0_when_two_runs_agree_and_2_on_bad_input(tmp_path, capsys):
    from xferbench_report.cli import main

    runs = [str(RUNS / f"sweep-{i}.json.gz") for i in (1, 2)]
    assert main(["headlines", *runs]) == 0
    assert "the runs agree" in capsys.readouterr().out
    assert main(["headlines", *runs, runs[0]]) == 2  # one or two files
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "headlines takes one or two result files, got 3" in err[0]
    assert main(["headlines", str(tmp_path / "nosuch.json")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "nosuch.json" in err[0]
