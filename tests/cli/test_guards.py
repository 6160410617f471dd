#!/usr/bin/env python3
"""Every command has sweep's guards (issue 36, item 2), end to end with the hanging fault shim
(tests/cli/fault_shim.c): a point whose copy never returns is failed by the watchdog and the
command goes on and ends; a signal while it hangs ends the run within the stop grace, the
completed points written and the run marked interrupted; a size beyond the machine's memory is
refused before anything is allocated. Sweep's own cases, and the signal cases of cpu, alloc and
app, are in test_faults.py.

Usage: test_guards.py PATH/TO/xferbench PATH/TO/fault_shim.so [PYTHON PYTHON_SOURCE_DIR NATIVE_DIR] [-- TESTS]
(the last three, where the native module was built: the interpreter it was built for, python/
and the build's python/ holding xferbench/_native).
"""
import os
import signal
import subprocess
import sys
import time
import unittest

import test_faults
from test_faults import ODD, InTempDir, end_by_signal, interrupt_while_hung, load

HANG = {"XFER_FAULT": "hang", "XFER_FAULT_BYTES": str(ODD)}
TOGETHER = ["sweep", "-b", "host", "--host-devices", "2", "--together-only", "-r", "memcpy", "-m", "aligned", "-d",
            "h2d", "--max-time", "0.01"]
PEER = ["peer", "-b", "host", "--host-devices", "2", "--quick", "-q"]
FLEET = ["fleet", "-b", "host", "--size", str(ODD), "--max-time", "0.01", "--repeat", "1"]
NATIVE = None  # (python, source dir, native module dir), where the native module was built


def xferbench(*args, env=None, timeout=120):
    """The run's exit code, stderr and the seconds it took."""
    t0 = time.monotonic()
    p = subprocess.run([test_faults.XFERBENCH, *args], capture_output=True, text=True, timeout=timeout,
                       env={**os.environ, **(env or {})})
    return p, time.monotonic() - t0


def hung(*args, timeout=120):
    return xferbench(*args, env={"LD_PRELOAD": test_faults.SHIM, **HANG}, timeout=timeout)


def statuses(doc):
    return [(r["bytes"], r["device_index"], r["status"]) for r in doc["results"]]


class TheWatchdogFailsAHungPoint(InTempDir):
    """The stuck point failed with the watchdog's reason, the backend's later points skipped with
    why, the command ended on its own (not interrupted). peer and fleet have no --watchdog: their
    derived bound (30 s and more) is what the test waits for."""

    def test_sweep_devices_at_once(self):
        p, took = hung(*TOGETHER, "--sizes", f"4K,{ODD},8K", "--watchdog", "1", "--json", self.out)
        self.assertEqual(p.returncode, 1, p.stderr)
        self.assertLess(took, 30)
        doc = load(self.out)
        self.assertFalse(doc["interrupted"])
        by = {(r["bytes"], r["device_index"]): r for r in doc["results"]}
        self.assertEqual({by[4096, d]["status"] for d in (0, 1, -1)}, {"ok"})
        for d in (0, 1, -1):
            self.assertEqual(by[ODD, d]["status"], "failed")
            self.assertIn("the watchdog's bound for this group of 2 devices", by[ODD, d]["reason"])
            self.assertEqual(by[8192, d]["status"], "skipped")
            self.assertIn("still stuck in an earlier group", by[8192, d]["reason"])

    def test_peer(self):
        p, took = hung(*PEER, "--sizes", f"4K,{ODD}", "--json", self.out)
        self.assertEqual(p.returncode, 1, p.stderr)
        doc = load(self.out)
        self.assertFalse(doc["interrupted"])
        by = {(r["bytes"], r["device_index"], r["peer_device_index"]): r for r in doc["results"]}
        pairs = [(0, 0), (0, 1), (1, 0), (1, 1)]
        self.assertEqual({by[(4096, *pair)]["status"] for pair in pairs}, {"ok"})
        self.assertEqual(by[ODD, 0, 0]["status"], "failed")
        self.assertIn("the watchdog's bound for this point", by[ODD, 0, 0]["reason"])
        for pair in pairs[1:]:
            self.assertEqual(by[(ODD, *pair)]["status"], "skipped")
            self.assertIn("still stuck in an earlier point", by[(ODD, *pair)]["reason"])

    def test_fleet(self):
        p, took = hung(*FLEET, "--json", self.out)
        self.assertEqual(p.returncode, 3, p.stderr)  # unhealthy, not interrupted
        doc = load(self.out)
        self.assertFalse(doc["fleet"]["interrupted"])
        self.assertFalse(doc["fleet"]["healthy"])
        first, *rest = [r for r in doc["results"] if r["bytes"] == ODD]
        self.assertEqual(first["status"], "failed")
        self.assertIn("the watchdog's bound for this point", first["reason"])
        self.assertTrue(rest)
        self.assertEqual({r["status"] for r in rest}, {"skipped"})
        self.assertIn("health point failed: no result after", p.stdout)


