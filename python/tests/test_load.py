import json

import pytest

from xferbench_report import SCHEMA
from xferbench_report.errors import BadInput
from xferbench_report.load import load_run, load_runs, read_document

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
    ("future_version.json", "unsupported schema version 'xferbench/result/v9'"),
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


def load_mutated(tmp_path, mutate):
    """Loads a one-point result file after `mutate(doc)`; returns (path, the BadInput raised)."""
    doc = {"schema": "xferbench/result/v1", "system": {}, "config": {}, "results": [point()]}
    mutate(doc)
    path = tmp_path / "r.json"
    path.write_text(json.dumps(doc))
    with pytest.raises(BadInput) as e:
        load_run(path)
    return path, e.value


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
    (lambda d: d["results"][0].update(concurrent={"role": "both", "devices": [0, 1]}),
     "results[0].concurrent.role: unknown"),
    (lambda d: d["results"][0].update(concurrent={"role": "device", "devices": []}),
     "results[0].concurrent.devices: must be a non-empty array of device indices"),
    (lambda d: d["results"][0].update(peer_device_index=-1), "results[0].peer_device_index: cannot be negative, got -1"),
    (lambda d: d["results"][0].update(concurrent={"role": "device", "devices": [0, "1"]}),
     "results[0].concurrent.devices: must be a non-empty array of device indices"),
])
def test_schema_violations(tmp_path, mutate, message):
    _, error = load_mutated(tmp_path, mutate)
    assert message in str(error)


def _point_with(**fields):
    return lambda d: d["results"][0].update(fields)


@pytest.mark.parametrize("mutate,message", [
    (_point_with(samples_s=[1e-6, -1e-6]), "results[0].samples_s[1]: cannot be negative, got -1e-06"),
    (_point_with(samples_s=[float("nan")]), "results[0].samples_s[0]: expected a finite number, got NaN"),
    (_point_with(samples_s=["1e-6"]), "results[0].samples_s[0]: expected a number, got \"1e-6\""),
    (_point_with(samples_s=[]), "results[0].samples_s: an ok point needs at least one sample"),
    (_point_with(samples_s=None), "results[0].samples_s: expected an array, got null"),
    (_point_with(bytes=10 ** 30), "results[0].bytes: out of range (at most 2^64 - 1), got a 31-digit number"),
    (_point_with(bytes=float("inf")), "results[0].bytes: expected an integer, got Infinity"),
    (_point_with(bytes=True), "results[0].bytes: expected an integer, got true"),
    (_point_with(bytes_per_rep=0), "results[0].bytes_per_rep: must be positive, got 0"),
    (_point_with(direction="sideways"), "results[0].direction: unknown direction 'sideways'"),
    (_point_with(direction="h2d\nd2h"), "results[0].direction: unknown direction 'h2d\\nd2h'"),
    (_point_with(timer="sundial"), "results[0].timer: unknown timer 'sundial' (expected event or wall)"),
    (_point_with(median_s=float("inf")), "results[0].median_s: expected a finite number, got Infinity"),
    (_point_with(median_s=1e-300), "results[0].median_s: an ok point needs a positive median time (at least 1e-15 s)"),
    (_point_with(median_s=1e300), "results[0].median_s: must be at most 1e+06, got 1e+300"),
    (_point_with(samples_s=[1e7]), "results[0].samples_s[0]: must be at most 1e+06, got 10000000.0"),
    (_point_with(gbps=1e300), "results[0].gbps: must be at most 1e+09, got 1e+300"),
    (_point_with(first_use={"alloc_s": 1e300}), "results[0].first_use.alloc_s: must be at most 1e+06"),
    (_point_with(parts={"h2d": {"median_s": 1e-300}}),
     "results[0].parts.h2d.median_s: must be 0 (not measured) or at least 1e-15 s, got 1e-300"),
    (_point_with(gbps=-1.0), "results[0].gbps: cannot be negative, got -1.0"),
    (_point_with(gbps=float("nan")), "results[0].gbps: expected a finite number, got NaN"),
    (_point_with(latency_us="fast"), "results[0].latency_us: expected a number, got \"fast\""),
    (_point_with(ci_rel=-0.1), "results[0].ci_rel: cannot be negative"),
    (_point_with(converged="false"), "results[0].converged: expected true or false, got \"false\""),
    (_point_with(device_index="0"), "results[0].device_index: expected an integer"),
    (_point_with(reason=7), "results[0].reason: expected a string, got 7"),
    (_point_with(stats=[1, 2]), "results[0].stats: expected an object, got [1, 2]"),
    (lambda d: d["results"][0]["stats"].update(count=-1), "results[0].stats.count: cannot be negative"),
    (_point_with(wall_stats={"median": "slow"}), "results[0].wall_stats.median: expected a number"),
    (_point_with(first_use={"alloc_s": "soon"}), "results[0].first_use.alloc_s: expected a number"),
    (_point_with(parts={"h2d": {"median_s": -1e-6}}), "results[0].parts.h2d.median_s: cannot be negative"),
    (_point_with(parts={"h2d": {"gbps": 1.0}}), "results[0].parts.h2d: missing 'median_s'"),
    (_point_with(parts={"h2d": 5}), "results[0].parts.h2d: expected an object, got 5"),
    (lambda d: d.update(system=[]), "system: expected an object, got []"),
    (lambda d: d["system"].update(accelerators={}), "system.accelerators: expected an array, got {}"),
    (lambda d: d["system"].update(accelerators=["gpu"]), "system.accelerators[0]: expected an object"),
    (lambda d: d["system"].update(accelerators=[{"link_gbps_per_direction": "63"}]),
     "system.accelerators[0].link_gbps_per_direction: expected a number"),
    (lambda d: d["system"].update(accelerators=[{"link_gbps_per_direction": 1e300}]),
     "system.accelerators[0].link_gbps_per_direction: must be at most 1e+09"),
    (lambda d: d["system"].update(accelerators=[{"link_max": {"gen": 5.0}}]),
     "system.accelerators[0].link_max.gen: expected an integer, got 5.0"),
    (lambda d: d["system"].update(memory_bytes="128G"), "system.memory_bytes: expected an integer"),
    (lambda d: d["system"].update(hostname=["a"]), "system.hostname: expected a string"),
    (lambda d: d["config"].update(argv="xferbench sweep"), "config.argv: expected an array"),
    (lambda d: d["config"].update(argv=["xferbench", 1]), "config.argv[1]: expected a string, got 1"),
    (lambda d: d.update(tool={"name": 1}), "tool.name: expected a string, got 1"),
    (lambda d: d.update(interrupted="no"), "interrupted: expected true or false, got \"no\""),
    (lambda d: d.update(started_at=20260101), "started_at: expected a string, got 20260101"),
])
def test_fields_the_report_uses_are_checked(tmp_path, mutate, message):
    path, error = load_mutated(tmp_path, mutate)
    assert str(error).startswith(f"{path}: {message}")
    assert "\n" not in str(error)


