"""xferbench.trace() without a GPU: the injection library and the xferbench binary are stand-ins
built here (a C library with the three entry points, compiled with cc; a shell script that
writes a trace file where -o says), so what is tested is the wiring: where the library is
looked for, what a refusal says, what the binary is given, what comes back, and that an
exception in the block still stops the trace and goes on unchanged."""

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

import xferbench
from xferbench import TraceError, TraceUnavailable, XferError

CC = shutil.which("cc") or shutil.which("gcc")
PATH = os.environ.get("PATH", "/usr/bin:/bin")  # the tests empty it; the compiler and the stand-in binary need it
needs_cc = pytest.mark.skipif(not CC, reason="no C compiler (cc) to build the stand-in libxfer_cupti.so")

FAKE_LIB = r"""
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static char dir_[4096];

static void note(const char* what, const char* arg) {  /* appends "what arg" to $FAKE_TRACE_LOG */
  const char* path = getenv("FAKE_TRACE_LOG");
  if (!path) return;
  FILE* f = fopen(path, "a");
  if (!f) return;
  fprintf(f, "%s %s\n", what, arg);
  fclose(f);
}

int xfer_trace_start(const char* dir) {
  note("start", dir);
  if (START_RC != 0) return START_RC;
  snprintf(dir_, sizeof dir_, "%s/cupti-%d.jsonl", dir, (int)getpid());
  FILE* f = fopen(dir_, "w");  /* the raw records, as the real library writes them */
  if (!f) return 3;
  fputs("fake-records\n", f);
  fclose(f);
  return 0;
}

int xfer_trace_stop(void) { note("stop", "-"); return STOP_RC; }

const char* xfer_trace_error(void) { return ERROR_TEXT; }
"""

# The stand-in binary: logs its argv (one argument a line) to $FAKE_ARGV, notes "binary" in the
# library's log (so the order of stop and the binary shows), and writes to -o a small trace file
# holding the raw records it found in --from; or fails as the real one does with $FAKE_FAIL set.
FAKE_BIN = r"""#!/bin/sh
PATH="@PATH@"
printf '%s\n' "$@" > "$FAKE_ARGV"
[ -n "$FAKE_TRACE_LOG" ] && echo "binary -" >> "$FAKE_TRACE_LOG"
out=""; from=""
while [ $# -gt 0 ]; do
  case "$1" in -o) out="$2"; shift ;; --from) from="$2"; shift ;; esac
  shift
done
if [ -n "$FAKE_FAIL" ]; then
  echo "reading the raw records" >&2
  echo "xferbench: $from/cupti-1.jsonl: line 3: not JSON" >&2
  exit 1
fi
printf '{"schema": "xferbench-trace/1", "raw": "%s", "summary": {"transfers": 0}}\n' \
  "$(cat "$from"/cupti-*.jsonl)" > "$out"
echo "0 transfers"
"""


def build_lib(directory, start_rc=0, stop_rc=0, error="no error", name="libxfer_cupti.so"):
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    src = directory / "fake_cupti.c"
    src.write_text(FAKE_LIB)
    lib = directory / name
    subprocess.run([CC, "-shared", "-fPIC", "-o", str(lib), str(src), f"-DSTART_RC={start_rc}",
                    f"-DSTOP_RC={stop_rc}", f"-DERROR_TEXT={json.dumps(error)}"], check=True,
                   env={**os.environ, "PATH": PATH})
    return lib


def write_bin(path):
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(FAKE_BIN.replace("@PATH@", PATH))
    path.chmod(0o755)
    return path


@pytest.fixture
def env(monkeypatch, tmp_path):
    """A clean environment: no library or binary named, an empty PATH, the stand-ins' logs in tmp_path."""
    monkeypatch.delenv("XFERBENCH_CUPTI_LIBRARY", raising=False)
    monkeypatch.delenv("XFERBENCH_BIN", raising=False)
    monkeypatch.delenv("FAKE_FAIL", raising=False)
    empty = tmp_path / "empty-path"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    monkeypatch.setenv("FAKE_TRACE_LOG", str(tmp_path / "calls.log"))
    monkeypatch.setenv("FAKE_ARGV", str(tmp_path / "argv.log"))
    return monkeypatch


def calls(tmp_path):
    """The stand-ins' log: [(what, arg)] in order."""
    log = tmp_path / "calls.log"
    return [tuple(line.split(" ", 1)) for line in log.read_text().splitlines()] if log.exists() else []


