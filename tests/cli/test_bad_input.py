#!/usr/bin/env python3
"""Bad input to every command but sweep (test_cli.py holds sweep's), typed as a new user would:
options that cannot apply, values out of range, repeated and conflicting options, missing files,
unwritable outputs, empty values and absurd sizes. Issue 36: nothing silently ignored.

Each row of CASES is one case, checked the same way: its exit code (2 for bad input), exactly one
line on stderr naming the bad option(s), nothing on stdout, no abort or traceback text, a result
file already there left byte for byte, no new file (hidden or not) in the directory, and no hang.
A case that regressed into measuring stays short: the rows select the host backend and the smallest
settings.

Usage: test_bad_input.py PATH/TO/xferbench, or under pytest with XFERBENCH_BIN set to it.
"""
import json
import os
import re
import subprocess
import sys
import tempfile
import unittest

XFERBENCH = os.environ.get("XFERBENCH_BIN")
if XFERBENCH:
    XFERBENCH = os.path.abspath(XFERBENCH)  # the cases run in a directory of their own

# Placeholders, filled per case: a result file that exists (and must survive), the case's directory,
# and a regular file in it (to stand where a directory is wanted).
OUT, DIR, FILE = "{out}", "{dir}", "{file}"
EXISTING = b'{"schema": "an earlier result, which bad input must not touch"}\n'

ALLOC = ["alloc", "--quick", "-s", "pageable", "--sizes", "4K", "--json", OUT]
APP = ["app", "vadd", "-b", "host", "--size", "1K", "--json", OUT]
APP_SIZES = ["app", "vadd", "-b", "host", "--json", OUT]
CPU = ["cpu", "--sizes", "4K", "--runs", "1", "--kinds", "pageable", "-q", "--json", OUT]
PEER = ["peer", "-b", "host", "--sizes", "4K", "--quick", "-q", "--json", OUT]
FLEET = ["fleet", "-b", "host", "--size", "4K", "--max-time", "0.01", "--repeat", "1", "--rank-timeout", "20"]
FLEET_JSON = FLEET + ["--json", OUT]

