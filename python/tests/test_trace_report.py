"""Trace files (`xferbench trace`, schema xferbench-trace/1) in `xferbench-report render`: one page each,
"Transfers of this program", showing what the file decided (the bill, the ranked fixes, the what-ifs and why one
is not priced) and deciding nothing again; a malformed trace is refused in one line like a malformed result file.
The fixtures in data/trace_*.json are hand-written after the spec, not recordings."""

import copy
import json
import re

import pytest

from xferbench_report.cli import main

TITLE = "Transfers of this program"
BLOCKS_REASON = "not priced: the machine curves have no block copies (give --machine a `sweep --blocks` file)"


def run(*args):
    return main([str(a) for a in args])


def render_one(path, out):
    assert run("render", path, "-o", out) == 0
    return (out / "index.html").read_text(), (out / "summary.md").read_text()


def section(md, heading):
    """The Markdown of one level-1 section of a page (## in the file), up to the next."""
    start = md.index(f"## {heading}\n")
    end = md.find("\n## ", start + 1)
    return md[start:] if end < 0 else md[start:end]


def table_rows(md):
    """The body rows of the Markdown tables in `md`, as lists of cells."""
    rows = [[c.strip() for c in line.strip().strip("|").split(" | ")] for line in md.splitlines()
            if line.startswith("| ")]
    return [r for r in rows if r[0] not in ("group", "rank")]  # the header rows


def write_doc(tmp_path, name, doc):
    path = tmp_path / name
    path.write_text(json.dumps(doc))
    return path


@pytest.fixture
def complete(data):
    return json.loads((data / "trace_complete.json").read_text())


def test_a_trace_alone_is_the_report_with_its_command_outcome_wall_time_and_curves_source(data, tmp_path, capsys):
    html, md = render_one(data / "trace_complete.json", tmp_path / "report")
    assert f"<title>{TITLE}</title>" in html and md.startswith(f"# {TITLE}\n")
    assert "python train.py --epochs 1" in md
    assert "the program exited with 0" in md and "> **Note:**" not in md  # complete: no warning
    assert "- wall time: 12.5 s" in md
    assert ("- machine curves: measured here in 9.8 s: cuda-rt copy-sync, copy-async and staged at the 3 sizes seen"
            in md)
    assert "704 transfers moved 1.16 GiB in 119 ms (0.95% of the wall time); the top fix saves 66.5 ms" in md
    assert not list((tmp_path / "report").glob("trace-*"))  # no second page: this one is index.html


def test_the_bill_shows_each_group_as_the_file_has_it(data, tmp_path):
    _, md = render_one(data / "trace_complete.json", tmp_path / "report")
    rows = table_rows(section(md, "The bill"))
    assert [r[0] for r in rows] == ["0", "1", "2"]  # the file's order (costliest first), kept
    assert rows[0] == ["0", "h2d", "pageable", "16 MiB", "cudaMemcpy", "no", "7", "64", "1 GiB", "86.0 ms", "0.688%",
                       "0%", "12.49"]
    # The file's GB/s and shares, not bytes / cost recomputed (128 MiB / 24 ms would be 5.592).
    assert rows[1][5] == "yes" and rows[1][-3:] == ["0.192%", "25%", "5.59"]


def test_the_fix_ranked_first_in_the_file_comes_first(data, tmp_path):
    _, md = render_one(data / "trace_complete.json", tmp_path / "report")
    rows = table_rows(section(md, "Fixes, ranked by saving"))
    assert [(r[0], r[1], r[2]) for r in rows] == [("1", "0", "pin the host buffer"),
                                                   ("2", "1", "drain through xferbench's staged copier")]
    assert rows[0][4:] == ["86.0 ms -> 19.5 ms", "66.5 ms", "0.532%"]


def test_fixes_follow_the_files_rank_not_their_order_in_the_array(complete, tmp_path):
    doc = copy.deepcopy(complete)
    doc["fixes"].reverse()
    _, md = render_one(write_doc(tmp_path, "reversed.json", doc), tmp_path / "report")
    assert [r[0] for r in table_rows(section(md, "Fixes, ranked by saving"))] == ["1", "2"]


