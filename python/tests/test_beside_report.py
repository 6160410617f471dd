"""`xferbench beside` files (schema xferbench/beside/v1) in `xferbench-report render`: the section "A copy beside
compute" shows the file's numbers per workload (a negative slowdown reads "faster"), a failed record with its reason,
one figure, and the file's findings word for word, only where the file has one: the report never makes, drops or
rewords a finding. A malformed beside file is refused in one line naming the field, exit 2.

data/beside_host.json is a real run on the 2-core VM (plain and staged, no finding); data/beside_blocks_host.json
another, of the seven ways over blocks, with one finding; data/beside_choices_host.json another, of loop and batch
with the block copier under each policy (its "choices"); data/beside_finding.json and data/beside_malformed.json
are derived from beside_host.json by data/make_beside_fixtures.py."""

import copy
import json
import re

import pytest

from xferbench_report.beside import NO_FINDING, slowdown_text
from xferbench_report.cli import main

TITLE = "A copy beside compute"
FINDING = ("beside cpu-memory, staged finishes both 17% sooner than plain, the fastest alone (0.158 s against 0.19 s "
           "for the same copy and work, medians; the ranges do not meet)")


def render(paths, out, code=0):
    assert main(["render", *map(str, paths), "-o", str(out)]) == code
    return (out / "index.html").read_text(), (out / "summary.md").read_text()


def section(md, heading):
    """The Markdown from a heading (any level) up to the next heading of that level or above."""
    m = re.search(rf"^(#+) {re.escape(heading)}\n", md, re.M)
    assert m, heading
    end = re.compile(rf"^#{{1,{len(m.group(1))}}} ", re.M).search(md, m.end())
    return md[m.start():end.start() if end else len(md)]


def rows(md):
    """The body rows of the Markdown tables in `md`, as lists of cells."""
    out = [[c.strip() for c in line.strip().strip("|").split(" | ")] for line in md.splitlines()
           if line.startswith("| ")]
    return [r for r in out if r[0] != "way"]


def load(data, name):
    return json.loads((data / name).read_text())


def write(tmp_path, name, doc):
    path = tmp_path / name
    path.write_text(json.dumps(doc))
    return path


def record(doc, workload, way):
    return next(r for r in doc["results"] if (r["workload"], r["way"]) == (workload, way))


def test_the_real_file_renders_its_section_with_the_files_numbers(data, tmp_path, capsys):
    html, md = render([data / "beside_host.json"], tmp_path / "r")
    assert f"## Studies\n\n### {TITLE} (beside_host.json)\n" in md and f"{TITLE} (beside_host.json)</h3>" in html
    # The file's sentence on its units, as it is.
    assert load(data, "beside_host.json")["conventions"] in md
    compute = section(md, "Beside cpu-compute")
    assert "560 copy steps of 4 MiB and 117 steps of cpu-compute" in compute
    assert rows(compute) == [
        ["plain", "47.24 (45.90 to 47.55)", "46.98 (45.91 to 47.47)", "100.5% (96.6% to 102.3%)",
         "0.1% faster (-0.4% to +0.4%)", "50.7 ms (50.4 ms to 50.9 ms)", "yes", ""],
        ["staged", "14.78 (13.06 to 15.34)", "0.585 (0.584 to 0.585)", "4.0% (3.8% to 4.5%)",
         "+3.2% slower (+3.1% to +3.3%)", "203 ms (189 ms to 206 ms)", "yes", ""],
    ]
    memory = section(md, "Beside cpu-memory")
    assert [r[0] for r in rows(memory)] == ["plain", "staged"]  # the file's order
    assert rows(memory)[0][1:6] == ["45.91 (44.31 to 46.63)", "45.80 (42.48 to 46.24)", "98.2% (95.9% to 100.7%)",
                                    "+0.3% slower (+0.0% to +1.2%)", "50.3 ms (50.2 ms to 53.3 ms)"]
    assert capsys.readouterr().err == ""


def test_the_slowdowns_sign_is_read_as_the_file_means_it():
    assert slowdown_text(0.12) == "+12.0% slower"
    assert slowdown_text(-0.03) == "3.0% faster"
    assert slowdown_text(-0.0014072305212876612) == "0.1% faster"  # beside_host.json's plain beside cpu-compute
    assert slowdown_text(0.0) == "as fast (0.0%)"


