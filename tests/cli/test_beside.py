#!/usr/bin/env python3
"""`xferbench beside` on the host (issue 53): every way beside every workload, each a record with both
sides' rates as median and range and its data checked; a finding only as the C++ decides it; bad input
is one line and exit 2 before anything runs, and writes no file.

Usage: test_beside.py PATH/TO/xferbench
"""
import json
import os
import subprocess
import sys
import tempfile
import unittest

from gpu_present import has_gpu

XFERBENCH = None
QUICK = ["--seconds", "0.02", "--work-size", "4M", "-q"]  # and each test's own --rounds, --blocks, --threads
SMALL = [*QUICK, "--rounds", "2", "--block-size", "4K", "--blocks", "64", "--threads", "1"]
HOST = [*SMALL, "-b", "host"]  # the host's half, on any machine
WAYS = ["plain", "staged", "copy", "loop", "batch", "kernel", "pack", "auto", "auto-beside"]


class Beside(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.out = os.path.join(self.dir.name, "beside.json")

    def tearDown(self):
        self.dir.cleanup()

    def beside(self, *args):
        return subprocess.run([XFERBENCH, "beside", *args], capture_output=True, text=True, timeout=120)

    def test_every_way_beside_every_workload_with_both_sides(self):
        p = self.beside(*HOST, "--json", self.out)
        self.assertEqual(p.returncode, 0, p.stderr)
        with open(self.out) as f:
            doc = json.load(f)
        self.assertEqual(doc["schema"], "xferbench/beside/v1")
        self.assertEqual(doc["config"]["rounds"], 2)
        self.assertEqual([(r["workload"], r["way"]) for r in doc["results"]],
                         [(w, way) for w in ("cpu-compute", "cpu-memory") for way in WAYS])
        self.assertEqual((doc["config"]["backend"], doc["config"]["copy_bytes"]), ("host", 64 * 4096))
        for r in doc["results"]:
            with self.subTest(workload=r["workload"], way=r["way"]):
                self.assertEqual(r["status"], "ok")
                self.assertTrue(r["verified"])
                self.assertEqual(r["rounds"], 2)
                for k in ("copy_alone", "copy_beside", "work_alone", "work_beside", "joint_s"):
                    self.assertLessEqual(r[k]["low"], r[k]["median"])
                    self.assertLessEqual(r[k]["median"], r[k]["high"])
                    self.assertGreater(r[k]["low"], 0)
                # The job is the same for every way beside one workload, so their joint times compare.
                same = [x for x in doc["results"] if x["workload"] == r["workload"]]
                self.assertEqual({(x["job_copy_steps"], x["job_work_steps"]) for x in same},
                                 {(r["job_copy_steps"], r["job_work_steps"])})
        self.assertEqual([(c["workload"], c["copier"]) for c in doc["choices"]],
                         [(w, c) for w in ("cpu-compute", "cpu-memory") for c in ("auto", "auto-beside")])
        for f in doc["findings"]:  # whatever this machine shows, a finding names two of the ways measured
            self.assertNotEqual(f["fastest_alone"], f["first_beside"])
            self.assertNotIn(f["first_beside"], ["auto", "auto-beside"])  # a copier is checked, not ranked
            self.assertGreater(f["sooner"], 0)

    def test_one_way_one_workload_to_the_host(self):
        p = self.beside(*HOST, "--ways", "pack", "--workloads", "cpu-memory", "--direction", "d2h",
                        "--json", self.out)
        self.assertEqual(p.returncode, 0, p.stderr)
        with open(self.out) as f:
            doc = json.load(f)
        self.assertEqual([(r["workload"], r["way"], r["verified"]) for r in doc["results"]],
                         [("cpu-memory", "pack", True)])
        self.assertEqual(doc["config"]["direction"], "d2h")
        self.assertEqual(doc["findings"], [])  # one way: nothing to compare

    def test_the_backend_asked_for_or_the_host_where_no_gpu(self):
        p = self.beside(*SMALL, "-b", "gpu", "--json", self.out)
        self.assertEqual(p.returncode, 2, p.stderr)
        self.assertIn("-b gpu: expected host or cuda-rt", p.stderr)
        if HAS_GPU:
            return  # cli.beside_gpu measures there
        p = self.beside(*SMALL, "-b", "cuda-rt", "--json", self.out)
        self.assertEqual(p.returncode, 1, p.stderr)
        self.assertEqual(len(p.stderr.strip().splitlines()), 1, p.stderr)
        self.assertIn("-b cuda-rt:", p.stderr)
        self.assertFalse(os.path.exists(self.out))
        p = self.beside(*SMALL, "--ways", "copy", "--workloads", "cpu-memory", "--json", self.out)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("the host's half only", p.stderr)  # no device here, or no CUDA in this build
        with open(self.out) as f:
            self.assertEqual(json.load(f)["config"]["backend"], "host")

    def test_bad_input_is_one_line_and_exit_2(self):
        for args, said in ((["--ways", "dma"], "--ways dma"), (["--workloads", "gemm"], "--workloads gemm"),
                           (["--seconds", "0"], "--seconds"), (["--rounds", "0"], "--rounds 0"),
                           (["--block-size", "0"], "--block-size"), (["--threads", "-1"], "--threads -1"),
                           (["--block-size", "lots"], "--block-size"), (["--blocks", "0"], "--blocks 0"),
                           (["--direction", "up"], "--direction up")):
            with self.subTest(args=args):
                p = self.beside(*QUICK, *args, "--json", self.out)
                self.assertEqual(p.returncode, 2, p.stderr)
                self.assertEqual(len(p.stderr.strip().splitlines()), 1, p.stderr)
                self.assertIn(said, p.stderr)
                self.assertFalse(os.path.exists(self.out))


HAS_GPU = False

if __name__ == "__main__":
    XFERBENCH = os.path.abspath(sys.argv.pop(1))
    HAS_GPU = has_gpu()
    unittest.main(verbosity=2)