class TheWatchdogFailsAHungStudyPoint(InTempDir):
    """cpu, alloc and app: a point that makes no progress for --watchdog's time is failed with the
    reason and the study goes on to the next point; the file is written whole, the run not
    interrupted, exit 1. A point stuck inside a backend (app's OpenCL) makes that backend's later
    points skipped with where it is stuck, as a sweep's backend left behind."""

    STALLED = r"no progress for 1\.\d s, the watchdog's bound for this point \(--watchdog\): it never returned"

    def finished(self, p, took, *sections):
        self.assertEqual(p.returncode, 1, p.stderr)
        self.assertLess(took, 30)
        self.assertIn(f"wrote {self.out}", p.stderr)
        doc = load(self.out)
        self.assertFalse(doc["interrupted"])
        for section in sections:
            self.assertIn(section, doc)
        return doc

    def test_cpu(self):
        p, took = hung("cpu", "-k", "pageable", "--ops", "write", "--methods", "memcpy", "--sizes", f"4K,{ODD},128K",
                       "--runs", "3", "--watchdog", "1", "--json", self.out)
        doc = self.finished(p, took, "kinds", "results", "write_combining")
        self.assertEqual([(r["bytes"], r["status"]) for r in doc["results"]],
                         [(4096, "ok"), (ODD, "failed"), (128 << 10, "ok")])
        self.assertRegex(doc["results"][1]["reason"], self.STALLED)
        self.assertTrue(doc["results"][2]["verified"])

    def test_alloc(self):
        # The first touch of a block (a memset) hangs in the cost section's second size.
        p, took = hung("alloc", "-s", "pageable,aligned", "--sizes", f"4K,{ODD}", "--runs", "3", "--repeat", "1",
                       "--iterations", "300", "--watchdog", "1", "--json", self.out)
        doc = self.finished(p, took, "strategies", "alignment", "cost", "fragmentation")
        cost = [(c["strategy"], c["bytes"], c.get("status", "ok")) for c in doc["cost"]]
        # aligned's block of ODD bytes is touched by the same memset: it hangs too, on its own.
        self.assertEqual(cost, [("pageable", 4096, "ok"), ("pageable", ODD, "failed"), ("aligned", 4096, "ok"),
                                ("aligned", ODD, "failed")])
        self.assertRegex(doc["cost"][1]["reason"], self.STALLED)
        self.assertEqual([f["steps"] for f in doc["fragmentation"]], [300, 300], "both measured after the hangs")

    def test_app(self):
        if not test_faults.opencl_vadd():
            self.skipTest("no OpenCL vadd here")
        n = 16411  # elements: a vector of 4-byte elements is copied as 65644 bytes
        p, took = xferbench("app", "vadd", "-b", "host,opencl", "-s", "pageable,aligned", "--sizes", f"1K,{n},32K",
                            "--repeat", "1", "--watchdog", "5", "--json", self.out,
                            env={"LD_PRELOAD": test_faults.SHIM, "XFER_FAULT": "hang", "XFER_FAULT_BYTES": str(4 * n)})
        doc = self.finished(p, took, "results")
        runs = {(r["backend"].split(":")[0], r["strategy"], r["elements"]): r for r in doc["results"]}
        self.assertEqual(len(runs), 12)
        for size in (1024, n, 32 << 10):
            for s in ("pageable", "aligned"):
                self.assertEqual(runs["host", s, size]["status"], "ok", "the host's vadd copies nothing")
        self.assertEqual({runs["opencl", s, 1024]["status"] for s in ("pageable", "aligned")}, {"ok"})
        stuck = runs["opencl", "pageable", n]
        self.assertEqual(stuck["status"], "failed")
        self.assertRegex(stuck["reason"], self.STALLED.replace("1\\.", "5\\."))
        for key in (("aligned", n), ("pageable", 32 << 10), ("aligned", 32 << 10)):
            later = runs["opencl", *key]
            self.assertEqual(later["status"], "skipped")
            self.assertIn("still stuck in an earlier point (pageable 16411 elements)", later["reason"])

    def test_cpu_with_the_watchdog_off_ends_on_a_signal(self):
        rc, err, doc = interrupt_while_hung(
            ["cpu", "-k", "pageable", "--ops", "write", "--methods", "memcpy", "--sizes", f"4K,{ODD}", "--runs", "3",
             "--watchdog", "0", "--json", self.out], self.out, ODD)
        self.assertEqual(rc, 143, err)
        self.assertTrue(doc["interrupted"])
        self.assertEqual([(r["bytes"], r["status"]) for r in doc["results"]], [(4096, "ok")])

    def test_the_option_is_sweeps_with_the_studys_bound(self):
        for command in (["cpu"], ["alloc", "--quick"], ["app", "vadd", "-b", "host"]):
            p, _ = xferbench(*command, "--help")
            self.assertIn("--watchdog", p.stdout)
            self.assertIn("without progress", p.stdout)
            p, _ = xferbench(*command, "--watchdog", "-5", "--json", self.out)
            self.assertEqual(p.returncode, 2, p.stderr)
            self.assertIn("--watchdog: -5 is out of range [0, 86400] seconds", p.stderr)
            self.assertFalse(os.path.exists(self.out))


