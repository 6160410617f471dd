import json

import pytest

from xferbench_report.errors import BadInput
from xferbench_report.load import load_run, load_runs

from conftest import point


def test_real_host_file_loads(data):
    run = load_run(data / "host_small.json")
    assert run.tool["name"] == "xferbench"
    assert len(run.points) == 24 and all(p.ok for p in run.points)
    bidir = [p for p in run.points if p.direction == "bidir"]
    assert bidir and all(set(p.parts) == {"h2d", "d2h"} for p in bidir)
    assert all(p.bytes_per_rep == 2 * p.bytes for p in bidir)
    assert all(p.first_use and p.first_use.alloc_s >= 0 for p in run.points)


def test_fixture_statuses(data):
    run = load_run(data / "multi_backend.json")
    statuses = {s: sum(p.status == s for p in run.points) for s in ("ok", "skipped", "failed")}
    assert statuses["skipped"] > 0 and statuses["failed"] == 2 and statuses["ok"] > 100
    skipped = next(p for p in run.points if p.status == "skipped")
    assert skipped.reason.startswith("unsupported")
    # An unbounded CI is null in JSON.
    assert any(p.ok and p.ci_rel is None and not p.converged for p in run.points)


def test_labels_are_unique(data):
    runs = load_runs([data / "single_point.json", data / "single_point.json"])
    assert [r.label for r in runs] == ["single_point", "single_point-2"]


@pytest.mark.parametrize("name,message", [
    ("not_json.json", "not JSON (Expecting value at line 1, column 1)"),
    ("wrong_schema.json", "not an xferbench result file (schema 'somebench/output/v3'"),
    ("future_version.json", "unsupported schema version 'xferbench/result/v2'"),
    ("no_ok_points.json", "no ok points to report (2 points: 1 skipped, 1 failed)"),
])
def test_bad_files(data, name, message):
    with pytest.raises(BadInput) as e:
        load_run(data / name)
    assert message in str(e.value)
    assert str(e.value).startswith(str(data / name))
    assert "\n" not in str(e.value)


def test_missing_file(tmp_path):
    with pytest.raises(BadInput, match="no such file"):
        load_run(tmp_path / "nope.json")


@pytest.mark.parametrize("mutate,message", [
    (lambda d: d.pop("results"), "'results' is missing or not an array"),
    (lambda d: d.update(results={}), "'results' is missing or not an array"),
    (lambda d: d["results"][0].pop("bytes"), "results[0]: missing 'bytes'"),
    (lambda d: d["results"][0].update(bytes="4K"), "results[0].bytes: expected an integer"),
    (lambda d: d["results"][0].update(bytes=0), "results[0].bytes: must be positive"),
    (lambda d: d["results"][0].update(status="great"), "unknown status 'great'"),
    (lambda d: d["results"][0].pop("samples_s"), "results[0]: missing 'samples_s'"),
    (lambda d: d["results"][0].update(median_s=0), "an ok point needs a positive median time"),
    (lambda d: d.pop("schema"), "no 'schema' key"),
    (lambda d: d.update(results=[1]), "results[0]: expected an object"),
])
def test_schema_violations(tmp_path, mutate, message):
    doc = {"schema": "xferbench/result/v1", "system": {}, "config": {}, "results": [point()]}
    mutate(doc)
    path = tmp_path / "r.json"
    path.write_text(json.dumps(doc))
    with pytest.raises(BadInput) as e:
        load_run(path)
    assert message in str(e.value)


def test_top_level_not_an_object(tmp_path):
    path = tmp_path / "r.json"
    path.write_text("[1, 2]")
    with pytest.raises(BadInput, match="top level is not an object"):
        load_run(path)


def test_unmeasured_first_use_is_absent(write_result):
    p = point(first_use={"alloc_s": -1, "touch_s": -1, "first_transfer_s": -1})
    run = load_run(write_result("r.json", [p]))
    assert run.points[0].first_use is None