def test_a_negative_slowdown_in_a_file_reads_faster(data, tmp_path):
    doc = load(data, "beside_host.json")
    record(doc, "cpu-memory", "staged")["slowdown"] = {"median": -0.05, "low": -0.07, "high": -0.02}
    _, md = render([write(tmp_path, "faster.json", doc)], tmp_path / "r")
    staged = rows(section(md, "Beside cpu-memory"))[1]
    assert staged[4] == "5.0% faster (-7.0% to -2.0%)"
    assert "slower" not in staged[4]


def test_without_a_finding_the_section_says_why_there_can_be_none(data, tmp_path, capsys):
    html, md = render([data / "beside_host.json"], tmp_path / "r")
    assert section(md, "Findings of the run") == f"#### Findings of the run\n\n{NO_FINDING}\n"
    assert "finishes both" not in md and "finishes first" not in md
    assert "findings:" not in capsys.readouterr().out  # nothing to mention on the console either


def test_a_finding_is_shown_word_for_word_in_the_section_at_the_top_and_on_the_console(data, tmp_path, capsys):
    html, md = render([data / "beside_finding.json"], tmp_path / "r")
    assert load(data, "beside_finding.json")["findings"][0]["text"] == FINDING
    assert section(md, "Findings of the run") == f"#### Findings of the run\n\n- {FINDING}\n"
    assert NO_FINDING not in md
    # At the top of the report too, as the other studies' findings are, resting on the records it names.
    top = section(md, "Findings")
    assert f"- A copy beside cpu-memory: staged finishes first: {FINDING}\n" in top
    assert "beside_finding.json#findings[0], beside_finding.json#3, beside_finding.json#2" in top
    assert md.count(FINDING) == 3 and html.count(FINDING) == 3  # headline, table of all findings, the section
    out = capsys.readouterr().out
    assert f"findings:\n  A copy beside cpu-memory: staged finishes first: {FINDING}\n" in out
    # The edited records' numbers, which the finding quotes, are the table's.
    memory = rows(section(md, "Beside cpu-memory"))
    assert [r[5] for r in memory] == ["190 ms (185 ms to 196 ms)", "158 ms (155 ms to 161 ms)"]
    assert memory[0][4] == "+25.0% slower (+22.0% to +29.0%)"


def test_a_real_run_of_every_way_shows_each_record_and_its_finding_as_written(data, tmp_path, capsys):
    # data/beside_blocks_host.json: a real run of the seven ways over 64 blocks of 16 KiB (its argv), one finding.
    doc = load(data, "beside_blocks_host.json")
    html, md = render([data / "beside_blocks_host.json"], tmp_path / "r")
    for w in doc["config"]["workloads"]:
        records = [r for r in doc["results"] if r["workload"] == w]
        table = rows(section(md, f"Beside {w}"))
        assert [r[0] for r in table] == [r["way"] for r in records]
        for r, row in zip(records, table):
            assert row[1].startswith(f"{r['copy_alone']['median'] / 1e9:.2f} (")
            assert row[2].startswith(f"{r['copy_beside']['median'] / 1e9:.2f} (")
            assert row[4].split(" (")[0].endswith("slower" if r["slowdown"]["median"] > 0 else "faster")
    texts = [x["text"] for x in doc["findings"]]
    assert len(texts) == 1 and texts[0].startswith("beside cpu-memory, staged finishes both 24% sooner than copy")
    assert section(md, "Findings of the run") == "#### Findings of the run\n\n" + "".join(f"- {t}\n" for t in texts)
    assert f"A copy beside cpu-memory: staged finishes first: {texts[0]}" in capsys.readouterr().out


def test_two_files_each_show_their_own_findings_only(data, tmp_path):
    _, md = render([data / "beside_host.json", data / "beside_finding.json"], tmp_path / "r")
    host = section(md, f"{TITLE} (beside_host.json)")
    found = section(md, f"{TITLE} (beside_finding.json)")
    assert FINDING not in host and NO_FINDING in host
    assert FINDING in found and NO_FINDING not in found


def test_the_report_neither_rewords_nor_makes_a_finding(data, tmp_path, capsys):
    # Whatever the text says is shown as it is: nothing is rebuilt from the numbers or from `sooner`.
    doc = load(data, "beside_finding.json")
    doc["findings"][0].update(text="as the C++ put it, staged first", sooner=0.5)
    html, md = render([write(tmp_path, "reworded.json", doc)], tmp_path / "a")
    assert section(md, "Findings of the run") == "#### Findings of the run\n\n- as the C++ put it, staged first\n"
    assert FINDING not in md and "50%" not in md
    # The same numbers with no finding in the file: none is made (the C++ decides what a point is).
    doc["findings"] = []
    html, md = render([write(tmp_path, "none.json", doc)], tmp_path / "b")
    assert NO_FINDING in md and "finishes first" not in md and "finishes first" not in html
    assert "findings:" not in capsys.readouterr().out.split("wrote ")[-1]


