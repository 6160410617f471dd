#!/usr/bin/env python3
"""The C++ tool's outputs on the target kinds test_cli.py's Outputs class does not cover, so that
both languages are tested on the same table (python/tests/test_output.py holds the report tool's):
a new file, an existing file's mode and owner, a hard-linked file, a dangling link, a directory
that refuses files even to root. Devices, FIFOs, links to files and standard output are in
test_cli.py.

Usage: test_outputs.py PATH/TO/xferbench, or under pytest with XFERBENCH_BIN set to it.
"""
import json
import os
import stat
import subprocess
import sys
import tempfile
import unittest

XFERBENCH = os.environ.get("XFERBENCH_BIN")
if XFERBENCH:
    XFERBENCH = os.path.abspath(XFERBENCH)

ROOT = os.geteuid() == 0

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

    @unittest.skipIf(ROOT, "root writes into a directory whatever its mode; the /proc case covers root")
    def test_a_read_only_directory_is_one_line_before_the_run(self):
        ro = self.path("ro")
        os.mkdir(ro, 0o555)
        p = self.sweep_to(os.path.join(ro, "r.json"))
        self.assertEqual(p.returncode, 2, p.stderr)
        self.assertIn("Permission denied", p.stderr)
        self.assertEqual(os.listdir(ro), [])


if __name__ == "__main__":
    XFERBENCH = os.path.abspath(sys.argv.pop(1))
    unittest.main(verbosity=2)