class ASignalEndsAHungRun(InTempDir):
    """SIGTERM while a point hangs: exit 143 within the grace (interrupt_while_hung's bound), the
    completed points written, the run marked interrupted."""

    def together(self, *watchdog):
        rc, err, doc = interrupt_while_hung([*TOGETHER, "--sizes", f"4K,{ODD}", *watchdog, "--json", self.out],
                                            self.out, ODD)
        self.assertEqual(rc, 143, err)
        self.assertTrue(doc["interrupted"])
        self.assertEqual(statuses(doc), [(4096, 0, "ok"), (4096, 1, "ok"), (4096, -1, "ok")])

    def test_sweep_devices_at_once(self):
        self.together()

    def test_sweep_devices_at_once_with_the_watchdog_off(self):
        # It waited on the group in the main thread: "stopping..." and no exit.
        self.together("--watchdog", "0")

    def test_peer(self):
        rc, err, doc = interrupt_while_hung([*PEER, "--sizes", f"4K,{ODD}", "--json", self.out], self.out, ODD)
        self.assertEqual(rc, 143, err)
        self.assertTrue(doc["interrupted"])
        self.assertEqual([(r["bytes"], r["status"]) for r in doc["results"]], [(4096, "ok")] * 4)

    def test_fleet(self):
        rc, err, doc = interrupt_while_hung([*FLEET, "--json", self.out], self.out, ODD)
        self.assertEqual(rc, 143, err)
        self.assertTrue(doc["interrupted"])
        self.assertTrue(doc["fleet"]["interrupted"])
        self.assertEqual(doc["fleet"]["exit_code"], 143)
        self.assertEqual(doc["fleet"]["ranks"][0]["verdict"], "interrupted")


