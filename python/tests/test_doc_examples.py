"""The documentation's examples, run as a newcomer would: every ```sh, ```bash and ```python block of README.md and
docs/*.md, one test per block.

Shell blocks run one command at a time (comment lines left out, backslash continuations joined) with bash, each
block in a fresh directory that mirrors the repository root (a symbolic link to each top-level entry), so
`docs/results/...` and `python/tests/data/...` resolve as from the root while what an example writes (r.json,
report/) lands in that directory. PATH starts with build/bin (scripts/build.sh puts xferbench and xferbench-report
there); a command build/bin lacks comes from a stand-in (the built binary, XFERBENCH_BIN; and this python running
xferbench_report). Caches go to a directory of this test (XDG_CACHE_HOME), not the user's. A command must exit 0
(or a status its block's exit= allows).

Python blocks run in the same kind of directory with PYTHONPATH=python:build/python and
XFER_STAGED_TUNING_CACHE=off, as docs/python.md's session was run. Where the doc shows a block's output (the untagged
block right after it), the lines that do not depend on the machine are compared; the rest must run to completion.

Words after the language in the fence's info string say what a block needs:
  gpu       an NVIDIA GPU (the CUDA backends; Vulkan and OpenCL on NVIDIA): run where nvidia-smi lists one
  cluster   srun, or mpirun over several ranks: skipped
  long      minutes of work: a build, the whole test suite (scripts/test.sh would run this test again), a full
            matrix: skipped
  install   installs packages (pip): skipped
  exit=A,B  the exit statuses its commands may end with (a measurement's verdict, such as fleet's 3), not just 0
A block naming a backend (-b) that `xferbench list` says this machine lacks is skipped with list's reason, and a
python block importing a module that is not installed (torch) is skipped saying which.

What the test changes, to keep its time small (about 50 s on the 2-core CI machine):
  - an `xferbench sweep` that sets no sampling time of its own (--budget, --quick, --max-time) gets the smallest
    --budget the tool accepts for its selection (it names that floor when it refuses a smaller one): the
    overview's 75 s becomes about 18 s here; every point is still measured and checked, only briefly;
  - a measuring `xferbench fleet` gets --repeat 1 --size 1M: the health set once, on 1 MiB.
"""

import importlib.util
import os
import re
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCS = [ROOT / "README.md"] + sorted((ROOT / "docs").glob("*.md"))
LANGUAGES = {"sh": "sh", "bash": "sh", "python": "python"}
# Reasons start alike, so a reader of the skips (scripts/components.py) can tell the blocks no test machine runs.
SKIPPED = {
    "cluster": "not run by the doc test: needs a cluster (srun, or mpirun over several ranks)",
    "long": "not run by the doc test: takes minutes (a build, the whole test suite or a full matrix)",
    "install": "not run by the doc test: installs packages (pip)",
}
NEEDS = {"gpu"}
COMMAND_TIMEOUT_S = 180
BIN = Path(os.environ.get("XFERBENCH_BIN") or ROOT / "build" / "apps" / "xferbench" / "xferbench")


@dataclass
class Block:
    doc: Path
    line: int  # of the opening fence
    language: str
    markers: set
    exits: set
    text: str
    shown: str = None  # the untagged block right after it: its output as the doc shows it
    errors: list = field(default_factory=list)

    @property
    def name(self):
        return f"{self.doc.relative_to(ROOT)}:{self.line}"


def _blocks(path):
    lines = path.read_text().split("\n")
    out, i = [], 0
    while i < len(lines):
        m = re.match(r"^ {0,3}```(.*)$", lines[i])
        if not m:
            i += 1
            continue
        info = m.group(1).split()
        end = next((j for j in range(i + 1, len(lines)) if re.match(r"^ {0,3}```\s*$", lines[j])), len(lines))
        body = "\n".join(lines[i + 1:end]) + "\n"
        if info and info[0] in LANGUAGES:
            b = Block(path, i + 1, LANGUAGES[info[0]], set(), {0}, body)
            for word in info[1:]:
                if word.startswith("exit="):
                    b.exits = {int(x) for x in word[5:].split(",")}
                elif word in SKIPPED or word in NEEDS:
                    b.markers.add(word)
                else:
                    b.errors.append(f"unknown marker {word!r} (known: {', '.join(sorted(SKIPPED) + sorted(NEEDS))}, "
                                    "exit=...)")
            out.append(b)
        elif not info and out and out[-1].line == _last_fence_before(lines, i):
            out[-1].shown = body
        i = end + 1
    return out


