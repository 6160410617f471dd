import sys
from pathlib import Path


class BadInput(Exception):
    """Input the tool cannot use: unreadable, not JSON, another schema, nothing to report.

    The CLI prints the message as one line and exits with exit_code.
    """

    exit_code = 2


class Incomparable(BadInput):
    """compare: two readable files that cannot be compared (no ok point in common;
    different machines under --same-machine); headlines: two files from different machines."""

    exit_code = 2


class Unreadable(BadInput):
    """compare: a file that cannot be read or is not a valid result file. Its own
    exit status, so a script can tell a broken input from a failed comparison."""

    exit_code = 3


class MissingDependency(Exception):
    """A Python package a command needs cannot be imported by this interpreter (render's matplotlib). Its own exit
    status, 69 (sysexits.h's EX_UNAVAILABLE), so a script can tell a missing package from bad input or a failed
    comparison; nothing is written."""

    exit_code = 69

    def __init__(self, command, package, cause):
        self.command, self.package = command, package
        super().__init__(f"{command} needs {package}, which this python ({sys.executable}) cannot import ({cause}): "
                         f"pip install {package}{_prepared_python()}")


def _prepared_python():
    """Where this source tree has a python prepared with everything: its build/bin wrapper, else setup.sh."""
    root = Path(__file__).resolve().parents[2]
    wrapper = root / "build" / "bin" / "xferbench-report"
    if wrapper.is_file() and not Path(sys.prefix).resolve() == (root / ".venv").resolve():
        try:
            shown = wrapper.relative_to(Path.cwd().resolve())
        except (ValueError, OSError):  # elsewhere, or no current directory
            shown = wrapper
        return f", or run {shown}, which uses the python scripts/setup.sh prepared"
    if (root / "scripts" / "setup.sh").is_file():
        return " (or scripts/setup.sh, which installs it into .venv)"
    return ""