def test_a_fix_the_file_ranks_low_stays_low_whatever_its_saving(complete, tmp_path):
    # Ranking is C++'s: a file that ranks the smaller saving first is shown so, not re-sorted by saving.
    doc = copy.deepcopy(complete)
    doc["fixes"][0]["rank"], doc["fixes"][1]["rank"] = 2, 1
    _, md = render_one(write_doc(tmp_path, "reranked.json", doc), tmp_path / "report")
    rows = table_rows(section(md, "Fixes, ranked by saving"))
    assert [(r[0], r[2]) for r in rows] == [("1", "drain through xferbench's staged copier"),
                                            ("2", "pin the host buffer")]


def test_a_what_if_not_priced_shows_its_reason_and_makes_no_fix(data, tmp_path):
    _, md = render_one(data / "trace_complete.json", tmp_path / "report")
    what_ifs = table_rows(section(md, "What-ifs per group"))
    group2 = [r for r in what_ifs if r[0] == "2"]
    assert group2 == [["2", "blocks", "send the small copies as one batch",
                       "xferbench.copy_blocks or cudaMemcpyBatchAsync", "-", "-", BLOCKS_REASON]]
    priced = [r for r in what_ifs if r[0] == "0" and r[1] == "staged"]
    assert priced == [["0", "staged", "copy through xferbench's staged copier", "xferbench.Copier", "25.0 ms",
                       "61.0 ms", ""]]
    assert "2" not in [r[1] for r in table_rows(section(md, "Fixes, ranked by saving"))]


def test_the_html_has_the_plot_with_the_curves_and_one_marker_per_group(data, tmp_path):
    out = tmp_path / "report"
    html, _ = render_one(data / "trace_complete.json", out)
    img = re.search(r'<img src="(plots/[^"]+\.png)"[^>]* alt="([^"]*)"', html)
    assert img, "no figure in the page"
    assert (out / img.group(1)).stat().st_size > 1000
    alt = img.group(2)
    assert "Panels: host to device (h2d); device to host (d2h)" in alt
    assert "pinned, copy-sync" in alt and "pageable, staged" in alt  # the curves' labels
    for g in ("group 0: cudaMemcpy, pageable, 16 MiB", "group 1: cudaMemcpyAsync, pageable, 4 MiB",
              "group 2: cudaMemcpyAsync, pinned, 64 KiB"):
        assert alt.count(g) == 1


def test_no_cuda_says_so_prominently_and_draws_nothing(data, tmp_path):
    html, md = render_one(data / "trace_no_cuda.json", tmp_path / "report")
    text = "the program never loaded CUDA, so there was nothing to trace (it exited with 0)"
    assert f'<p class="note">{text}</p>' in html
    assert f"> **Note:** {text}" in md
    assert md.index(text) < md.index("## The bill")  # before the tables
    assert "No transfer was recorded." in section(md, "The bill")
    assert "No fix" in section(md, "Fixes, ranked by saving")
    assert "Nothing to draw" in section(md, "Against this machine's curves") and "<img" not in html


def test_an_interrupted_trace_says_so_and_still_shows_its_groups(data, tmp_path):
    _, md = render_one(data / "trace_interrupted.json", tmp_path / "report")
    assert ("> **Note:** the program was interrupted by SIGINT after 3.2 s: only the transfers up to then are here"
            in md)
    assert ("> **Note:** Process 4242: its records are not complete; 12 records were dropped (40 transfers "
            "recorded)." in md)
    assert [r[:4] for r in table_rows(section(md, "The bill"))] == [["0", "d2h", "pageable", "8 MiB"]]
    assert [r[2] for r in table_rows(section(md, "Fixes, ranked by saving"))] == ["pin the host buffer"]