def argv(tmp_path):
    return (tmp_path / "argv.log").read_text().splitlines()


@pytest.fixture
def ready(env, tmp_path):
    """A library that starts, and a binary that writes the file: both named by the environment."""
    env.setenv("XFERBENCH_CUPTI_LIBRARY", str(build_lib(tmp_path / "lib")))
    env.setenv("XFERBENCH_BIN", str(write_bin(tmp_path / "bin" / "xferbench")))
    return tmp_path


def test_exported_from_the_package():
    assert xferbench.trace is not None and "trace" in xferbench.__all__
    assert issubclass(TraceUnavailable, XferError) and issubclass(TraceError, XferError)


def test_missing_library_named_by_the_environment(env, tmp_path):
    missing = tmp_path / "nowhere" / "libxfer_cupti.so"
    env.setenv("XFERBENCH_CUPTI_LIBRARY", str(missing))
    with pytest.raises(TraceUnavailable, match="XFERBENCH_CUPTI_LIBRARY") as e:
        with xferbench.trace(tmp_path / "t.json"):
            pytest.fail("the block ran without a library")
    assert str(missing) in str(e.value)
    assert not (tmp_path / "t.json").exists()


def test_missing_library_beside_the_build_trees_binary(env, tmp_path):
    exe = write_bin(tmp_path / "build" / "apps" / "xferbench" / "xferbench")
    env.setenv("XFERBENCH_BIN", str(exe))
    with pytest.raises(TraceUnavailable) as e:
        with xferbench.trace(tmp_path / "t.json"):
            pass
    assert str(tmp_path / "build" / "apps" / "xferbench" / "libxfer_cupti.so") in str(e.value)
    assert "XFERBENCH_CUPTI_LIBRARY" in str(e.value)


def test_neither_library_nor_binary(env, tmp_path):
    with pytest.raises(TraceUnavailable) as e:
        xferbench.trace().__enter__()
    assert "libxfer_cupti.so" in str(e.value)
    assert "XFERBENCH_CUPTI_LIBRARY" in str(e.value) and "XFERBENCH_BIN" in str(e.value)


def test_library_but_no_binary(env, tmp_path):
    env.setenv("XFERBENCH_CUPTI_LIBRARY", str(tmp_path / "libxfer_cupti.so"))
    (tmp_path / "libxfer_cupti.so").write_text("")  # never loaded: the binary is missing first
    with pytest.raises(TraceUnavailable, match="no xferbench binary"):
        xferbench.trace().__enter__()


def test_not_a_library(env, tmp_path):
    junk = tmp_path / "libxfer_cupti.so"
    junk.write_text("not an ELF file")
    env.setenv("XFERBENCH_CUPTI_LIBRARY", str(junk))
    env.setenv("XFERBENCH_BIN", str(write_bin(tmp_path / "bin" / "xferbench")))
    with pytest.raises(TraceUnavailable, match="cannot load"):
        xferbench.trace().__enter__()


@needs_cc
def test_cupti_refused_carries_the_librarys_reason(env, tmp_path):
    env.setenv("XFERBENCH_CUPTI_LIBRARY",
               str(build_lib(tmp_path / "lib", start_rc=1, error="CUPTI is held by another profiler")))
    env.setenv("XFERBENCH_BIN", str(write_bin(tmp_path / "bin" / "xferbench")))
    with pytest.raises(TraceUnavailable, match="CUPTI is held by another profiler"):
        with xferbench.trace(tmp_path / "t.json"):
            pytest.fail("the block ran although the trace did not start")
    [(what, directory)] = calls(tmp_path)  # started, refused; never stopped, the binary never run
    assert what == "start" and not os.path.exists(directory)  # its temporary directory is gone


@needs_cc
def test_bill_is_the_file_the_binary_wrote(ready):
    tmp_path = ready
    out = tmp_path / "out" / "trace.json"
    out.parent.mkdir()
    with xferbench.trace(out) as t:
        assert t.bill is None
    started, stopped, ran = calls(tmp_path)
    assert (started[0], stopped[0], ran[0]) == ("start", "stop", "binary")  # stopped before the file is built
    directory = started[1]
    assert argv(tmp_path) == ["trace", "--from", directory, "-o", str(out)]
    assert t.path == out
    assert t.bill == {"schema": "xferbench-trace/1", "raw": "fake-records", "summary": {"transfers": 0}}
    assert t.bill == json.loads(out.read_text())
    assert t.output == "0 transfers\n"
    assert not os.path.exists(directory)  # the raw records are gone once the file is written


