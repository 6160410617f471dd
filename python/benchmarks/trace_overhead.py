"""What `xferbench trace` costs a PyTorch training loop (issue 52: at most 5% of its step time); a
benchmark, not a test. The loop: a 4-layer MLP trained on batches that come from host memory each
step (a pinned batch copied without blocking, as a DataLoader with pin_memory does), the loss read
back each step (.item(), a small device-to-host copy). Each step is timed on the host after a
synchronize; the median of the steps after the first 20 is the step time.

    python3 trace_overhead.py --loop                 one run, prints {"step_s": median, ...}
    python3 trace_overhead.py --xferbench BIN --out F  alternates plain and traced runs, --rounds each
"""

import argparse
import json
import statistics
import subprocess
import sys
import time


def loop(steps):
    import torch

    dev = torch.device("cuda")
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(1024, 4096), torch.nn.ReLU(), torch.nn.Linear(4096, 4096),
                                torch.nn.ReLU(), torch.nn.Linear(4096, 4096), torch.nn.ReLU(),
                                torch.nn.Linear(4096, 10)).to(dev)
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)
    batches = [torch.randn(2048, 1024).pin_memory() for _ in range(4)]
    labels = [torch.randint(0, 10, (2048,)).pin_memory() for _ in range(4)]
    times = []
    for i in range(steps):
        t0 = time.perf_counter()
        x = batches[i % 4].to(dev, non_blocking=True)
        y = labels[i % 4].to(dev, non_blocking=True)
        opt.zero_grad(set_to_none=True)
        loss = torch.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        loss.item()
        torch.cuda.synchronize()
        times.append(time.perf_counter() - t0)
    steady = times[20:]
    return {"step_s": statistics.median(steady), "steps": len(steady),
            "spread_s": [min(steady), max(steady)]}


def run(command):
    p = subprocess.run(command, capture_output=True, text=True, timeout=600)
    if p.returncode != 0:
        raise SystemExit(f"{command} exited {p.returncode}: {p.stderr[-2000:]}")
    return json.loads(p.stdout.strip().splitlines()[-1])


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--loop", action="store_true")
    ap.add_argument("--steps", type=int, default=300)
    ap.add_argument("--xferbench")
    ap.add_argument("--out")
    ap.add_argument("--machine", help="a sweep file to price with (no short measurement after each traced run)")
    ap.add_argument("--rounds", type=int, default=3)
    a = ap.parse_args()
    if a.loop:
        print(json.dumps(loop(a.steps)))
        return
    me = [sys.executable, __file__, "--loop", "--steps", str(a.steps)]
    plain, traced = [], []
    for r in range(a.rounds):
        plain.append(run(me))
        priced = ["--machine", a.machine] if a.machine else []
        traced.append(run([a.xferbench, "trace", "-q", "-o", a.out + f".trace-{r}.json", *priced, "--", *me]))
        print(f"round {r + 1}: plain {plain[-1]['step_s'] * 1e3:.3f} ms, traced {traced[-1]['step_s'] * 1e3:.3f} ms",
              flush=True)
    p = statistics.median(x["step_s"] for x in plain)
    t = statistics.median(x["step_s"] for x in traced)
    result = {"plain": plain, "traced": traced, "plain_step_s": p, "traced_step_s": t, "overhead": t / p - 1}
    with open(a.out, "w") as f:
        json.dump(result, f, indent=1)
    print(f"step: plain {p * 1e3:.3f} ms, traced {t * 1e3:.3f} ms: overhead {100 * (t / p - 1):+.2f}%")


if __name__ == "__main__":
    main()