# (arguments, what the one line must name, exit code)
CASES = [
    # alloc: --quick is a starting point; what is given beside it is checked, never replaced
    (ALLOC + ["--runs", "-5"], ["--runs", "-5"], 2),
    (ALLOC + ["--repeat", "0"], ["--repeat 0"], 2),
    (ALLOC + ["--iterations", "0"], ["--iterations 0"], 2),
    (ALLOC + ["--runs", "2000000"], ["--runs 2000000"], 2),
    (ALLOC + ["--max-live", "-1"], ["--max-live", "-1"], 2),
    (ALLOC + ["--max-live", "0"], ["--max-live 0"], 2),
    (ALLOC + ["--seed", "-1"], ["--seed", "-1"], 2),
    (ALLOC + ["--max-block", "12Q"], ["--max-block", "12Q"], 2),
    (ALLOC + ["--max-block", ""], ["--max-block"], 2),
    (ALLOC + ["-s", ""], ["--strategies", "empty"], 2),
    (ALLOC + ["-s", "pool:"], ["'pool:'"], 2),
    (ALLOC + ["-s", "pool:pool:aligned"], ["'pool:pool:aligned'"], 2),
    (ALLOC + ["--runs", "1.5"], ["--runs"], 2),
    (ALLOC + ["--runs", "3", "--runs", "4"], ["--runs"], 2),
    (ALLOC + ["--json", "other.json"], ["--json"], 2),
    (ALLOC + ["--sizes", "1E"], ["--sizes", "1E"], 2),
    (ALLOC + ["--sizes", "0"], ["--sizes", "'0'"], 2),
    (ALLOC + ["--sizes", "99999999999999999999"], ["--sizes", "too large"], 2),
    (ALLOC + ["--sizes", "4K", "--sizes", "64T"], ["64T", "more than half of this machine's memory"], 2),
    (ALLOC + ["--device", "0"], ["--device"], 2),
    (ALLOC + ["-b", "host"], ["-b"], 2),
    (ALLOC + ["extra"], ["extra"], 2),
    (["alloc", "--quick", "--json", DIR], ["--json", "directory"], 2),
    (["alloc", "--quick", "--json", FILE + "/a.json"], ["--json", "Not a directory"], 2),
    (["alloc", "--quick", "--json", DIR + "/no/such/a.json"], ["--json", "No such file"], 2),
    # app vadd: one of --size and --sizes; a device the backend has; a baseline that is measured
    (APP + ["--sizes", "2K"], ["--size and --sizes cannot be given together"], 2),
    (APP + ["--size", "2K"], ["--size"], 2),
    (APP + ["--device", "1"], ["--device 1", "host"], 2),
    (APP + ["--device", "-1"], ["--device -1"], 2),
    (APP + ["--device", "0,1"], ["--device"], 2),
    (APP + ["--baseline", "pageable", "-s", "aligned"], ["--baseline pageable", "--strategies aligned"], 2),
    (APP + ["--baseline", ""], ["--baseline", "empty"], 2),
    (APP + ["-s", ""], ["--strategies", "empty"], 2),
    (APP + ["--repeat", "-1"], ["--repeat", "-1"], 2),
    (APP + ["--repeat", "1001"], ["--repeat 1001"], 2),
    (APP_SIZES + ["--size", "-1K"], ["--size", "-1K"], 2),
    (APP_SIZES + ["--size", "1P"], ["--size", "1P"], 2),
    (APP_SIZES + ["--size", "99999999999999999999"], ["--size", "too large"], 2),
    (APP_SIZES + ["--sizes", "4K,,8K"], ["--sizes", "empty"], 2),
    (APP + ["--csv", "v.csv"], ["--csv"], 2),
    (APP + ["--json", "other.json"], ["--json"], 2),
    (["app", "vadd", "-b", "host", "--size", "1K", "--json", DIR], ["--json", "directory"], 2),
    (["app"], ["give a command, xferbench app COMMAND", "vadd"], 2),
    (["app", "nosuch"], ["unknown command 'app nosuch'", "vadd"], 2),
    (["app", "-b", "host"], ["'-b'", "xferbench app COMMAND", "vadd"], 2),
    # cpu
    (CPU + ["--json", "other.json"], ["--json is given 2 times"], 2),
    (CPU + ["--threads", ""], ["--threads", "empty"], 2),
    (CPU + ["--kinds", ""], ["--kinds", "empty"], 2),
    (CPU + ["--ops", ""], ["--ops", "empty"], 2),
    (CPU + ["--methods", ""], ["--methods", "empty"], 2),
    (CPU + ["--runs", "-1"], ["--runs -1"], 2),
    (CPU + ["--runs", "1000001"], ["--runs 1000001"], 2),
    (CPU + ["--threads", "1025"], ["--threads 1025"], 2),
    (CPU + ["--threads", "abc"], ["--threads"], 2),
    (CPU + ["--sizes", "99999999999999999999"], ["--sizes", "too large"], 2),
    (CPU + ["--sizes", "1E"], ["--sizes", "1E"], 2),
    (CPU + ["--sizes", "64T"], ["64T", "larger than this machine's memory"], 2),
    (CPU + ["--ops", "fill", "--methods", "ntload"], ["ntload applies only to read"], 2),
    (CPU + ["--kinds", "granite"], ["unknown memory kind 'granite'"], 2),
    (CPU + ["--ops", "read,write", "--methods", "ntload"], ["--ops read,write", "--methods ntload", "write"], 2),
    (CPU + ["-b", "host"], ["-b"], 2),
    (CPU + ["--device", "0"], ["--device"], 2),
    (CPU + ["--quick"], ["--quick"], 2),
    (["cpu", "--sizes", "4K", "--json", DIR + "/no/such/c.json"], ["--json"], 2),
    # peer
    (PEER + ["--device", "-1"], ["--device -1"], 2),
    (PEER + ["--device", "1"], ["--device 1"], 2),
    (PEER + ["--json", "other.json"], ["--json"], 2),
    (PEER + ["--csv", OUT], ["--json and --csv"], 2),
    (PEER + ["--max-time", "nan"], ["--max-time", "nan"], 2),
    (PEER + ["--max-time", "0"], ["--max-time"], 2),
    (PEER + ["--max-time", "3601"], ["--max-time"], 2),
    (PEER + ["--sizes", "64T"], ["64T", "larger than this machine's memory"], 2),
    (PEER + ["--sizes", ""], ["--sizes", "empty"], 2),
    (PEER + ["--host-devices", "0"], ["--host-devices"], 2),
    (PEER + ["--host-devices", "65"], ["--host-devices"], 2),
    (PEER + ["-b", "nosuch"], ["unknown backend 'nosuch'"], 2),
    (["peer", "-b", "opencl", "--host-devices", "2", "--sizes", "4K", "--json", OUT],
     ["--host-devices 2", "-b opencl"], 2),
    (PEER + ["--budget", "10"], ["--budget"], 2),
    (PEER + ["--csv", DIR], ["--csv", "directory"], 2),
    # fleet: options that cannot apply together, thresholds that judge nothing, files that are not there
    (FLEET_JSON + ["--out-dir", DIR + "/ranks"], ["--out-dir", "--json"], 2),
    (FLEET + ["--out-dir", DIR + "/ranks", "--mad-k", "5"], ["--out-dir", "--mad-k"], 2),
    (FLEET + ["--out-dir", DIR + "/ranks", "--tolerance", "0.2"], ["--out-dir", "--tolerance"], 2),
    (FLEET + ["--out-dir", DIR + "/ranks", "--baseline", FILE], ["--out-dir", "--baseline"], 2),
    (FLEET + ["--merge", DIR], ["--merge"], 2),
    (["fleet", "--merge", DIR, "--out-dir", DIR + "/ranks"], ["--out-dir", "--merge"], 2),
    (["fleet", "--merge", DIR, "--no-alone"], ["--no-alone", "--merge"], 2),
    (["fleet", "--merge", DIR, "--json", OUT], ["no rank-*.json files"], 2),
    (["fleet", "--merge", DIR + "/missing"], ["--merge"], 2),
    (FLEET_JSON + ["--mad-k", "inf"], ["--mad-k: inf"], 2),
    (FLEET_JSON + ["--mad-k", "-1"], ["--mad-k: -1"], 2),
    (FLEET_JSON + ["--tolerance", "nan"], ["--tolerance: nan"], 2),
    (FLEET_JSON + ["--tolerance", "1"], ["--tolerance: 1"], 2),
    (FLEET_JSON + ["--min-ceiling", "2"], ["--min-ceiling: 2"], 2),
    (FLEET_JSON + ["--rank-timeout", "inf"], ["--rank-timeout: inf"], 2),
    (FLEET_JSON + ["--rank-timeout", "0"], ["--rank-timeout: 0"], 2),
    (FLEET_JSON + ["--repeat", "0"], ["--repeat 0"], 2),
    (FLEET_JSON + ["--repeat", "21"], ["--repeat 21"], 2),
    (FLEET_JSON + ["--size", "1K"], ["--size 1K"], 2),
    (FLEET_JSON + ["--size", "1E"], ["--size", "1E"], 2),
    (FLEET_JSON + ["--max-time", "61"], ["--max-time 61"], 2),
    (FLEET_JSON + ["-b", "host,nosuch"], ["unknown backend 'nosuch'"], 2),
    (["fleet", "-b", "cuda-rt", "--host-devices", "2", "--size", "4K", "--json", OUT], ["--host-devices 2", "-b cuda-rt"], 2),
    (FLEET_JSON + ["--baseline", FILE], ["--baseline"], 2),
    (FLEET_JSON + ["--baseline", DIR], ["--baseline"], 2),
    (FLEET_JSON + ["--json", "other.json"], ["--json"], 2),
    (FLEET + ["--out-dir", FILE], ["--out-dir"], 2),
    # list, info and the tool itself
    (["list", "--threads", "1025"], ["--threads", "1025"], 2),
    (["list", "--threads", "-1"], ["--threads", "-1"], 2),
    (["list", "--host-devices", "0"], ["--host-devices"], 2),
    (["list", "--json", OUT], ["--json"], 2),
    (["list", "extra"], ["extra"], 2),
    (["info", "--json", "extra"], ["extra"], 2),
    (["info", "--host-devices", "2"], ["--host-devices"], 2),
    (["nosuch"], ["unknown command 'nosuch'", "alloc"], 2),
    ([], ["give a command, xferbench COMMAND", "sweep"], 2),
    (["--frobnicate"], ["'--frobnicate'", "give a command first"], 2),
    (["-b", "host", "sweep"], ["'-b'", "give a command first"], 2),
]

