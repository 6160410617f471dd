"""Issue 38, item 3: the same block lists through what engines do today (a loop of
torch.Tensor.copy_(non_blocking=True)) and through xferbench.copy_blocks (on torch's current
stream, and on a stream of torch's own), interleaved, on GPU 0; each checked once. Prints one tab-separated line per point and way.
Issue 54 adds the gather a torch user writes by hand ("torch-gather"): index_select into a
pinned buffer kept from call to call, one copy, index_copy_ on the other side.

    python bench/blocks_torch.py [reps]
"""

import statistics
import sys
import time

import torch

import xferbench

REPS = int(sys.argv[1]) if len(sys.argv) > 1 else 15
POINTS = [(4096, 16 << 10), (256, 256 << 10), (64, 1 << 20), (32, 2 << 20)]


def main():
    dev = torch.device("cuda", 0)
    stream = torch.cuda.current_stream(dev)
    # A stream of torch's own as well: the current (legacy default) stream's
    # handle is 0, which copy_blocks takes as no stream (a wait for the whole
    # device first); engines copy blocks on a stream of their own.
    own = torch.cuda.Stream(dev)
    gen = torch.Generator().manual_seed(38)
    print("direction\thost\tblock_bytes\tblocks\tway\tmedian_GBps\tbest_GBps")
    for blocks, block_bytes in POINTS:
        total = blocks * block_bytes
        for pinned in (True, False):
            host = torch.randint(0, 255, (2 * blocks, block_bytes), dtype=torch.uint8, generator=gen)
            if pinned:
                host = host.pin_memory()
            gpu = torch.zeros((2 * blocks, block_bytes), dtype=torch.uint8, device=dev)
            src = torch.randperm(2 * blocks, generator=gen)[:blocks]
            dst = torch.randperm(2 * blocks, generator=gen)[:blocks]
            mapping = torch.stack([src, dst], dim=1).to(torch.int64).contiguous()
            pairs = list(zip(src.tolist(), dst.tolist()))
            # The hand-written gather's buffers and indices, made once as a program would keep them.
            stage = torch.empty((blocks, block_bytes), dtype=torch.uint8).pin_memory()
            scratch = torch.empty((blocks, block_bytes), dtype=torch.uint8, device=dev)
            src_gpu, dst_gpu = src.to(dev), dst.to(dev)
            for direction in ("h2d", "d2h"):
                a, b = (gpu, host) if direction == "h2d" else (host, gpu)  # a: destination

                def torch_loop():
                    for s, d in pairs:
                        a[d].copy_(b[s], non_blocking=True)
                    torch.cuda.synchronize(dev)

                def torch_gather():
                    if direction == "h2d":
                        torch.index_select(b, 0, src, out=stage)
                        scratch.copy_(stage, non_blocking=True)
                        a.index_copy_(0, dst_gpu, scratch)
                    else:
                        torch.index_select(b, 0, src_gpu, out=scratch)
                        stage.copy_(scratch)
                        a.index_copy_(0, dst, stage)
                    torch.cuda.synchronize(dev)

                ways = {"torch-copy_-loop": torch_loop,
                        "torch-gather": torch_gather,
                        "xferbench": lambda: xferbench.copy_blocks(a, b, mapping, stream=stream),
                        "xferbench-own-stream": lambda: xferbench.copy_blocks(a, b, mapping, stream=own)}
                for name, fn in ways.items():  # checked once each
                    a.zero_()
                    torch.cuda.synchronize(dev)
                    fn()
                    ok = torch.equal(a[dst].cpu(), b[src].cpu())
                    if not ok:
                        print(f"# {direction} {name}: WRONG BYTES", flush=True)
                times = {name: [] for name in ways}
                # The order rotates each round: in a fixed order the way that always ran right
                # after torch's CPU gather had medians of a fifth of its best, the way after it
                # did not (the likely cause, not yet measured: torch's OpenMP threads still
                # spinning beside the copier's team; docs/decisions/0011-pack-ring.md).
                names = list(ways)
                for r in range(REPS + 1):
                    for name in names[r % len(names):] + names[:r % len(names)]:
                        fn = ways[name]
                        t0 = time.perf_counter()
                        fn()
                        if r:
                            times[name].append(time.perf_counter() - t0)
                for name, t in times.items():
                    print(f"{direction}\t{'pinned' if pinned else 'pageable'}\t{block_bytes}\t{blocks}\t{name}\t"
                          f"{total / statistics.median(t) / 1e9:.2f}\t{total / min(t) / 1e9:.2f}", flush=True)


if __name__ == "__main__":
    main()
