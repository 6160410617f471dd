"""The native module in one process with other C++ extensions: it must not hand them its copy of
the C++ runtime. On the GPU machine the module once exported about 2,300 libstdc++ symbols (its
compiler linked part of libstdc++ from an archive): torch imported after it aborted in
std::locale's destructor, and the copier's first std::ifstream crashed
(docs/results/h100/gate/pytest-crash-3ea4d3f.txt). Each case runs in a child process, so a crash
is a failed test and not the end of the run."""

import importlib.util
import os
import subprocess
import sys

import pytest

import xferbench
from native_support import requires_native
from xferbench._native_loader import _native

pytestmark = requires_native

ROUND_TRIP = """
import numpy as np, xferbench
c = xferbench.Copier("host", chunk_bytes=64 << 10, ring_depth=4, threads=2, handoff_bytes=16 << 10)
src = np.random.default_rng(1).integers(0, 255, (3 << 20) | 12345, dtype=np.uint8)
dev = np.zeros_like(src); c.to_device(dev, src)
back = np.full_like(src, 7); c.to_host(back, dev)
assert np.array_equal(back, src)
"""


def run_child(code):
    # The child finds the package and the built module where this process found them.
    here = [os.path.dirname(os.path.dirname(m.__file__)) for m in (xferbench, _native) if m is not None]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(here + [os.environ.get("PYTHONPATH", "")]))
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env=env)
    assert r.returncode == 0, f"exit {r.returncode}: {r.stderr[-2000:]}"


def test_a_staged_copy_in_a_fresh_process():
    # The first copy of a process reads the last-level cache's size from sysfs (a std::ifstream).
    pytest.importorskip("numpy")
    run_child(ROUND_TRIP)


@pytest.mark.skipif(importlib.util.find_spec("torch") is None, reason="torch is not installed")
def test_torch_imported_after_xferbench():
    run_child("import xferbench, torch\n"
              "assert float(torch.ones(3).sum()) == 3.0\n" + ROUND_TRIP)