ABORT_TEXT = re.compile(r"terminate called|what\(\)|Aborted|core dumped|Segmentation|Traceback|Assertion")


def fill(args, d):
    out, plain = os.path.join(d, "existing.json"), os.path.join(d, "plain.txt")
    return [a.replace(OUT, out).replace(DIR, d).replace(FILE, plain) for a in args]


class BadInput(unittest.TestCase):
    def check(self, args, mentions, code):
        with tempfile.TemporaryDirectory() as d:
            with open(os.path.join(d, "existing.json"), "wb") as f:
                f.write(EXISTING)
            with open(os.path.join(d, "plain.txt"), "wb") as f:
                f.write(b"not a directory, not a result file\n")
            argv = fill(args, d)
            p = subprocess.run([XFERBENCH, *argv], cwd=d, capture_output=True, text=True, timeout=60)
            self.assertEqual(p.returncode, code, p.stderr)
            lines = p.stderr.splitlines()
            self.assertEqual(len(lines), 1, p.stderr)
            self.assertTrue(lines[0].startswith("xferbench: "), lines[0])
            for m in mentions:
                self.assertIn(fill([m], d)[0], lines[0])
            self.assertIsNone(ABORT_TEXT.search(p.stderr), p.stderr)
            self.assertEqual(p.stdout, "")
            self.assertEqual(sorted(os.listdir(d)), ["existing.json", "plain.txt"], "nothing new, hidden or not")
            with open(os.path.join(d, "existing.json"), "rb") as f:
                self.assertEqual(f.read(), EXISTING)


