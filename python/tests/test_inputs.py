"""The studies' result files are rendered, and files that cannot be used are left
out one line each while the rest is rendered (exit 3; exit 2 when none is usable)."""

import gzip
import json
import shutil
from pathlib import Path

import pytest

from xferbench_report.cli import main
from xferbench_report.load import read_document

from conftest import point

H100 = Path(__file__).resolve().parents[2] / "docs" / "results" / "h100"


@pytest.mark.parametrize("name,texts", [
    ("alloc.json.gz", ["Host allocation (alloc.json.gz)", "buffers aligned", "136 of 200",
                       "pool:pinned misaligns buffers", "64 of 200 buffers not on a 4 KiB boundary", "Fragmentation"]),
    ("app-vadd-cuda.json.gz", ["Application: vector add (app-vadd-cuda.json.gz)", "cuda-rt: 96 MiB per vector",
                               "kernel runtime", "the accelerator saves (CPU minus accelerated)",
                               "vadd on cuda-rt: best strategy"]),
    ("cpu.json.gz", ["The CPU&#x27;s side (cpu.json.gz)", "write combining appears NOT to be in effect",
                     "Write-combining not in effect (pinned-wc)", "nontemporal", "pays after ~498 uses"]),
])
def test_a_study_file_renders_alone(tmp_path, capsys, name, texts):
    out = tmp_path / "r"
    assert main(["render", str(H100 / name), "-o", str(out)]) == 0
    html = (out / "index.html").read_text()
    for t in texts:
        assert t in html, t
    assert html.index('id="findings"') < html.index('id="studies"')
    # Its figure, on the first screen (a report of studies alone has no sweep overview to show there).
    assert html.index('<img src="plots/study-') < html.index('id="studies"')


def test_studies_beside_a_sweep(data, tmp_path, write_result):
    # Same machine as the study files, so nothing is left out.
    doc = read_document(H100 / "cpu.json.gz")
    sweep = write_result("sweep.json", [point(nbytes=n) for n in (16, 4096)], system=doc["system"])
    out = tmp_path / "r"
    assert main(["render", str(sweep), str(H100 / "cpu.json.gz"), "-o", str(out)]) == 0
    html = (out / "index.html").read_text()
    assert "The CPU&#x27;s side" in html and 'id="bandwidth"' in html


def test_bad_files_are_left_out_one_line_each(data, tmp_path, capsys, write_result):
    bad = tmp_path / "bad"
    bad.mkdir()
    future = bad / "future.json"
    doc = read_document(H100 / "alloc.json.gz")
    doc["schema"] = "xferbench/alloc/v9"
    future.write_text(json.dumps(doc))
    whole = gzip.compress(json.dumps(json.loads((data / "single_point.json").read_text())).encode())
    truncated = bad / "truncated.json.gz"
    truncated.write_bytes(whole[: len(whole) // 2])
    other = write_result("other.json", [point(nbytes=16)], system={"hostname": "elsewhere", "cpu_model": "x",
                                                                  "logical_cpus": 2})
    empty = bad / "empty-app.json"
    app = read_document(H100 / "app-vadd-cuda.json.gz")
    app["system"] = json.loads((data / "single_point.json").read_text())["system"]
    for r in app["results"]:
        r["status"] = "skipped"
    empty.write_text(json.dumps(app))
    out = tmp_path / "r"
    args = [data / "single_point.json", future, truncated, data / "no_ok_points.json", other, empty]
    assert main(["render", *map(str, args), "-o", str(out)]) == 3
    err = capsys.readouterr().err.splitlines()
    assert err == [
        f"xferbench-report: error: {future}: unsupported schema 'xferbench/alloc/v9' (this tool reads "
        "xferbench/result/v2, xferbench/app/v2, xferbench/alloc/v2, xferbench/cpu/v2, and their v1; "
        "xferbench/beside/v1)",
        f"xferbench-report: error: {truncated}: not a readable gzip file (Compressed file ended before the "
        "end-of-stream marker was reached)",
        f"xferbench-report: error: {data / 'no_ok_points.json'}: no ok points to report (2 points: 1 skipped, "
        "1 failed)",
        f"xferbench-report: error: {other}: measured on elsewhere (x, 2 CPUs), not on fixture-host "
        "(Fixture CPU, 16 CPUs) like the first file (one machine per report; --machines allows several)",
        f"xferbench-report: error: {empty}: no ok measurements to report",
    ]
    assert "single_point.json" in (out / "index.html").read_text()
    # --machines takes the other machine in.
    shutil.rmtree(out)
    assert main(["render", str(data / "single_point.json"), str(other), "--machines", "-o", str(out)]) == 0
    # None usable: exit 2, the same lines, nothing written.
    shutil.rmtree(out)
    assert main(["render", str(future), str(truncated), "-o", str(out)]) == 2
    assert len(capsys.readouterr().err.splitlines()) == 2
    assert not out.exists()


def test_gzipped_sweep_reads_like_the_plain_one(data, tmp_path):
    gz = tmp_path / "single.json.gz"
    gz.write_bytes(gzip.compress((data / "single_point.json").read_bytes()))
    out = tmp_path / "r"
    assert main(["render", str(gz), "-o", str(out)]) == 0
    assert "single.json.gz" in (out / "index.html").read_text()


def test_a_misalignment_measured_again_after_a_fix_is_no_finding(tmp_path):
    out = tmp_path / "r"
    assert main(["render", str(H100 / "alloc.json.gz"), str(H100 / "alloc-pinned-fix.json.gz"), "-o", str(out)]) == 0
    html = (out / "index.html").read_text()
    # alloc.json.gz's pool:pinned misaligned 64 of 200; the later alloc-pinned-fix.json.gz found all 200
    # aligned.
    assert "136 of 200" in html and "misaligns buffers" not in html
