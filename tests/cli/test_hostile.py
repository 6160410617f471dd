#!/usr/bin/env python3
"""Issue 49, end to end: what a new user (often root on a GPU machine) points the tool at.

- Caches written like outputs: XFER_STAGED_TUNING_CACHE and XFER_BLOCKS_CACHE naming a character
  device, a device that never ends, a FIFO, a link, a dangling link, a directory or a file too
  large to be a cache: the run goes on (exit 0, its points ok), the target is left exactly as it
  was (a link stays a link, its target updated), at most one line says the cache was ignored,
  nothing is left behind, nothing waits. /dev/null (here a node of its own) means "no cache".
- Numbers parsed once, strictly: 1e400, 1e-400, inf, nan, hex and spaces in every number option,
  and libxfer's variables, refused as bad input: one line naming the option, exit 2, nothing
  written.
- Every wait interruptible: a result file that is a FIFO nobody reads, the merge's FIFO rank file
  and FIFO output: a signal ends the wait, the other outputs are written.
- Sizes checked before memory is taken: a rank file claiming 10^9 ranks.

Usage: test_hostile.py PATH/TO/xferbench
"""
import json
import os
import re
import signal
import stat
import subprocess
import sys
import tempfile
import time
import unittest

XFERBENCH = None
ABORT_TEXT = re.compile(r"terminate called|what\(\)|Aborted|core dumped|Segmentation|Traceback|Assertion")
CACHE_LINE = re.compile(r"^xfer: cache ", re.M)

# What writes each cache on the host backend: the staged route calibrates (and writes its tuning),
# blocks-auto ranks the block ways (and writes the ranking).
STAGED = ["sweep", "-b", "host", "-r", "staged", "-m", "pageable", "-d", "h2d", "--sizes", "16M", "--max-time",
          "0.02", "-q"]
BLOCKS = ["sweep", "-b", "host", "-m", "pageable", "-r", "blocks-auto", "-d", "h2d", "--block-sizes", "64K",
          "--blocks-total", "1M", "--max-time", "0.02", "-q"]
CACHES = {"XFER_STAGED_TUNING_CACHE": STAGED, "XFER_BLOCKS_CACHE": BLOCKS}
# Each cache's first line (src/mem/keyed_cache.hpp: its kind and schema).
HEADERS = {"XFER_STAGED_TUNING_CACHE": "xfer staged-tuning cache, schema 3\n",
           "XFER_BLOCKS_CACHE": "xfer block-ways cache, schema 6\n"}


def run(*args, env=None, timeout=120, cwd=None):
    t0 = time.monotonic()
    p = subprocess.run([XFERBENCH, *args], capture_output=True, text=True, timeout=timeout, cwd=cwd,
                       env={**os.environ, **(env or {})})
    return p, time.monotonic() - t0


def char_device(path, minor):
    """A character device node: memory device `minor` (3: null, 5: zero). As root a node of its
    own in the test's directory, so a regression never touches the system's; otherwise the
    system's own (nobody but root can replace it)."""
    if os.geteuid() == 0:
        os.mknod(path, stat.S_IFCHR | 0o666, os.makedev(1, minor))
        return path
    return {3: "/dev/null", 5: "/dev/zero"}[minor]


def fingerprint(path):
    """What must not change: the kind of thing, its device numbers, a link's target, a file's bytes."""
    st = os.lstat(path)
    fp = [stat.S_IFMT(st.st_mode), st.st_rdev]
    if stat.S_ISLNK(st.st_mode):
        fp.append(os.readlink(path))
    elif stat.S_ISREG(st.st_mode):
        with open(path, "rb") as f:
            fp.append(f.read())
    return fp