def _add_case(i, args, mentions, code):
    name = "test_{:03d}_{}".format(i, re.sub(r"[^a-z0-9]+", "_", " ".join(args[:2]).lower()).strip("_") or "none")
    setattr(BadInput, name, lambda self: self.check(args, mentions, code))


for _i, _case in enumerate(CASES):
    _add_case(_i, *_case)


def run(*args):
    return subprocess.run([XFERBENCH, *args], capture_output=True, text=True, timeout=120)


def run_to_file(*args):
    """The run, and the result file it wrote (None where it wrote none)."""
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "r.json")
        p = run(*args, "--json", out)
        if not os.path.exists(out):
            return p, None
        with open(out) as f:
            return p, json.load(f)


class WhatStillRuns(unittest.TestCase):
    """The combinations that are meant: given beside --quick, an option wins; a device named twice
    is measured once; a default baseline that is not measured leaves the tables without deltas."""

    def test_an_option_given_beside_quick_is_the_one_used(self):
        p, doc = run_to_file("alloc", "--quick", "-s", "pageable", "--sizes", "4K", "--runs", "3", "--iterations", "100")
        self.assertEqual(p.returncode, 0, p.stderr)
        config = doc["config"]
        self.assertEqual((config["runs"], config["iterations"], config["repeats"]), (3, 100, 1))

    def test_a_peer_device_named_twice_is_measured_once(self):
        # It was reported as "no chosen backend has a device 0".
        p, doc = run_to_file("peer", "-b", "host", "--host-devices", "2", "--sizes", "4K", "--quick", "-q",
                             "--max-time", "0.01", "--device", "0,0")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual([(r["device_index"], r["peer_device_index"]) for r in doc["results"]], [(0, 0)])

    def test_the_default_baseline_need_not_be_among_the_strategies(self):
        p = run("app", "vadd", "-b", "host", "--size", "1K", "--repeat", "1", "-s", "aligned")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("| Phase | aligned |\n", p.stdout)


