#!/usr/bin/env python3
"""Where the C++ tool's outputs go. Outputs: devices, FIFOs, links to files and standard output,
written in place and never replaced. OutputTargets: the table python/tests/test_output.py holds
for the report tool, so that both languages are tested on it: a new file, an existing file's mode
and owner, a hard-linked file, a dangling link, a directory that refuses files even to root.

Usage: test_outputs.py PATH/TO/xferbench, or under pytest with XFERBENCH_BIN set to it.
"""
import json
import os
import shutil
import stat
import subprocess
import sys
import tempfile
import threading
import unittest

XFERBENCH = os.environ.get("XFERBENCH_BIN")
if XFERBENCH:
    XFERBENCH = os.path.abspath(XFERBENCH)

ROOT = os.geteuid() == 0


def load(path):
    with open(path) as f:
        return json.load(f) if path.endswith(".json") else f.read()


# One quick point on the host backend: enough to produce a whole result file.
ONE_POINT = ("sweep", "-b", "host", "-r", "memcpy", "-m", "aligned", "-d", "h2d", "--sizes", "4K", "--max-time",
             "0.01", "-q")


class OutputTargets(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.d = self.dir.name

    def tearDown(self):
        self.dir.cleanup()

    def path(self, name):
        return os.path.join(self.d, name)

    def sweep_to(self, target):
        p = subprocess.run([XFERBENCH, *ONE_POINT, "--json", target], cwd=self.d, capture_output=True, text=True,
                           timeout=120)
        return p

    def assert_result(self, path):
        with open(path) as f:
            self.assertEqual(len(json.load(f)["results"]), 1)

    def old_file(self, name="r.json", mode=0o640):
        path = self.path(name)
        with open(path, "w") as f:
            f.write("old")
        os.chmod(path, mode)
        return path

    def test_a_new_file_is_created_with_nothing_left_beside_it(self):
        p = self.sweep_to("r.json")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assert_result(self.path("r.json"))
        self.assertEqual(os.listdir(self.d), ["r.json"])

    def test_an_existing_file_keeps_its_mode(self):
        path = self.old_file(mode=0o640)
        p = self.sweep_to(path)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assert_result(path)
        self.assertEqual(stat.S_IMODE(os.stat(path).st_mode), 0o640)
        self.assertEqual(os.listdir(self.d), ["r.json"])

    # Root's rename would hand a user's result file to root: the new file is given the old one's owner.
    def test_an_existing_file_keeps_its_owner(self):
        if not ROOT:
            self.skipTest("only root can give a file to another user")
        path = self.old_file()
        os.chown(path, 4321, 4322)
        p = self.sweep_to(path)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assert_result(path)
        self.assertEqual((os.stat(path).st_uid, os.stat(path).st_gid), (4321, 4322))

    # A rename would cut a hard-linked file from its other names: it is written in place.
    def test_a_hard_linked_file_keeps_its_links(self):
        path = self.old_file()
        other = self.path("same.json")
        os.link(path, other)
        p = self.sweep_to(path)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assert_result(other)
        self.assertEqual(os.stat(path).st_ino, os.stat(other).st_ino)

    def test_a_dangling_link_creates_its_target_and_stays_a_link(self):
        os.mkdir(self.path("sub"))
        os.symlink("sub/made.json", self.path("link.json"))
        p = self.sweep_to("link.json")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertTrue(os.path.islink(self.path("link.json")))
        self.assert_result(self.path("sub/made.json"))

    def test_a_directory_that_refuses_files_is_one_line_before_the_run(self):
        # /proc and /sys refuse new files to root too; a chmod'ed directory would not.
        for where in ("/proc/xferbench-output-test.json", "/sys/xferbench-output-test.json"):
            with self.subTest(where=where):
                p = self.sweep_to(where)
                self.assertEqual(p.returncode, 2, p.stderr)
                lines = p.stderr.strip().splitlines()
                self.assertEqual(len(lines), 1, p.stderr)
                self.assertIn(f"cannot write output file {where}", lines[0])
                self.assertFalse(os.path.exists(where))

    def test_a_read_only_directory_is_one_line_before_the_run(self):
        # Root writes into a directory whatever its mode: as root, the directory that refuses us is /sys's.
        ro = "/sys" if ROOT else self.path("ro")
        if not ROOT:
            os.mkdir(ro, 0o555)
        target = os.path.join(ro, "xferbench-output-test.json")
        p = self.sweep_to(target)
        self.assertEqual(p.returncode, 2, p.stderr)
        self.assertTrue("Permission denied" in p.stderr or "Operation not permitted" in p.stderr, p.stderr)
        self.assertFalse(os.path.exists(target))


class Outputs(unittest.TestCase):
    """A regular file is replaced whole; a device, FIFO or stdout is written in
    place and never replaced; a link stays a link; one file never gets two outputs."""

    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.d = self.dir.name

    def tearDown(self):
        self.dir.cleanup()

    def mknod(self, name, major, minor):
        path = os.path.join(self.d, name)
        try:
            os.mknod(path, 0o666 | stat.S_IFCHR, os.makedev(major, minor))
        except PermissionError as e:
            self.skipTest(f"mknod is not permitted here: {e}")
        return path

    def run_here(self, *args, stdout=subprocess.PIPE):
        """Runs in the test's directory, so whatever a wrong binary writes
        ("-" taken as a file name) lands there."""
        return subprocess.run([XFERBENCH, *args], cwd=self.d, stdout=stdout, stderr=subprocess.PIPE, text=True,
                              timeout=120)

    def stdout_link(self):
        """What /dev/stdout is, made here: a binary that replaces its output
        then replaces this link, not the system's /dev/stdout."""
        path = os.path.join(self.d, "stdout")
        os.symlink("/proc/self/fd/1", path)
        return path

    def test_character_device_is_written_not_replaced(self):
        dev = self.mknod("null", 1, 3)  # /dev/null's numbers
        p = self.run_here(*ONE_POINT, "--json", dev)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertTrue(stat.S_ISCHR(os.lstat(dev).st_mode), "the device was replaced")
        self.assertEqual(os.listdir(self.d), ["null"])

    def test_full_device_is_a_failure_and_stays_a_device(self):
        dev = self.mknod("full", 1, 7)  # /dev/full's numbers: every write fails with ENOSPC
        p = self.run_here(*ONE_POINT, "--json", dev)
        self.assertEqual(p.returncode, 1, p.stderr)
        errors = [l for l in p.stderr.splitlines() if l.startswith("xferbench:")]
        self.assertEqual(len(errors), 1, p.stderr)
        self.assertIn(dev, errors[0])
        self.assertIn("No space left on device", errors[0])
        self.assertTrue(stat.S_ISCHR(os.lstat(dev).st_mode), "the device was replaced")

    def test_fifo_is_streamed_to_its_reader(self):
        fifo = os.path.join(self.d, "fifo")
        os.mkfifo(fifo)
        got = {}

        def read():
            with open(fifo) as f:
                got["text"] = f.read()

        reader = threading.Thread(target=read, daemon=True)
        reader.start()
        p = self.run_here(*ONE_POINT, "--json", fifo)
        reader.join(timeout=30)
        self.assertEqual(p.returncode, 0, p.stderr)
        doc = json.loads(got["text"])
        self.assertEqual(doc["schema"], "xferbench/result/v2")
        self.assertEqual(len(doc["results"]), 1)
        self.assertTrue(stat.S_ISFIFO(os.lstat(fifo).st_mode), "the FIFO was replaced")
        self.assertEqual(os.listdir(self.d), ["fifo"])

    def test_symlink_stays_a_link_and_its_target_gets_the_result(self):
        target, link = os.path.join(self.d, "target.json"), os.path.join(self.d, "link.json")
        with open(target, "w") as f:
            f.write("old")
        os.symlink("target.json", link)
        p = self.run_here(*ONE_POINT, "--json", link)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertTrue(os.path.islink(link), "the link was replaced by a file")
        self.assertEqual(os.readlink(link), "target.json")
        self.assertEqual(len(load(target)["results"]), 1)
        self.assertEqual(sorted(os.listdir(self.d)), ["link.json", "target.json"])

    def test_same_file_under_two_spellings_is_a_usage_error(self):
        for json_path, csv_path, make in (("r.json", "./r.json", None),  # not there yet: by resolved path
                                          ("r.json", "sub/../r.json", "r.json"),  # there: by identity
                                          ("link.json", "r.json", "link.json"),  # a link and its target
                                          ("-", "stdout", "stdout")):  # stdout, however named
            with self.subTest(json=json_path, csv=csv_path):
                for f in os.listdir(self.d):
                    if f != "sub":
                        os.remove(os.path.join(self.d, f))
                os.makedirs(os.path.join(self.d, "sub"), exist_ok=True)
                if make == "stdout":
                    self.stdout_link()
                elif make:
                    with open(os.path.join(self.d, "r.json"), "w") as f:
                        f.write("keep")
                    if make == "link.json":
                        os.symlink("r.json", os.path.join(self.d, "link.json"))
                before = sorted(os.listdir(self.d))
                p = self.run_here(*ONE_POINT, "--json", json_path, "--csv", csv_path)
                self.assertEqual(p.returncode, 2, p.stderr)
                lines = p.stderr.strip().splitlines()
                self.assertEqual(len(lines), 1, p.stderr)
                self.assertIn("same file", lines[0])
                self.assertEqual(p.stdout, "")
                self.assertEqual(sorted(os.listdir(self.d)), before)
                if make and make != "stdout":
                    with open(os.path.join(self.d, "r.json")) as f:
                        self.assertEqual(f.read(), "keep")

    def test_json_dash_puts_the_result_alone_on_stdout(self):
        for name in ("-", self.stdout_link()):
            with self.subTest(json=name):
                p = self.run_here(*ONE_POINT, "--json", name)  # stdout is a pipe here
                self.assertEqual(p.returncode, 0, p.stderr)
                doc = json.loads(p.stdout)  # the whole of stdout, nothing else
                self.assertEqual(len(doc["results"]), 1)
                self.assertIn("points: 1 ok", p.stderr)  # the table moved to stderr

    def test_stdout_redirected_to_the_json_file(self):
        out = os.path.join(self.d, "r.json")
        with open(out, "w") as f:
            p = self.run_here(*ONE_POINT, "--json", out, stdout=f)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(len(load(out)["results"]), 1)  # the file holds the result alone

    def test_failed_write_to_stdout_is_exit_1(self):
        with open("/dev/full", "w") as full:
            for args in (("list",), ("info",), ONE_POINT, (*ONE_POINT, "--json", "-")):
                with self.subTest(args=args):
                    p = self.run_here(*args, stdout=full)
                    self.assert_one_stdout_error(p)

    def test_a_write_that_fails_mid_command_is_reported_once(self):
        # Unbuffered stdout fails at the first write, as a long listing (a
        # GPU machine's) does once the buffer fills: one line still, not two.
        if not shutil.which("stdbuf"):
            self.skipTest("no stdbuf here")
        with open("/dev/full", "w") as full:
            for args in (("list",), ("info",)):
                with self.subTest(args=args):
                    p = subprocess.run(["stdbuf", "-o0", XFERBENCH, *args], stdout=full, stderr=subprocess.PIPE,
                                       text=True, timeout=120, cwd=self.dir.name)
                    self.assert_one_stdout_error(p)

    def assert_one_stdout_error(self, p):
        self.assertEqual(p.returncode, 1, p.stderr)
        errors = [l for l in p.stderr.splitlines() if l.startswith("xferbench:")]
        self.assertEqual(len(errors), 1, p.stderr)
        # Where stdio failed earlier, its errno is gone by the final check.
        self.assertRegex(errors[0], r"^xferbench: cannot write standard output: "
                                    r"(No space left on device|an earlier write failed)$")

    def test_every_command_writes_through_the_same_rules(self):
        dev = self.mknod("null", 1, 3)
        for args in (("alloc", "--quick", "-s", "pageable", "--sizes", "4K", "--iterations", "100"),
                     ("app", "vadd", "-b", "host", "--size", "1K", "--repeat", "1"),
                     ("cpu", "--kinds", "pageable", "--ops", "write", "--methods", "memcpy", "--sizes", "4K",
                      "--runs", "1", "-q")):
            with self.subTest(command=args[0]):
                p = self.run_here(*args, "--json", dev)
                self.assertEqual(p.returncode, 0, p.stderr)
                self.assertTrue(stat.S_ISCHR(os.lstat(dev).st_mode), "the device was replaced")
                p = self.run_here(*args, "--json", "-")
                self.assertEqual(p.returncode, 0, p.stderr)
                json.loads(p.stdout)
        self.assertEqual(os.listdir(self.d), ["null"])

if __name__ == "__main__":
    XFERBENCH = os.path.abspath(sys.argv.pop(1))
    unittest.main(verbosity=2)