class CacheTargets(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.dir = self.tmp.name

    def tearDown(self):
        self.tmp.cleanup()

    def run_with_cache(self, variable, target, expect_line):
        p, took = run(*CACHES[variable], env={variable: target}, timeout=120)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIsNone(ABORT_TEXT.search(p.stderr), p.stderr)
        self.assertRegex(p.stdout, r"points: 1 ok .* 0 failed")
        lines = CACHE_LINE.findall(p.stderr)
        self.assertEqual(len(lines), 1 if expect_line else 0, p.stderr)
        self.assertLess(took, 60, "nothing waits on a cache")
        return p

    def left_alone(self, variable, target, expect_line=True):
        before = fingerprint(target)
        p = self.run_with_cache(variable, target, expect_line)
        self.assertEqual(fingerprint(target), before, p.stderr)
        # Nothing left behind: no temporary file beside the target.
        self.assertEqual([n for n in os.listdir(os.path.dirname(target) or ".") if n.endswith(".tmp")], [])
        return p

    def test_a_null_device_means_no_cache(self):
        for variable in CACHES:
            with self.subTest(variable=variable):
                node = char_device(os.path.join(self.dir, "null-" + variable), 3)
                self.left_alone(variable, node, expect_line=False)
                self.assertTrue(stat.S_ISCHR(os.stat(node).st_mode))

    def test_a_device_that_never_ends_is_neither_read_nor_replaced(self):
        for variable in CACHES:
            with self.subTest(variable=variable):
                node = char_device(os.path.join(self.dir, "zero-" + variable), 5)
                p = self.left_alone(variable, node)
                self.assertIn("a character device", p.stderr)

    def test_a_fifo_is_neither_waited_on_nor_replaced(self):
        for variable in CACHES:
            with self.subTest(variable=variable):
                fifo = os.path.join(self.dir, "fifo-" + variable)
                os.mkfifo(fifo)
                p = self.left_alone(variable, fifo)
                self.assertIn("a FIFO", p.stderr)

    def test_a_directory_is_left_as_it_is(self):
        for variable in CACHES:
            with self.subTest(variable=variable):
                d = os.path.join(self.dir, "dir-" + variable)
                os.mkdir(d)
                self.left_alone(variable, d)
                self.assertEqual(os.listdir(d), [])

    def test_a_file_too_large_to_be_a_cache_is_neither_read_nor_rewritten(self):
        for variable in CACHES:
            with self.subTest(variable=variable):
                big = os.path.join(self.dir, "big-" + variable)
                with open(big, "wb") as f:
                    f.write(b"x" * (2 << 20))
                p = self.left_alone(variable, big)
                self.assertIn("more than", p.stderr)

    def test_a_link_stays_a_link_and_its_target_is_the_cache(self):
        for variable in CACHES:
            with self.subTest(variable=variable):
                real, link = os.path.join(self.dir, "real-" + variable), os.path.join(self.dir, "link-" + variable)
                other = HEADERS[variable] + "someone/else\tsome CPU; no driver\t1 2 3\n"
                with open(real, "w") as f:
                    f.write(other)
                os.symlink(os.path.basename(real), link)
                self.run_with_cache(variable, link, expect_line=False)
                self.assertEqual(os.readlink(link), os.path.basename(real))
                with open(real) as f:
                    text = f.read()
                self.assertTrue(text.startswith(other), text)  # other keys kept
                self.assertEqual(len(text.splitlines()), 3, text)  # the header, the other key, this run's

    def test_a_dangling_link_gets_its_file_and_stays_a_link(self):
        for variable in CACHES:
            with self.subTest(variable=variable):
                link = os.path.join(self.dir, "dangling-" + variable)
                os.symlink("made-" + variable, link)
                self.run_with_cache(variable, link, expect_line=False)
                self.assertTrue(os.path.islink(link))
                self.assertTrue(os.path.isfile(os.path.join(self.dir, "made-" + variable)))

    def test_a_regular_file_is_the_cache_and_a_second_run_reads_it(self):
        for variable in CACHES:
            with self.subTest(variable=variable):
                cache = os.path.join(self.dir, "cache-" + variable)
                self.run_with_cache(variable, cache, expect_line=False)
                with open(cache) as f:
                    first = f.read()
                self.assertEqual(first.splitlines()[0] + "\n", HEADERS[variable], first)
                self.assertEqual(len(first.splitlines()), 2, first)  # the header and this run's key
                self.run_with_cache(variable, cache, expect_line=False)
                with open(cache) as f:
                    self.assertEqual(f.read(), first)


SWEEP = ["sweep", "-b", "host", "-r", "memcpy", "-m", "aligned", "-d", "h2d", "--sizes", "4K", "-q"]
PEER = ["peer", "-b", "host", "--sizes", "4K", "--quick", "-q"]
FLEET = ["fleet", "-b", "host", "--size", "4K", "--repeat", "1"]

# (arguments, what the one line must name)
NUMBERS = [
    (SWEEP + ["--warmup", "1e400"], "--warmup: 1e400"),
    (SWEEP + ["--warmup", "1e-400"], "--warmup: 1e-400"),
    (SWEEP + ["--max-time", "1e400"], "--max-time: 1e400"),
    (SWEEP + ["--max-time", "1e-400"], "--max-time: 1e-400"),
    (SWEEP + ["--max-time", "inf"], "--max-time: inf"),
    (SWEEP + ["--max-time", "-inf"], "--max-time: -inf"),
    (SWEEP + ["--max-time", "nan"], "--max-time: nan"),
    (SWEEP + ["--max-time", "0x10"], "--max-time: 0x10"),
    (SWEEP + ["--max-time", " 1"], "--max-time"),
    (SWEEP + ["--max-time", "1 "], "--max-time"),
    (SWEEP + ["--max-time", "1e"], "--max-time: 1e"),
    (SWEEP + ["--target-ci", "1e-400"], "--target-ci: 1e-400"),
    (SWEEP + ["--target-ci", "infinity"], "--target-ci: infinity"),
    (SWEEP + ["--watchdog", "1e400"], "--watchdog: 1e400"),
    (SWEEP + ["--watchdog", "-1"], "--watchdog: -1"),
    (SWEEP + ["--threads", "1e400"], "--threads"),
    (["sweep", "-b", "host", "--budget", "1e400"], "--budget: 1e400"),
    (["sweep", "-b", "host", "--budget", "1e-400"], "--budget: 1e-400"),
    (["sweep", "-b", "host", "--budget", "NaN"], "--budget: NaN"),
    (PEER + ["--max-time", "1e400"], "--max-time: 1e400"),
    (PEER + ["--max-time", "1e999"], "--max-time: 1e999"),
    (FLEET + ["--rank-timeout", "1e400"], "--rank-timeout: 1e400"),
    (FLEET + ["--rank-timeout", "1e-400"], "--rank-timeout: 1e-400"),
    (FLEET + ["--mad-k", "1e400"], "--mad-k: 1e400"),
    (FLEET + ["--tolerance", "1e-400"], "--tolerance: 1e-400"),
    (FLEET + ["--min-ceiling", "-0x1p3"], "--min-ceiling: -0x1p3"),
    (FLEET + ["--max-time", "1e400"], "--max-time: 1e400"),
]

# (variable, value, what the one line must name): libxfer's variables are input too.
VARIABLES = [
    ("XFER_STAGED_CHUNK_BYTES", "abc", "XFER_STAGED_CHUNK_BYTES=abc"),
    ("XFER_STAGED_CHUNK_BYTES", "1e400", "XFER_STAGED_CHUNK_BYTES=1e400"),
    ("XFER_STAGED_CHUNK_BYTES", "99999999999999999999999", "XFER_STAGED_CHUNK_BYTES=99999999999999999999999"),
    ("XFER_STAGED_RING_DEPTH", "0", "XFER_STAGED_RING_DEPTH=0"),
    ("XFER_STAGED_THREADS", "-1", "XFER_STAGED_THREADS=-1"),
    ("XFER_STAGED_HANDOFF_BYTES", " 4096", "XFER_STAGED_HANDOFF_BYTES= 4096"),
    ("XFER_STAGED_STREAM_STORES", "2", "XFER_STAGED_STREAM_STORES=2"),
    ("XFER_STAGED_SHARED", "yes", "XFER_STAGED_SHARED=yes"),
    ("XFER_STAGED_BUDGET_THREADS", "0", "XFER_STAGED_BUDGET_THREADS=0"),
    ("XFER_SPIN_US", "-1", "XFER_SPIN_US=-1"),
    ("XFER_SPIN_US", "1e400", "XFER_SPIN_US=1e400"),
    ("XFER_SPIN_US", "5000000", "XFER_SPIN_US=5000000"),
    ("XFER_BLOCKS_WAY", "fastest", "XFER_BLOCKS_WAY=fastest"),
]


class NumbersParsedOnce(unittest.TestCase):
    def refused(self, args, names, env=None):
        with tempfile.TemporaryDirectory() as d:
            out = os.path.join(d, "r.json")
            p, _ = run(*args, "--json", out, env=env, cwd=d, timeout=60)
            self.assertEqual(p.returncode, 2, p.stderr)
            lines = p.stderr.splitlines()
            self.assertEqual(len(lines), 1, p.stderr)
            self.assertTrue(lines[0].startswith("xferbench: error: "), lines[0])
            self.assertIn(names, lines[0])
            self.assertIsNone(ABORT_TEXT.search(p.stderr), p.stderr)
            self.assertEqual(p.stdout, "")
            self.assertEqual(os.listdir(d), [], "nothing written, nothing left behind")

    def test_a_variable_set_to_a_good_value_still_runs(self):
        p, _ = run(*SWEEP, "--max-time", "0.01", env={"XFER_SPIN_US": "0", "XFER_STAGED_THREADS": "2"})
        self.assertEqual(p.returncode, 0, p.stderr)


def _add(i, args, names, env=None):
    name = "test_{:03d}_{}".format(i, re.sub(r"[^a-z0-9]+", "_", " ".join(args[-2:] if not env else env).lower()))
    setattr(NumbersParsedOnce, name, lambda self: self.refused(args, names, env))


for _i, (_args, _names) in enumerate(NUMBERS):
    _add(_i, _args, _names)
for _i, (_var, _value, _names) in enumerate(VARIABLES):
    _add(100 + _i, SWEEP + ["--max-time", "0.01"], _names, {_var: _value})


def wait_then_signal(args, sig, fifo_wait_s=2, timeout=10):
    """Runs args and signals it once it has had time to reach its wait; returns (whether it was
    still waiting, the process, stdout, stderr). A signal that came before the wait (on a slow
    machine, while the command still worked) stopped the command's work, as a first Ctrl-C stops
    a sweep whose points are then written: the next one, inside the wait, must end it."""
    proc = subprocess.Popen([XFERBENCH, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    time.sleep(fifo_wait_s)
    still = proc.poll() is None
    for _ in range(2):
        proc.send_signal(sig)
        try:
            out, err = proc.communicate(timeout=timeout)
            return still, proc, out, err
        except subprocess.TimeoutExpired:
            pass
    proc.kill()
    out, err = proc.communicate()
    raise AssertionError("two signals did not end the wait: " + err)


class WaitsEndOnASignal(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.dir = self.tmp.name

    def tearDown(self):
        self.tmp.cleanup()

    def test_a_result_fifo_nobody_reads_waits_until_a_signal_and_the_csv_is_kept(self):
        for sig in (signal.SIGINT, signal.SIGTERM):
            with self.subTest(signal=sig):
                fifo, csv = os.path.join(self.dir, f"r{sig}.json"), os.path.join(self.dir, f"r{sig}.csv")
                os.mkfifo(fifo)
                still, proc, out, err = wait_then_signal([*SWEEP, "--max-time", "0.01", "--json", fifo, "--csv", csv],
                                                         sig)
                self.assertTrue(still, "it waited for a reader")
                self.assertEqual(proc.returncode, 1, err)
                self.assertIn(f"cannot write {fifo}: it is a FIFO nothing reads from", err)
                self.assertIsNone(ABORT_TEXT.search(err), err)
                self.assertTrue(stat.S_ISFIFO(os.stat(fifo).st_mode))
                with open(csv) as f:
                    self.assertEqual(len(f.read().splitlines()), 2)  # the head and the one point

    def test_a_result_fifo_with_a_reader_gets_the_result(self):
        fifo = os.path.join(self.dir, "r.json")
        os.mkfifo(fifo)
        proc = subprocess.Popen([XFERBENCH, *SWEEP, "--max-time", "0.01", "--json", fifo], stdout=subprocess.DEVNULL,
                                stderr=subprocess.PIPE, text=True)
        with open(fifo) as f:
            doc = json.load(f)
        _, err = proc.communicate(timeout=60)
        self.assertEqual(proc.returncode, 0, err)
        self.assertEqual([r["status"] for r in doc["results"]], ["ok"])

    def rank_dir(self):
        d = os.path.join(self.dir, "ranks")
        os.mkdir(d)
        p, _ = run(*FLEET, "--max-time", "0.01", "--out-dir", d)
        self.assertEqual(p.returncode, 0, p.stderr)
        return d

    def test_a_fifo_rank_file_is_refused_without_waiting(self):
        d = os.path.join(self.dir, "fifo-ranks")
        os.mkdir(d)
        os.mkfifo(os.path.join(d, "rank-00000.json"))
        p, took = run("fleet", "--merge", d, timeout=30)
        self.assertEqual(p.returncode, 2, p.stderr)
        self.assertEqual(len(p.stderr.splitlines()), 1, p.stderr)
        self.assertIn("it is a FIFO, not a regular file", p.stderr)
        self.assertLess(took, 10)

    def test_the_merges_fifo_output_waits_until_a_signal(self):
        d = self.rank_dir()
        fifo = os.path.join(self.dir, "fleet.json")
        os.mkfifo(fifo)
        still, proc, out, err = wait_then_signal(["fleet", "--merge", d, "--json", fifo], signal.SIGTERM)
        self.assertTrue(still)
        self.assertEqual(proc.returncode, 1, err)
        self.assertIn("it is a FIFO nothing reads from", err)

    def test_a_rank_file_claiming_a_billion_ranks_is_refused_before_anything_is_sized(self):
        d = self.rank_dir()
        path = os.path.join(d, "rank-00000.json")
        with open(path) as f:
            doc = json.load(f)
        doc["fleet"]["ranks"][0]["size"] = 10 ** 9
        with open(path, "w") as f:
            json.dump(doc, f)
        p, took = run("fleet", "--merge", d, timeout=60)
        self.assertEqual(p.returncode, 2, p.stderr)
        self.assertEqual(len(p.stderr.splitlines()), 1, p.stderr)
        self.assertIn("claims a job of 1000000000 ranks", p.stderr)
        self.assertNotIn("bad_alloc", p.stderr)


if __name__ == "__main__":
    XFERBENCH = os.path.abspath(sys.argv.pop(1))
    unittest.main(verbosity=1)