class Help(unittest.TestCase):
    def test_every_command_has_help(self):
        for cmd in (["sweep"], ["peer"], ["fleet"], ["list"], ["info"], ["cpu"], ["alloc"], ["app"], ["app", "vadd"]):
            with self.subTest(cmd=cmd):
                p = run(*cmd, "--help")
                self.assertEqual(p.returncode, 0, p.stderr)
                self.assertEqual(p.stderr, "")
                self.assertIn("Usage:", p.stdout)

    def test_sweep_help_names_every_backend_list_knows(self):
        # issue 50: the help once left out vulkan and xrt, which `list` showed.
        names = re.findall(r"^([a-z][a-z0-9-]*)(?::[A-Za-z0-9_.-]+)?: ", run("list").stdout, re.M)
        self.assertIn("host", names)
        backends = re.search(r"backends: (.*?); default", " ".join(run("sweep", "--help").stdout.split())).group(1)
        listed = {b.split(":")[0] for b in re.findall(r"[a-z][a-z0-9:-]*[A-Za-z]", backends)}
        for family in names:
            self.assertIn(family, listed, backends)

    def test_help_says_which_options_exclude_each_other(self):
        self.assertRegex(run("app", "vadd", "--help").stdout, r"--size TEXT ?(=24M|\[24M\]) +Excludes: --sizes\n")
        self.assertRegex(run("fleet", "--help").stdout, r"--out-dir TEXT +Excludes: [-a-z ]*--json\n")

    def test_cpu_help_lists_the_kinds_the_study_measures(self):
        # The study's list, defaults first, as its message for an unknown kind gives it.
        known = re.search(r"\(known: (.*)\)", run("cpu", "--kinds", "granite").stderr).group(1).split(", ")
        help_text = run("cpu", "--help").stdout
        defaults = re.search(r"--kinds TEXT \.\.\. +memory kinds \(default: ([^)]*)\)", help_text).group(1).split(",")
        self.assertEqual(known[:len(defaults)], defaults)
        also = re.search(r"Kinds: by default ([^;]*); also (.*), and\n", help_text)
        self.assertEqual(also.group(1).split(", "), defaults)
        for kind in also.group(2).split(", "):
            self.assertIn(kind, known[len(defaults):])

    def test_alloc_help_lists_the_strategies_the_study_knows(self):
        # The study's own list, as its message for an unknown one gives it.
        p = run("alloc", "-s", "granite")
        self.assertEqual(p.returncode, 2, p.stderr)
        known = re.search(r"\(known: (.*)\)", p.stderr).group(1).split(", ")
        self.assertEqual(known[-1], "pool:<any of these>")
        known = known[:-1]
        help_text = run("alloc", "--help").stdout
        listed = re.findall(r"^  ([a-z][a-z0-9-]*) +\S", help_text.split("Strategies", 1)[1], re.M)
        self.assertEqual(listed, known)
        self.assertIn("pool:<any of these>", help_text)
        # Each one listed is a strategy the command takes: measured, or skipped where nothing offers it.
        p, doc = run_to_file("alloc", "-s", ",".join(listed), "--sizes", "4K", "--runs", "1", "--repeat", "1",
                             "--iterations", "10", "--max-live", "1", "--max-block", "64")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual([s["name"] for s in doc["strategies"]], listed)

if __name__ == "__main__":
    XFERBENCH = os.path.abspath(sys.argv.pop(1))
    unittest.main(verbosity=2)