def _last_fence_before(lines, i):
    """The opening line of the fenced block that ends right before line i (only blank lines between), else None."""
    j = i - 1
    while j >= 0 and not lines[j].strip():
        j -= 1
    if j < 0 or not re.match(r"^ {0,3}```\s*$", lines[j]):
        return None
    k = j - 1
    while k >= 0 and not re.match(r"^ {0,3}```", lines[k]):
        k -= 1
    return k + 1


BLOCKS = [b for doc in DOCS for b in _blocks(doc)]


def commands(text):
    """The block's commands: comment and blank lines left out, continuations joined."""
    out, pending = [], ""
    for line in text.split("\n"):
        if not pending and (not line.strip() or line.lstrip().startswith("#")):
            continue
        if line.rstrip().endswith("\\"):
            pending += line.rstrip()[:-1] + " "
            continue
        out.append(pending + line)
        pending = ""
    return out


def test_the_docs_have_examples_and_every_marker_is_known():
    assert len(BLOCKS) >= 20, [b.name for b in BLOCKS]
    assert [f"{b.name}: {e}" for b in BLOCKS for e in b.errors] == []


@pytest.fixture(scope="module")
def place(tmp_path_factory):
    """What every block shares: the stand-ins for commands build/bin lacks, and the caches."""
    base = tmp_path_factory.mktemp("doc-examples")
    shim = base / "bin"
    shim.mkdir()
    built = ROOT / "build" / "bin"
    if not (built / "xferbench").exists():
        if not BIN.exists():
            pytest.skip(f"no xferbench binary: {BIN} (build it, or set XFERBENCH_BIN)")
        (shim / "xferbench").symlink_to(BIN)
    if not (built / "xferbench-report").exists():
        report = shim / "xferbench-report"
        report.write_text(f"#!/bin/sh\nPYTHONPATH={ROOT / 'python'} exec {sys.executable} -m xferbench_report \"$@\"\n")
        report.chmod(0o755)
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "XFERBENCH_BIN")}
    env.update(PATH=os.pathsep.join([str(built), str(shim), os.environ.get("PATH", "")]),
               XDG_CACHE_HOME=str(base / "cache"), MPLCONFIGDIR=str(base / "mpl"))
    xferbench = shutil.which("xferbench", path=env["PATH"])
    listed = subprocess.run([xferbench, "list"], capture_output=True, text=True, env=env, timeout=120).stdout
    backends = {m.group(1): m.group(2) for m in re.finditer(r"^([a-z][\w:.-]*): (.*)$", listed, re.M)}
    return {"base": base, "env": env, "backends": backends}


def _workdir(place, block):
    """A fresh directory that reads as the repository root."""
    d = place["base"] / re.sub(r"[^\w.-]", "_", block.name)
    d.mkdir()
    for entry in ROOT.iterdir():
        if entry.name != ".git":
            (d / entry.name).symlink_to(entry)
    return d


def _cuda_device():
    smi = shutil.which("nvidia-smi")
    if not smi:
        return False
    got = subprocess.run([smi, "-L"], capture_output=True, text=True, timeout=60)
    return got.returncode == 0 and "GPU " in got.stdout


def _skip_reason(block, place):
    if block.markers & set(SKIPPED):
        return "; ".join(SKIPPED[m] for m in sorted(block.markers & set(SKIPPED)))
    if "gpu" in block.markers and not _cuda_device():
        return "needs an NVIDIA GPU: nvidia-smi lists none here"
    if block.language == "sh":
        for cmd in commands(block.text):
            for value in re.findall(r"(?:^|\s)(?:-b|--backend)[ =](\S+)", cmd):
                for backend in value.split(","):
                    why = place["backends"].get(backend)
                    if why is None:
                        return f"needs backend {backend}, which this machine lacks (not in `xferbench list`)"
                    if why.startswith("unavailable"):
                        return f"needs backend {backend}: {why}"
    if block.language == "python":
        for name in _imports(block.text):
            if importlib.util.find_spec(name) is None:
                return f"needs the python module {name}, not installed here"
        built = list((ROOT / "build" / "python" / "xferbench").glob("_native*"))
        # Where scripts/test.sh says the build made it (XFERBENCH_REQUIRE_NATIVE=1), its absence fails the block.
        if "xferbench" in _imports(block.text) and not built and os.environ.get("XFERBENCH_REQUIRE_NATIVE") != "1":
            return "the native module is not built (build/python/xferbench)"
    return None


def _imports(code):
    names = set()
    for m in re.finditer(r"^\s*(?:import\s+([\w., ]+)|from\s+(\w+)[\w.]*\s+import)", code, re.M):
        for part in (m.group(1) or m.group(2)).split(","):
            names.add(part.strip().split()[0].split(".")[0])
    return names


