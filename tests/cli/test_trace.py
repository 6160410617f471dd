#!/usr/bin/env python3
"""`xferbench trace` (issue 52) as a user meets it without a GPU: the program's exit code, output and
signals pass through; a command that cannot run is 127; bad input is one line and exit 2 before the
program runs; records captured in-process (--from, as xferbench.trace() does) are billed against a
sweep's curves, the fix named only where it saves time; a damaged capture writes no file.

Usage: test_trace.py PATH/TO/xferbench PATH/TO/tests/unit/data/trace
"""
import gzip
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import unittest

XFERBENCH = None
CAPTURES = None


def sweep_file(path, pinned_gbps):
    """A sweep's result file with cuda-rt curves from 1 MiB to 32 MiB: pinned at `pinned_gbps`."""
    points = []
    for b in (1 << 20, 1 << 24, 1 << 25):
        for route, kind, gbps in (("copy-sync", "pinned", pinned_gbps), ("copy-sync", "pageable", 10),
                                  ("staged", "pageable", pinned_gbps * 0.8)):
            for d in ("h2d", "d2h"):
                points.append({"backend": "cuda-rt", "device": "NVIDIA Test", "device_index": 0, "route": route,
                               "host_memory": kind, "direction": d, "bytes": b, "status": "ok",
                               "median_s": b / (gbps * 1e9)})
    with open(path, "w") as f:
        json.dump({"schema": 1, "results": points}, f)
    return path


def library_built():
    """libxfer_cupti.so is built only where the CUDA toolkit has CUPTI (not in the sanitizer build)."""
    here = os.path.dirname(XFERBENCH)
    return any(os.path.exists(os.path.join(d, "libxfer_cupti.so")) for d in (here, os.path.join(here, "..", "lib")))