def test_the_console_lists_the_outcome_and_the_fixes_in_rank_order(data, tmp_path, capsys):
    path = data / "trace_complete.json"
    assert run("render", path, "-o", tmp_path / "report") == 0
    out = capsys.readouterr().out.splitlines()
    at = out.index(f"{path}: the program exited with 0")
    assert out[at + 2].startswith("  1. group 0: pin the host buffer (tensor.pin_memory() or cudaHostAlloc): "
                                  "86.0 ms -> 19.5 ms, saves 66.5 ms")
    assert out[at + 3].startswith("  2. group 1: drain through xferbench's staged copier")


def test_several_traces_are_a_page_each_linked_from_the_index(data, tmp_path):
    out = tmp_path / "report"
    assert run("render", data / "trace_complete.json", data / "trace_interrupted.json", "-o", out) == 0
    index, summary = (out / "index.html").read_text(), (out / "summary.md").read_text()
    for name, outcome in (("trace_complete", "the program exited with 0"),
                          ("trace_interrupted", "the program was interrupted by SIGINT")):
        page = (out / f"trace-{name}.html").read_text()
        assert f"<title>{TITLE}</title>" in page and outcome in page
        assert f'<a href="trace-{name}.html">{name}.json</a>' in index
        assert f"[{name}.json](trace-{name}.md)" in summary
        assert f"# {TITLE}" in (out / f"trace-{name}.md").read_text()
    assert "pin the host buffer" in (out / "trace-trace_interrupted.md").read_text()
    assert "xferbench.Copier" not in (out / "trace-trace_interrupted.md").read_text()  # its own groups only


def test_a_trace_beside_a_result_file_is_linked_from_the_results_report(data, tmp_path):
    out = tmp_path / "report"
    assert run("render", data / "single_point.json", data / "trace_complete.json", "-o", out) == 0
    index = (out / "index.html").read_text()
    assert "Runs and system" in index and '<h2 id="traces">Program traces</h2>' in index
    assert '<a href="trace-trace_complete.html">trace_complete.json</a>' in index
    assert "The bill" in (out / "trace-trace_complete.html").read_text()


def test_the_malformed_fixture_is_refused_in_one_line(data, tmp_path, capsys):
    bad = data / "trace_malformed.json"
    assert run("render", bad, "-o", tmp_path / "report") == 2  # as a malformed result file alone (test_malformed)
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err == f"xferbench-report: error: {bad}: groups[0]: missing 'cost_s'\n"
    assert list(tmp_path.iterdir()) == []


def _drop(key):
    def edit(doc, path):
        *parents, last = path
        for p in parents:
            doc = doc[p]
        del doc[last]
    return lambda doc: edit(doc, key)


def _set(path, value):
    def edit(doc):
        d = doc
        for p in path[:-1]:
            d = d[p]
        d[path[-1]] = value
    return edit


MALFORMED = {
    "no-outcome": (_drop(("outcome",)), "missing 'outcome'"),
    "group-id-twice": (_set(("groups", 2, "id"), 0), "groups[2].id: id 0 is groups[0]'s too"),
    "no-outcome-text": (_drop(("outcome", "text")), "outcome: missing 'text'"),
    "unknown-state": (_set(("outcome", "state"), "crashed"),
                      "outcome.state: unknown state 'crashed' (expected complete, interrupted, no_cuda or not_traced)"),
    "wall-string": (_set(("wall_s",), "12 s"), 'wall_s: expected a number, got "12 s"'),
    "no-groups": (_drop(("groups",)), "missing 'groups'"),
    "unknown-direction": (_set(("groups", 1, "direction"), "sideways"),
                          "groups[1].direction: unknown direction 'sideways' "
                          "(expected h2d, d2h, d2d, h2h, p2p, set or unknown)"),
    "async-string": (_set(("groups", 0, "async"), "no"), 'groups[0].async: expected true or false, got "no"'),
    "unpriced-without-reason": (_drop(("groups", 0, "what_if", 2, "not_priced")),
                                "groups[0].what_if[2]: missing 'not_priced'"),
    "priced-without-saving": (_set(("groups", 0, "what_if", 0, "saving_s"), None),
                              "groups[0].what_if[0].saving_s: expected a number, got null"),
    "fix-of-no-group": (_set(("fixes", 1, "group"), 9), "fixes[1].group: no group 9 in 'groups'"),
    "rank-twice": (_set(("fixes", 1, "rank"), 1), "fixes[1].rank: rank 1 is fixes[0]'s too"),
    "fix-unpriced": (_set(("fixes", 0, "predicted_s"), None), "fixes[0].predicted_s: expected a number, got null"),
    "curve-point-zero-seconds": (_set(("machine", "curves", 0, "points", 1), [4194304, 0]),
                                 "machine.curves[0].points[1].seconds: must be positive, got 0"),
    "curve-point-not-a-pair": (_set(("machine", "curves", 0, "points", 0), 65536),
                               "machine.curves[0].points[0]: expected [bytes, seconds per transfer], got 65536"),
    "no-machine-text": (_drop(("machine", "text")), "machine: missing 'text'"),
    "future-version": (_set(("schema",), "xferbench-trace/2"),
                       "unsupported trace schema version 'xferbench-trace/2' (this tool reads xferbench-trace/1)"),
}


