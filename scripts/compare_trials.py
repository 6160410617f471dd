#!/usr/bin/env python3
"""The false-alarm and detection figures of docs/compare.md, recomputed from the
committed trial files.

Usage: scripts/compare_trials.py [DIR] [--factor 1.10] [--every 4]
       scripts/compare_trials.py reduce WORK OUT

DIR (default docs/results/ci-vm/compare) holds trial-NN-a.json.gz and
trial-NN-b.json.gz: two identical sweep commands run back to back
(scripts/compare_trials.sh made them). For each pair:
  null:      compare A B as `xferbench-report compare` does (default options):
             the exit status it would give and the share of points not SLOWER;
  detection: B with every --every-th common ok point (in key order) made
             --factor slower (its samples scaled), compared against A: whether
             it is caught (exit 1) and which share of the scaled points is
             flagged SLOWER, and whether any unscaled point is.
Prints one line per trial and the totals.

`reduce` writes each WORK/trial-*.json as OUT/trial-*.json.gz keeping only what
compare reads and what identifies the run (the committed files must stay
small): the top level, and per point its key, status, timer, median, GB/s,
CI and samples, the samples rounded to 6 significant digits (a millionth,
far below any run-to-run change).
"""

import argparse
import copy
import gzip
import json
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "python"))

from xferbench_report.compare import compare_runs  # noqa: E402
from xferbench_report.load import load_run  # noqa: E402


def slowed(run, keys, factor):
    """A copy of run whose points with a key in keys have every sample (and the median) times factor."""
    out = copy.copy(run)
    out.points = []
    for p in run.points:
        if p.ok and p.key() in keys:
            p = copy.copy(p)
            p.samples_s = [s * factor for s in p.samples_s]
            p.median_s *= factor
        out.points.append(p)
    return out


KEEP = ("backend", "device", "device_index", "device_type", "device_pci", "route", "direction", "host_memory",
        "bytes", "status", "reason", "timer", "bytes_per_rep", "samples_s", "median_s", "gbps", "latency_us",
        "ci_rel", "converged", "stopped_by")


def reduce(work, out):
    out.mkdir(parents=True, exist_ok=True)
    for f in sorted(work.glob("trial-*.json")):
        doc = json.loads(f.read_text())
        doc["results"] = [{k: p[k] for k in KEEP if k in p} for p in doc["results"]]
        for p in doc["results"]:
            if "samples_s" in p:
                p["samples_s"] = [float(f"{s:.6g}") for s in p["samples_s"]]
        doc["reduced"] = "scripts/compare_trials.py reduce: fields compare does not read dropped, samples to 6 digits"
        text = json.dumps(doc, separators=(",", ":")).encode()
        (out / (f.name + ".gz")).write_bytes(gzip.compress(text, 9, mtime=0))


def exit_status(cmp):
    return 1 if cmp.regressed else 0


def main():
    if sys.argv[1:2] == ["reduce"] and len(sys.argv) == 4:
        return reduce(Path(sys.argv[2]), Path(sys.argv[3]))
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("dir", nargs="?", default=str(ROOT / "docs/results/ci-vm/compare"))
    ap.add_argument("--factor", type=float, default=1.10)
    ap.add_argument("--every", type=int, default=4)
    args = ap.parse_args()
    pairs = {}
    for f in sorted(Path(args.dir).glob("trial-*-[ab].json*")):
        m = re.match(r"trial-(\d+)-([ab])\.json", f.name)
        pairs.setdefault(int(m.group(1)), {})[m.group(2)] = f
    trials = [(n, p["a"], p["b"]) for n, p in sorted(pairs.items()) if "a" in p and "b" in p]
    if not trials:
        sys.exit(f"{args.dir}: no trial-NN-a/b.json(.gz) pairs")
    null_exit0 = points = not_slower = caught = hit = scaled_total = wrong = 0
    print(f"{'trial':>5} {'points':>6} {'null exit':>9} {'SLOWER':>6} {'sigma':>6} {'allow':>6}  "
          f"{'det exit':>8} {'flagged/scaled':>14} {'other SLOWER':>12}")
    for n, a_path, b_path in trials:
        a, b = load_run(a_path, require_ok=False), load_run(b_path, require_ok=False)
        null = compare_runs(a, b)
        judged = [r for r in null.rows if r.ratio is not None]
        slow = null.count("slower")
        null_exit0 += exit_status(null) == 0
        points += len(judged)
        not_slower += len(judged) - slow
        keys = sorted(r.key for r in judged)[::args.every]
        det = compare_runs(a, slowed(b, set(keys), args.factor))
        flagged = sum(r.verdict == "slower" for r in det.rows if r.key in set(keys))
        others = sum(r.verdict == "slower" for r in det.rows if r.key not in set(keys))
        caught += exit_status(det) == 1
        hit += flagged
        scaled_total += len(keys)
        wrong += others
        print(f"{n:>5} {len(judged):>6} {exit_status(null):>9} {slow:>6} {100 * null.noise_sigma:>5.2f}% "
              f"{100 * null.allowance:>5.1f}%  {exit_status(det):>8} {flagged:>6}/{len(keys):<7} {others:>12}")
    t = len(trials)
    print(f"identical pairs: exit 0 in {null_exit0}/{t}; points with no SLOWER verdict: {not_slower}/{points} "
          f"({100 * not_slower / points:.2f}%)")
    print(f"x{args.factor:g} on every {args.every}th point: caught (exit 1) in {caught}/{t}; scaled points flagged "
          f"SLOWER: {hit}/{scaled_total} ({100 * hit / scaled_total:.1f}%); unscaled points flagged SLOWER: {wrong}")


if __name__ == "__main__":
    main()
