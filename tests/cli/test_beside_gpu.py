#!/usr/bin/env python3
"""`xferbench beside -b cuda-rt` on a GPU (issue 53): every way beside each GPU workload runs and its
data arrives, or is skipped with its step's reason (batch without cudaMemcpyBatchAsync); both sides
are measured; in both directions. Exit 77 (skipped) where nvidia-smi lists no GPU.

Usage: test_beside_gpu.py PATH/TO/xferbench
"""
import json
import os
import subprocess
import sys
import tempfile
import unittest

from gpu_present import exit_77_without_gpu

XFERBENCH = None
WAYS = ["plain", "staged", "copy", "loop", "batch", "kernel", "pack", "auto", "auto-beside"]


class BesideOnGpu(unittest.TestCase):
    def run_beside(self, *args):
        with tempfile.TemporaryDirectory() as d:
            out = os.path.join(d, "beside.json")
            p = subprocess.run([XFERBENCH, "beside", "-b", "cuda-rt", "--seconds", "0.02", "--rounds", "2",
                                "--blocks", "256", "--work-size", "64M", "-q", "--json", out, *args],
                               capture_output=True, text=True, timeout=300)
            self.assertEqual(p.returncode, 0, p.stderr)
            with open(out) as f:
                return json.load(f)

    def check(self, doc, workloads):
        self.assertEqual(doc["config"]["backend"], "cuda-rt")
        self.assertEqual([(r["workload"], r["way"]) for r in doc["results"]],
                         [(w, way) for w in workloads for way in WAYS])
        for r in doc["results"]:
            with self.subTest(workload=r["workload"], way=r["way"]):
                if r["status"] == "skipped":
                    self.assertEqual(r["way"], "batch", r["reason"])  # the only way a CUDA 12.8+ driver may lack
                    continue
                self.assertEqual(r["status"], "ok", r.get("reason"))
                self.assertTrue(r["verified"])
                self.assertGreater(r["copy_beside"]["median"], 0)
                self.assertGreater(r["work_beside"]["median"], 0)
                if r["way"].startswith("auto"):  # the block copier: the way it chose, one of the block ways
                    self.assertIn(r["chose"], ["loop", "batch", "kernel", "pack"])
        # Each copier's choice checked against the best way beside each workload.
        self.assertEqual([(c["workload"], c["copier"]) for c in doc["choices"]],
                         [(w, c) for w in workloads for c in ("auto", "auto-beside")])
        for c in doc["choices"]:
            self.assertNotIn(c["best_way"], ["auto", "auto-beside"])
            self.assertAlmostEqual(c["vs_best"], c["joint_s"] / c["best_joint_s"] - 1, places=9)

    def test_to_the_device_beside_the_gpu_workloads(self):
        self.check(self.run_beside("--workloads", "gpu-compute,gpu-memory"), ["gpu-compute", "gpu-memory"])

    def test_to_the_host_beside_compute(self):
        self.check(self.run_beside("--workloads", "gpu-compute", "--direction", "d2h"), ["gpu-compute"])


if __name__ == "__main__":
    XFERBENCH = os.path.abspath(sys.argv.pop(1))
    exit_77_without_gpu()
    unittest.main(verbosity=2)
