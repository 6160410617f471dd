"""The Copier's tuning under libxfer's one rule (mem::tuning_for, docs/libxfer.md): the machine's
tuning, each XFER_STAGED_* variable over it, each argument over those; and its errors, one line
naming the argument (issue 35 item 5, issue 36). All on the host step, so they run here."""

import os
import subprocess
import sys

import pytest

np = pytest.importorskip("numpy")

import xferbench
from native_support import requires_native

pytestmark = requires_native


@pytest.fixture(autouse=True)
def no_tuning_variables(monkeypatch, tmp_path):
    for name in ("CHUNK_BYTES", "RING_DEPTH", "THREADS", "HANDOFF_BYTES", "STREAM_STORES"):
        monkeypatch.delenv(f"XFER_STAGED_{name}", raising=False)
    monkeypatch.setenv("XFER_STAGED_TUNING_CACHE", "off")


def _run(code, timeout=60, **env):
    """`code` in a process of its own: a hang fails the test instead of hanging the run."""
    return subprocess.run([sys.executable, "-c", code], env=dict(os.environ, **env), capture_output=True,
                          text=True, timeout=timeout)


@pytest.mark.parametrize("chunk", [1, 7, 63])
def test_a_chunk_under_a_cache_line_is_refused_not_a_hang(chunk):
    # It used to spin forever in to_device: the chunk schedule's ramp step rounded to 0.
    code = ("import numpy as np, xferbench\n"
            "try:\n"
            f"    c = xferbench.Copier('host', chunk_bytes={chunk}, calibrate=False)\n"
            "    c.to_device(np.zeros(1000, np.uint8), np.ones(1000, np.uint8))\n"
            "    print('copied')\n"
            "except ValueError as e:\n"
            "    print('ValueError:', e)\n")
    got = _run(code)
    assert got.returncode == 0, got.stderr
    assert got.stdout.strip() == f"ValueError: chunk_bytes={chunk}: expected an integer from 64 to 1073741824"


def test_the_smallest_chunk_copies():
    c = xferbench.Copier("host", chunk_bytes=64, ring_depth=2, threads=2, handoff_bytes=1, calibrate=False)
    src = np.arange(1000, dtype=np.uint8)
    dev, back = np.zeros_like(src), np.zeros_like(src)
    c.to_device(dev, src)
    c.to_host(back, dev)
    assert np.array_equal(back, src)


@pytest.mark.parametrize("kwargs, message", [
    (dict(ring_depth=2 ** 70), f"ring_depth={2 ** 70}: expected an integer from 1 to 1024"),
    (dict(ring_depth=5000), "ring_depth=5000: expected an integer from 1 to 1024"),
    (dict(threads=257), "threads=257: expected an integer from 1 to 256"),
    (dict(chunk_bytes=(1 << 30) + 1), f"chunk_bytes={(1 << 30) + 1}: expected an integer from 64 to 1073741824"),
    (dict(handoff_bytes=2 ** 64), f"handoff_bytes={2 ** 64}: expected an integer from 1 to 18446744073709551615"),
])
def test_an_absurd_argument_is_a_value_error_naming_it_and_its_bound(kwargs, message):
    with pytest.raises(ValueError) as e:
        xferbench.Copier("host", calibrate=False, **kwargs)
    assert str(e.value) == message


def test_a_variable_overrides_its_field_alone_and_an_argument_beats_it(monkeypatch):
    base = xferbench.Copier("host", calibrate=False).tuning
    monkeypatch.setenv("XFER_STAGED_RING_DEPTH", "3")
    monkeypatch.setenv("XFER_STAGED_THREADS", "5")
    got = xferbench.Copier("host", threads=2, calibrate=False).tuning
    assert got == dict(base, ring_depth=3, threads=2)


