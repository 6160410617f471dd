"""Issue 37's first target on a GPU: the staged copy against torch in one process, both
directions, 1 MiB to 1 GiB; not a test (speed lives in benchmarks). For each size and
direction, interleaved rounds of three copies of the same bytes (the order rotates each
round, so all three see the same machine state):

  - torch pageable:   dst.copy_(src) from/to a pageable CPU tensor (what a program does today)
  - torch pinned:     dst.copy_(src, non_blocking=True) from/to a pinned CPU tensor, then a
                      synchronize (the ceiling: the copy engine from pinned memory)
  - staged:           xferbench.copy(dst, src) from/to the same pageable CPU tensor

Each copy is timed on the host (perf_counter around the copy and a device synchronize), and
every staged copy's data is checked once per size and direction. Writes one JSON file with
every raw timing, the medians, their spread, and the two ratios the issue names:
staged / torch pinned (target at least 0.9 from 16 MiB) and staged / torch pageable (target
at least 2 from 1 MiB).

    PYTHONPATH=python:build/python python3 python/benchmarks/staged_vs_torch.py -o staged-vs-torch.json
"""

import argparse
import json
import platform
import statistics
import sys
import time

import torch

import xferbench

MiB = 1 << 20
SIZES = [1 * MiB, 4 * MiB, 16 * MiB, 64 * MiB, 256 * MiB, 1024 * MiB]


def timed(f):
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    f()
    torch.cuda.synchronize()
    return time.perf_counter() - t0


def one_size(n, direction, rounds):
    dev = torch.empty(n, dtype=torch.uint8, device="cuda")
    pageable = torch.randint(0, 256, (n,), dtype=torch.uint8)
    pinned = torch.empty(n, dtype=torch.uint8, pin_memory=True)
    pinned.copy_(pageable)
    if direction == "h2d":
        ways = {
            "torch_pageable": lambda: dev.copy_(pageable),
            "torch_pinned": lambda: dev.copy_(pinned, non_blocking=True),
            "staged": lambda: xferbench.copy(dev, pageable),
        }
    else:
        dev.copy_(pageable)
        back = torch.empty(n, dtype=torch.uint8)  # pageable destination
        back.fill_(0)  # faulted in before timing, like the source
        ways = {
            "torch_pageable": lambda: back.copy_(dev),
            "torch_pinned": lambda: pinned.copy_(dev, non_blocking=True),
            "staged": lambda: xferbench.copy(back, dev),
        }
    for f in ways.values():  # warm-up: the copier's calibration and staging ring, torch's caches
        timed(f)
    samples = {k: [] for k in ways}
    names = list(ways)
    for r in range(rounds):
        order = names[r % len(names):] + names[:r % len(names)]
        for k in order:
            samples[k].append(timed(ways[k]))
    # The staged copy's data, checked after the timing (a wrong copy is not a result).
    if direction == "h2d":
        dev.zero_()
        xferbench.copy(dev, pageable)
        verified = bool(torch.equal(dev.cpu(), pageable))
    else:
        dev.copy_(pageable)
        back.zero_()
        xferbench.copy(back, dev)
        verified = bool(torch.equal(back, pageable))
    med = {k: statistics.median(v) for k, v in samples.items()}
    gbps = {k: n / m / 1e9 for k, m in med.items()}
    return {"bytes": n, "direction": direction, "samples_s": samples, "median_s": med, "gbps": gbps,
            "min_max_s": {k: [min(v), max(v)] for k, v in samples.items()},
            "staged_over_pinned": gbps["staged"] / gbps["torch_pinned"],
            "staged_over_pageable": gbps["staged"] / gbps["torch_pageable"], "verified": verified}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-o", "--output", required=True)
    ap.add_argument("--rounds", type=int, default=9, help="interleaved rounds per size and direction (default 9)")
    args = ap.parse_args()
    if args.rounds < 3:
        print("staged_vs_torch.py: --rounds must be at least 3 (a median of fewer says little)", file=sys.stderr)
        return 2
    if not torch.cuda.is_available() or not xferbench.cuda_available():
        print(f"staged_vs_torch.py: needs CUDA (torch: {torch.cuda.is_available()}, "
              f"xferbench: {xferbench.cuda_status()})", file=sys.stderr)
        return 2
    rows = [one_size(n, d, args.rounds) for d in ("h2d", "d2h") for n in SIZES]
    from xferbench._copy import _default_copier
    doc = {"command": " ".join(sys.argv), "torch": torch.__version__, "python": platform.python_version(),
           "device": torch.cuda.get_device_name(0), "tuning": _default_copier(0).tuning, "rows": rows}
    with open(args.output, "w") as f:
        json.dump(doc, f, indent=1)
    print(f"{'dir':4} {'size':>6} {'torch pageable':>15} {'staged':>8} {'torch pinned':>13} "
          f"{'staged/pinned':>14} {'staged/pageable':>16} verified")
    for r in rows:
        g = r["gbps"]
        print(f"{r['direction']:4} {r['bytes'] >> 20:5d}M {g['torch_pageable']:15.1f} {g['staged']:8.1f} "
              f"{g['torch_pinned']:13.1f} {r['staged_over_pinned']:14.0%} {r['staged_over_pageable']:15.1f}x "
              f"{r['verified']}")
    print(f"tuning: {doc['tuning']}")
    return 0 if all(r["verified"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