class Trace(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.d = self.dir.name
        self.out = os.path.join(self.d, "trace.json")
        self.env = {k: v for k, v in os.environ.items() if k != "CUDA_INJECTION64_PATH"}

    def tearDown(self):
        self.dir.cleanup()

    def needs_library(self):
        """Without the library a traced program is refused in one line, exit 1, no file; the test then skips."""
        if library_built():
            return
        p = self.trace("-o", self.out, "--", "true")
        self.assertEqual(p.returncode, 1, p.stderr)
        self.assertEqual(len(p.stderr.splitlines()), 1, p.stderr)
        self.assertIn("libxfer_cupti.so is not beside", p.stderr)
        self.assertFalse(os.path.exists(self.out))
        self.skipTest("this build has no libxfer_cupti.so (no CUPTI): the refusal was checked instead")

    def trace(self, *args, **kw):
        return subprocess.run([XFERBENCH, "trace", *args], capture_output=True, text=True, timeout=60,
                              env=kw.get("env", self.env))

    def doc(self):
        with open(self.out) as f:
            return json.load(f)

    def test_billed_from_captured_records(self):
        p = self.trace("--from", os.path.join(CAPTURES, "two-copies"), "--machine",
                       sweep_file(os.path.join(self.d, "sweep.json"), 50), "-o", self.out)
        self.assertEqual(p.returncode, 0, p.stderr)
        doc = self.doc()
        self.assertEqual(doc["schema"], "xferbench-trace/1")
        self.assertEqual(doc["outcome"]["state"], "complete")
        self.assertEqual(doc["machine"]["source"], "file")
        self.assertEqual([g["direction"] for g in doc["groups"]], ["h2d", "d2h", "set"])  # costliest first
        self.assertEqual(doc["fixes"][0]["fix"], "pin")
        self.assertEqual(doc["fixes"][0]["group"], 0)
        self.assertGreater(doc["fixes"][0]["saving_s"], 0)
        self.assertIn("fix 1: 1 x 16 MiB h2d pageable", p.stderr)

    def test_measured_here_or_not_priced_saying_why(self):
        # No --machine: the sizes seen are measured on this machine; without a GPU that fails, and the
        # bill says why nothing was priced. Either way --from's directory is left as it was.
        raw = os.path.join(self.d, "raw")
        shutil.copytree(os.path.join(CAPTURES, "two-copies"), raw)
        before = sorted(os.listdir(raw))
        p = self.trace("--from", raw, "-o", self.out)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(sorted(os.listdir(raw)), before)
        machine = self.doc()["machine"]
        if machine["source"] == "none":
            self.assertIn("trace: not priced: the short measurement (xferbench sweep) exited", p.stderr)
            self.assertEqual(self.doc()["fixes"], [])
            self.assertNotIn("no fix saves", p.stderr)
        else:
            self.assertEqual(machine["source"], "measured")
            self.assertIn("trace: priced with measured here", p.stderr)

    def test_a_real_capture_is_billed_exactly(self):
        # What libxfer_cupti.so recorded on an H100 (CUDA 13) tracing examples/trace/transfer_pattern.cu,
        # and the curves its short measurement took there: 64 x 16 MiB up, 1024 x 64 KiB back, pageable.
        real = os.path.join(CAPTURES, "h100-example")
        raw = os.path.join(self.d, "raw")
        os.mkdir(raw)
        for src, dst in ((os.path.join(real, "raw", "cupti-2234.jsonl.gz"), os.path.join(raw, "cupti-2234.jsonl")),
                         (os.path.join(real, "machine.json.gz"), os.path.join(self.d, "machine.json"))):
            with gzip.open(src) as f, open(dst, "wb") as g:
                g.write(f.read())
        p = self.trace("--from", raw, "--machine", os.path.join(self.d, "machine.json"), "-o", self.out)
        self.assertEqual(p.returncode, 0, p.stderr)
        doc = self.doc()
        self.assertEqual(len(doc["transfers"]), 64 + 1024)
        self.assertTrue(all(t["call"] == "cudaMemcpy" and t["host_s"] for t in doc["transfers"]), "a call not joined")
        self.assertEqual([(g["count"], g["bytes"], g["direction"], g["host_memory"]) for g in doc["groups"]],
                         [(64, 64 << 24, "h2d", "pageable"), (1024, 1024 << 16, "d2h", "pageable")])
        # Each group's pinned what-if is cheaper than what the program paid, the larger saving first.
        self.assertEqual([(f["rank"], f["fix"], f["group"]) for f in doc["fixes"]], [(1, "pin", 0), (2, "pin", 1)])
        self.assertGreater(doc["fixes"][0]["saving_s"], doc["fixes"][1]["saving_s"])
        self.assertIn("fix 1: 64 x 16 MiB h2d pageable (cudaMemcpy)", p.stderr)

    def test_no_fix_where_pinned_is_slower_here(self):
        # This machine's pinned copies (5 GB/s) are slower than the program's pageable copy (8 GB/s).
        p = self.trace("--from", os.path.join(CAPTURES, "two-copies"), "--machine",
                       sweep_file(os.path.join(self.d, "sweep.json"), 5), "-o", self.out)
        self.assertEqual(p.returncode, 0, p.stderr)
        doc = self.doc()
        self.assertEqual(doc["fixes"], [])
        self.assertLess(doc["groups"][0]["what_if"][0]["saving_s"], 0)
        self.assertIn("no fix saves", p.stderr)

    def test_the_program_keeps_its_output_and_exit_code(self):
        self.needs_library()
        p = self.trace("-o", self.out, "--", "sh", "-c", "echo hi; echo err >&2; exit 3")
        self.assertEqual(p.returncode, 3, p.stderr)
        self.assertEqual(p.stdout, "hi\n")
        self.assertTrue(p.stderr.startswith("err\n"), p.stderr)
        doc = self.doc()
        self.assertEqual(doc["outcome"]["state"], "no_cuda")
        self.assertEqual(doc["outcome"]["exit_code"], 3)
        self.assertEqual(doc["command"], ["sh", "-c", "echo hi; echo err >&2; exit 3"])
        self.assertEqual(doc["groups"], [])

    def test_a_program_ended_by_a_signal(self):
        self.needs_library()
        p = self.trace("-o", self.out, "--", "sh", "-c", "kill -TERM $$")
        self.assertEqual(p.returncode, 128 + signal.SIGTERM, p.stderr)
        self.assertEqual(self.doc()["outcome"]["signal"], signal.SIGTERM)

    def test_a_signal_to_the_tracer_reaches_the_program(self):
        self.needs_library()
        t = subprocess.Popen([XFERBENCH, "trace", "-q", "-o", self.out, "--", "sleep", "30"], env=self.env,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        time.sleep(0.5)
        t.send_signal(signal.SIGTERM)
        _, err = t.communicate(timeout=20)
        self.assertEqual(t.returncode, 128 + signal.SIGTERM, err)
        self.assertEqual(self.doc()["outcome"]["signal"], signal.SIGTERM)

    def test_a_command_that_cannot_run_is_127(self):
        script = os.path.join(self.d, "not-executable")
        with open(script, "w") as f:
            f.write("#!/bin/sh\n")
        for command, said in (("no-such-command-xfer", "command not found"), (script, "not an executable file"),
                              (os.path.join(self.d, "missing"), "no such file")):
            with self.subTest(command=command):
                p = self.trace("-o", self.out, "--", command)
                self.assertEqual(p.returncode, 127, p.stderr)
                self.assertEqual(len(p.stderr.splitlines()), 1, p.stderr)
                self.assertIn(said, p.stderr)
                self.assertFalse(os.path.exists(self.out))

    def test_bad_input_is_refused_before_the_program_runs(self):
        marker = os.path.join(self.d, "ran")
        program = ["--", "sh", "-c", f"touch {marker}"]
        bad_json = os.path.join(self.d, "bad.json")
        with open(bad_json, "w") as f:
            f.write("{not json")
        cases = (
            (["-o", self.out], "give the program to trace"),
            (["-o", self.out, "--from", self.d, *program], "not both"),
            (["-o", os.path.join(self.d, "no-dir", "t.json"), *program], "t.json"),
            (["-o", self.out, "--machine", bad_json, *program], "not JSON"),
            (["-o", self.out, "--machine", os.path.join(self.d, "none.json"), *program], "cannot read it"),
            (["-o", self.out, "--from", os.path.join(self.d, "none")], "not a directory"),
            (["-o", self.out, "--keep", self.d, *program], "it exists"),
            (["-o", self.out, "--keep", os.path.join(self.d, "no-dir", "raw"), *program], "not a directory"),
            (["-o", self.out, "--keep", os.path.join(self.d, "raw"), "--from", self.d], "not with --from"),
        )
        for args, said in cases:
            with self.subTest(args=args):
                p = self.trace(*args)
                self.assertEqual(p.returncode, 2, p.stderr)
                self.assertEqual(len(p.stderr.splitlines()), 1, p.stderr)
                self.assertIn(said, p.stderr)
                self.assertFalse(os.path.exists(marker), "the program ran")
                self.assertFalse(os.path.exists(self.out))

    def test_another_profiler_is_named(self):
        env = dict(self.env, CUDA_INJECTION64_PATH="/opt/nsight/libToolsInjection64.so")
        p = self.trace("-o", self.out, "--", "true", env=env)
        self.assertEqual(p.returncode, 1, p.stderr)
        self.assertEqual(len(p.stderr.splitlines()), 1, p.stderr)
        self.assertIn("CUDA_INJECTION64_PATH is already set", p.stderr)

    def test_a_damaged_capture_writes_no_file(self):
        raw = os.path.join(self.d, "raw")
        os.mkdir(raw)
        shutil.copy(os.path.join(CAPTURES, "damaged.jsonl"), os.path.join(raw, "cupti-7.jsonl"))
        p = self.trace("--from", raw, "-o", self.out)
        self.assertEqual(p.returncode, 1, p.stderr)
        self.assertEqual(len(p.stderr.splitlines()), 1, p.stderr)
        self.assertIn("line 2", p.stderr)
        self.assertFalse(os.path.exists(self.out))

    def test_cupti_refused_is_one_line_and_a_failure(self):
        raw = os.path.join(self.d, "raw")
        os.mkdir(raw)
        shutil.copy(os.path.join(CAPTURES, "refused.jsonl"), os.path.join(raw, "cupti-9.jsonl"))
        p = self.trace("--from", raw, "-o", self.out, "-q")
        self.assertEqual(p.returncode, 1, p.stderr)
        self.assertIn("another profiler", p.stderr)
        self.assertEqual(self.doc()["outcome"]["state"], "not_traced")


if __name__ == "__main__":
    XFERBENCH = os.path.abspath(sys.argv.pop(1))
    CAPTURES = os.path.abspath(sys.argv.pop(1))
    unittest.main(verbosity=2)
