#!/usr/bin/env python3
"""The false-alarm and detection figures of docs/compare.md, recomputed from the
committed trial files.

Usage: scripts/compare_trials.py [DIR | --pair A B ...] [--factor 1.10] [--every 4] [--noise-floor K]
       scripts/compare_trials.py reduce WORK OUT

DIR (default results/compare-trials) holds trial-NN-a.json.gz and
trial-NN-b.json.gz: two identical sweep commands run back to back
(scripts/compare_trials.sh made them). For each pair:
  null:      compare A B as `xferbench-report compare` does (default options):
             the exit status it would give and the share of points not SLOWER;
  bare:      the test and the correction alone (no minimum effect, no noise
             floor): SLOWER verdicts, and "K needed": the largest significant
             slowdown's log ratio over the pair's sigma, i.e. the noise floor
             below which this pair would exit 1;
  detection: B with every --every-th common ok point (in key order) made
             --factor slower (its samples scaled), compared against B itself
             ("self": real samples, no run-to-run noise) and against A
             ("rerun": real samples plus the run-to-run noise of this
             machine): whether it is caught (exit 1), which share of the
             scaled points is flagged SLOWER, and how many unscaled points are.
Prints one line per trial and the totals.

`reduce` writes each WORK/trial-*.json as OUT/trial-*.json.gz keeping only what
compare reads and what identifies the run (the committed files must stay
small): the top level, and per point its key, status, timer, median, GB/s,
why sampling stopped, and the samples; the samples rounded to 6 significant digits (a millionth, far
below any run-to-run change) and sorted, which gzip packs tighter (compare
uses the samples' ranks, not their order; the unreduced files keep the order).
"""

import argparse
import copy
import gzip
import json
import math
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "python"))

from xferbench_report.compare import DEFAULT_MIN_EFFECT, DEFAULT_NOISE_FLOOR, compare_runs, format_change  # noqa: E402
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


KEEP = ("backend", "device", "device_index", "route", "direction", "host_memory", "bytes", "status", "reason",
        "timer", "samples_s", "median_s", "gbps", "latency_us", "stopped_by")


def reduce(work, out):
    out.mkdir(parents=True, exist_ok=True)
    for f in sorted(work.glob("trial-*.json")):
        doc = json.loads(f.read_text())
        doc["results"] = [{k: p[k] for k in KEEP if k in p} for p in doc["results"]]
        for p in doc["results"]:
            if "samples_s" in p:
                p["samples_s"] = sorted(float(f"{s:.6g}") for s in p["samples_s"])
        doc["reduced"] = "scripts/compare_trials.py reduce: fields compare does not read dropped, samples sorted, to 6 digits"
        text = json.dumps(doc, separators=(",", ":")).encode()
        (out / (f.name + ".gz")).write_bytes(gzip.compress(text, 9, mtime=0))


def exit_status(cmp):
    return 1 if cmp.regressed else 0


def detection(a, b, keys, factor, options):
    """compare(a, b with the points in keys made factor slower): (exit status, scaled points flagged
    SLOWER, other points flagged SLOWER)."""
    cmp = compare_runs(a, slowed(b, keys, factor), **options)
    flagged = sum(r.verdict == "slower" for r in cmp.rows if r.key in keys)
    others = sum(r.verdict == "slower" for r in cmp.rows if r.key not in keys)
    return exit_status(cmp), flagged, others


