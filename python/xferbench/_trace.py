"""xferbench.trace(): this process's CUDA transfers, captured in-process through CUPTI and written
as an xferbench trace file (schema "xferbench-trace/1"), as `xferbench trace -- CMD` writes it for a
whole program.

    with xferbench.trace("train-trace.json") as t:
        train_one_epoch()
    print(t.bill["summary"]["text"])

On entry the injection library (libxfer_cupti.so) is loaded with ctypes and started on a
temporary directory, where it writes the raw records; on exit (an exception in the block
included) it is stopped and `xferbench trace --from DIR -o PATH [--machine MACHINE]` builds the
file: the C++ tool decides everything in it, this module only moves it. Found:

- the library: XFERBENCH_CUPTI_LIBRARY, else beside the xferbench binary: its build tree
  (build/apps/xferbench/libxfer_cupti.so) or its install prefix
  (bin/xferbench -> lib/libxfer_cupti.so);
- the binary: XFERBENCH_BIN, else xferbench on PATH.

Only this process is traced (child processes, such as data-loader workers, are not): for
those, run the whole program under `xferbench trace --`.
"""

from __future__ import annotations

import ctypes
import json
import os
import shutil
import subprocess
import tempfile
import threading
import warnings
from pathlib import Path
from typing import Any, Optional, Union

from ._errors import TraceError, TraceUnavailable, XferError

LIBRARY = "libxfer_cupti.so"
_HOW = ("set XFERBENCH_CUPTI_LIBRARY to libxfer_cupti.so, or XFERBENCH_BIN to the xferbench binary of a build "
        "with CUDA (build/apps/xferbench/xferbench), or put that xferbench on PATH")

# CUPTI has one activity subscriber per process: one trace at a time.
_lock = threading.Lock()
_running: Optional["Trace"] = None


def _binary() -> Optional[str]:
    """The xferbench binary: XFERBENCH_BIN, else xferbench on PATH; None where there is neither."""
    exe = os.environ.get("XFERBENCH_BIN")
    if exe:
        if not (os.path.isfile(exe) and os.access(exe, os.X_OK)):
            raise TraceUnavailable(f"XFERBENCH_BIN={exe}: not an executable file (the xferbench binary)")
        return exe
    return shutil.which("xferbench")


def _candidates(exe: str) -> list:
    """Where libxfer_cupti.so lies for binary `exe`, as `xferbench trace` looks: beside it (the build
    tree puts it in build/apps/xferbench/), or in the install prefix's lib/ or lib64/ (bin/xferbench);
    for the path as given and as resolved (a link to the binary)."""
    out = []
    for b in (Path(os.path.abspath(exe)), Path(os.path.realpath(exe))):
        out += [b.parent / LIBRARY] + [b.parent.parent / d / LIBRARY for d in ("lib", "lib64")]
    return list(dict.fromkeys(out))


def _library(exe: Optional[str]) -> str:
    env = os.environ.get("XFERBENCH_CUPTI_LIBRARY")
    if env:
        if not os.path.isfile(env):
            raise TraceUnavailable(f"XFERBENCH_CUPTI_LIBRARY={env}: no such file (xferbench's CUPTI library, "
                                   f"built beside build/apps/xferbench/xferbench)")
        return env
    if not exe:
        raise TraceUnavailable(f"no {LIBRARY} to trace with: {_HOW}")
    looked = _candidates(exe)
    found = next((p for p in looked if p.is_file()), None)
    if found is None:
        raise TraceUnavailable(f"no {LIBRARY} beside xferbench ({exe}): looked for "
                               + ", ".join(map(str, looked))
                               + " (build xferbench with CUDA and CUPTI, or set XFERBENCH_CUPTI_LIBRARY)")
    return str(found)


def _load(path: str):
    try:
        lib = ctypes.CDLL(path)
    except OSError as e:
        raise TraceUnavailable(f"{path}: cannot load it ({e})") from None
    try:
        lib.xfer_trace_start.argtypes = [ctypes.c_char_p]
        lib.xfer_trace_start.restype = ctypes.c_int
        lib.xfer_trace_stop.argtypes = []
        lib.xfer_trace_stop.restype = ctypes.c_int
        lib.xfer_trace_error.argtypes = []
        lib.xfer_trace_error.restype = ctypes.c_char_p
    except AttributeError as e:
        raise TraceUnavailable(f"{path}: not xferbench's CUPTI library ({e})") from None
    return lib


