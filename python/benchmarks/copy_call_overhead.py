"""Where a blocking xferbench.copy's time goes beside torch's copy_, layer by layer (issue 37).

At 1 to 4 MiB, where the staged copier hands the copy to the plain API, xferbench.copy moves the
bytes the way torch's copy_ does (one pageable cudaMemcpy), yet was 20 to 37 us a call slower when
this was written (the run is in git history at 1ce24c1). This times, interleaved, each layer between
the user's call and the bytes, and the pieces the layers add:

    torch copy_                  dev.copy_(page) / page.copy_(dev)
    xferbench.copy               the public call (dispatch, checks, the device's Copier)
    Copier.to_device/to_host     one layer down (typed checks, stream check)
    native, stream None          the native module's call: DLPack imports, device sync, copy
    native, current stream       the same, waiting for torch's current stream only
    2 __dlpack__ exports         what importing the two tensors costs torch alone
    torch.cuda.synchronize()     a device-wide sync with nothing queued

    python python/benchmarks/copy_call_overhead.py [--reps 200] [--device 0] [--json FILE]

Medians of --reps calls each (microseconds), the order shuffled each round, every copy's bytes
checked once first.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys

from interleave import interleaved_times


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=200, help="calls per row (default 200)")
    ap.add_argument("--device", type=int, default=0, help="CUDA device (default 0)")
    ap.add_argument("--json", help="also write the rows here")
    args = ap.parse_args()
    try:
        import torch
    except ImportError:
        print("torch does not import: nothing to compare with", file=sys.stderr)
        return 2
    if not torch.cuda.is_available():
        print("torch sees no CUDA device", file=sys.stderr)
        return 2
    import xferbench

    torch.cuda.set_device(args.device)
    copier = xferbench._copy._default_copier(args.device)
    native = copier._c
    rows = []
    print(f"CUDA device {args.device}, tuning {copier.tuning}, medians of {args.reps} calls (us)")
    for size in (4 << 10, 1 << 20, 4 << 20):
        for d in ("h2d", "d2h"):
            dev = torch.empty(size, dtype=torch.uint8, device=f"cuda:{args.device}")
            page = torch.randint(0, 256, (size,), dtype=torch.uint8)
            src, dst = (page, dev) if d == "h2d" else (dev, page)
            if d == "d2h":
                dev.copy_(torch.randint(0, 256, (size,), dtype=torch.uint8))
            one_way = native.to_device if d == "h2d" else native.to_host
            layer = copier.to_device if d == "h2d" else copier.to_host
            cur = torch.cuda.current_stream(args.device).cuda_stream
            calls = {
                "torch copy_": lambda: dst.copy_(src),
                "xferbench.copy": lambda: xferbench.copy(dst, src),
                "Copier." + ("to_device" if d == "h2d" else "to_host"): lambda: layer(dst, src),
                "native, stream None": lambda: one_way(dst, src, None),
                "native, current stream": lambda: one_way(dst, src, cur),
                "2 __dlpack__ exports": lambda: (dst.__dlpack__(), src.__dlpack__()),
                "torch.cuda.synchronize()": torch.cuda.synchronize,
            }
            # Each copy's bytes, once: the destination cleared, the copy, compared.
            for name, f in calls.items():
                if "export" in name or "synchronize" in name:
                    continue
                dst.zero_()
                f()
                torch.cuda.synchronize()
                if not torch.equal(dst.cpu(), src.cpu()):
                    print(f"{d} {size} B through {name}: WRONG BYTES", file=sys.stderr)
                    return 1
            times = {name: [t * 1e6 for t in ts] for name, ts in interleaved_times(calls, args.reps).items()}
            print(f"{d} {size >> 10} KiB:")
            for name in calls:
                med = statistics.median(times[name])
                q1, _, q3 = statistics.quantiles(times[name], n=4)
                rows.append({"direction": d, "bytes": size, "call": name, "median_us": med, "q1_us": q1, "q3_us": q3})
                print(f"  {name:28s} {med:8.1f} us  (quartiles {q1:.1f} to {q3:.1f})")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"device": torch.cuda.get_device_name(args.device), "tuning": copier.tuning, "rows": rows}, f,
                      indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
