"""The library without the report: `import xferbench` and xferbench.load() need no plotting library, and the
report tool says in one line what to install where its figures need one."""

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


def test_render_without_matplotlib_is_one_line_and_exit_1(tmp_path):
    out = tmp_path / "report"
    got = _python("from xferbench_report.cli import main\n"
                  f"sys.exit(main(['render', {str(HERE / 'data' / 'single_point.json')!r}, '-o', {str(out)!r}]))",
                  tmp_path)
    assert got.returncode == 1, got.stderr
    assert got.stderr.splitlines() == [
        "xferbench-report: error: render draws its figures with matplotlib, which is not installed here: "
        "pip install 'xferbench[report]' (scripts/setup.sh installs it into .venv)"]
    assert not out.exists(), "nothing written"
