#!/usr/bin/env python3
"""Every device at once, the peer matrix and fleet mode, end to end on the real executable:
the host backend's stand-in devices, OpenCL on PoCL with several devices, and fleet mode
under a real `mpirun` (Open MPI) with its faults: a rank that dies or hangs, more ranks than
devices, ranks that disagree, several ranks without MPI; and the per-rank files merged by
`xferbench-report fleet`.

Usage: test_fleet.py PATH/TO/xferbench [PATH/TO/python-dir [PATH/TO/xferbench-fleet-faults]]
"""
import glob
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
PYTHON_DIR = None
FAULTY = None  # xferbench-fleet-faults: the tool with the fleet's fault seam set
MPIRUN = shutil.which("mpirun")
# Judged leniently where the test checks the shape: 4 ranks on a 2-core CI
# machine are noisy, and noise is not what these tests are about.
LENIENT = ["--mad-k", "1000", "--tolerance", "0.99", "--min-ceiling", "0"]
SMALL = ["--size", "64K", "--max-time", "0.01"]
HEALTH_SET = ["h2d-pinned", "d2h-pinned", "bidir-pinned", "latency-4B", "h2d-pageable"]


def test_of(p):
    """A fleet point's health test, named as src/core/fleet.cpp names it."""
    if p["bytes"] <= 64:
        return "latency-4B"
    return f"{p['direction']}-{'pageable' if p['host_memory'] == 'pageable' else 'pinned'}"


def run(args, env=None, timeout=180):
    e = dict(os.environ)
    e.update(env or {})
    return subprocess.run(args, capture_output=True, text=True, timeout=timeout, env=e)


def xb(*args, env=None, timeout=180):
    return run([XFERBENCH, *args], env=env, timeout=timeout)


def mpirun(np, *args, mca=(), env=None, timeout=180, binary=None):
    # As root Open MPI refuses to start without these.
    e = {"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1", "OMPI_MCA_rmaps_base_oversubscribe": "1"}
    e.update(env or {})
    cmd = [MPIRUN, "--oversubscribe", "-np", str(np)]
    for k, v in mca:
        cmd += ["--mca", k, v]
    return run(cmd + [binary or XFERBENCH, *args], env=e, timeout=timeout)


def mem_total_bytes():
    with open("/proc/meminfo") as f:
        return next(int(line.split()[1]) * 1024 for line in f if line.startswith("MemTotal:"))


def load(path):
    with open(path) as f:
        return json.load(f)


def pocl_devices(n):
    """Environment for PoCL with n CPU devices, or None when PoCL cannot give them."""
    env = {"POCL_DEVICES": " ".join(["pthread"] * n)}
    p = xb("list", "--host-devices", "1", env=env)
    if p.returncode != 0 or "opencl:pocl" not in p.stdout:
        return None
    block = p.stdout.split("opencl:pocl", 1)[1].split("\n\n", 1)[0]
    return env if block.count("(cpu") >= n else None