class Trace:
    """The context manager xferbench.trace() returns. After the block: ``path`` (the trace file),
    ``bill`` (its contents, parsed), ``output`` (what `xferbench trace` printed)."""

    def __init__(self, path: Union[str, os.PathLike] = "xferbench-trace.json",
                 machine: Union[str, os.PathLike, None] = None):
        self.path = Path(path)
        self.machine = None if machine is None else os.fspath(machine)
        self.bill: Optional[Any] = None
        self.output: Optional[str] = None
        self._lib = None
        self._exe: Optional[str] = None
        self._dir: Optional[str] = None

    def _error_text(self) -> str:
        text = self._lib.xfer_trace_error()
        return text.decode(errors="replace") if text else "no reason given"

    def __enter__(self) -> "Trace":
        global _running
        exe = _binary()
        lib_path = _library(exe)
        if not exe:
            raise TraceUnavailable("no xferbench binary to write the trace file with: set XFERBENCH_BIN to it "
                                   "(build/apps/xferbench/xferbench) or put xferbench on PATH")
        lib = _load(lib_path)
        with _lock:
            if _running is not None:
                raise TraceUnavailable("a trace is already running in this process (CUPTI takes one at a time)")
            directory = tempfile.mkdtemp(prefix="xferbench-trace-")
            if lib.xfer_trace_start(os.fsencode(directory)) != 0:
                shutil.rmtree(directory, ignore_errors=True)
                text = lib.xfer_trace_error()
                why = text.decode(errors="replace") if text else "no reason given"
                raise TraceUnavailable(f"CUPTI cannot trace this process: {why}")
            self._lib, self._exe, self._dir = lib, exe, directory
            _running = self
        return self

    def __exit__(self, exc_type, exc, tb) -> bool:
        global _running
        with _lock:
            _running = None
            stopped = self._lib.xfer_trace_stop() == 0
        if exc_type is None:
            self._finish(stopped)
            return False
        # The block's exception goes on unchanged; the trace of what ran is still written where it can be.
        try:
            self._finish(stopped)
        except XferError as e:
            warnings.warn(f"xferbench.trace: {e}", RuntimeWarning, stacklevel=2)
        return False

    def _finish(self, stopped: bool) -> None:
        directory = self._dir
        if not stopped:
            raise TraceError(f"xfer_trace_stop failed: {self._error_text()} (the raw records are kept in {directory})")
        cmd = [self._exe, "trace", "--from", directory, "-o", str(self.path)]
        if self.machine is not None:
            cmd += ["--machine", self.machine]
        try:
            p = subprocess.run(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               text=True, errors="replace")
        except OSError as e:
            raise TraceError(f"{self._exe}: cannot run it ({e}; the raw records are kept in {directory})") from None
        self.output = p.stdout
        if p.returncode != 0:
            lines = [line.strip() for line in p.stderr.splitlines() if line.strip()]
            why = lines[-1] if lines else f"exit code {p.returncode}, nothing on stderr"
            raise TraceError(f"`xferbench trace --from {directory} -o {self.path}` failed: {why} "
                             f"(the raw records are kept in {directory})")
        try:
            with open(self.path, encoding="utf-8") as f:
                self.bill = json.load(f)
        except (OSError, ValueError) as e:
            raise TraceError(f"{self.path}: the trace file xferbench wrote cannot be read ({e}; the raw records are "
                             f"kept in {directory})") from None
        shutil.rmtree(directory, ignore_errors=True)


def trace(path: Union[str, os.PathLike] = "xferbench-trace.json",
          machine: Union[str, os.PathLike, None] = None) -> Trace:
    """Trace this process's CUDA transfers inside a ``with`` block and write them to ``path`` as an
    xferbench trace file (each transfer, grouped, priced against the machine's curves, with the fixes
    ranked by what they save). ``machine``: a sweep result file to price against (else the tool
    measures what it needs here, or prices nothing; the file's ``machine`` section says which).

    Raises TraceUnavailable on entry where tracing cannot start (the message says what is missing,
    or CUPTI's refusal), TraceError on exit where the file cannot be written. An exception inside
    the block propagates unchanged (the trace is still written where it can be; a failure to write
    it is then only a RuntimeWarning).
    """
    return Trace(path, machine)