SAMPLING_OPTIONS = re.compile(r"(?:^|\s)--(?:budget|quick|max-time)(?:[ =]|$)")
SWEEP = re.compile(r"(?:^|\s)xferbench sweep(?=\s|$)")
FLEET = re.compile(r"(?:^|\s)xferbench fleet(?=\s|$)")


def _with_option(cmd, pattern, options):
    m = pattern.search(cmd)
    return cmd[:m.end()] + " " + options + cmd[m.end():]


def _run(cmd, cwd, env):
    t0 = time.monotonic()
    got = subprocess.run(["bash", "-o", "pipefail", "-c", cmd], cwd=cwd, env=env, capture_output=True, text=True,
                         timeout=COMMAND_TIMEOUT_S)
    return got, time.monotonic() - t0


def run_command(cmd, cwd, env):
    """(completed process, seconds, the command as run): a sweep is held to its smallest budget and a fleet to one
    short health set, as the module's docstring says."""
    if SWEEP.search(cmd) and not SAMPLING_OPTIONS.search(cmd):
        probe, t = _run(_with_option(cmd, SWEEP, "--budget 0.001"), cwd, env)
        floor = re.search(r"give at least ([\d.]+) s", probe.stderr)
        if not floor:
            return probe, t, cmd + "  [--budget 0.001 accepted]"
        cmd = _with_option(cmd, SWEEP, f"--budget {floor.group(1)}")
    elif FLEET.search(cmd) and "--merge" not in cmd:
        cmd = _with_option(cmd, FLEET, "--repeat 1 --size 1M")
    got, t = _run(cmd, cwd, env)
    return got, t, cmd


@pytest.mark.parametrize("block", BLOCKS, ids=[b.name for b in BLOCKS])
def test_example(block, place):
    why = _skip_reason(block, place)
    if why:
        pytest.skip(why)
    cwd = _workdir(place, block)
    if block.language == "python":
        return _python_example(block, cwd, place)
    times = []
    for cmd in commands(block.text):
        got, seconds, ran = run_command(cmd, cwd, place["env"])
        times.append(f"{seconds:6.1f} s  {ran}")
        assert got.returncode in block.exits, (
            f"{block.name}: `{ran}` exited {got.returncode} (expected {sorted(block.exits)})\n"
            f"stdout (end): {got.stdout[-2000:]}\nstderr (end): {got.stderr[-2000:]}")
    print(f"\n{block.name}:\n  " + "\n  ".join(times))  # the times, for the record: pytest -s or -rP shows them


def _python_example(block, cwd, place):
    env = dict(place["env"], PYTHONPATH=os.pathsep.join([str(ROOT / "python"), str(ROOT / "build" / "python")]),
               XFER_STAGED_TUNING_CACHE="off")
    got = subprocess.run([sys.executable, "-c", block.text], cwd=cwd, env=env, capture_output=True, text=True,
                         timeout=COMMAND_TIMEOUT_S)
    assert got.returncode == 0, f"{block.name} failed:\n{got.stderr[-3000:]}"
    if block.shown is not None and block.text == _example_file("session_host.py"):
        _check_host_session(got.stdout, block.shown)


def _example_file(name):
    return (ROOT / "python" / "examples" / name).read_text()


def test_the_sessions_shown_are_the_example_files():
    """docs/python.md shows python/examples' sessions verbatim (and their output, from running those files)."""
    texts = [b.text for b in BLOCKS if b.doc.name == "python.md"]
    for name in ("session_host.py", "session_gpu.py"):
        assert _example_file(name) in texts, f"docs/python.md does not show python/examples/{name} as it is"
    host = next(b for b in BLOCKS if b.text == _example_file("session_host.py"))
    assert host.shown is not None and "gpu" not in host.markers  # so test_example checks its output


def _check_host_session(out, shown):
    """docs/python.md's CI-VM session against its shown output: every line but what the machine decides (CUDA's
    state, and the tuning the copier calibrated)."""
    got, want = out.splitlines(), shown.strip("\n").splitlines()
    assert len(want) == 9
    kinds, cuda, block, requested, cache, hits, copied, refused, loaded = range(9)
    no_cuda = got[cuda].startswith("(0, ")
    assert len(got) == (9 if no_cuda else 8), out
    for i in (kinds, block, requested, cache, hits):
        assert got[i] == want[i], (i, got[i], want[i])
    assert got[-1] == want[loaded]  # load(): a list of dicts, whatever is installed
    assert got[copied].startswith("True {'chunk_bytes': ") and got[copied].endswith("}")
    assert want[copied].startswith("True {'chunk_bytes': ")
    if no_cuda:
        assert got[refused].startswith("CudaUnavailableError: memory kind 'pinned' needs CUDA: ")
        assert want[refused].startswith("CudaUnavailableError: memory kind 'pinned' needs CUDA: ")