class Together(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.out = os.path.join(self.dir.name, "r.json")

    def tearDown(self):
        self.dir.cleanup()

    def check_groups(self, doc, devices, directions):
        pts = doc["results"]
        aggs = [p for p in pts if p.get("concurrent", {}).get("role") == "aggregate"]
        each = [p for p in pts if p.get("concurrent", {}).get("role") == "device"]
        self.assertEqual(sorted({p["direction"] for p in aggs}), sorted(directions))
        for a in aggs:
            self.assertEqual(a["status"], "ok", a["reason"])
            self.assertEqual(a["device_index"], -1)
            self.assertEqual(a["concurrent"]["devices"], devices)
            self.assertTrue(a["verified"])
            # The aggregate is all devices' bytes over the shared windows.
            mates = [p for p in each if p["direction"] == a["direction"] and p["bytes"] == a["bytes"]]
            self.assertEqual(sorted(p["device_index"] for p in mates), devices)
            self.assertEqual(a["bytes_per_rep"], sum(p["bytes_per_rep"] * p["reps_per_sample"] for p in mates))
            for p in mates:
                self.assertEqual(p["status"], "ok", p["reason"])
                self.assertEqual(len(p["samples_s"]), len(a["samples_s"]))

    def test_host_stand_ins_alone_then_together(self):
        p = xb("sweep", "-b", "host", "--host-devices", "3", "-r", "memcpy", "-m", "pageable", "-d", "h2d,d2h,bidir",
               "--sizes", "256K", "--quick", "--together", "--json", self.out, "-q")
        self.assertEqual(p.returncode, 0, p.stderr)
        doc = load(self.out)
        alone = [r for r in doc["results"] if "concurrent" not in r]
        self.assertEqual(len(alone), 9)  # 3 devices x 3 directions, one at a time first
        self.check_groups(doc, [0, 1, 2], ["bidir", "d2h", "h2d"])
        self.assertEqual(doc["config"]["together"], "after alone")

    def test_pocl_devices_at_once(self):
        env = pocl_devices(2)
        if env is None:
            self.skipTest("PoCL does not expose two devices here (POCL_DEVICES='pthread pthread')")
        p = xb("sweep", "-b", "opencl:pocl", "-r", "copy-sync", "-m", "pageable", "-d", "h2d,d2h", "--sizes", "256K",
               "--quick", "--together-only", "--json", self.out, "-q", env=env)
        self.assertEqual(p.returncode, 0, p.stderr)
        doc = load(self.out)
        self.assertFalse([r for r in doc["results"] if "concurrent" not in r])
        self.check_groups(doc, [0, 1], ["d2h", "h2d"])


class Peer(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.out = os.path.join(self.dir.name, "r.json")

    def tearDown(self):
        self.dir.cleanup()

    def check_matrix(self, doc, n, path_word):
        pts = doc["results"]
        self.assertEqual(len(pts), n * n)
        self.assertEqual(sorted((p["device_index"], p["peer_device_index"]) for p in pts),
                         [(s, d) for s in range(n) for d in range(n)])
        for p in pts:
            self.assertEqual(p["status"], "ok", p["reason"])
            self.assertEqual(p["route"], "peer")
            self.assertTrue(p["verified"])
            if p["device_index"] != p["peer_device_index"]:
                self.assertIn(path_word, p["peer_path"])

    def test_host_stand_ins(self):
        p = xb("peer", "-b", "host", "--host-devices", "3", "--sizes", "64K", "--quick", "--json", self.out, "-q")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.check_matrix(load(self.out), 3, "peer")
        self.assertIn("host peer matrix, 64K", p.stdout)

    def test_pocl_staged_via_host(self):
        env = pocl_devices(2)
        if env is None:
            self.skipTest("PoCL does not expose two devices here (POCL_DEVICES='pthread pthread')")
        p = xb("peer", "-b", "opencl:pocl", "--sizes", "64K", "--quick", "--json", self.out, "-q", env=env)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.check_matrix(load(self.out), 2, "staged via host")

    def test_unknown_device_is_bad_input(self):
        p = xb("peer", "-b", "host", "--device", "7", "--sizes", "4K")
        self.assertEqual(p.returncode, 2, p.stderr)
        self.assertEqual(len(p.stderr.strip().splitlines()), 1, p.stderr)


class FleetSingle(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.out = os.path.join(self.dir.name, "fleet.json")

    def tearDown(self):
        self.dir.cleanup()

    def test_one_rank_without_a_launcher(self):
        p = xb("fleet", "-b", "host", *SMALL, *LENIENT, "--json", self.out)
        self.assertEqual(p.returncode, 0, p.stderr + p.stdout)
        self.assertIn("fleet healthy", p.stdout)
        doc = load(self.out)
        self.assertEqual(doc["schema"], "xferbench/result/v2")
        self.assertTrue(doc["fleet"]["healthy"])
        self.assertEqual(len(doc["fleet"]["ranks"]), 1)
        phases = sorted({r["fleet"]["phase"] for r in doc["results"]})
        self.assertEqual(phases, ["alone", "together"])
        # --repeat 3 by default: the health set three times a phase
        self.assertEqual(len(doc["results"]), 30)
        self.assertEqual(doc["config"]["repeat"], 3)
        self.assertEqual(sorted({r["fleet"]["repeat"] for r in doc["results"]}), [0, 1, 2])
        for r in doc["results"]:
            self.assertEqual(r["status"], "ok", r["reason"])
            self.assertEqual(r["fleet"]["rank"], 0)
            self.assertTrue(r["fleet"]["node"])

    def test_repeat_measures_the_set_n_times_interleaved(self):
        p = xb("fleet", "-b", "host", *SMALL, *LENIENT, "--repeat", "2", "--json", self.out)
        self.assertEqual(p.returncode, 0, p.stderr + p.stdout)
        doc = load(self.out)
        self.assertEqual(doc["config"]["repeat"], 2)
        self.assertIn("repeat=2", doc["fleet"]["ranks"][0]["options"])  # one of the options ranks must share
        # Per phase the whole set, then the whole set again: a transient lands on different tests.
        order = [(r["fleet"]["phase"], r["fleet"]["repeat"], test_of(r)) for r in doc["results"]]
        self.assertEqual(order, [(ph, k, t) for ph in ("alone", "together") for k in (0, 1) for t in HEALTH_SET])
        for r in doc["results"]:
            self.assertEqual(r["status"], "ok", r["reason"])

    def test_bad_input(self):
        for args, word in ((["--size", "1K"], "--size"), (["--rank-timeout", "0"], "--rank-timeout"),
                           (["-b", "nosuch"], "nosuch"), (["--repeat", "0"], "--repeat"),
                           (["--repeat", "-1"], "--repeat"), (["--repeat", "x"], "--repeat"),
                           (["--repeat", "21"], "--repeat")):
            p = xb("fleet", *args)
            self.assertEqual(p.returncode, 2, p.stderr)
            self.assertEqual(len(p.stderr.strip().splitlines()), 1, p.stderr)
            self.assertIn(word, p.stderr)

    def test_a_size_nothing_fits_is_not_healthy(self):
        # Every bandwidth point skipped ("fleet --size 40G" reported healthy, exit 0): no evidence.
        # The whole of the machine's memory: not refused (it is not beyond the memory, as 4T is,
        # test_guards.py), but a host point's two buffers cannot fit in it.
        p = xb("fleet", "-b", "host", "--size", str(mem_total_bytes()), "--max-time", "0.01", "--repeat", "1",
               "--json", self.out)
        self.assertEqual(p.returncode, 3, p.stderr + p.stdout)
        self.assertIn("measured no bandwidth: every bandwidth point skipped", p.stdout.splitlines()[0])
        self.assertFalse(load(self.out)["fleet"]["healthy"])

    def test_a_rank_outside_its_job_is_refused(self):
        # It ran as rank 0 and wrote rank 0's file.
        ranks = os.path.join(self.dir.name, "ranks")
        p = xb("fleet", "-b", "host", *SMALL, "--out-dir", ranks, env={"SLURM_PROCID": "5", "SLURM_NTASKS": "2"})
        self.assertEqual(p.returncode, 2, p.stderr)
        self.assertEqual(p.stderr.strip().splitlines(), ["xferbench: error: SLURM_PROCID=5 is outside the job "
                                                         "(SLURM_NTASKS=2): this rank would run as another's"])
        self.assertFalse(glob.glob(os.path.join(ranks, "rank-*.json")))

    def test_sigterm_makes_an_interrupted_run_not_an_unhealthy_one(self):
        env = dict(os.environ)
        for k in ("OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_SIZE"):
            env.pop(k, None)
        # A run of about 15 s here, stopped at 1.5 s: with SMALL's 64K it ended in about 2 s, close
        # enough to the signal that a faster machine could finish first (exit 0, nothing interrupted).
        proc = subprocess.Popen([XFERBENCH, "fleet", "-b", "host", "--size", "16M", "--max-time", "0.05", *LENIENT,
                                 "--repeat", "20", "--json", self.out], env=env, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)
        time.sleep(1.5)
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=60)
        self.assertEqual(proc.returncode, 143, err)
        doc = load(self.out)
        self.assertTrue(doc["interrupted"])
        self.assertTrue(doc["fleet"]["interrupted"])
        self.assertEqual(doc["fleet"]["exit_code"], 143)
        self.assertEqual(doc["fleet"]["ranks"][0]["verdict"], "interrupted")
        self.assertTrue(out.startswith("fleet run interrupted (exit 143)"), out)

    def test_the_fault_seam_is_the_tests_not_the_tools(self):
        # The variable that ends a rank in the test build is nothing to the tool users run.
        env = {"XFER_FLEET_FAULT": "die:0"}
        args = ["fleet", "-b", "host", *SMALL, *LENIENT, "--repeat", "1", "--json", self.out]
        p = xb(*args, env=env)
        self.assertEqual(p.returncode, 0, p.stderr + p.stdout)
        self.assertTrue(load(self.out)["fleet"]["healthy"])
        if FAULTY:
            p = run([FAULTY, *args], env=env)
            self.assertEqual(p.returncode, 9, p.stderr + p.stdout)

    def test_several_ranks_without_mpi_or_out_dir(self):
        # A launcher's variables (torchrun style) without an MPI launcher: no way to meet.
        p = xb("fleet", "-b", "host", *SMALL, env={"RANK": "0", "WORLD_SIZE": "2", "LOCAL_RANK": "0"})
        self.assertEqual(p.returncode, 7, p.stderr)
        self.assertIn("--out-dir", p.stderr)
        self.assertEqual(len(p.stderr.strip().splitlines()), 1, p.stderr)


@unittest.skipUnless(MPIRUN, "no mpirun (Debian: openmpi-bin)")
class FleetMpi(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        # A build without the MPI transport (the sanitizer builds leave Open MPI
        # out: its own allocations read as leaks) runs fleet mode without it.
        if "MPI transport: built in" not in xb("fleet", "--help").stdout:
            raise unittest.SkipTest("this xferbench has no MPI transport (XFER_ENABLE_MPI)")

    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.out = os.path.join(self.dir.name, "fleet.json")

    def tearDown(self):
        self.dir.cleanup()

    def test_four_ranks_one_file(self):
        p = mpirun(4, "fleet", "-b", "host", "--host-devices", "4", *SMALL, *LENIENT, "--json", self.out)
        self.assertEqual(p.returncode, 0, p.stderr + p.stdout)
        doc = load(self.out)
        ranks = doc["fleet"]["ranks"]
        self.assertEqual([r["rank"] for r in ranks], [0, 1, 2, 3])
        self.assertEqual(sorted(r["device"] for r in ranks), [0, 1, 2, 3])
        self.assertEqual({r["transport"] for r in ranks}, {"mpi"})
        self.assertEqual(len(doc["results"]), 4 * 2 * 5 * 3)  # ranks x phases x tests x --repeat
        for r in doc["results"]:
            self.assertEqual(r["status"], "ok", r["reason"])
            self.assertIn(r["fleet"]["phase"], ("alone", "together"))
            # node, rank and device on every point
            self.assertTrue(r["fleet"]["node"])
            self.assertEqual(r["device_index"], ranks[r["fleet"]["rank"]]["device"])
        self.assertEqual(doc["fleet"]["missing_ranks"], [])

    def test_more_ranks_than_devices(self):
        p = mpirun(3, "fleet", "-b", "host", "--host-devices", "2", *SMALL, *LENIENT, "--json", self.out)
        self.assertEqual(p.returncode, 6, p.stderr + p.stdout)
        self.assertIn("start at most 2 ranks per node", p.stderr)
        doc = load(self.out)
        ok = [r for r in doc["fleet"]["ranks"] if r["status"] == "ok"]
        self.assertEqual(len(ok), 2)  # the healthy ranks' results are kept
        self.assertTrue(all(r["status"] == "ok" for r in doc["results"]))

    def test_ranks_with_different_options(self):
        e = {"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1"}
        base = [XFERBENCH, "fleet", "-b", "host", "--host-devices", "2", "--max-time", "0.01", *LENIENT, "--json", self.out]
        p = run([MPIRUN, "--oversubscribe", "-np", "1", *base, "--size", "64K", ":", "-np", "1", *base, "--size", "128K"],
                env=e)
        self.assertEqual(p.returncode, 5, p.stderr + p.stdout)
        self.assertIn("other options", p.stderr)

    def fault(self, kind, mca):
        # The tool with the fault seam set (tests/cli/fleet_fault_seam.cpp); xferbench reads no such variable.
        if not FAULTY:
            self.skipTest("no xferbench-fleet-faults given (test_fleet.py's third argument)")
        p = mpirun(4, "fleet", "-b", "host", "--host-devices", "4", *SMALL, *LENIENT, "--rank-timeout", "5",
                   "--json", self.out, mca=mca, env={"XFER_FLEET_FAULT": kind}, timeout=120, binary=FAULTY)
        doc = load(self.out)
        missing = int(kind.split(":")[1])
        self.assertEqual(doc["fleet"]["missing_ranks"], [missing])
        self.assertEqual(doc["fleet"]["exit_code"], 4)
        self.assertEqual(sorted(r["rank"] for r in doc["fleet"]["ranks"]), sorted({0, 1, 2, 3} - {missing}))
        # What the others measured before the fault is kept.
        self.assertTrue([r for r in doc["results"] if r["fleet"]["phase"] == "alone" and r["status"] == "ok"])
        return p

    def test_a_rank_that_hangs(self):
        p = self.fault("hang:1", mca=())
        self.assertEqual(p.returncode, 4, p.stderr + p.stdout)
        self.assertIn("1 of 4 rank missing (1)", p.stderr)

    def test_a_rank_that_dies(self):
        # Open MPI ends the whole job when a rank dies, unless recovery is on; with it on, its
        # mpirun exits 0 whatever the ranks return, so the verdict is read back from the file.
        self.fault("die:2", mca=[("orte_enable_recovery", "1")])
        env = dict(os.environ, PYTHONPATH=PYTHON_DIR)
        p = run([sys.executable, "-m", "xferbench_report", "fleet", self.out], env=env)
        self.assertEqual(p.returncode, 4, p.stderr + p.stdout)
        self.assertIn("missing (2)", p.stdout)


class FleetFiles(unittest.TestCase):
    """Ranks started by a launcher without MPI: one file each, merged by the report tool."""

    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.ranks = os.path.join(self.dir.name, "ranks")

    def tearDown(self):
        self.dir.cleanup()

    def launch(self, n, devices, *extra):
        procs = []
        for r in range(n):
            env = dict(os.environ, SLURM_PROCID=str(r), SLURM_NTASKS=str(n), SLURM_LOCALID=str(r),
                       SLURM_NTASKS_PER_NODE=str(n))
            for k in ("OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_SIZE"):
                env.pop(k, None)
            procs.append(subprocess.Popen([XFERBENCH, "fleet", "-b", "host", "--host-devices", str(devices), *SMALL,
                                           "--out-dir", self.ranks, *extra], env=env, stdout=subprocess.PIPE,
                                          stderr=subprocess.PIPE, text=True))
        return [(p.wait(timeout=180), p.communicate()) for p in procs]

    def report(self, *args):
        # The report tool merges through this binary's judge (`xferbench fleet --merge`).
        env = dict(os.environ, PYTHONPATH=PYTHON_DIR, XFERBENCH_BIN=XFERBENCH)
        return run([sys.executable, "-m", "xferbench_report", "fleet", self.ranks, *args], env=env)

    def test_three_ranks_merged(self):
        for code, (out, err) in self.launch(3, 3):
            self.assertIn(code, (0, 3), err)
        self.assertEqual(len(glob.glob(os.path.join(self.ranks, "rank-*.json"))), 3)
        p = self.report(*LENIENT)
        self.assertEqual(p.returncode, 0, p.stderr + p.stdout)
        doc = load(os.path.join(self.ranks, "fleet.json"))
        self.assertEqual([r["rank"] for r in doc["fleet"]["ranks"]], [0, 1, 2])
        self.assertEqual({r["transport"] for r in doc["fleet"]["ranks"]}, {"files"})
        # Without a way to meet there is no alone phase: every rank at once only.
        self.assertEqual({r["fleet"]["phase"] for r in doc["results"]}, {"together"})
        self.assertEqual(len(doc["results"]), 3 * 5 * 3)  # ranks x tests x --repeat
        self.assertIn("node", p.stdout.splitlines()[1])

    def test_two_repeats_two_points_per_test_and_rank(self):
        for code, (out, err) in self.launch(2, 2, "--repeat", "2"):
            self.assertIn(code, (0, 3), err)
        for path in sorted(glob.glob(os.path.join(self.ranks, "rank-*.json"))):
            doc = load(path)
            self.assertEqual(doc["config"]["repeat"], 2)
            got = sorted((r["fleet"]["phase"], test_of(r), r["fleet"]["repeat"]) for r in doc["results"])
            self.assertEqual(got, sorted(("together", t, k) for t in HEALTH_SET for k in (0, 1)), path)
        p = self.report(*LENIENT)
        self.assertEqual(p.returncode, 0, p.stderr + p.stdout)
        self.assertEqual(len(load(os.path.join(self.ranks, "fleet.json"))["results"]), 2 * 5 * 2)

    def test_three_ranks_on_two_devices_the_third_says_why(self):
        # It exited 6 with no output at all.
        results = self.launch(3, 2)
        code, (out, err) = results[2]
        self.assertEqual(code, 6, err)
        self.assertEqual(len(err.strip().splitlines()), 1, err)
        self.assertIn("rank 2: local rank 2", err)
        self.assertIn("start at most 2 ranks per node", err)

    def test_a_missing_rank_file(self):
        self.launch(3, 3)
        os.unlink(os.path.join(self.ranks, "rank-00001.json"))
        p = self.report(*LENIENT)
        self.assertEqual(p.returncode, 4, p.stderr + p.stdout)
        self.assertIn("missing (1)", p.stdout)

    def test_no_rank_files_is_bad_input(self):
        os.makedirs(self.ranks)
        p = self.report()
        self.assertEqual(p.returncode, 2, p.stderr)


if __name__ == "__main__":
    XFERBENCH = os.path.abspath(sys.argv.pop(1))
    PYTHON_DIR = os.path.abspath(sys.argv.pop(1)) if len(sys.argv) > 1 else os.path.join(
        os.path.dirname(__file__), "..", "..", "python")
    FAULTY = os.path.abspath(sys.argv.pop(1)) if len(sys.argv) > 1 else None
    unittest.main(verbosity=2)