@pytest.mark.parametrize("case", sorted(MALFORMED))
def test_a_bad_or_missing_field_is_one_line_naming_it(complete, tmp_path, capsys, case):
    edit, message = MALFORMED[case]
    doc = copy.deepcopy(complete)
    edit(doc)
    bad = write_doc(tmp_path, "bad.json", doc)
    assert run("render", bad, "-o", tmp_path / "report") == 2
    assert capsys.readouterr().err == f"xferbench-report: error: {bad}: {message}\n"
    assert not (tmp_path / "report").exists()


def test_null_host_s_and_null_predicted_s_are_what_the_spec_allows(complete, tmp_path):
    doc = copy.deepcopy(complete)
    for g in doc["groups"]:
        g["host_s"] = None
    assert doc["groups"][0]["what_if"][2]["predicted_s"] is None
    html, _ = render_one(write_doc(tmp_path, "nulls.json", doc), tmp_path / "report")
    assert BLOCKS_REASON in html


def test_a_malformed_trace_beside_a_good_file_is_left_out(data, tmp_path, capsys):
    out = tmp_path / "report"
    assert run("render", data / "trace_malformed.json", data / "trace_complete.json", "-o", out) == 3
    assert capsys.readouterr().err == (f"xferbench-report: error: {data / 'trace_malformed.json'}: "
                                       "groups[0]: missing 'cost_s'\n")
    assert "the program exited with 0" in (out / "index.html").read_text()  # the good one alone: the report


def test_headlines_refuses_a_trace_in_one_line(data, capsys):
    path = data / "trace_complete.json"
    assert run("headlines", path) == 2
    assert capsys.readouterr().err == (f"xferbench-report: error: {path}: a trace file ('xferbench-trace/1'), "
                                       "not a result file: render draws it\n")


def test_a_real_trace_from_an_h100_shows_its_bill_and_fixes(data, tmp_path):
    """xferbench trace's file for examples/trace/transfer_pattern.cu as captured on an H100 (billed by
    tests/cli/test_trace.py's real-capture case): two groups, both pinned fixes, in the file's order."""
    _, md = render_one(data / "trace_h100_example.json.gz", tmp_path / "report")
    bill = table_rows(section(md, "The bill"))
    assert [(r[1], r[2], r[3], r[4], r[7]) for r in bill] == [("h2d", "pageable", "16 MiB", "cudaMemcpy", "64"),
                                                              ("d2h", "pageable", "64 KiB", "cudaMemcpy", "1,024")]
    fixes = table_rows(section(md, "Fixes, ranked by saving"))
    assert [(r[0], r[1], r[4], r[5]) for r in fixes] == [("1", "0", "84.4 ms -> 20.1 ms", "64.3 ms"),
                                                         ("2", "1", "28.0 ms -> 8.33 ms", "19.7 ms")]
