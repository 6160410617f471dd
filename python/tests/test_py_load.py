"""xferbench.load: result files as records or a pandas DataFrame."""

import gzip
import json
import sys

import pytest

import xferbench

N_POINTS = 24  # in tests/data/host_small.json


def test_records_are_the_files_points(data):
    recs = xferbench.load(data / "host_small.json", frame=False)
    raw = json.loads((data / "host_small.json").read_text())["results"]
    assert recs == raw and len(recs) == N_POINTS
    assert {"backend", "bytes", "status", "gbps", "samples_s"} <= set(recs[0])


def test_gzipped_file_loads_the_same(data, tmp_path):
    gz = tmp_path / "sweep.json.gz"
    gz.write_bytes(gzip.compress((data / "host_small.json").read_bytes()))
    assert xferbench.load(gz, frame=False) == xferbench.load(data / "host_small.json", frame=False)


def test_without_pandas_gives_records_or_refuses_frame_true(data, monkeypatch):
    monkeypatch.setitem(sys.modules, "pandas", None)  # import pandas now raises ImportError
    assert isinstance(xferbench.load(data / "host_small.json"), list)
    with pytest.raises(ImportError, match="needs pandas"):
        xferbench.load(data / "host_small.json", frame=True)


def test_with_pandas_gives_a_dataframe(data):
    pd = pytest.importorskip("pandas")
    df = xferbench.load(data / "host_small.json")
    assert isinstance(df, pd.DataFrame) and len(df) == N_POINTS
    assert "stats.median" in df.columns and "first_use.alloc_s" in df.columns
    assert isinstance(df["samples_s"].iloc[0], list)


@pytest.mark.parametrize("content, match", [
    ("{", "not JSON"),
    ('{"schema": "other"}', "not an xferbench result file"),
    ('{"schema": "xferbench/result/v1", "results": [{"bytes": "x"}]}', "missing 'backend'"),
])
def test_bad_files_raise_bad_result_file(tmp_path, content, match):
    p = tmp_path / "bad.json"
    p.write_text(content)
    with pytest.raises(xferbench.BadResultFile, match=match):
        xferbench.load(p)


def test_missing_file(tmp_path):
    with pytest.raises(xferbench.BadResultFile, match="no such file"):
        xferbench.load(tmp_path / "nope.json")
