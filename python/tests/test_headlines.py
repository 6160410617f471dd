"""`xferbench-report headlines A B` compares a run with its rerun on the same machine (issue 49): two files from
different machines are refused (exit 2, one stderr line, nothing on stdout), by the rule compare uses to warn that
machines differ (compare.machine_difference), so the two commands never tell two files apart differently."""

import copy

import pytest

from xferbench_report.cli import main

from conftest import write_doc
from test_catalogue import _new_names_doc


def _other(change):
    """The v2 run of test_catalogue (a GPU, pinning buys 6x: a headline), its system changed by `change`."""
    doc = _new_names_doc()
    change(doc["system"])
    return doc


def _set(key, value):
    return lambda system: system.update({key: value})


def _move_the_gpu(system):
    system["accelerators"][0]["pci_address"] = "0000:41:00.0"


def _drop(key):
    return lambda system: system.pop(key)


def test_headlines_refuses_two_runs_from_different_machines_in_one_line(tmp_path, capsys):
    first = write_doc(tmp_path / "first.json", _new_names_doc())
    other = write_doc(tmp_path / "other.json", _other(_set("hostname", "h2")))
    assert main(["headlines", str(first), str(other)]) == 2
    out = capsys.readouterr()
    lines = out.err.splitlines()
    assert len(lines) == 1, out.err
    assert lines[0].startswith("xferbench-report: error: ") and "come from different machines (hostname g vs h2)" \
        in lines[0] and "headlines compares a run with its rerun on the same machine" in lines[0]
    assert out.out == ""  # refused before a headline is printed, "the runs agree" least of all
    # Either order, and a machine told apart by its accelerator alone.
    moved = write_doc(tmp_path / "moved.json", _other(_move_the_gpu))
    assert main(["headlines", str(moved), str(first)]) == 2
    out = capsys.readouterr()
    assert len(out.err.splitlines()) == 1 and "0000:41:00.0 0x10de vs 0000:01:00.0 0x10de" in out.err
    assert out.out == ""


def test_headlines_still_compares_two_runs_from_the_same_machine(tmp_path, capsys):
    first = write_doc(tmp_path / "first.json", _new_names_doc())
    rerun = write_doc(tmp_path / "rerun.json", _new_names_doc())
    assert main(["headlines", str(first), str(rerun)]) == 0
    out = capsys.readouterr()
    assert out.err == "" and "Pin or stage" in out.out and out.out.rstrip().endswith("the runs agree")
    # One file alone: nothing to tell apart.
    assert main(["headlines", str(first)]) == 0
    assert capsys.readouterr().err == ""


@pytest.mark.parametrize("change,differ", [
    (lambda system: None, False),
    (_set("hostname", "h2"), True),
    (_set("cpu_model", "another cpu"), True),
    (_set("logical_cpus", 16), True),
    (_move_the_gpu, True),
    (_set("kernel", "another kernel"), False),  # the same machine, updated: not what tells machines apart
    (_drop("hostname"), False),  # an older file without the field: it cannot tell, so it is not refused
], ids=["same", "hostname", "cpu-model", "logical-cpus", "accelerator", "kernel", "no-hostname"])
def test_headlines_refuses_exactly_where_compare_warns(tmp_path, capsys, change, differ):
    """One rule: headlines refuses the pairs compare warns about (and compare --same-machine refuses), no other."""
    first = write_doc(tmp_path / "first.json", _new_names_doc())
    second = write_doc(tmp_path / "second.json", _other(change))
    assert main(["compare", str(first), str(second)]) in (0, 1)
    warned = "warning: the files come from different machines" in capsys.readouterr().err
    assert main(["compare", "--same-machine", str(first), str(second)]) == (2 if differ else 0)
    capsys.readouterr()
    code = main(["headlines", str(first), str(second)])
    err = capsys.readouterr().err
    assert warned == differ
    assert (code == 2) == differ and ("come from different machines" in err) == differ, err
