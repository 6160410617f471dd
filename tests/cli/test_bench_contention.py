#!/usr/bin/env python3
"""xfer_bench_roofline's contention probe (issue 37) end to end, small: with the host step standing in for the copy
engine every row is there with a rate per window, the paced threads keep to their pace, the shared ring keeps its slot
order (to the device the engine moves only chunks the threads have filled, to the host the threads copy out only
chunks the engine has delivered); with --no-device the threads run alone; bad options are one line and exit 2.

Usage: test_bench_contention.py PATH/TO/xfer_bench_roofline
"""
import json
import os
import subprocess
import sys
import tempfile
import unittest

BENCH = None
# Small enough for CI's two CPUs: a 256 KiB ring of 4 slots, 1 MiB engine copies, two windows of 50 ms.
SMALL = ["--contention-only", "--contention-buffer", "16M", "--contention-chunk", "256K", "--contention-slots", "4",
         "--contention-engine-bytes", "1M", "--contention-window", "0.05", "--contention-windows", "2"]
PACE = 1.0  # GB/s, aggregate: far below what two CPUs copy, so pacing is what holds it


def run(*args, timeout=120):
    return subprocess.run([BENCH, *args], capture_output=True, text=True, timeout=timeout)


def probe(*args):
    with tempfile.TemporaryDirectory() as d:
        js = os.path.join(d, "r.json")
        p = run(*SMALL, *args, "--json", js)
        if p.returncode != 0:
            raise AssertionError(p.stderr)
        with open(js) as f:
            return json.load(f), p.stdout


class HostStep(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.doc, cls.console = probe("--contention-step", "host", "--contention-threads", "0,1,2",
                                     "--contention-paces", f"0,{PACE}")
        cls.rows = cls.doc["contention"]["rows"]

    def test_every_row_with_a_rate_per_window(self):
        got = {(r["ring"], r["direction"], r["threads"], r["pace_gbs"]) for r in self.rows}
        want = {(ring, d, 0, None) for ring in ("separate", "shared") for d in ("h2d", "d2h")}
        want |= {(ring, d, n, p) for ring in ("separate", "shared") for d in ("h2d", "d2h") for n in (1, 2)
                 for p in (None, PACE)}
        self.assertEqual(got, want)
        self.assertEqual(len(self.rows), len(want))
        self.assertNotIn("stream", self.doc)  # --contention-only: nothing else measured
        for r in self.rows:
            self.assertEqual(len(r["engine"]["windows_gbs"]), 2, r)
            self.assertTrue(all(g > 0 for g in r["engine"]["windows_gbs"]), r)
            self.assertLessEqual(r["engine"]["min_gbs"], r["engine"]["median_gbs"])
            self.assertLessEqual(r["engine"]["median_gbs"], r["engine"]["max_gbs"])
            if r["threads"] == 0:
                self.assertIsNone(r["threads_copy"], r)
            else:
                self.assertEqual(len(r["threads_copy"]["windows_gbs"]), 2, r)
                self.assertTrue(all(g > 0 for g in r["threads_copy"]["windows_gbs"]), r)

    def test_the_engine_alone_is_the_rows_without_threads(self):
        alone = {(r["ring"], r["direction"]): r["engine"]["median_gbs"] for r in self.rows if r["threads"] == 0}
        for r in self.rows:
            self.assertEqual(r["engine_alone_gbs"], alone[(r["ring"], r["direction"])], r)

    def test_paced_threads_keep_to_the_aggregate_pace(self):
        # Ahead of the schedule by at most one piece per thread: 128 KiB of 50 MB.
        for r in self.rows:
            if r["pace_gbs"] is not None:
                self.assertLessEqual(r["threads_copy"]["max_gbs"], PACE * 1.1, r)

    def test_the_shared_ring_keeps_its_slot_order(self):
        for r in self.rows:
            if r["ring"] != "shared" or r["threads"] == 0:
                continue
            if r["direction"] == "h2d" and r["pace_gbs"] is not None:
                # Each chunk's DMA waits for the threads to fill it: the engine is held to their pace.
                self.assertLessEqual(r["engine"]["max_gbs"], PACE * 1.1, r)
            if r["direction"] == "d2h":
                # The threads copy a chunk out only once its DMA is done, and stop after the engine's last.
                for t, e in zip(r["threads_copy"]["windows_gbs"], r["engine"]["windows_gbs"]):
                    self.assertLessEqual(t, e * 1.0001, r)

    def test_the_table_has_a_line_per_row(self):
        lines = [l for l in self.console.splitlines() if l.startswith(("separate ", "shared "))]
        self.assertEqual(len(lines), len(self.rows))
        self.assertIn("host step", self.doc["contention"]["engine"])


class NoDevice(unittest.TestCase):
    def test_the_threads_run_alone(self):
        doc, _ = probe("--no-device", "--contention-threads", "0,2", "--contention-paces", f"0,{PACE}")
        c = doc["contention"]
        self.assertTrue(c["engine"].startswith("none"), c["engine"])
        got = {(r["ring"], r["direction"], r["threads"], r["pace_gbs"]) for r in c["rows"]}
        # No engine: no row without threads, no shared ring.
        self.assertEqual(got, {("separate", d, 2, p) for d in ("h2d", "d2h") for p in (None, PACE)})
        for r in c["rows"]:
            self.assertIsNone(r["engine"])
            self.assertTrue(all(g > 0 for g in r["threads_copy"]["windows_gbs"]), r)


class BadOptions(unittest.TestCase):
    def assert_usage_error(self, *args, mentions):
        with tempfile.TemporaryDirectory() as d:
            p = run(*args, "--json", os.path.join(d, "r.json"))
            self.assertEqual(p.returncode, 2, p.stderr)
            lines = p.stderr.strip().splitlines()
            self.assertEqual(len(lines), 1, p.stderr)
            self.assertIn(mentions, lines[0])
            self.assertEqual(os.listdir(d), [])

    def test_each_is_one_line_and_exit_2(self):
        self.assert_usage_error("--contention-only", "--contention-threads", "2,x", mentions="--contention-threads: 'x'")
        self.assert_usage_error("--contention-only", "--contention-threads", "1.5", mentions="not a thread count")
        self.assert_usage_error("--contention-only", "--contention-window", "0", mentions="--contention-window")
        self.assert_usage_error("--contention-only", "--contention-paces", "-1", mentions="--contention-paces: '-1'")
        self.assert_usage_error("--contention-only", "--contention-step", "tpu", mentions="'tpu' is not gpu or host")
        self.assert_usage_error("--contention-only", "--contention-buffer", "64K", "--contention-threads", "8",
                                mentions="--contention-buffer")


if __name__ == "__main__":
    BENCH = os.path.abspath(sys.argv.pop(1))
    unittest.main(verbosity=2)
