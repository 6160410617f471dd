#!/usr/bin/env python3
"""Faults injected under a real sweep (tests/cli/fault_shim.c, through
LD_PRELOAD): a transfer that never returns must give a failed point and a
finished sweep, with every other point written.

Usage: test_faults.py PATH/TO/xferbench PATH/TO/fault_shim.so
"""
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
import unittest

XFERBENCH = SHIM = None
ODD = 65543  # a size nothing else in the process copies


def load(path):
    with open(path) as f:
        return json.load(f)


def sweep(out, *args, env=None, timeout=120):
    return subprocess.run([XFERBENCH, "sweep", "-b", "host", "-r", "memcpy", "-m", "aligned", "-d", "h2d",
                           "--max-time", "0.01", "--json", out, *args],
                          capture_output=True, text=True, timeout=timeout, env={**os.environ, **(env or {})})


class InTempDir(unittest.TestCase):
    """Each test writes its result file into a directory of its own."""

    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.out = os.path.join(self.dir.name, "r.json")

    def tearDown(self):
        self.dir.cleanup()


class CorruptingTransfer(InTempDir):
    def test_corruption_after_the_first_checks_fails_the_point(self):
        # The first transfers (the first-use one and the full verification)
        # are fine; every later one corrupts: only checking the timed samples
        # can catch it.
        p = sweep(self.out, "--sizes", f"4K,{ODD}",
                  env={"LD_PRELOAD": SHIM, "XFER_FAULT": "corrupt", "XFER_FAULT_BYTES": str(ODD),
                       "XFER_FAULT_AFTER": "2"})
        self.assertEqual(p.returncode, 1, p.stderr)
        by_size = {r["bytes"]: r for r in load(self.out)["results"]}
        self.assertEqual(by_size[4096]["status"], "ok")
        # The first sample always, the rest while checking costs no more than sampling.
        self.assertGreaterEqual(by_size[4096]["samples_checked"], 1)
        self.assertLessEqual(by_size[4096]["samples_checked"], len(by_size[4096]["samples_s"]))
        self.assertEqual(by_size[ODD]["status"], "failed")
        self.assertIn("verification failed", by_size[ODD]["reason"])


class LateCorruption(InTempDir):
    """Copies corrupted only once a point is well into its sampling time (issue 36: such a point
    was `ok` and `verified: true`): the last timed sample is checked whatever checking cost before."""

    # Never converges (--target-ci), and is the only point (no time lent by an earlier one): the
    # point samples for its --max-time, so a clean run's time for it is the faulty run's too. The
    # fault begins a quarter into the clean run's sampling, 0.15 s: a faulty run whose preparation
    # and warm-up went that much faster than the clean run's (a machine busy during the clean run)
    # would end before it. With 0.2 s and half-way, a loaded 2-CPU machine saw that happen.
    ARGS = ["--sizes", str(ODD), "--max-time", "0.6", "--target-ci", "1e-9"]

    def late(self, *mode):
        """The results of a run whose copies corrupt from a quarter into a clean run's sampling time
        for the point (after its preparation and warm-up) on."""
        clean = sweep(self.out, *self.ARGS, *mode)
        self.assertEqual(clean.returncode, 0, clean.stderr)
        spent = max(r["time_spent_s"]["prepare"] + r["time_spent_s"]["warmup"] + r["time_spent_s"]["sampling"] / 4
                    for r in load(self.out)["results"] if r["device_index"] >= 0)
        p = sweep(self.out, *self.ARGS, *mode, env={"LD_PRELOAD": SHIM, "XFER_FAULT": "corrupt",
                                                    "XFER_FAULT_BYTES": str(ODD), "XFER_FAULT_AFTER_S": str(spent)})
        self.assertEqual(p.returncode, 1, p.stderr)
        results = load(self.out)["results"]
        for r in results:
            self.assertEqual(r["status"], "failed", (r["device_index"], r["reason"]))
            self.assertIn("verification failed", r["reason"])
            self.assertFalse(r["verified"], "a point whose data failed a check is not verified")
            # The premise: the point's first checks passed, and it was sampling when the corruption began.
            if r["device_index"] >= 0:
                self.assertGreater(len(r["samples_s"]), 1, "corrupted before sampling")
        return results

    def test_a_point_alone(self):
        self.assertEqual(len(self.late()), 1)

    def test_devices_at_once(self):
        self.assertEqual(sorted(r["device_index"] for r in self.late("--host-devices", "2", "--together-only")),
                         [-1, 0, 1])


