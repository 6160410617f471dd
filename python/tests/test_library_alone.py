"""The library without the report: `import xferbench` and xferbench.load() need no plotting library, and the
report tool says in one line what to install where its figures need one."""

import json
import os
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
# matplotlib made unimportable: None in sys.modules fails every import of it.
NO_MATPLOTLIB = "import sys; sys.modules['matplotlib'] = None\n"


def _python(code, tmp_path):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(HERE.parent)] + sys.path), MPLCONFIGDIR=str(tmp_path))
    return subprocess.run([sys.executable, "-c", NO_MATPLOTLIB + code], capture_output=True, text=True, env=env,
                          timeout=120)


def test_the_library_imports_and_loads_without_matplotlib(tmp_path):
    got = _python("import xferbench\n"
                  f"rows = xferbench.load({str(HERE / 'data' / 'single_point.json')!r}, frame=False)\n"
                  "assert rows and rows[0]['status'] == 'ok'\n"
                  "assert not any(m.startswith('matplotlib') and sys.modules[m] for m in sys.modules)\n"
                  "print('ok')", tmp_path)
    assert got.returncode == 0 and got.stdout.strip() == "ok", got.stderr


def _report_tool(args, tmp_path, cwd=None):
    """`python -m xferbench_report ARGS` with matplotlib unimportable."""
    code = f"import runpy; sys.argv = ['xferbench-report'] + {list(map(str, args))!r}\n" \
           "runpy.run_module('xferbench_report', run_name='__main__')"
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(HERE.parent)] + sys.path), MPLCONFIGDIR=str(tmp_path))
    return subprocess.run([sys.executable, "-c", NO_MATPLOTLIB + code], capture_output=True, text=True, env=env,
                          timeout=120, cwd=cwd)


def test_render_without_matplotlib_is_one_line_and_exit_69(tmp_path):
    out = tmp_path / "report"
    got = _report_tool(["render", HERE / "data" / "single_point.json", "-o", out], tmp_path)
    assert got.returncode == 69, got.stderr
    lines = got.stderr.splitlines()
    assert len(lines) == 1 and "Traceback" not in got.stderr, got.stderr
    assert lines[0].startswith(f"xferbench-report: error: render needs matplotlib, which this python "
                               f"({sys.executable}) cannot import (")
    assert "pip install matplotlib" in lines[0]
    assert not out.exists(), "nothing written"


def test_the_line_names_the_prepared_wrapper_where_the_tree_has_one(tmp_path, monkeypatch):
    """In a source tree whose build made build/bin/xferbench-report, the line points at it (from another
    python than .venv's)."""
    from xferbench_report import errors

    root = tmp_path / "tree"
    (root / "build" / "bin").mkdir(parents=True)
    (root / "build" / "bin" / "xferbench-report").write_text("#!/bin/sh\n")
    monkeypatch.setattr(errors, "__file__", str(root / "python" / "xferbench_report" / "errors.py"))
    monkeypatch.chdir(root)
    text = str(errors.MissingDependency("render", "matplotlib", "No module named 'matplotlib'"))
    assert text.endswith("pip install matplotlib, or run build/bin/xferbench-report, which uses the python "
                         "scripts/setup.sh prepared")


def test_the_other_commands_need_no_matplotlib(tmp_path):
    data = HERE / "data"
    got = _report_tool(["compare", data / "host_small.json", data / "host_small.json"], tmp_path)
    assert got.returncode == 0 and "compared 24 points" in got.stdout, got.stderr
    got = _report_tool(["headlines", data / "host_small.json"], tmp_path)
    assert got.returncode == 0 and got.stdout.startswith(str(data / "host_small.json")), got.stderr
    # A merged fleet file is read and judged without the binary; its node x device view is plain SVG.
    fleet = HERE.parents[1] / "tests" / "unit" / "data" / "fleet-host-4ranks.json"
    got = _report_tool(["fleet", fleet, "--svg", tmp_path / "fleet.svg"], tmp_path)
    verdict = json.loads(fleet.read_text())["fleet"]["exit_code"]  # the file's own (the fixture's is 3)
    assert got.returncode == verdict and got.stdout.startswith("fleet "), got.stderr
    assert (tmp_path / "fleet.svg").read_text().startswith("<svg")
