"""What Python's copy_blocks costs beyond the C++ block copier's call (issue 38: on the H100,
4096 x 16 KiB pinned ran 41.4 GB/s from Python against 47.5 from C++, ~200 us a 64 MiB
call). Not a test: speed lives in benchmarks.

On the host step (the default; no GPU): the same shape of block list (n pairs over 2n
blocks each side, scattered) through xferbench.copy_blocks, BlockCopier.copy and the
native module's call, interleaved, then bench/blocks_host_calls.cpp's C++ call
(block_copier::copy and the way alone) in its own process; medians of many calls.
Small blocks make the per-call work, not the bytes, the time.

    PYTHONPATH=python:build/python python3 python/benchmarks/blocks_call_overhead.py \\
        [--pairs 4096] [--block-bytes 64] [--way loop] [--reps 3000] [--cxx build/bench/xfer_bench_blocks_host_calls]

With --device N (torch with CUDA; GPU machine): the same calls on torch tensors, pinned
host and device, h2d, with the pieces apart: the torch DLPack exports, stream=None (a wait
for the whole device first) against a stream of torch's own.
"""

import argparse
import os
import statistics
import subprocess
import sys

import numpy as np

import xferbench
from interleave import interleaved_times


def interleaved_us(fns, reps, warm=50):
    """Median microseconds of each of fns, called in turn (interleave.py: the order shuffled)."""
    return {name: statistics.median(t) * 1e6 for name, t in interleaved_times(fns, reps, warm).items()}


def mapping_for(n, rng):
    return np.stack([rng.permutation(2 * n)[:n], rng.permutation(2 * n)[:n]], axis=1).astype(np.int64)


def host(args):
    os.environ["XFER_BLOCKS_WAY"] = args.way  # copy_blocks' own copier takes the same way
    n, b = args.pairs, args.block_bytes
    rng = np.random.default_rng(38)
    src = np.full((2 * n, b), 0x5A, np.uint8)
    dst = np.zeros((2 * n, b), np.uint8)
    mapping = mapping_for(n, rng)
    copier = xferbench.BlockCopier("host", way=args.way)
    native = copier._c
    got = interleaved_us({
        "xferbench.copy_blocks": lambda: xferbench.copy_blocks(dst, src, mapping),
        "BlockCopier.copy": lambda: copier.copy(dst, src, mapping),
        "native BlockCopier.copy": lambda: native.copy(dst, src, mapping, 0),
    }, args.reps)
    assert np.array_equal(dst[mapping[:, 1]], src[mapping[:, 0]]), "blocks not at their destination"
    print(f"Python, host step, {n} pairs of {b} bytes, way {args.way} (medians of {args.reps}):")
    for name, us in got.items():
        print(f"  {name:26s} {us:8.1f} us")
    if args.cxx and os.path.exists(args.cxx):
        out = subprocess.run([args.cxx, str(n), str(b), args.way, str(args.reps)], check=True, capture_output=True,
                             text=True).stdout
        print(out.strip())
    else:
        print(f"(no C++ side: {args.cxx} not built; cmake --build build --target xfer_bench_blocks_host_calls)")


def cuda(args):  # the GPU machine's; not run on a machine without one
    import torch

    if args.way != "auto":
        os.environ["XFER_BLOCKS_WAY"] = args.way  # copy_blocks' own copier takes the same way
    dev = torch.device("cuda", args.device)
    n, b = args.pairs, args.block_bytes
    gen = torch.Generator().manual_seed(38)
    src = torch.randint(0, 255, (2 * n, b), dtype=torch.uint8, generator=gen).pin_memory()
    dst = torch.zeros((2 * n, b), dtype=torch.uint8, device=dev)
    mapping = torch.from_numpy(mapping_for(n, np.random.default_rng(38)))
    own = torch.cuda.Stream(dev)
    copier = xferbench.BlockCopier(args.device, way=None if args.way == "auto" else args.way)
    native = copier._c
    torch.cuda.synchronize(dev)
    got = interleaved_us({
        "copy_blocks(stream=None)": lambda: xferbench.copy_blocks(dst, src, mapping),
        "copy_blocks(current stream)": lambda: xferbench.copy_blocks(dst, src, mapping,
                                                                     stream=torch.cuda.current_stream(dev)),
        "copy_blocks(own stream)": lambda: xferbench.copy_blocks(dst, src, mapping, stream=own),
        "native, own stream's handle": lambda: native.copy(dst, src, mapping, own.cuda_stream),
        "3 torch __dlpack__ exports": lambda: (dst.__dlpack__(), src.__dlpack__(), mapping.__dlpack__()),
    }, args.reps)
    assert torch.equal(dst[mapping[:, 1].to(dev)].cpu(), src[mapping[:, 0]]), "blocks not at their destination"
    total = n * b
    print(f"Python, CUDA device {args.device}, h2d pinned, {n} pairs of {b} bytes, way {args.way} "
          f"(medians of {args.reps}):")
    for name, us in got.items():
        print(f"  {name:30s} {us:9.1f} us" + (f"  {total / us / 1e3:6.2f} GB/s" if "dlpack" not in name else ""))


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--pairs", type=int, default=4096)
    p.add_argument("--block-bytes", type=int, default=None, help="64 on the host step, 16384 on a GPU")
    p.add_argument("--way", default=None, help="loop, batch, kernel, pack (auto: the copier's choice; GPU only)")
    p.add_argument("--reps", type=int, default=None)
    p.add_argument("--device", type=int, default=None, help="a CUDA device (torch): the GPU's figures")
    p.add_argument("--cxx", default="build/bench/xfer_bench_blocks_host_calls")
    args = p.parse_args()
    gpu = args.device is not None
    args.block_bytes = args.block_bytes or (16384 if gpu else 64)
    args.way = args.way or ("auto" if gpu else "loop")
    args.reps = args.reps or (200 if gpu else 3000)
    if args.pairs < 1 or args.block_bytes < 1 or args.reps < 1:
        sys.exit("--pairs, --block-bytes and --reps must be positive")
    (cuda if gpu else host)(args)


if __name__ == "__main__":
    main()
