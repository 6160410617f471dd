#!/usr/bin/env python3
"""How much more sampling the unconverged ok points of a sweep would need to reach the target,
extrapolating each one's confidence interval as one over the root of its samples (the runner's
own assumption), cheapest first. Usage: unconverged_cost.py SWEEP.json[.gz] [target share, 0.95]"""
import gzip
import json
import sys

path = sys.argv[1]
share = float(sys.argv[2]) if len(sys.argv) > 2 else 0.95
doc = json.load(gzip.open(path) if path.endswith(".gz") else open(path))
target = doc["config"]["target_ci"]
ok = [r for r in doc["results"] if r["status"] == "ok"]
extra = []
for r in ok:
    if r["converged"]:
        continue
    spent = r["time_spent_s"]["sampling"] + r["time_spent_s"]["checking"]
    factor = (r["ci_rel"] / target) ** 2 if r["ci_rel"] is not None else float("inf")
    extra.append(spent * (factor - 1))
extra.sort()
need = max(0, int(share * len(ok) + 0.999) - (len(ok) - len(extra)))
print(f"{len(ok)} ok, {len(ok) - len(extra)} converged; {need} more needed for {share:.0%}: "
      f"about {sum(extra[:need]):.0f} s more sampling")
