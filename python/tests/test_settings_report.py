"""A run's resolved settings (config.settings, issue 51): read once by load_run, shown by the report, and named by
compare before any point when their values differ."""

import copy
import json

import pytest

from xferbench_report.cli import main
from xferbench_report.compare import compare_runs
from xferbench_report.load import load_run
from xferbench_report.settings import settings_of_point

from conftest import noisy, point, v2_doc, write_doc

GPU = "cuda-runtime/GPU-8f3a"
CHUNK = {"component": "staged", "scope": GPU, "name": "chunk_bytes", "value": "4194304", "source": "cache",
         "origin": "/home/u/.cache/xfer/staged-tuning.json"}
RANKING = {"component": "blocks", "scope": f"{GPU}/h2d/pinned/16384", "name": "ranking",
           "value": "kernel batch pack loop", "source": "cache", "origin": "/home/u/.cache/xfer/blocks.json"}
TARGET_CI = {"component": "sampling", "scope": "", "name": "target_ci", "value": "0.05", "source": "argument",
             "origin": "--target-ci"}


def sweep_doc(settings=None, slower=()):
    """A schema-2 run of eight sizes of one GPU route (20 samples each, 1% spread) with `settings` as its
    config.settings (None: the key absent, as in older files); the points at the indices in `slower` 30% slower."""
    points = []
    for k in range(8):
        factor = 1.3 if k in slower else 1.0
        samples = [s * factor for s in noisy(1e-6 * (1 << k), 0.01, seed=k)]
        p = point(backend="cuda-rt", route="copy-async", memory="pinned", nbytes=4096 << k, samples=samples)
        p.update(device_type="gpu", settings={"component": "staged", "scope": GPU},
                 verdict={"trusted": True, "why_not": [], "above_link_limit": False, "clock_misses_host_work": False})
        points.append(p)
    doc = v2_doc(points, {"copy-async": {"family": "copy", "role": "api-copy-queued", "directions": ["h2d"]}},
                 {"pinned": {"pinned": True, "dma_direct": True, "api_pinned": True}})
    if settings is not None:
        doc["config"]["settings"] = copy.deepcopy(settings)
    return doc


def with_value(setting, value, source=None):
    return dict(setting, value=value, source=source or setting["source"])


def compare_output(tmp_path, capsys, base_doc, new_doc):
    """(exit status, stdout lines) of `compare base.json new.json`."""
    base, new = write_doc(tmp_path / "base.json", base_doc), write_doc(tmp_path / "new.json", new_doc)
    status = main(["compare", str(base), str(new)])
    return status, capsys.readouterr().out.splitlines()


def test_a_changed_value_is_named_before_the_first_slower_point(tmp_path, capsys):
    base = sweep_doc([CHUNK, TARGET_CI])
    new = sweep_doc([with_value(CHUNK, "8388608", "calibration"), TARGET_CI], slower=(5, 6))
    status, lines = compare_output(tmp_path, capsys, base, new)
    assert status == 1  # the slower points decide the exit status, as before
    named = "  staged chunk_bytes [cuda-runtime/GPU-8f3a]: 4194304 (cache) -> 8388608 (calibration)"
    assert lines.index("settings that differ (1):") + 1 == lines.index(named)
    assert lines.index(named) < min(i for i, line in enumerate(lines) if "SLOWER" in line)
    assert not any("target_ci" in line for line in lines)  # the same value: not named


def test_differing_settings_alone_do_not_change_the_exit_status(tmp_path, capsys):
    status, lines = compare_output(tmp_path, capsys, sweep_doc([CHUNK]), sweep_doc([with_value(CHUNK, "1048576")]))
    assert status == 0
    assert "settings that differ (1):" in lines and not any("SLOWER" in line for line in lines)


def test_the_same_value_from_another_source_is_the_same(tmp_path, capsys):
    base = sweep_doc([with_value(CHUNK, "4194304", "calibration"), TARGET_CI])
    new = sweep_doc([with_value(CHUNK, "4194304", "replay"), TARGET_CI])
    status, lines = compare_output(tmp_path, capsys, base, new)
    assert status == 0
    assert "settings: the same (2 recorded)" in lines
    assert not any("differ" in line for line in lines)


def test_a_setting_in_one_file_only_is_named_with_that_file(tmp_path, capsys):
    _, lines = compare_output(tmp_path, capsys, sweep_doc([CHUNK, RANKING]), sweep_doc([CHUNK]))
    assert lines[lines.index("settings that differ (1):") + 1] == (
        '  blocks ranking [cuda-runtime/GPU-8f3a/h2d/pinned/16384]: only in BASE: "kernel batch pack loop" (cache)')
    _, lines = compare_output(tmp_path, capsys, sweep_doc([CHUNK]), sweep_doc([CHUNK, TARGET_CI]))
    assert "  sampling target_ci: only in NEW: 0.05 (argument)" in lines  # a process-wide setting: no [scope]


