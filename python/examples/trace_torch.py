"""A PyTorch training-like loop whose transfers are known exactly, for checking `xferbench trace`.

    xferbench trace -- python3 python/examples/trace_torch.py            # pageable input
    xferbench trace -- python3 python/examples/trace_torch.py --fixed    # pinned input, non_blocking

Each of 20 steps moves one 64 MiB float32 CPU tensor (made once, reused) to the GPU, runs a
matmul there and brings a 4 KiB result (1024 float32) back with .cpu(). With --fixed the CPU
tensor is pinned once (.pin_memory()) and moved with non_blocking=True, and the step ends
with torch.cuda.synchronize(). Nothing else copies: the other tensors are made on the GPU,
nothing is printed or .item()'d from the GPU, no reduction kernel runs (PyTorch's zero their
semaphores with cudaMemsetAsync: the means are a matmul too), and the results are checked on
the CPU after the loop (each of them is known: exit 1 on a mismatch).

PyTorch copies between a CPU and a CUDA tensor with cudaMemcpyAsync on the current stream
(aten/src/ATen/native/cuda/Copy.cu); a blocking copy (.to("cuda") without non_blocking,
.cpu()) then waits with cudaStreamSynchronize. So every copy here is a cudaMemcpyAsync:

    default: 20 x h2d 67108864 B pageable, 20 x d2h 4096 B pageable
    --fixed: 20 x h2d 67108864 B pinned,   20 x d2h 4096 B pageable (.cpu() makes a pageable tensor)

stdout carries exactly one line, at the end, in JSON:
    {"program": "trace_torch", "variant": ..., "expected": [{"direction", "host_memory", "bytes",
     "count", "call"}, ...], "transfer_s": <the copies' time, as this script timed them>}
Each copy is timed alone with the device idle when it starts (a synchronize before it, outside
the timed region) and finished when it stops (a blocking copy waits for itself; the
non_blocking one is followed by torch.cuda.synchronize() inside the timed region).
Exit 77 with one line "skipped: ..." where torch or a CUDA device is missing; 2 on a bad argument.
"""

import argparse
import json
import sys
import time

STEPS = 20
ROWS, COLS = 4096, 4096  # the input: 4096 x 4096 float32 = 64 MiB
OUT = 1024  # the result: 1024 float32 = 4 KiB


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--fixed", action="store_true", help="pin the input once and move it with non_blocking=True")
    args = ap.parse_args(argv)

    try:
        import torch
    except ImportError as e:
        print(f"skipped: PyTorch is not installed ({e})")
        return 77
    if not torch.cuda.is_available():
        print(f"skipped: PyTorch {torch.__version__} sees no CUDA device")
        return 77

    dev = torch.device("cuda")
    # The input, made once on the CPU (pageable, as CPU tensors are): small integers, so the
    # results are exact in float32 and known in advance.
    x_cpu = (torch.arange(ROWS * COLS, dtype=torch.int64) % 5).to(torch.float32).view(ROWS, COLS)
    if args.fixed:
        x_cpu = x_cpu.pin_memory()  # a host-to-host copy into page-locked memory: no CUDA copy
    # Made on the GPU directly: column j of w is (j + 1) / 1024 everywhere (exact in float32 and TF32).
    w = torch.outer(torch.ones(COLS, device=dev), torch.arange(1, OUT + 1, device=dev, dtype=torch.float32) / OUT)
    # The mean over the rows, as a matmul too (a reduction kernel such as .mean(dim=0) would zero its
    # semaphores with a cudaMemsetAsync each step): 1/4096 is exact.
    mean_row = torch.full((1, ROWS), 1.0 / ROWS, device=dev)
    # result[j] = mean over rows of (row sum * (j + 1) / 1024): the row sums are exact integers.
    row_sums = x_cpu.to(torch.float64).sum(dim=1)  # on the CPU
    want = row_sums.mean() * torch.arange(1, OUT + 1, dtype=torch.float64) / OUT
    # The caching allocator gets its 64 MiB block now, so no cudaMalloc lands in a timed copy.
    torch.empty((ROWS, COLS), device=dev)
    torch.cuda.synchronize()  # CUDA context and the setup kernels done before the first timed copy

    transfer_s = 0.0
    results = []
    for _ in range(STEPS):
        t0 = time.perf_counter()
        if args.fixed:
            x = x_cpu.to(dev, non_blocking=True)
            torch.cuda.synchronize()
        else:
            x = x_cpu.to(dev)  # cudaMemcpyAsync + cudaStreamSynchronize
        transfer_s += time.perf_counter() - t0

        y = (mean_row @ (x @ w)).view(OUT)  # (4096 x 4096) @ (4096 x 1024), then the 1024 column means: 4 KiB
        torch.cuda.synchronize()  # the matmul is not the copy's time

        t0 = time.perf_counter()
        r = y.cpu()  # cudaMemcpyAsync + cudaStreamSynchronize into a new pageable tensor
        transfer_s += time.perf_counter() - t0
        results.append(r)
        del x, y
        if args.fixed:
            torch.cuda.synchronize()

    # Checked on the CPU only (no copy): every step's result is the known one.
    for step, r in enumerate(results):
        if r.shape != (OUT,) or r.dtype != torch.float32 or not torch.allclose(r.to(torch.float64), want, rtol=1e-3):
            bad = (r.to(torch.float64) - want).abs().argmax()
            print(f"trace_torch: step {step}: result[{int(bad)}] = {float(r[bad])}, expected {float(want[bad])}",
                  file=sys.stderr)
            return 1

    h2d_memory = "pinned" if args.fixed else "pageable"
    expected = [
        {"direction": "h2d", "host_memory": h2d_memory, "bytes": x_cpu.numel() * x_cpu.element_size(),
         "count": STEPS, "call": "cudaMemcpyAsync"},
        {"direction": "d2h", "host_memory": "pageable", "bytes": OUT * 4, "count": STEPS, "call": "cudaMemcpyAsync"},
    ]
    print(f"trace_torch: {STEPS} steps ({h2d_memory} input), results checked, {transfer_s:.4f} s in copies",
          file=sys.stderr)
    print(json.dumps({"program": "trace_torch", "variant": "pinned" if args.fixed else "pageable",
                      "expected": expected, "transfer_s": transfer_s}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
