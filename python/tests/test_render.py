import json
import re
import subprocess
import sys

import pytest

from xferbench_report.cli import main

from conftest import point


def rendered_files(out):
    return sorted(str(p.relative_to(out)) for p in out.rglob("*") if p.is_file())


def test_multi_backend_report(data, tmp_path, capsys):
    out = tmp_path / "report"
    assert main(["render", str(data / "multi_backend.json"), "-o", str(out), "--title", "fixture report"]) == 0
    assert "wrote" in capsys.readouterr().out
    files = rendered_files(out)
    assert "index.html" in files and "summary.md" in files
    for kind in ("bandwidth", "latency", "first-use"):
        for d in ("h2d", "d2h", "bidir"):
            assert f"plots/{kind}-{d}.png" in files
    assert "plots/api-h2d.png" in files and "plots/overview.png" in files
    assert not [f for f in files if f.endswith(".svg")]  # PNG only: the committed report stays small
    html = (out / "index.html").read_text()
    # Every figure is a PNG beside the page, with its size; no scripts, nothing fetched.
    pngs = [f for f in files if f.endswith(".png")]
    assert sorted(re.findall(r'<img src="([^"]+)" width="\d+" height="\d+"', html)) == pngs
    assert "<script" not in html and "<link" not in html
    assert not re.search(r'(src|href)="https?://', html)
    ids = re.findall(r'\bid="([^"]+)"', html)
    assert len(ids) == len(set(ids))
    # The findings come first, and the first figure right after them.
    assert html.index('id="findings"') < html.index("<img") < html.index('id="bandwidth"')
    # The content people look for.
    for text in ("fixture report", "Peaks and cost model", "PCIe Gen5 x16", "CL_MEM_OBJECT_ALLOCATION_FAILURE",
                 "unsupported: no concurrent managed access", "not converged", "Break-even", "cuda-drv / cuda-rt",
                 "Device clock against wall clock"):
        assert text in html, text
    md = (out / "summary.md").read_text()
    assert md.startswith("# fixture report")
    assert "| backend | route | host memory | peak GB/s |" in md
    assert "![Bandwidth, host to device (h2d)](plots/bandwidth-h2d.png)" in md
    # The peak row of cuda-rt copy-async pinned h2d: ~53 GB/s at 1 GiB, half peak from 1 MiB, L ~2 us.
    row = next(line for line in md.splitlines() if line.startswith("| cuda-rt | copy-async | pinned |")
               and "1 GiB" in line)
    cells = [c.strip() for c in row.strip("|").split("|")]
    # No ceiling in this file (written before they were read): "-" in its column.
    assert 52 < float(cells[3]) < 54 and cells[4] == "-" and cells[5] == "1 GiB" and cells[6] == "1 MiB"
    assert 1.9 < float(cells[8]) < 2.1 and 51 < float(cells[9]) < 55


def test_link_ceilings_and_a_degraded_link_are_shown(data, tmp_path):
    doc = json.loads((data / "multi_backend.json").read_text())
    acc = doc["system"]["accelerators"][0]
    acc.update({"config_space": "ok", "max_payload_bytes": 256, "degraded": "x8 of x16",
                "ceiling_gbps": {"h2d": 58.4, "h2d_rcb_completions": 48.0, "d2h": 57.6}})
    for p in doc["results"]:
        if p["backend"] == "cuda-rt" and p["status"] == "ok" and p["direction"] == "h2d":
            p["link_ceiling_gbps"] = 58.4
    src = tmp_path / "ceilings.json"
    src.write_text(json.dumps(doc))
    out = tmp_path / "report"
    assert main(["render", str(src), "-o", str(out)]) == 0
    md = (out / "summary.md").read_text()
    assert "ran below its best (x8 of x16)" in md
    assert "ceilings after TLP overhead h2d 58.4, d2h 57.6 GB/s" in md
    row = next(line for line in md.splitlines() if line.startswith("| cuda-rt | copy-async | pinned |")
               and "1 GiB" in line)
    cells = [c.strip() for c in row.strip("|").split("|")]
    assert cells[4] == f"{100 * float(cells[3]) / 58.4:.0f}%"


def test_single_point_report(data, tmp_path):
    out = tmp_path / "one"
    assert main(["render", str(data / "single_point.json"), "-o", str(out)]) == 0
    md = (out / "summary.md").read_text()
    assert "one size only" in md
    assert "Only one backend ran each direction here" in md
    assert "None: every point ran." in md


def test_real_host_file_report(data, tmp_path):
    out = tmp_path / "host"
    assert main(["render", str(data / "host_small.json"), "-o", str(out)]) == 0
    html = (out / "index.html").read_text()
    assert "memcpy" in html and "bidir" in html and "(h2d part)" in html