def main():
    if sys.argv[1:2] == ["reduce"] and len(sys.argv) == 4:
        return reduce(Path(sys.argv[2]), Path(sys.argv[3]))
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("dir", nargs="?", default=str(ROOT / "results/compare-trials"))
    ap.add_argument("--factor", type=float, default=1.10)
    ap.add_argument("--every", type=int, default=4)
    ap.add_argument("--noise-floor", type=float, default=DEFAULT_NOISE_FLOOR)
    ap.add_argument("--min-effect", type=float, default=DEFAULT_MIN_EFFECT)
    ap.add_argument("-q", "--quiet", action="store_true", help="totals only")
    ap.add_argument("--pair", nargs=2, action="append", metavar=("A", "B"),
                    help="judge these two result files instead of DIR's trials (repeatable)")
    args = ap.parse_args()
    options = dict(noise_floor=args.noise_floor, min_effect=args.min_effect)
    pairs = {}
    for f in [] if args.pair else sorted(Path(args.dir).glob("trial-*-[ab].json*")):
        m = re.match(r"trial-(\d+)-([ab])\.json", f.name)
        pairs.setdefault(int(m.group(1)), {})[m.group(2)] = f
    trials = [(n, p["a"], p["b"]) for n, p in sorted(pairs.items()) if "a" in p and "b" in p]
    if args.pair:
        trials = [(n, Path(a), Path(b)) for n, (a, b) in enumerate(args.pair, 1)]
    if not trials:
        sys.exit(f"{args.dir}: no trial-NN-a/b.json(.gz) pairs")
    t = len(trials)
    null_exit0 = points = not_slower = 0
    caught = {"self": 0, "rerun": 0}
    hit = {"self": 0, "rerun": 0}
    wrong = {"self": 0, "rerun": 0}
    scaled_total = 0
    bare_slower = bare_exit0 = 0
    k_all = []
    if not args.quiet:
        print(f"{'trial':>5} {'points':>6} {'null exit':>9} {'SLOWER':>6} {'sigma':>7} {'allow':>7}  "
              f"{'self: exit':>10} {'flagged':>9}  {'rerun: exit':>11} {'flagged':>9} {'others':>6}  "
              f"{'bare SLOWER':>11} {'K needed':>8}")
    for n, a_path, b_path in trials:
        a, b = load_run(a_path, require_ok=False), load_run(b_path, require_ok=False)
        null = compare_runs(a, b, **options)
        judged = [r for r in null.rows if r.ratio is not None]
        slow = null.count("slower")
        null_exit0 += exit_status(null) == 0
        points += len(judged)
        not_slower += len(judged) - slow
        bare = compare_runs(a, b, noise_floor=0, min_effect=0)  # the test and the correction alone
        bare_slow = [math.log(r.ratio) for r in bare.rows if r.verdict == "slower"]
        k_needed = max(bare_slow) / bare.noise_sigma if bare_slow and bare.noise_sigma else 0.0
        bare_slower += len(bare_slow)
        bare_exit0 += not bare_slow
        k_all.append(k_needed)
        keys = set(sorted(r.key for r in judged)[::args.every])
        scaled_total += len(keys)
        line = []
        for name, base in (("self", b), ("rerun", a)):  # self: B against B slowed; rerun: A against B slowed
            status, flagged, others = detection(base, b, keys, args.factor, options)
            caught[name] += status == 1
            hit[name] += flagged
            wrong[name] += others
            line.append((status, flagged, others))
        if not args.quiet:
            (s_st, s_fl, _), (r_st, r_fl, r_ot) = line
            print(f"{n:>5} {len(judged):>6} {exit_status(null):>9} {slow:>6} {100 * null.noise_sigma:>6.2f}% "
                  f"{format_change(null.allowance):>7}  {s_st:>10} {s_fl:>4}/{len(keys):<4}  {r_st:>11} "
                  f"{r_fl:>4}/{len(keys):<4} {r_ot:>6}  {len(bare_slow):>11} {k_needed:>8.1f}")
    where = Path(args.dir).resolve()
    where = where.relative_to(ROOT) if where.is_relative_to(ROOT) else where
    print(f"options: min effect {args.min_effect:g}, noise floor {args.noise_floor:g}; {t} trials from {'--pair files' if args.pair else where}")
    print(f"identical pairs: exit 0 in {null_exit0}/{t}; points with no SLOWER verdict: {not_slower}/{points} "
          f"({100 * not_slower / points:.2f}%)")
    print(f"test and correction alone (no allowance): exit 0 in {bare_exit0}/{t}; SLOWER verdicts: {bare_slower}/"
          f"{points}; K needed (the noise floor below which a pair exits 1) per trial: "
          f"{', '.join(f'{k:.1f}' for k in k_all)}; largest {max(k_all):.1f}")
    for name, what in (("self", "a file against itself"), ("rerun", "A against its rerun B")):
        print(f"x{args.factor:g} on every {args.every}th point, {what}: caught (exit 1) in {caught[name]}/{t}; "
              f"scaled points flagged SLOWER: {hit[name]}/{scaled_total} ({100 * hit[name] / scaled_total:.1f}%); "
              f"unscaled points flagged SLOWER: {wrong[name]}")


if __name__ == "__main__":
    main()