# A host copier's staged copy of n bytes (above its handoff, below a chunk: one piece, so one
# memcpy of n bytes into the staging ring), interrupted by SIGINT where it hangs: blocking, or
# non-blocking and waited for through its handle (argv[2] == "handle").
COPY = r"""
import sys, xferbench
c = xferbench.Copier("host", chunk_bytes=64 << 10, ring_depth=4, threads=2, handoff_bytes=16 << 10)
n = int(sys.argv[1])
src, dst = memoryview(bytearray(n + 1))[:n], memoryview(bytearray(n + 1))[:n]
def copy():
    if sys.argv[2] == "handle":
        c.to_device(dst, src, non_blocking=True).wait()
    else:
        c.to_device(dst, src)
print("copying", flush=True)
try:
    copy()
except KeyboardInterrupt:
    print("interrupted", flush=True)
    try:
        copy()  # the copier's thread is still stuck inside it
    except RuntimeError as e:
        print(e, flush=True)
    sys.exit(130)
print("copied", flush=True)
"""


class APythonCopierCanBeInterrupted(unittest.TestCase):
    N = 40009

    def copy(self, fault, mode="blocking"):
        if not NATIVE:
            self.skipTest("the native module is not built here (XFER_HAVE_PYTHON is off)")
        python, source, native = NATIVE
        env = {**os.environ, "PYTHONPATH": os.pathsep.join([source, native]), "LD_PRELOAD": test_faults.SHIM,
               "XFER_FAULT": fault, "XFER_FAULT_BYTES": str(self.N)}
        return subprocess.Popen([python, "-c", COPY, str(self.N), mode], env=env, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)

    def test_a_hung_copy(self):
        # The copy ran with the GIL released on the calling thread: Python's handler only set a
        # flag, and Ctrl-C never came back from a hung copy.
        self.interrupt(self.copy("hang"))

    def test_a_hung_non_blocking_copy_waited_for(self):
        # A CopyHandle's wait() is the same wait as the blocking copy's.
        self.interrupt(self.copy("hang", "handle"))

    def interrupt(self, proc):
        self.assertEqual(proc.stdout.readline().strip(), "copying")
        time.sleep(1)
        self.assertIsNone(proc.poll(), "the copy did not hang")
        out, err = end_by_signal(proc, signal.SIGINT, "SIGINT did not interrupt the hung copy", timeout=10)
        self.assertEqual(proc.returncode, 130, err)
        self.assertEqual(out.splitlines(), ["interrupted", "this Copier's earlier copy was interrupted and never "
                                                           "returned: make a new Copier"])

    def test_the_same_copy_unhung(self):
        for mode in ("blocking", "handle"):
            out, err = self.copy("none", mode).communicate(timeout=60)
            self.assertEqual(out.split(), ["copying", "copied"], err)


class SizesBeyondTheMachinesMemory(InTempDir):
    """Refused before anything is allocated: one line, exit 2, no file (app's case is in
    test_cli.py, sweep's too; peer skips such a pair with the reason, tests/unit)."""

    def refused(self, *args, says):
        p, took = xferbench(*args, "--json", self.out)
        self.assertEqual(p.returncode, 2, p.stderr)
        self.assertEqual(len(p.stderr.strip().splitlines()), 1, p.stderr)
        self.assertIn(says, p.stderr)
        self.assertFalse(os.path.exists(self.out))

    def test_alloc(self):
        self.refused("alloc", "--sizes", "4K,64T", says="size 64T is more than half of this machine's memory")

    def test_cpu(self):
        self.refused("cpu", "--sizes", "4K,64T", says="size 64T (70368744177664 B) is larger than this machine's memory")

    def test_app(self):
        self.refused("app", "vadd", "-b", "host", "--sizes", "1K,64T", says="more than this machine's available memory")

    def test_fleet(self):
        self.refused("fleet", "-b", "host", "--size", "64T",
                     says="--size: size 64T (70368744177664 B) is larger than this machine's memory")


if __name__ == "__main__":
    args, names = (sys.argv[1:], [])
    if "--" in args:  # test names after "--": CMake runs one class per ctest test
        args, names = args[:args.index("--")], args[args.index("--") + 1:]
    test_faults.XFERBENCH, test_faults.SHIM = args[0], args[1]
    if len(args) == 5:
        NATIVE = tuple(args[2:5])
    unittest.main(argv=sys.argv[:1] + names, verbosity=2)