@pytest.mark.parametrize("bad,message", [
    ("not_json.json", "not JSON"),
    ("wrong_schema.json", "not an xferbench result file"),
    ("future_version.json", "unsupported schema version"),
    ("no_ok_points.json", "no ok points"),
    ("missing.json", "no such file"),
])
def test_bad_input_exits_2_with_one_line_and_writes_nothing(data, tmp_path, capsys, bad, message):
    out = tmp_path / "report"
    assert main(["render", str(data / bad), "-o", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("xferbench-report: error: ") and message in err and err.count("\n") == 1
    assert not out.exists()
    assert list(tmp_path.iterdir()) == []  # no temporary directory left behind either
    # Beside a good file: the same line, the good one rendered, exit 3.
    assert main(["render", str(data / "single_point.json"), str(data / bad), "-o", str(out)]) == 3
    err = capsys.readouterr().err
    assert err.startswith("xferbench-report: error: ") and message in err and err.count("\n") == 1
    assert "single_point.json" in (out / "index.html").read_text()


def test_earlier_report_is_replaced_whole_or_kept(data, tmp_path, write_result):
    two = write_result("two.json", [point(backend=b, nbytes=n) for b in ("cuda-rt", "cuda-drv") for n in (16, 4096)])
    out = tmp_path / "report"
    assert main(["render", str(two), "-o", str(out)]) == 0
    assert (out / "plots" / "api-h2d.png").exists()
    # A failing render leaves the earlier report untouched.
    assert main(["render", str(data / "not_json.json"), "-o", str(out)]) == 2
    assert (out / "plots" / "api-h2d.png").exists()
    # A new render replaces it whole: no stale figures from the earlier one.
    assert main(["render", str(data / "single_point.json"), "-o", str(out)]) == 0
    assert not (out / "plots" / "api-h2d.png").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["report", "two.json"]


def test_refuses_to_replace_a_directory_that_is_not_a_report(data, tmp_path, capsys):
    out = tmp_path / "docs"
    out.mkdir()
    (out / "README.md").write_text("mine")
    assert main(["render", str(data / "single_point.json"), "-o", str(out)]) == 2
    assert "is not an xferbench report" in capsys.readouterr().err
    assert (out / "README.md").read_text() == "mine"
    f = tmp_path / "file"
    f.write_text("x")
    assert main(["render", str(data / "single_point.json"), "-o", str(f)]) == 2


def test_error_during_rendering_leaves_nothing(data, tmp_path, monkeypatch):
    from xferbench_report import document

    def boom(doc):
        raise RuntimeError("disk on fire")

    monkeypatch.setattr("xferbench_report.render.to_markdown", boom)
    out = tmp_path / "report"
    with pytest.raises(RuntimeError):
        main(["render", str(data / "single_point.json"), "-o", str(out)])
    assert list(tmp_path.iterdir()) == []
    assert document.to_markdown is not boom


def test_console_script_and_usage_errors(data, tmp_path):
    r = subprocess.run([sys.executable, "-m", "xferbench_report", "render", str(data / "not_json.json"), "-o",
                        str(tmp_path / "r")], capture_output=True, text=True)
    assert r.returncode == 2 and r.stdout == ""
    assert r.stderr.strip().splitlines() == [f"xferbench-report: error: {data / 'not_json.json'}: not JSON "
                                             "(Expecting value at line 1, column 1)"]
    r = subprocess.run([sys.executable, "-m", "xferbench_report", "render", str(data / "single_point.json")],
                       capture_output=True, text=True)
    assert r.returncode == 2 and "-o/--output" in r.stderr


def test_points_above_the_link_limit_and_interrupted_runs_are_flagged(tmp_path, write_result):
    from conftest import gpu_system

    pts = [dict(point(backend="cuda-rt", route="copy-async", memory="pinned", nbytes=n, samples=[n / 40e9]),
                device_type="gpu") for n in (1 << 20, 1 << 24)]  # 40 GB/s on a 31.5 GB/s link
    path = write_result("fast.json", pts, system=gpu_system(31.5), interrupted=True)
    out = tmp_path / "r"
    assert main(["render", str(path), "-o", str(out)]) == 0
    md = (out / "summary.md").read_text()
    assert "2 points exceed the link's theoretical limit" in md
    assert "ABOVE LINK LIMIT at 2 sizes" in md
    assert "the run was interrupted" in md
    html = (out / "index.html").read_text()
    # Out of the main panels, into the suspect panel, beside the ceiling; and a finding says so.
    assert "suspect points, not in the other panels" in html and "link ceiling 31.5 GB/s" in html
    # A caveat on those points, in the findings' table (context, never a headline).
    assert "Points above the link ceiling" in html and "2 points of 1 curves run faster than the link" in html
    assert 'class="warn"' in html


def test_dollar_signs_in_names_are_text(tmp_path, write_result):
    # Matplotlib would read "$...$" as mathtext and raise on what is not TeX.
    path = write_result("run$1$.json", [point(route=r"copy $\foo$", nbytes=n) for n in (16, 4096)])
    out = tmp_path / "r"
    assert main(["render", str(path), "-o", str(out)]) == 0
    assert (out / "plots" / "bandwidth-h2d.png").stat().st_size > 0
    assert r"host · copy $\foo$" in (out / "index.html").read_text()  # the panel's title, in the figure's alt text


def test_plain_number_labels():
    from xferbench_report.figure_style import _plain_number

    assert [_plain_number(y) for y in (0, 2e-4, 0.01, 1, 1000, 1e4, 3e5)] == ["", "2e-4", "0.01", "1", "1000", "1e4",
                                                                              "3e5"]


def _latency_doc(chase_family="latency"):
    """A GPU run with a copy route and a pointer chase through host memory. The chase is named "ring-walk", so only
    the file's catalogue (family latency) can tell the report it is a latency route; and a route called "latency"
    whose catalogue says copy is a transfer like any other."""
    from conftest import v2_doc, v2_point

    routes = {"copy-async": {"family": "copy", "role": "api-copy-queued", "directions": ["h2d"]},
              "ring-walk": {"family": chase_family, "role": "", "directions": ["h2d"],
                            "description": "one device thread chases pointers: time per dependent 4-byte load"},
              "latency": {"family": "copy", "role": "", "directions": ["h2d"]}}
    kinds = {"pinned": {"pinned": True, "dma_direct": True, "api_pinned": True}}
    pts = []
    for backend in ("cuda-rt", "cuda-drv"):  # two: an API comparison to keep the chase out of
        for n in (16, 4096, 1 << 20, 1 << 24):
            pts.append(v2_point("copy-async", "pinned", n, gbps=min(50.0, n / 2e-6 / 1e9), backend=backend))
            pts.append(v2_point("latency", "pinned", n, gbps=min(20.0, n / 4e-6 / 1e9), backend=backend))
            # 1.2 us per 4-byte hop whatever the ring's size: 0.003 GB/s as core computes it (bytes_per_rep 4).
            chase = v2_point("ring-walk", "pinned", n, gbps=1.0, backend=backend)
            t = 1.2e-6 * (1 + 0.05 * (n > 1 << 20))
            chase.update(samples_s=[t] * 5, median_s=t, latency_us=t * 1e6, bytes_per_rep=4, gbps=4 / t / 1e9,
                         stats=dict(chase["stats"], min=t, median=t, mean=t, p95=t, max=t))
            pts.append(chase)
    return v2_doc(pts, routes, kinds)


def test_latency_routes_are_times_not_bandwidth(tmp_path):
    from conftest import write_doc

    path = write_doc(tmp_path / "lat.json", _latency_doc())
    out = tmp_path / "r"
    assert main(["render", str(path), "-o", str(out), "-j", "1"]) == 0
    md = (out / "summary.md").read_text()
    peaks = md[md.index("## Peaks and cost model"):md.index("### Latency routes")]
    # No "peak GB/s 0.00" row: the chase is not in the bandwidth table, the route named "latency" (a copy) is.
    assert "| ring-walk |" not in peaks and "| cuda-rt | latency | pinned |" in peaks
    table = md[md.index("### Latency routes"):].split("\n\n")[2].splitlines()
    assert table[0] == "| backend | route | direction | host memory | 16 B | 4 KiB | 1 MiB | 16 MiB | notes |"
    assert table[2] == "| cuda-rt | ring-walk | h2d | pinned | 1.20 us | 1.20 us | 1.20 us | 1.26 us |  |"
    # The figures: no bandwidth panel for the chase; a time panel marked as a latency route.
    html = (out / "index.html").read_text()
    bandwidth_alt = re.search(r'<img src="plots/bandwidth-h2d.png"[^>]*alt="([^"]*)"', html).group(1)
    time_alt = re.search(r'<img src="plots/latency-h2d.png"[^>]*alt="([^"]*)"', html).group(1)
    assert "ring-walk" not in bandwidth_alt and "cuda-rt · latency" in bandwidth_alt
    assert "cuda-rt · ring-walk (latency route)" in time_alt
    # Nor is its 1.2 us the fastest "transfer" of 16 MiB in the API comparison (its cells: "time (route · kind)").
    api = md[md.index("## API comparison"):md.index("## Peaks and cost model")]
    assert "| 16 MiB | 336 us (copy-async · pinned) |" in api and "ring-walk" not in api
    # Without the catalogue's word the same points are a copy route: drawn and tabled as bandwidth.
    path = write_doc(tmp_path / "copy.json", _latency_doc(chase_family="copy"))
    assert main(["render", str(path), "-o", str(tmp_path / "r2"), "-j", "1"]) == 0
    md = (tmp_path / "r2" / "summary.md").read_text()
    assert "### Latency routes" not in md and "| cuda-rt | ring-walk | pinned | 0.003 |" in md