def test_settings_say_where_each_field_came_from():
    # The environment is the feature here: a variable's field is "environment", an argument's
    # "argument", the rest libxfer's defaults (no calibration asked for, no cache read). In a process
    # of its own: a host copier calibrated earlier in this one (another test's) would lend its fields,
    # and the settings would rightly say "calibration".
    got = _run("import json, xferbench\n"
               "xferbench.Copier('host', threads=2, calibrate=False, cache='off')\n"
               "print(json.dumps(xferbench.settings()['settings']))", XFER_STAGED_RING_DEPTH="3")
    assert got.returncode == 0, got.stderr
    import json
    staged = {s["name"]: s for s in json.loads(got.stdout)
              if s["component"] == "staged" and s["scope"].endswith("/host/host")}
    assert (staged["ring_depth"]["value"], staged["ring_depth"]["source"], staged["ring_depth"]["origin"]) == \
        ("3", "environment", "XFER_STAGED_RING_DEPTH")
    assert (staged["threads"]["value"], staged["threads"]["source"], staged["threads"]["origin"]) == \
        ("2", "argument", "threads")
    assert staged["chunk_bytes"]["source"] == "default"


def test_a_bad_variable_is_a_value_error_naming_it(monkeypatch):
    monkeypatch.setenv("XFER_STAGED_CHUNK_BYTES", "8M")
    with pytest.raises(ValueError, match=r"^XFER_STAGED_CHUNK_BYTES=8M: expected an integer from 64 to"):
        xferbench.Copier("host", calibrate=False)


def test_one_argument_still_calibrates_the_rest(tmp_path):
    # The rule is the route's: one field given, the others the machine's (calibrated and cached).
    cache = tmp_path / "tuning"
    got = _run("import json, xferbench\n"
               f"print(json.dumps(xferbench.Copier('host', ring_depth=3, cache={str(cache)!r}).tuning))")
    assert got.returncode == 0, got.stderr
    assert cache.exists(), "the calibration ran and kept its pick"
    chunk, depth, threads = (int(x) for x in cache.read_text().splitlines()[-1].split("\t")[2].split()[:3])
    import json
    tuning = json.loads(got.stdout)
    assert tuning["ring_depth"] == 3
    assert (tuning["chunk_bytes"], tuning["threads"]) == (chunk, threads)


def _one_line_type_error(call, match):
    with pytest.raises(TypeError) as e:
        call()
    text = str(e.value)
    assert "\n" not in text and "incompatible function arguments" not in text, text
    assert match in text, text


def test_a_read_only_destination_is_one_line_naming_it():
    c = xferbench.Copier("host", chunk_bytes=4096, ring_depth=2, threads=2, handoff_bytes=1, calibrate=False)
    ro = np.zeros(4, np.uint8)
    ro.flags.writeable = False
    _one_line_type_error(lambda: c.to_device(ro, np.zeros(4, np.uint8)), "dst is read-only")
    _one_line_type_error(lambda: c.to_host(ro, np.zeros(4, np.uint8)), "dst is read-only")
    _one_line_type_error(lambda: xferbench.copy(ro, np.zeros(4, np.uint8)), "dst is read-only")
    _one_line_type_error(lambda: c.to_device(np.zeros(4, np.uint8), "abcd"), "src is not an array")


class _DLPackOnly:
    """An array with DLPack and no buffer protocol, as a torch tensor or a CuPy array is."""

    def __init__(self, a):
        self._a = a

    def __dlpack__(self, **kwargs):
        return self._a.__dlpack__(**kwargs)

    def __dlpack_device__(self):
        return self._a.__dlpack_device__()


def test_the_read_only_check_remembers_types_without_the_buffer_protocol_not_arrays():
    # xferbench/_copy.py tries memoryview once per type: a type without the buffer protocol is
    # remembered, and its arrays still move; a NumPy array's read-only flag is still read each time.
    c = xferbench.Copier("host", chunk_bytes=4096, ring_depth=2, threads=2, handoff_bytes=1, calibrate=False)
    src = np.arange(8192, dtype=np.uint8)
    for _ in range(2):  # the second copy takes the remembered type's path
        dst = np.zeros(8192, np.uint8)
        c.to_device(_DLPackOnly(dst), src)
        assert (dst == src).all()
    ro = np.zeros(4, np.uint8)
    ro.flags.writeable = False
    _one_line_type_error(lambda: c.to_device(ro, np.zeros(4, np.uint8)), "dst is read-only")
    _one_line_type_error(lambda: xferbench.copy(ro, np.zeros(4, np.uint8)), "dst is read-only")


def test_a_tuning_argument_of_another_type_is_a_type_error():
    from xferbench._native_loader import _native
    _one_line_type_error(lambda: _native.Copier(-1, "runtime", 4.5, None, None, None, False),
                         "chunk_bytes must be an int or None, not float")
