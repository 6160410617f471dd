#!/usr/bin/env python3
"""`xferbench trace` on a GPU (issue 52): the example with a known transfer pattern
(examples/trace/transfer_pattern.cu) is traced as it is and --fixed, and the trace holds exactly its
copies (direction, host memory as the driver saw it, bytes, count, call) and no others; the pageable
run's first fix is to pin, priced from this machine's curves, and the fixed run names no pin fix.
Exit 77 (skipped) where the example finds no usable GPU.

Usage: test_trace_gpu.py PATH/TO/xferbench PATH/TO/xfer_example_trace_pattern
"""
import json
import os
import subprocess
import sys
import tempfile
import unittest

from gpu_present import exit_77_without_gpu

XFERBENCH = None
EXAMPLE = None


class TraceOnGpu(unittest.TestCase):
    def run_traced(self, *variant):
        d = self.enterContext(tempfile.TemporaryDirectory())
        out = os.path.join(d, "trace.json")
        p = subprocess.run([XFERBENCH, "trace", "-o", out, "--keep", os.path.join(d, "raw"), "--", EXAMPLE,
                            *variant], capture_output=True, text=True, timeout=300)
        self.assertEqual(p.returncode, 0, p.stderr)
        expected = json.loads(p.stdout.strip().splitlines()[-1])
        with open(out) as f:
            doc = json.load(f)
        self.assertTrue(any(n.startswith("cupti-") for n in os.listdir(os.path.join(d, "raw"))))
        return doc, expected, p.stderr

    def check_exact(self, doc, expected):
        self.assertEqual(doc["outcome"]["state"], "complete")
        copies = [t for t in doc["transfers"] if t["op"] == "memcpy"]
        self.assertEqual(len(copies), sum(e["count"] for e in expected["expected"]), "a copy too many or too few")
        for e in expected["expected"]:
            with self.subTest(e=e):
                same = [t for t in copies if t["direction"] == e["direction"] and t["bytes"] == e["bytes"]]
                self.assertEqual(len(same), e["count"])
                self.assertEqual({t["host_memory"] for t in same}, {e["host_memory"]})
                self.assertEqual({t["call"] for t in same}, {e["call"]})
                self.assertTrue(all(t["host_s"] is not None for t in same), "every call's CPU time joined")
                self.assertEqual(sum(g["count"] for g in doc["groups"] if g["direction"] == e["direction"]
                                     and g["host_memory"] == e["host_memory"] and g["op"] == "memcpy"), e["count"])

    def test_pageable_copies_counted_and_the_fix_is_to_pin(self):
        doc, expected, err = self.run_traced()
        self.check_exact(doc, expected)
        self.assertEqual(doc["machine"]["source"], "measured")
        self.assertTrue(doc["fixes"], err)
        self.assertIn(doc["fixes"][0]["fix"], ("pin", "staged"))
        self.assertGreater(doc["fixes"][0]["saving_s"], 0)
        self.assertIn("fix 1:", err)
        # The kernel after each upload ran beside nothing: the uploads are synchronous.
        self.assertTrue(all(t["overlap_s"] == 0 for t in doc["transfers"] if t["direction"] == "h2d"))

    def test_the_fixed_variant_is_pinned_and_needs_no_pinning(self):
        doc, expected, _ = self.run_traced("--fixed")
        self.check_exact(doc, expected)
        self.assertFalse([f for f in doc["fixes"] if f["fix"] in ("pin", "staged")])


if __name__ == "__main__":
    XFERBENCH = os.path.abspath(sys.argv.pop(1))
    EXAMPLE = os.path.abspath(sys.argv.pop(1))
    exit_77_without_gpu()
    unittest.main(verbosity=2)