@needs_cc
def test_machine_file_is_passed(ready):
    tmp_path = ready
    with xferbench.trace(tmp_path / "t.json", machine=tmp_path / "sweep.json"):
        pass
    assert argv(tmp_path)[-2:] == ["--machine", str(tmp_path / "sweep.json")]


@needs_cc
def test_default_path(ready, monkeypatch):
    monkeypatch.chdir(ready)
    with xferbench.trace() as t:
        pass
    assert argv(ready)[-2:] == ["-o", "xferbench-trace.json"]
    assert t.bill == json.loads((ready / "xferbench-trace.json").read_text())


@needs_cc
def test_exception_in_the_block_stops_and_propagates_unchanged(ready):
    tmp_path = ready
    boom = KeyError("boom")
    with pytest.raises(KeyError) as e:
        with xferbench.trace(tmp_path / "t.json") as t:
            raise boom
    assert e.value is boom
    assert [what for what, _ in calls(tmp_path)] == ["start", "stop", "binary"]
    assert t.bill["raw"] == "fake-records"  # what ran before it is still written


@needs_cc
def test_binary_failure_is_a_trace_error_with_its_reason(ready, monkeypatch):
    monkeypatch.setenv("FAKE_FAIL", "1")
    with pytest.raises(TraceError) as e:
        with xferbench.trace(ready / "t.json"):
            pass
    directory = calls(ready)[0][1]
    assert f"{directory}/cupti-1.jsonl: line 3: not JSON" in str(e.value)  # stderr's last line
    assert "reading the raw records" not in str(e.value)
    assert os.path.isdir(directory) and directory in str(e.value)  # kept, and named
    shutil.rmtree(directory)


@needs_cc
def test_binary_failure_does_not_replace_the_blocks_exception(ready, monkeypatch):
    monkeypatch.setenv("FAKE_FAIL", "1")
    boom = ValueError("boom")
    with pytest.warns(RuntimeWarning, match="not JSON"):
        with pytest.raises(ValueError) as e:
            with xferbench.trace(ready / "t.json"):
                raise boom
    assert e.value is boom
    shutil.rmtree(calls(ready)[0][1])


@needs_cc
def test_stop_failure_is_a_trace_error(env, tmp_path):
    env.setenv("XFERBENCH_CUPTI_LIBRARY", str(build_lib(tmp_path / "lib", stop_rc=1, error="buffers lost")))
    env.setenv("XFERBENCH_BIN", str(write_bin(tmp_path / "bin" / "xferbench")))
    with pytest.raises(TraceError, match="xfer_trace_stop failed: buffers lost"):
        with xferbench.trace(tmp_path / "t.json"):
            pass
    assert [what for what, _ in calls(tmp_path)] == ["start", "stop"]
    shutil.rmtree(calls(tmp_path)[0][1])


@needs_cc
def test_one_trace_at_a_time(ready):
    with xferbench.trace(ready / "a.json"):
        with pytest.raises(TraceUnavailable, match="already running"):
            with xferbench.trace(ready / "b.json"):
                pass
    with xferbench.trace(ready / "c.json") as t:  # and another after it
        pass
    assert t.bill["raw"] == "fake-records"


@needs_cc
def test_found_beside_the_build_tree_through_path(env, tmp_path):
    """xferbench on PATH as build/bin/xferbench, a link to build/apps/xferbench/xferbench: the library
    is the one beside the binary it links to, build/apps/xferbench/libxfer_cupti.so."""
    build = tmp_path / "build"
    exe = write_bin(build / "apps" / "xferbench" / "xferbench")
    build_lib(build / "apps" / "xferbench")
    (build / "bin").mkdir()
    (build / "bin" / "xferbench").symlink_to("../apps/xferbench/xferbench")
    env.setenv("PATH", str(build / "bin"))
    with xferbench.trace(tmp_path / "t.json") as t:
        pass
    assert t.bill["raw"] == "fake-records"
    assert exe.exists()


@needs_cc
def test_found_in_the_install_prefix_through_path(env, tmp_path):
    prefix = tmp_path / "prefix"
    write_bin(prefix / "bin" / "xferbench")
    build_lib(prefix / "lib")
    env.setenv("PATH", str(prefix / "bin"))
    with xferbench.trace(tmp_path / "t.json") as t:
        pass
    assert t.bill["raw"] == "fake-records"
