#!/usr/bin/env python3
"""`xferbench sweep --blocks` end to end on the host backend: bad block input is one line and exit 2 with
nothing written; a run writes every block point verified, with its block size and count, and never joins a plain
sweep.

Usage: test_blocks.py PATH/TO/xferbench, or under pytest with XFERBENCH_BIN set to it.
"""
import json
import os
import subprocess
import sys
import tempfile
import unittest

XFERBENCH = os.environ.get("XFERBENCH_BIN")
if XFERBENCH:
    XFERBENCH = os.path.abspath(XFERBENCH)
# The copier's choice calibrated afresh, never read from (or written to) the user's cache.
os.environ["XFER_BLOCKS_CACHE"] = "off"


def run(*args, timeout=120):
    return subprocess.run([XFERBENCH, *args], capture_output=True, text=True, timeout=timeout)


class BlockBadInput(unittest.TestCase):
    """Each bad input: exit 2, one clear line on stderr naming the block or the bound, no result file."""

    def assert_usage_error(self, *args, mentions):
        with tempfile.TemporaryDirectory() as d:
            p = run("sweep", "-b", "host", "--json", os.path.join(d, "r.json"), *args)
            self.assertEqual(p.returncode, 2, p.stderr)
            lines = p.stderr.strip().splitlines()
            self.assertEqual(len(lines), 1, p.stderr)
            for m in mentions:
                self.assertIn(m, lines[0])
            self.assertEqual(p.stdout, "")
            self.assertEqual(os.listdir(d), [])

    def test_a_block_size_of_zero_or_not_dividing_the_total(self):
        self.assert_usage_error("--block-sizes", "0", mentions=["--block-sizes", "'0'", "at least 1 byte"])
        self.assert_usage_error("--blocks-total", "0", mentions=["--blocks-total", "'0'"])
        self.assert_usage_error("--block-sizes", "3000", "--blocks-total", "1M",
                                mentions=["--block-sizes 3000 (3000 B) does not divide --blocks-total 1M (1048576 B)"])
        self.assert_usage_error("--block-sizes", "2M", "--blocks-total", "1M", mentions=["does not divide"])

    def test_overlapping_destination_blocks(self):
        self.assert_usage_error("--block-sizes", "4K", "--blocks-total", "64K", "--block-pairs", "0:3,1:3",
                                mentions=["--block-pairs", "pairs 0 and 1 both write destination block 3"])

    def test_a_block_beyond_its_buffer(self):
        self.assert_usage_error("--block-sizes", "4K", "--blocks-total", "64K", "--block-pairs", "0:1,2:16",
                                mentions=["pair 1 (2 -> 16): destination block 16 is outside",
                                          "blocks 0 to 15"])
        self.assert_usage_error("--block-sizes", "4K", "--blocks-total", "64K", "--block-pairs", "-1:1",
                                mentions=["source block -1 is outside"])

    def test_malformed_lists_and_conflicting_options(self):
        self.assert_usage_error("--block-pairs", "0:1,2", mentions=["--block-pairs: '2' is not SRC:DST"])
        self.assert_usage_error("--blocks", "--sizes", "4K", mentions=["--blocks", "--sizes"])
        self.assert_usage_error("-r", "blocks-loop", mentions=["blocks-loop", "--blocks"])
        self.assert_usage_error("--blocks", "-r", "memcpy", mentions=["'memcpy' moves no block list"])
        self.assert_usage_error("--block-sizes", "4K", "--block-sizes", "8K", mentions=["--block-sizes", "2 times"])


