"""How far identical H100 runs move apart, point by point.

The three gate runs of 2026-11-23 (89687ba, 86f6d3d, c8d9c42) measured the
same code (the commits between them changed tests only) on fresh H100
machines. For each pair and each point ok in both with at least 5 samples:
the ratio of medians, and a two-sided Mann-Whitney U test on the raw
per-transfer samples, Holm-corrected over all points at alpha 0.01. It asks
whether a per-point test on within-run samples could decide "slower" for
`xferbench-report compare` (issue 14, item 5).

    python3 docs/results/h100/reruns/rerun_shifts.py > docs/results/h100/reruns/rerun_shifts.txt
"""
import collections
import gzip
import itertools
import json
import pathlib
import statistics

from scipy.stats import mannwhitneyu

GATE = pathlib.Path(__file__).resolve().parent.parent / "gate"
RUNS = ("89687ba", "86f6d3d", "c8d9c42")


def load(sha):
    doc = json.load(gzip.open(GATE / f"sweep-{sha}.json.gz"))
    return {(r["backend"], r["device_index"], r["route"], r["direction"], r["host_memory"], r["bytes"]): r
            for r in doc["results"] if r["status"] == "ok"}


def holm(ps, alpha):
    order = sorted(range(len(ps)), key=lambda i: ps[i])
    rejected = [False] * len(ps)
    for k, i in enumerate(order):
        if ps[i] > alpha / (len(ps) - k):
            break
        rejected[i] = True
    return rejected


runs = {sha: load(sha) for sha in RUNS}
for a, b in itertools.combinations(RUNS, 2):
    rows = []
    for key, pa in runs[a].items():
        pb = runs[b].get(key)
        if pb is None or len(pa["samples_s"]) < 5 or len(pb["samples_s"]) < 5:
            continue
        ratio = statistics.median(pb["samples_s"]) / statistics.median(pa["samples_s"])
        p = mannwhitneyu(pb["samples_s"], pa["samples_s"], alternative="two-sided").pvalue
        rows.append((key, ratio, p))
    rejected = holm([p for _, _, p in rows], 0.01)
    print(f"{a} -> {b}: {len(rows)} points compared")
    for effect in (0.05, 0.10):
        moved = sum(abs(r - 1) > effect for _, r, _ in rows)
        slower = [k for (k, r, _), j in zip(rows, rejected) if j and r > 1 + effect]
        faster = sum(1 for (_, r, _), j in zip(rows, rejected) if j and r < 1 - effect)
        by_backend = collections.Counter(k[0] for k in slower).most_common()
        print(f"  medians apart by more than {effect:.0%}: {moved} ({100 * moved / len(rows):.0f}%); "
              f"significant and slower: {len(slower)}, faster: {faster}; slower by backend: {by_backend}")
