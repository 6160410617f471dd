#!/usr/bin/env python3
"""A result file says how it was measured, and a run can be replayed from it (issue 51): the
staged copier's tuning in config.settings with its source, two runs whose caches differ differ
there and `compare` names that first, `sweep --settings FILE` measures with the file's settings
(no cache read, no calibration), and an unusable cache is ignored with one line saying why.

Usage: test_settings.py PATH/TO/xferbench PATH/TO/python (the report package's directory).
"""
import json
import os
import subprocess
import sys
import tempfile
import unittest

XFERBENCH = None
PYTHON_DIR = None
# One staged point on the host step: its copier's tuning is calibrated or read from the cache.
STAGED = ["sweep", "-b", "host", "-r", "staged", "-m", "pageable", "-d", "h2d", "--sizes", "1M", "--max-time",
          "0.05", "-q"]
HEADER = "xfer staged-tuning cache, schema 3"


def staged_settings(path):
    """{name: setting} of the run's staged tuning (one device), and the points' settings references."""
    with open(path) as f:
        doc = json.load(f)
    staged = {s["name"]: s for s in doc["config"]["settings"] if s["component"] == "staged" and s["scope"]}
    return staged, [p.get("settings") for p in doc["results"]]


class Settings(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.d = self.dir.name

    def tearDown(self):
        self.dir.cleanup()

    def sweep(self, name, *more, cache=None):
        env = {k: v for k, v in os.environ.items() if not k.startswith("XFER_")}
        env["XFER_STAGED_TUNING_CACHE"] = cache or os.path.join(self.d, "cache")
        out = os.path.join(self.d, name)
        p = subprocess.run([XFERBENCH, *STAGED, *more, "--json", out], capture_output=True, text=True, env=env,
                           timeout=120)
        self.assertEqual(p.returncode, 0, p.stderr)
        return out, p

    def compare(self, a, b):
        env = dict(os.environ, PYTHONPATH=PYTHON_DIR)
        return subprocess.run([sys.executable, "-m", "xferbench_report", "compare", a, b], capture_output=True,
                              text=True, env=env, timeout=120)

    def test_the_tuning_is_recorded_with_its_source_and_the_point_names_it(self):
        first, _ = self.sweep("first.json")
        staged, refs = staged_settings(first)
        self.assertEqual(staged["chunk_bytes"]["source"], "calibration")
        self.assertEqual(staged["stream_stores"]["source"], "default")
        scope = staged["chunk_bytes"]["scope"]
        self.assertTrue(scope.endswith("/host/host"), scope)
        self.assertEqual(refs, [{"component": "staged", "scope": scope}])
        second, _ = self.sweep("second.json")
        staged2, _ = staged_settings(second)
        self.assertEqual(staged2["chunk_bytes"]["source"], "cache")
        self.assertEqual(staged2["chunk_bytes"]["origin"], os.path.join(self.d, "cache"))
        self.assertEqual({k: s["value"] for k, s in staged2.items()}, {k: s["value"] for k, s in staged.items()})

    def test_runs_whose_caches_differ_say_so_and_compare_names_it_first(self):
        a, _ = self.sweep("a.json")
        with open(os.path.join(self.d, "cache")) as f:
            header, entry = f.read().splitlines()
        key, machine, fields = entry.split("\t")
        chunk = int(fields.split()[0])
        other = os.path.join(self.d, "other-cache")
        with open(other, "w") as f:
            f.write(f"{header}\n{key}\t{machine}\t{chunk * 2} {' '.join(fields.split()[1:])}\n")
        b, _ = self.sweep("b.json", cache=other)
        self.assertEqual(staged_settings(b)[0]["chunk_bytes"]["value"], str(chunk * 2))
        p = self.compare(a, b)
        lines = p.stdout.splitlines()
        named = [i for i, line in enumerate(lines) if "staged chunk_bytes" in line]
        self.assertEqual(len(named), 1, p.stdout)
        self.assertIn(f"{chunk} (calibration) -> {chunk * 2} (cache)", lines[named[0]])
        table = [i for i, line in enumerate(lines) if line.startswith("backend ")]
        self.assertTrue(table and named[0] < table[0], p.stdout)

    def test_a_replay_measures_with_the_files_settings_and_reads_no_cache(self):
        a, _ = self.sweep("a.json")
        # A cache that would give another chunk: the replay must not read it.
        with open(os.path.join(self.d, "cache")) as f:
            header, entry = f.read().splitlines()
        key, machine, fields = entry.split("\t")
        with open(os.path.join(self.d, "cache"), "w") as f:
            f.write(f"{header}\n{key}\t{machine}\t{int(fields.split()[0]) * 2} {' '.join(fields.split()[1:])}\n")
        replay, p = self.sweep("replay.json", "--settings", a)
        self.assertIn(f"settings: replayed from {a}", p.stdout)
        want, _ = staged_settings(a)
        got, _ = staged_settings(replay)
        self.assertEqual({k: s["value"] for k, s in got.items()}, {k: s["value"] for k, s in want.items()})
        self.assertEqual({s["source"] for s in got.values()}, {"replay"})
        c = self.compare(a, replay)
        self.assertIn("settings: the same", c.stdout)

    def test_an_unusable_cache_is_ignored_with_one_line(self):
        cache = os.path.join(self.d, "old-cache")
        with open(cache, "w") as f:
            f.write("some-host/host/host\t1048576 4 4 1 1\n")  # an older version's: no schema line
        out, p = self.sweep("r.json", cache=cache)
        notes = [line for line in p.stderr.splitlines() if line.startswith("xferbench: note: ")]
        self.assertEqual(len(notes), 1, p.stderr)
        self.assertIn("not this version's", notes[0])
        with open(out) as f:
            self.assertEqual(json.load(f)["config"]["settings_notices"], [notes[0][len("xferbench: note: "):]])
        with open(cache) as f:
            self.assertEqual(f.read().splitlines()[0], HEADER, "rewritten in this version's schema")

    def test_a_file_that_is_no_settings_is_bad_input(self):
        cases = [("{}", "records no settings"), ("not json", "not JSON"),
                 ('{"settings": [{"component": 1}]}', "entry 1 is not a setting"),
                 ('{"settings": [{"component": "blocks", "scope": "", "name": "way", "value": "fast", '
                  '"source": "default"}]}', "expected one of loop, batch, kernel, pack"), (None, "cannot read it")]
        for text, said in cases:
            with self.subTest(text=text):
                bad = os.path.join(self.d, "bad.json")
                if os.path.exists(bad):
                    os.remove(bad)
                if text is not None:
                    with open(bad, "w") as f:
                        f.write(text)
                out = os.path.join(self.d, "out.json")
                p = subprocess.run([XFERBENCH, *STAGED, "--settings", bad, "--json", out], capture_output=True,
                                   text=True, timeout=60)
                self.assertEqual(p.returncode, 2, p.stderr)
                self.assertEqual(len(p.stderr.splitlines()), 1, p.stderr)
                self.assertIn(said, p.stderr)
                self.assertFalse(os.path.exists(out), "nothing measured, nothing written")


if __name__ == "__main__":
    XFERBENCH = os.path.abspath(sys.argv.pop(1))
    PYTHON_DIR = os.path.abspath(sys.argv.pop(1))
    unittest.main(verbosity=2)