def test_a_failed_record_shows_its_reason_and_is_not_drawn(data, tmp_path):
    doc = load(data, "beside_host.json")
    # No round ran (the C++ writes what identifies it and why, nothing measured).
    stalled = record(doc, "cpu-compute", "staged")
    for key in ("verified", "rounds", "copy_alone", "copy_beside", "copy_share", "work_alone", "work_beside",
                "slowdown", "joint_s"):
        del stalled[key]
    stalled.update(status="failed", reason="stalled: no progress for 12 s")
    # Rounds ran but the copies' data did not arrive: its numbers stay, unverified.
    bad = record(doc, "cpu-memory", "plain")
    bad.update(status="failed", verified=False, reason="byte 4096 of the copy differs")
    html, md = render([write(tmp_path, "failed.json", doc)], tmp_path / "r")
    assert rows(section(md, "Beside cpu-compute"))[1] == ["staged", "-", "-", "-", "-", "-", "-",
                                                          "failed: stalled: no progress for 12 s"]
    row = rows(section(md, "Beside cpu-memory"))[0]
    assert row[0] == "plain" and row[1] == "45.91 (44.31 to 46.63)"
    assert row[-2:] == ["no", "failed: byte 4096 of the copy differs"]
    assert html.count('<tr class="warn">') == 2
    assert "Not drawn: 2 records not ok (the tables give why)." in md
    # The figure has the two ok records only: plain beside cpu-compute, staged beside cpu-memory.
    alt = re.search(r'<img src="plots/study-beside-failed.png"[^>]* alt="([^"]*)"', html).group(1)
    assert "Panels: beside cpu-compute; beside cpu-memory" in alt and "Legend: plain; staged" in alt


def test_a_skipped_way_the_blocks_of_a_step_and_an_interruption_are_shown_as_the_file_says(data, tmp_path):
    # The shape the C++ writes for a way whose step cannot run here, and a config naming the step's blocks.
    doc = load(data, "beside_host.json")
    doc["config"].update(direction="h2d", blocks=256, block_bytes=16384)
    doc["interrupted"] = True
    doc["results"].append({"workload": "cpu-memory", "way": "kernel", "status": "skipped",
                           "reason": "the host steps have no kernel"})
    html, md = render([write(tmp_path, "skipped.json", doc)], tmp_path / "r")
    assert "Copy steps of 4 MiB (256 blocks of 16 KiB), h2d;" in md
    memory = section(md, "Beside cpu-memory")
    assert "542 copy steps of 4 MiB and 29 steps of cpu-memory" in memory
    assert rows(memory)[2] == ["kernel", "-", "-", "-", "-", "-", "-", "skipped: the host steps have no kernel"]
    assert '<tr class="warn">' not in html  # skipped is no fault
    assert "> **Note:** skipped.json: the run was interrupted; it holds only the records completed before." in md


def test_the_figure_has_a_panel_per_workload_and_a_point_per_way(data, tmp_path):
    html, _ = render([data / "beside_host.json"], tmp_path / "r")
    assert (tmp_path / "r" / "plots" / "study-beside-beside_host.png").is_file()
    alt = re.search(r'<img src="plots/study-beside-beside_host.png"[^>]* alt="([^"]*)"', html).group(1)
    assert alt == (f"{TITLE} (beside_host.json). Panels: beside cpu-compute; beside cpu-memory. "
                   "Legend: plain; staged")


def _drop(key):
    def edit(doc):
        *parents, last = key
        target = doc
        for k in parents:
            target = target[k]
        del target[last]
    return edit


def _set(key, value):
    def edit(doc):
        *parents, last = key
        target = doc
        for k in parents:
            target = target[k]
        target[last] = value
    return edit