class HangingTransfer(InTempDir):
    def test_the_point_fails_with_its_time_and_the_sweep_finishes(self):
        t0 = time.monotonic()
        p = sweep(self.out, "--sizes", f"4K,{ODD}", "--watchdog", "1",
                  env={"LD_PRELOAD": SHIM, "XFER_FAULT": "hang", "XFER_FAULT_BYTES": str(ODD)})
        took = time.monotonic() - t0
        self.assertEqual(p.returncode, 1, p.stderr)  # a point failed
        self.assertLess(took, 30, "the watchdog bounds the stuck point")
        doc = load(self.out)
        by_size = {r["bytes"]: r for r in doc["results"]}
        self.assertEqual(by_size[4096]["status"], "ok")
        self.assertEqual(by_size[ODD]["status"], "failed")
        # The time is the one measured: a loaded machine reads 1.1 s.
        self.assertRegex(by_size[ODD]["reason"], r"no result after 1\.\d s")
        self.assertFalse(doc.get("interrupted", False))

    def test_without_the_fault_the_same_sweep_is_ok(self):
        p = sweep(self.out, "--sizes", f"4K,{ODD}", "--watchdog", "1", env={"LD_PRELOAD": SHIM})
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual({r["status"] for r in load(self.out)["results"]}, {"ok"})

    def test_an_interrupt_during_the_stuck_point_writes_what_was_done(self):
        env = {**os.environ, "LD_PRELOAD": SHIM, "XFER_FAULT": "hang", "XFER_FAULT_BYTES": str(ODD)}
        proc = subprocess.Popen([XFERBENCH, "sweep", "-b", "host", "-r", "memcpy", "-m", "aligned", "-d", "h2d",
                                 "--max-time", "0.01", "--sizes", f"4K,{ODD},8K", "-v", "--json", self.out],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
        # Wait for the 4K row (-v prints each point as it completes): a fixed
        # sleep raced the start-up of a loaded GPU machine, where making every
        # backend took longer. The next point is then stuck (its bound is 30 s and more).
        deadline = time.time() + 60
        while time.time() < deadline:
            line = proc.stdout.readline()
            if not line or " 4K " in line:
                break
        time.sleep(0.5)  # into the stuck point
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=20)
        self.assertEqual(proc.returncode, 130, err)
        doc = load(self.out)
        self.assertTrue(doc["interrupted"])
        self.assertEqual([(r["bytes"], r["status"]) for r in doc["results"]], [(4096, "ok")])

    def test_with_the_watchdog_off_an_interrupt_during_the_stuck_point_still_ends_the_run(self):
        # --watchdog 0 lifts the bound, not the thread: SIGTERM printed "stopping..." and never exited.
        rc, err, doc = interrupt_while_hung(
            ["sweep", "-b", "host", "-r", "memcpy", "-m", "aligned", "-d", "h2d", "--max-time", "0.01",
             "--sizes", f"4K,{ODD}", "--watchdog", "0", "--json", self.out], self.out, ODD)
        self.assertEqual(rc, 143, err)
        self.assertTrue(doc["interrupted"])
        self.assertEqual([(r["bytes"], r["status"]) for r in doc["results"]], [(4096, "ok")])

    def test_a_bad_watchdog_value_is_a_usage_error(self):
        p = sweep(self.out, "--sizes", "4K", "--watchdog", "-5")
        self.assertEqual(p.returncode, 2, p.stderr)
        self.assertIn("--watchdog", p.stderr)
        self.assertFalse(os.path.exists(self.out))


