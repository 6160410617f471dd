"""setup.sh's one "is this package reachable" check (scripts/lib/apt.sh's apt_candidate),
run as setup.sh runs it (bash, set -euo pipefail) against a fake `apt-cache` first on PATH.

Issue 34: `apt-cache policy X | grep -q Candidate` under pipefail read a package that is there
as missing whenever apt-cache's output outlasted grep (SIGPIPE, exit 141), so a fresh machine
never got XRT, Open MPI or Chromium. The long fakes below print more than a pipe buffer (64 KiB)
after the candidate line, which is what makes that one-liner fail every time."""
import os
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
APT_SH = ROOT / "scripts" / "lib" / "apt.sh"

HEAD = 'printf "%s:\\n  Installed: (none)\\n  Candidate: {cand}\\n  Version table:\\n" "$2"\n'
# About 350 KB of version table, written by bash's builtin printf: like the real apt-cache,
# the writer itself gets SIGPIPE when its reader has gone.
TABLE = ('for i in $(seq 4000); do printf "     1.0-%s 500\\n        500 http://deb.debian.org/debian '
         'bookworm/main amd64 Packages\\n" "$i"; done\n')

FAKES = {
    # name: (body of the fake apt-cache, what apt_candidate must answer)
    "long, with a candidate": (HEAD.format(cand="202210.2.13.466+dfsg-8") + TABLE, True),
    "long, with an epoch candidate": (HEAD.format(cand="1:2.3-4") + TABLE, True),
    "long, no candidate": (HEAD.format(cand="(none)") + TABLE, False),
    "exits early after the candidate line": (HEAD.format(cand="4.1.4-3") + "exit 0\n", True),
    "exits early with nothing (no lists)": ('echo "N: Unable to locate package $2" >&2\nexit 0\n', False),
    "exits early with an error": ('echo "E: could not open the cache" >&2\nexit 100\n', False),
    "fails after printing a candidate": (HEAD.format(cand="1.0-1") + "exit 100\n", False),
}


def fake_apt_cache(tmp_path, body):
    bindir = tmp_path / "bin"
    bindir.mkdir()
    fake = bindir / "apt-cache"
    fake.write_text("#!/usr/bin/env bash\n" + body)
    fake.chmod(0o755)
    return {**os.environ, "PATH": f"{bindir}:{os.environ['PATH']}"}


def bash(script, env):
    return subprocess.run(["bash", "-c", "set -euo pipefail\n" + script], env=env, capture_output=True,
                          text=True, timeout=60)


@pytest.mark.parametrize("name", FAKES)
def test_apt_candidate_answers_right_whatever_apt_cache_prints(tmp_path, name):
    body, reachable = FAKES[name]
    env = fake_apt_cache(tmp_path, body)
    # Asked several times: the old one-liner's failure depended on who won a race.
    p = bash(f'. "{APT_SH}"\nfor i in 1 2 3 4 5; do\n'
             '  if apt_candidate libxrt-dev; then echo yes; else echo "no (exit $?)"; fi\ndone\n', env)
    assert p.returncode == 0, p.stderr
    answers = [line.split()[0] for line in p.stdout.splitlines()]
    assert answers == ["yes" if reachable else "no"] * 5, (name, p.stdout)


def test_the_long_fake_breaks_the_old_one_liner(tmp_path):
    """The fake is sharp enough: the check setup.sh used before fails on it with SIGPIPE's 141,
    where apt_candidate (above) says yes."""
    env = fake_apt_cache(tmp_path, FAKES["long, with a candidate"][0])
    p = bash("rc=0; apt-cache policy libxrt-dev 2>/dev/null | grep -q 'Candidate: [0-9]' || rc=$?; echo $rc", env)
    assert p.stdout.strip() == "141", p.stdout + p.stderr


def test_setup_asks_apt_cache_only_through_the_helper():
    """One place for the rule: no other apt-cache call in setup.sh to get wrong again."""
    setup = (ROOT / "scripts" / "setup.sh").read_text()
    calls = [line for line in setup.splitlines() if "apt-cache" in line and not line.lstrip().startswith("#")]
    assert calls == [], calls


def fake_apt_get(tmp_path, rc, lines):
    """A bin/ with an apt-get that prints LINES lines (as dpkg would) and exits RC, an `id` that
    says root, so setup.sh takes the apt path as it does on CI: nothing is really installed."""
    bindir = tmp_path / "bin"
    bindir.mkdir()
    (bindir / "apt-get").write_text(f'#!/usr/bin/env bash\nfor i in $(seq {lines}); do '
                                    'echo "Unpacking fake-package-$i ($*) ..."; done\n'
                                    f'[ {rc} = 0 ] || echo "E: fake apt-get failed: $*" >&2\nexit {rc}\n')
    (bindir / "id").write_text("#!/bin/sh\necho 0\n")
    for f in ("apt-get", "id"):
        (bindir / f).chmod(0o755)
    # CXX=false: every header check fails, so the required packages are "missing";
    # XFER_NO_*: the optional ones are left alone; PYTHON that is not a command: setup stops
    # right after the packages (before it could make a .venv or call pip).
    return {**os.environ, "PATH": f"{bindir}:{os.environ['PATH']}", "CXX": "false",
            "PYTHON": str(tmp_path / "no-python"), "XFER_SETUP_LOG": str(tmp_path / "setup.log"),
            "XFER_NO_XRT": "1", "XFER_NO_MPI": "1", "XFER_NO_VULKAN": "1", "XFER_NO_CHROMIUM": "1"}


def run_setup(env):
    return subprocess.run([str(ROOT / "scripts" / "setup.sh")], env=env, capture_output=True, text=True,
                          timeout=120)


def test_setup_puts_the_package_managers_output_in_its_log_and_a_line_per_step_on_the_console(tmp_path):
    p = run_setup(fake_apt_get(tmp_path, 0, 300))
    console = p.stderr.splitlines()
    assert [line.split(":")[0] for line in console] == ["setup"] * len(console), p.stderr
    assert console[0].startswith("setup: apt-get update (package lists): ") and "log: " in console[0]
    assert console[1].startswith("setup: installed ") and "libfmt-dev" in console[1]
    assert "fake-package" not in p.stderr  # apt-get's own lines are in the log only
    log = (tmp_path / "setup.log").read_text()
    assert log.count("Unpacking fake-package-") == 600  # update's and install's
    assert console[-1] == f"setup: no python: '{tmp_path / 'no-python'}' is not a command" and p.returncode == 1


def test_a_failed_step_shows_its_whole_output_on_the_console(tmp_path):
    p = run_setup(fake_apt_get(tmp_path, 100, 40))
    assert p.returncode == 1
    assert "setup: apt-get update (package lists): FAILED (exit 1" in p.stderr
    assert p.stderr.count("Unpacking fake-package-") == 40 and "E: fake apt-get failed: " in p.stderr
    assert p.stdout == ""