@pytest.mark.parametrize("base_settings,new_settings,line", [
    (None, [CHUNK], "settings: not compared: BASE (base.json) records no settings"),
    ([CHUNK], None, "settings: not compared: NEW (new.json) records no settings"),
    ([CHUNK], [], "settings: not compared: NEW (new.json) records no settings"),
    (None, None, "settings: not compared: neither file records settings"),
])
def test_a_file_without_settings_is_one_line(tmp_path, capsys, base_settings, new_settings, line):
    status, lines = compare_output(tmp_path, capsys, sweep_doc(base_settings), sweep_doc(new_settings))
    assert status == 0
    assert [x for x in lines if "settings" in x] == [line]
    assert lines.index(line) < lines.index(next(x for x in lines if x.startswith("backend ")))


def test_the_differences_for_a_machine_reader(tmp_path):
    base = load_run(write_doc(tmp_path / "b.json", sweep_doc([CHUNK, RANKING, TARGET_CI])))
    new = load_run(write_doc(tmp_path / "n.json", sweep_doc([with_value(CHUNK, "8388608", "replay"), TARGET_CI])))
    assert compare_runs(base, new).settings.as_dicts() == [
        {"component": "staged", "scope": GPU, "name": "chunk_bytes", "base": "4194304", "new": "8388608"},
        {"component": "blocks", "scope": RANKING["scope"], "name": "ranking", "base": "kernel batch pack loop",
         "new": None}]


def test_load_reads_the_settings_and_what_each_point_used(tmp_path):
    run = load_run(write_doc(tmp_path / "r.json", sweep_doc([TARGET_CI, CHUNK, RANKING])))
    assert [(s.component, s.scope, s.name, s.value, s.source, s.origin) for s in run.settings] == [
        tuple(s[k] for k in ("component", "scope", "name", "value", "source", "origin"))
        for s in (TARGET_CI, CHUNK, RANKING)]
    assert [s.name for s in settings_of_point(run.points[0])] == ["chunk_bytes"]
    older = load_run(write_doc(tmp_path / "old.json", sweep_doc(None)))
    assert older.settings == []


@pytest.mark.parametrize("settings,problem", [
    ({"component": "staged"}, "config.settings: expected an array"),
    ([dict(CHUNK, value=4194304)], "config.settings[0].value: expected a string, got 4194304"),
    ([{k: v for k, v in CHUNK.items() if k != "name"}], "config.settings[0]: missing 'name'"),
    ([CHUNK, TARGET_CI, with_value(CHUNK, "1")], "config.settings[2]: the same setting as config.settings[0]"),
])
def test_malformed_settings_are_one_line_and_exit_3(tmp_path, capsys, settings, problem):
    bad = write_doc(tmp_path / "bad.json", sweep_doc(settings))
    good = write_doc(tmp_path / "good.json", sweep_doc([CHUNK]))
    assert main(["compare", str(good), str(bad)]) == 3
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and problem in err, err


def test_the_report_shows_each_runs_settings_grouped(tmp_path):
    threads = {"component": "staged", "scope": GPU, "name": "threads", "value": "4", "source": "default",
               "origin": ""}
    other_gpu = dict(CHUNK, scope="cuda-runtime/GPU-11aa", value="2097152", source="calibration", origin="")
    # In the file: staged (GPU-8f3a), sampling, staged (GPU-11aa), staged (GPU-8f3a) again.
    with_settings = write_doc(tmp_path / "tuned.json", sweep_doc([CHUNK, TARGET_CI, other_gpu, threads]))
    older = write_doc(tmp_path / "older.json", sweep_doc(None))
    out = tmp_path / "report"
    assert main(["render", str(with_settings), str(older), "-o", str(out), "-j", "1"]) == 0
    md = (out / "summary.md").read_text()
    section = md[md.index("### Settings"):]
    assert "| component | scope | name | value | source | origin |" in section
    rows = [line for line in section.splitlines() if line.startswith("| staged |") or line.startswith("| sampling |")]
    assert rows == [
        "| staged | cuda-runtime/GPU-8f3a | chunk_bytes | 4194304 | cache | /home/u/.cache/xfer/staged-tuning.json |",
        "| staged | cuda-runtime/GPU-8f3a | threads | 4 | default | - |",
        "| staged | cuda-runtime/GPU-11aa | chunk_bytes | 2097152 | calibration | - |",
        "| sampling | (whole process) | target_ci | 0.05 | argument | --target-ci |",
    ]
    assert "older.json records no settings." in section
    html = (out / "index.html").read_text()
    assert "<h3>Settings</h3>" in html and "older.json records no settings." in html