class BlockSweep(unittest.TestCase):
    def test_every_block_point_is_verified_and_carries_its_blocks(self):
        with tempfile.TemporaryDirectory() as d:
            js = os.path.join(d, "r.json")
            p = run("sweep", "-b", "host", "-m", "pageable", "--block-sizes", "4K,64K", "--blocks-total", "1M",
                    "--max-time", "0.02", "-q", "--json", js)
            self.assertEqual(p.returncode, 0, p.stderr)
            with open(js) as f:
                doc = json.load(f)
            self.assertEqual(doc["config"]["block_sizes"], [4096, 65536])
            got = {(r["route"], r["direction"], r["block_bytes"]) for r in doc["results"]}
            ways = ("blocks-loop", "blocks-batch", "blocks-pack", "blocks-auto")
            want = {(w, d, b) for w in ways for d in ("h2d", "d2h") for b in (4096, 65536)}
            want |= {("blocks-contiguous", d, 1 << 20) for d in ("h2d", "d2h")}
            self.assertEqual(got, want)  # blocks-kernel never meets pageable memory unless both are named
            for r in doc["results"]:
                self.assertEqual(r["status"], "ok", r)
                self.assertTrue(r["verified"])
                self.assertEqual(r["blocks"] * r["block_bytes"], r["bytes"])
                self.assertEqual(r["bytes_per_rep"], r["bytes"])
            auto = [r for r in doc["results"] if r["route"] == "blocks-auto"]
            self.assertTrue(all("the copier chose" in r["note"] for r in auto))

    def test_every_block_point_takes_five_samples_whatever_its_budget(self):
        # A budget of 10 us a point is less than one sample (100 us at least): without the floor, one sample, whose
        # spread is none, and the report could name no winner beyond the noise.
        with tempfile.TemporaryDirectory() as d:
            js = os.path.join(d, "r.json")
            p = run("sweep", "-b", "host", "-m", "pageable", "-r", "blocks-loop,blocks-pack", "-d", "h2d",
                    "--block-sizes", "64K", "--blocks-total", "1M", "--max-time", "0.00001", "-q", "--json", js)
            self.assertEqual(p.returncode, 0, p.stderr)
            with open(js) as f:
                doc = json.load(f)
            self.assertEqual(doc["config"]["samples_floor"], 5)
            self.assertEqual(len(doc["results"]), 2)
            for r in doc["results"]:
                self.assertEqual(r["status"], "ok", r)
                self.assertGreaterEqual(len(r["samples_s"]), 5, r["route"])

    def test_a_list_given_moves_its_blocks_and_the_kernel_way_says_why_not(self):
        with tempfile.TemporaryDirectory() as d:
            js = os.path.join(d, "r.json")
            p = run("sweep", "-b", "host", "-m", "pageable", "-r", "blocks-loop,blocks-kernel", "-d", "h2d",
                    "--block-sizes", "4K", "--blocks-total", "64K", "--block-pairs", "0:15,15:0,7:7",
                    "--max-time", "0.02", "-q", "--json", js)
            self.assertEqual(p.returncode, 0, p.stderr)
            with open(js) as f:
                loop, kernel = json.load(f)["results"]
            self.assertEqual((loop["status"], loop["blocks"], loop["bytes_per_rep"]), ("ok", 3, 3 * 4096))
            self.assertTrue(loop["verified"])
            self.assertEqual(kernel["status"], "skipped")
            self.assertIn("page-locked", kernel["reason"])


class OneSourceManyDestinations(unittest.TestCase):
    """Issue 49: a legal list copying one source block to two destinations failed every point with
    "verification failed"; both destinations hold the source, and each is checked."""

    def test_a_source_block_copied_twice_is_verified(self):
        with tempfile.TemporaryDirectory() as d:
            js = os.path.join(d, "r.json")
            p = run("sweep", "-b", "host", "-m", "pageable", "-r", "blocks-loop,blocks-auto", "-d", "h2d,d2h",
                    "--block-sizes", "4K", "--blocks-total", "64K", "--block-pairs", "3:1,3:2,5:0,3:9",
                    "--max-time", "0.02", "-q", "--json", js)
            self.assertEqual(p.returncode, 0, p.stderr)
            with open(js) as f:
                results = json.load(f)["results"]
            self.assertEqual(len(results), 4)
            for r in results:
                self.assertEqual((r["status"], r["blocks"], r["bytes_per_rep"]), ("ok", 4, 4 * 4096), r.get("reason"))
                self.assertTrue(r["verified"])


if __name__ == "__main__":
    XFERBENCH = os.path.abspath(sys.argv.pop(1))
    unittest.main(verbosity=2)