@pytest.mark.parametrize("edit,message", [
    (_drop(("results", 0, "joint_s")), "results[0]: missing 'joint_s'"),
    (_drop(("conventions",)), "missing 'conventions'"),
    (_drop(("config", "ways")), "config: missing 'ways'"),
    (_drop(("findings",)), "missing 'findings'"),
    (_set(("results", 2, "verified"), "yes"), 'results[2].verified: expected true or false, got "yes"'),
    (_set(("results", 0, "status"), "lost"),
     "results[0].status: unknown status 'lost' (expected ok, skipped or failed)"),
    (_set(("results", 0, "status"), "skipped"), "results[0]: missing 'reason'"),
    (_set(("results", 1, "copy_alone"), {"median": 1.0, "low": 2.0, "high": 3.0}),
     "results[1].copy_alone: expected low <= median <= high, got [2.0, 1.0, 3.0]"),
    (_set(("results", 1, "copy_beside", "high"), -1), "results[1].copy_beside.high: cannot be negative, got -1"),
    (_set(("results", 3, "status"), "failed"), "results[3]: missing 'reason'"),
    (_set(("config", "rounds"), 2.5), "config.rounds: expected an integer, got 2.5"),
    (_set(("schema",), "xferbench/beside/v2"),
     "unsupported schema version 'xferbench/beside/v2' (this tool reads xferbench/beside/v1)"),
    (_set(("findings",), [{"workload": "cpu-memory", "fastest_alone": "plain", "first_beside": "dma",
                           "sooner": 0.2, "text": "t"}]),
     "findings[0].first_beside: no results for way 'dma' beside 'cpu-memory'"),
    (_set(("findings",), [{"workload": "cpu-memory", "fastest_alone": "plain", "first_beside": "staged",
                           "text": "t"}]), "findings[0]: missing 'sooner'"),
])
def test_a_malformed_file_is_refused_in_one_line_naming_the_field(data, tmp_path, capsys, edit, message):
    doc = copy.deepcopy(load(data, "beside_host.json"))
    edit(doc)
    path = write(tmp_path, "bad.json", doc)
    out = tmp_path / "r"
    assert main(["render", str(path), "-o", str(out)]) == 2
    assert capsys.readouterr().err == f"xferbench-report: error: {path}: {message}\n"
    assert not out.exists()


def test_the_malformed_fixture_is_one_line_and_the_good_file_beside_it_is_still_rendered(data, tmp_path, capsys):
    bad = data / "beside_malformed.json"
    message = f'xferbench-report: error: {bad}: results[1].slowdown.median: expected a number, got "3.2%"\n'
    assert main(["render", str(bad), "-o", str(tmp_path / "a")]) == 2
    assert capsys.readouterr().err == message
    _, md = render([data / "beside_host.json", bad], tmp_path / "b", code=3)
    assert capsys.readouterr().err == message
    assert f"{TITLE} (beside_host.json)" in md and "beside_malformed.json" not in md


def test_a_file_with_no_ok_record_is_refused_with_the_first_reason(data, tmp_path, capsys):
    doc = load(data, "beside_host.json")
    for r in doc["results"]:
        r.update(status="failed", reason="no round ran")
    path = write(tmp_path, "all-failed.json", doc)
    assert main(["render", str(path), "-o", str(tmp_path / "r")]) == 2
    assert capsys.readouterr().err == (f"xferbench-report: error: {path}: no ok measurements to report (4 records: "
                                       "4 failed; the first, plain beside cpu-compute: 'no round ran')\n")


def test_the_block_copiers_choices_are_shown_as_the_file_states_them(data, tmp_path):
    # data/beside_choices_host.json: a real run on the 2-core VM of loop and batch with the block copier under each
    # policy (auto, auto-beside) beside cpu-compute; one choice ended sooner than the best way, one later.
    doc = load(data, "beside_choices_host.json")
    _, md = render([data / "beside_choices_host.json"], tmp_path / "r")
    table = section(md, "The block copier's choices")
    got = {r[1]: r for r in rows(table) if len(r) == 7 and r[1] in ("auto", "auto-beside")}
    for c in doc["choices"]:
        r = got[c["copier"]]
        assert r[0] == c["workload"] and r[2] == c["chose"] and r[4] == c["best_way"]
        assert r[6] == f"{100 * c['vs_best']:+.1f}%"  # the sign as the file has it: + longer, - sooner
    assert {c["vs_best"] > 0 for c in doc["choices"]} == {True, False}  # the fixture holds both signs
    way_rows = [r for r in rows(section(md, "Beside cpu-compute")) if r[0] in ("auto", "auto-beside")]
    assert all("chose batch" in r[-1] for r in way_rows) and len(way_rows) == 2


def test_a_choice_naming_no_measured_way_is_refused_in_one_line(data, tmp_path, capsys):
    doc = load(data, "beside_choices_host.json")
    doc["choices"][1]["best_way"] = "teleport"
    path = write(tmp_path, "bad.json", doc)
    assert main(["render", str(path), "-o", str(tmp_path / "r")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "choices[1]" in err[0] and "teleport" in err[0], err