def opencl_vadd():
    """Whether `xferbench app vadd -b opencl` runs here (PoCL; not in the sanitizer build)."""
    probe = subprocess.run([XFERBENCH, "app", "vadd", "-b", "opencl", "--sizes", "1K", "--repeat", "1"],
                           capture_output=True, text=True, timeout=120)
    return probe.returncode == 0


def interrupt_while_hung(args, out, fault_bytes, within=60.0):
    """Runs `xferbench ARGS` with copies (and first touches) of `fault_bytes` hanging, sends SIGTERM
    once the run is stuck (the shim says so: XFER_FAULT_HUNG_FILE; a fixed wait was outrun by a
    loaded machine's start-up), and returns the exit code, stderr and the result file. The run must
    end within the stop grace (a few seconds), hung point or not."""
    hung_file = out + ".hung"
    env = {**os.environ, "LD_PRELOAD": SHIM, "XFER_FAULT": "hang", "XFER_FAULT_BYTES": str(fault_bytes),
           "XFER_FAULT_HUNG_FILE": hung_file}
    proc = subprocess.Popen([XFERBENCH, *args], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                            env=env)
    deadline = time.monotonic() + within
    while not os.path.exists(hung_file) and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    if proc.poll() is not None:
        _, err = proc.communicate()
        raise AssertionError(f"ended before it hung (exit {proc.returncode}): {err}")
    if not os.path.exists(hung_file):
        proc.kill()
        proc.communicate()
        raise AssertionError(f"no copy of {fault_bytes} bytes hung within {within} s")
    time.sleep(0.2)  # into the hang, past the copy's own call
    _, err = end_by_signal(proc, signal.SIGTERM, "a signal did not end the run while a point hung")
    return proc.returncode, err, load(out)


def end_by_signal(proc, sig, failure, timeout=20):
    """Sends `sig` to `proc` and returns its stdout and stderr once it ended; kills it and fails
    with `failure` where it does not end within `timeout` s."""
    proc.send_signal(sig)
    try:
        return proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        raise AssertionError(failure)


class SignalsWhileAPointHangs(InTempDir):
    """Every command ends within a bounded time on SIGTERM while a point hangs, its completed
    points written and marked interrupted: the study runs on a watched thread (session::run)."""

    def test_cpu(self):
        rc, err, doc = interrupt_while_hung(
            ["cpu", "-k", "pageable", "--ops", "write", "--methods", "memcpy", "--sizes", f"4K,{ODD}",
             "--runs", "3", "--json", self.out], self.out, ODD)
        self.assertEqual(rc, 143, err)
        self.assertTrue(doc["interrupted"])
        self.assertEqual([(r["bytes"], r["status"]) for r in doc["results"]], [(4096, "ok")])

    def test_alloc(self):
        # The first touch of a block (a memset) hangs in the cost section's second size.
        rc, err, doc = interrupt_while_hung(
            ["alloc", "-s", "pageable", "--sizes", f"4K,{ODD}", "--runs", "3", "--repeat", "1", "--json", self.out],
            self.out, ODD)
        self.assertEqual(rc, 143, err)
        self.assertTrue(doc["interrupted"])

    def test_app(self):
        # The host's vadd copies nothing; OpenCL's (PoCL here) copies the vectors with memcpy.
        if not opencl_vadd():
            self.skipTest("no OpenCL vadd here")
        n = 16411  # elements: a vector of 4-byte elements is copied as 65644 bytes
        rc, err, doc = interrupt_while_hung(
            ["app", "vadd", "-b", "opencl", "--sizes", f"1K,{n}", "--repeat", "1", "--json", self.out],
            self.out, 4 * n)
        self.assertEqual(rc, 143, err)
        self.assertTrue(doc["interrupted"])


if __name__ == "__main__":
    XFERBENCH, SHIM = sys.argv[1], sys.argv[2]
    unittest.main(argv=sys.argv[:1], verbosity=2)