def test_absent_and_null_optional_fields_take_their_defaults(write_result):
    p = point(ci_rel=None, stats=None, wall_stats=None, first_use=None, device_type=None, reason=None)
    del p["bytes_per_rep"], p["converged"], p["device_index"]
    run = load_run(write_result("r.json", [p], system={"accelerators": [{"link_max": None}]}, interrupted=None))
    q = run.points[0]
    assert (q.ci_rel, q.stats, q.wall_median_s, q.first_use) == (None, None, None, None)
    assert (q.device_type, q.reason) == ("", "")
    assert (q.bytes_per_rep, q.converged, q.device_index, run.interrupted) == (q.bytes, True, 0, False)


@pytest.mark.parametrize("text,message", [
    ("[" * 100_000 + "]" * 100_000, "not JSON this tool can read (nested too deeply)"),
    ('{"schema": "xferbench/result/v1", "results": [], "x": ' + "9" * 5000 + "}",
     "not JSON this tool can read (a number with too many digits)"),
])
def test_json_python_cannot_read(tmp_path, text, message):
    path = tmp_path / "r.json"
    path.write_text(text)
    with pytest.raises(BadInput) as e:
        load_run(path)
    assert str(e.value) == f"{path}: {message}"


def test_real_result_files_pass_the_checks(data):
    """The C++ tool's own output (committed under docs/results) must load: the checks may not be stricter than it."""
    docs = data.parents[2] / "docs" / "results"
    schemas = (SCHEMA, "xferbench/result/v1")  # today's and the version legacy.py reads
    # Committed result files are kept gzipped (docs/layout.md), some plain.
    candidates = sorted([*docs.glob("*/*.json"), *docs.glob("*/*.json.gz")])
    files = [f for f in candidates
             if (d := read_document(f)).get("schema") in schemas and "fleet" not in d]
    assert files, f"no {' or '.join(schemas)} files under {docs}: this test would check nothing"
    for f in files:
        assert load_run(f, require_ok=False).points


def test_top_level_not_an_object(tmp_path):
    path = tmp_path / "r.json"
    path.write_text("[1, 2]")
    with pytest.raises(BadInput, match="top level is not an object"):
        load_run(path)


def test_unmeasured_first_use_is_absent(write_result):
    p = point(first_use={"alloc_s": -1, "touch_s": -1, "first_transfer_s": -1})
    run = load_run(write_result("r.json", [p]))
    assert run.points[0].first_use is None
