"""A finding an immediate rerun contradicts is a defect (docs/findings.md): two default runs made back to back on
the H100 by the README's run command (scripts/default_runs.sh) must give the same headlines."""

from pathlib import Path

from xferbench_report.findings import findings_of_files, headline_agreement, headlines

RUNS = Path(__file__).resolve().parents[2] / "docs" / "results" / "default-run" / "h100-9bee91e"


def test_two_default_runs_on_the_h100_agree_on_their_headlines():
    first, second = (findings_of_files([RUNS / f"sweep-{i}.json.gz"]) for i in (1, 2))
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
    first = findings_of_files([RUNS / "sweep-1.json.gz"])
    top = headlines(first)
    # Two headlines gone: fewer than five of six in common.
    assert not headline_agreement(first, [f for f in first if f not in top[:2]]).agrees
    # The same title said as another kind is a contradiction.
    import dataclasses

    turned = [dataclasses.replace(f, kind="anomaly") if f is top[0] else f for f in first]
    assert headline_agreement(first, turned).contradicted
