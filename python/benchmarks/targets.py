"""Issue 16's targets on a GPU, side by side with torch in one process; not a test
(speed lives in benchmarks). Writes one JSON file with every figure and the raw
timings it comes from; needs torch with CUDA and the package's native module.

    PYTHONPATH=python:build/python python3 python/benchmarks/targets.py -o results/python-targets.json

1. waste: the same request sizes held live at once, pinned by torch's caching host
   allocator (torch.empty(pin_memory=True); torch.cuda.host_memory_stats()) and by
   xferbench.Pool("pinned"): (reserved - requested) / requested for each.
2. reacquire: a 256 MiB pinned block freed and allocated again from Python, per
   iteration (median of many), after one warm-up miss.
3. copy: a 256 MiB pageable torch CPU tensor into a CUDA tensor with xferbench.copy
   against tensor.to("cuda") (the same source, median of reps), data verified.
"""

import argparse
import gc
import json
import platform
import statistics
import sys
import time

import numpy as np
import torch

import xferbench

MiB = 1 << 20
SIZES = [int(x * MiB) for x in (1.5, 3, 5, 17, 33.5, 65, 129.5, 200, 257)]


def torch_reserved():
    s = torch.cuda.host_memory_stats()
    for key in ("reserved_bytes.current", "allocated_bytes.current"):  # torch versions name it either way
        if key in s:
            return key, int(s[key])
    raise KeyError(f"torch.cuda.host_memory_stats() has neither reserved_bytes nor allocated_bytes: {sorted(s)}")


def waste():
    key, before = torch_reserved()
    held = [torch.empty(n, dtype=torch.uint8, pin_memory=True) for n in SIZES]
    _, after = torch_reserved()
    torch_reserved_bytes = after - before
    del held
    pool = xferbench.Pool("pinned")
    blocks = [pool.allocate(n) for n in SIZES]
    st = pool.stats()
    requested = sum(SIZES)
    out = {
        "sizes_bytes": SIZES,
        "requested_bytes": requested,
        "torch": {"stat": key, "reserved_bytes": torch_reserved_bytes,
                  "waste": torch_reserved_bytes / requested - 1},
        "xferbench": {"reserved_bytes": st["reserved_bytes"], "waste": st["reserved_bytes"] / requested - 1,
                      "stats": st},
    }
    del blocks
    return out


def reacquire(iterations=2000):
    pool = xferbench.Pool("pinned")
    n = 256 * MiB
    first = time.perf_counter()
    b = pool.allocate(n)  # the miss: pins 256 MiB
    first = time.perf_counter() - first
    del b
    samples = []
    for _ in range(iterations):
        t0 = time.perf_counter_ns()
        b = pool.allocate(n)
        t1 = time.perf_counter_ns()
        del b
        samples.append((t1 - t0) / 1e3)
    return {"bytes": n, "first_allocation_s": first, "median_us": statistics.median(samples),
            "p95_us": sorted(samples)[int(0.95 * len(samples))], "samples_us": samples[:200],
            "hits": pool.stats()["hits"]}


def copy(reps=15):
    n = 256 * MiB
    src = torch.randint(0, 256, (n,), dtype=torch.uint8)  # pageable
    dst = torch.empty(n, dtype=torch.uint8, device="cuda")
    xferbench.copy(dst, src)  # warm-up: the copier (its calibration, once per machine), its staging ring
    _ = src.to("cuda")
    torch.cuda.synchronize()

    def once(f):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        f()
        torch.cuda.synchronize()
        return time.perf_counter() - t0

    # Interleaved, so both see the same machine state (METHOD.md: peers in
    # the same run); the order flips each round.
    staged, plain = [], []
    for i in range(reps):
        pair = [(staged, lambda: xferbench.copy(dst, src)), (plain, lambda: src.to("cuda"))]
        for out, f in (pair if i % 2 == 0 else pair[::-1]):
            out.append(once(f))
    dst.zero_()
    xferbench.copy(dst, src)
    verified = bool(torch.equal(dst.cpu(), src))
    ms, mp = statistics.median(staged), statistics.median(plain)
    from xferbench._copy import _default_copier
    return {"bytes": n, "staged_s": staged, "to_cuda_s": plain, "staged_gbps": n / ms / 1e9,
            "to_cuda_gbps": n / mp / 1e9, "speedup": mp / ms, "verified": verified,
            "tuning": _default_copier(0).tuning,
            "spread": {"staged_min_max_s": [min(staged), max(staged)], "to_cuda_min_max_s": [min(plain), max(plain)]}}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-o", "--output", required=True)
    args = ap.parse_args()
    if not torch.cuda.is_available() or not xferbench.cuda_available():
        print(f"targets.py: needs CUDA (torch: {torch.cuda.is_available()}, xferbench: {xferbench.cuda_status()})",
              file=sys.stderr)
        return 2
    doc = {"command": " ".join(sys.argv), "torch": torch.__version__, "numpy": np.__version__,
           "python": platform.python_version(), "device": torch.cuda.get_device_name(0),
           "waste": waste()}
    gc.collect()
    doc["reacquire"] = reacquire()
    doc["copy"] = copy()
    with open(args.output, "w") as f:
        json.dump(doc, f, indent=1)
    w, r, c = doc["waste"], doc["reacquire"], doc["copy"]
    print(f"waste: torch {w['torch']['waste']:.1%}, xferbench {w['xferbench']['waste']:.1%}")
    print(f"reacquire 256 MiB: median {r['median_us']:.2f} us (first allocation {r['first_allocation_s'] * 1e3:.1f} ms)")
    print(f"copy 256 MiB pageable: staged {c['staged_gbps']:.1f} GB/s, .to('cuda') {c['to_cuda_gbps']:.1f} GB/s, "
          f"{c['speedup']:.2f}x, verified {c['verified']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
