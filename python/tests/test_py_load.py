"""xferbench.load: result files as a list of dicts (always, whatever is installed), or a pandas DataFrame on
request; every failure a typed xferbench error."""

import gzip
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import xferbench
from xferbench_report.errors import BadInput

N_POINTS = 24  # in tests/data/host_small.json
HERE = Path(__file__).resolve().parent


def test_records_are_the_files_points(data):
    recs = xferbench.load(data / "host_small.json", frame=False)
    raw = json.loads((data / "host_small.json").read_text())["results"]
    assert recs == raw and len(recs) == N_POINTS
    assert {"backend", "bytes", "status", "gbps", "samples_s"} <= set(recs[0])


def test_the_default_is_the_list_even_with_pandas_installed(data):
    pytest.importorskip("pandas")
    recs = xferbench.load(data / "host_small.json")
    # What python/examples/session_host.py does: a DataFrame here raised KeyError: 0.
    assert type(recs) is list and recs[0]["backend"] == "host" and len(recs) == N_POINTS
    assert recs == xferbench.load(data / "host_small.json", frame=False)


def test_gzipped_file_loads_the_same(data, tmp_path):
    gz = tmp_path / "sweep.json.gz"
    gz.write_bytes(gzip.compress((data / "host_small.json").read_bytes()))
    assert xferbench.load(gz) == xferbench.load(data / "host_small.json")


def test_with_pandas_frame_true_gives_a_dataframe(data):
    pd = pytest.importorskip("pandas")
    df = xferbench.load(data / "host_small.json", frame=True)
    assert isinstance(df, pd.DataFrame) and len(df) == N_POINTS
    assert "stats.median" in df.columns and "first_use.alloc_s" in df.columns
    assert isinstance(df["samples_s"].iloc[0], list)


def test_without_pandas_in_process(data, monkeypatch):
    monkeypatch.setitem(sys.modules, "pandas", None)  # import pandas now raises ImportError
    assert type(xferbench.load(data / "host_small.json")) is list
    with pytest.raises(xferbench.DependencyMissing, match=r"needs pandas: pip install pandas") as e:
        xferbench.load(data / "host_small.json", frame=True)
    assert isinstance(e.value, xferbench.XferError) and isinstance(e.value, ImportError) and e.value.name == "pandas"
    assert "\n" not in str(e.value)


def test_without_pandas_in_a_fresh_interpreter(data):
    """The same where pandas was never imported: the default is the list, frame=True one typed error."""
    code = ("import sys; sys.modules['pandas'] = None\n"
            "import xferbench\n"
            f"recs = xferbench.load({str(data / 'host_small.json')!r})\n"
            "print(type(recs).__name__, len(recs), recs[0]['backend'])\n"
            "try:\n"
            f"    xferbench.load({str(data / 'host_small.json')!r}, frame=True)\n"
            "except xferbench.DependencyMissing as e:\n"
            "    print(type(e).__name__, isinstance(e, ImportError), e)\n")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(HERE.parent)] + sys.path))
    got = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert got.returncode == 0, got.stderr
    assert got.stdout.splitlines() == [
        f"list {N_POINTS} host",
        "DependencyMissing True xferbench.load(path, frame=True) needs pandas: pip install pandas "
        "(or load(path) for a list of dicts)"]


def _gzip_garbage(p):
    p.write_bytes(b"\x1f\x8b" + b"not really gzip")


def _cut_gzip(p):
    p.write_bytes(gzip.compress(b'{"schema": "xferbench/result/v2", "results": []}')[:20])


@pytest.mark.parametrize("make, match", [
    (lambda p: p.write_text("{"), "not JSON"),
    (lambda p: p.write_text("# xferbench\n\nA benchmark.\n"), "not JSON"),
    (lambda p: p.write_bytes(b"\xff\xfe\x00"), "not JSON"),
    (_gzip_garbage, "not a readable gzip file"),
    (_cut_gzip, "not a readable gzip file"),
    (lambda p: p.write_text("[1, 2]"), "the top level is not an object"),
    (lambda p: p.write_text('{"schema": "other"}'), "not an xferbench result file"),
    (lambda p: p.write_text('{"results": []}'), "no 'schema' key"),
    (lambda p: p.write_text('{"schema": "xferbench/result/v9", "results": []}'), "unsupported schema version"),
    (lambda p: p.write_text('{"schema": "xferbench/result/v1", "results": {}}'), "'results' is missing"),
    (lambda p: p.write_text('{"schema": "xferbench/result/v1", "results": [{"bytes": "x"}]}'), "missing 'backend'"),
    (lambda p: p.mkdir(), "is a directory"),
    (lambda p: None, "no such file"),
], ids=["truncated", "markdown", "binary", "gzip-garbage", "gzip-cut", "array", "other-schema", "no-schema",
        "future-version", "results-not-array", "bad-point", "directory", "missing"])
def test_every_failure_is_bad_result_file(tmp_path, make, match):
    p = tmp_path / "bad.json"
    make(p)
    with pytest.raises(xferbench.BadResultFile, match=match) as e:
        xferbench.load(p)
    assert isinstance(e.value, xferbench.XferError) and isinstance(e.value, BadInput)
    assert "\n" not in str(e.value) and str(p) in str(e.value)
    with pytest.raises(xferbench.BadResultFile):
        xferbench.load(p, frame=True)  # the same check before pandas is asked for


def test_the_readme_is_no_result_file():
    readme = HERE.parents[1] / "README.md"
    with pytest.raises(xferbench.BadResultFile, match=r"README.md: not JSON"):
        xferbench.load(readme)
    assert issubclass(xferbench.BadResultFile, xferbench.XferError)
