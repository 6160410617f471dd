# The tutorial's asynchronous copy (docs/python.md): staged copies queued on torch
# streams, overlapping a kernel, with no host thread waiting between the steps.
# Run on a GPU machine from the repository root after the CMake build:
#   PYTHONPATH=python:build/python python3 python/examples/async_overlap.py
import numpy as np, torch, xferbench

n = 4096
rng = np.random.default_rng(0)
batches = [rng.standard_normal((n, n), dtype=np.float32) for _ in range(4)]  # pageable, 64 MiB each
w = torch.randn(n, n, device="cuda")
torch.cuda.synchronize()

# 1. copy -> kernel -> copy on one stream: each call returns at once; the matmul
#    waits on the GPU for the copy in, the copy out for the matmul.
s = torch.cuda.Stream()
x = torch.empty(n, n, device="cuda")
y = np.empty((n, n), np.float32)
with torch.cuda.stream(s):
    h_in = xferbench.copy(x, batches[0], stream=s, non_blocking=True)
    out = x @ w
    h_out = xferbench.copy(y, out, stream=s, non_blocking=True)
print("queued; ready:", h_in.ready(), h_out.ready())
h_in.wait(); h_out.wait()                                # raise CopyError if either failed
print("max error:", float(np.abs(y - (torch.from_numpy(batches[0]).cuda() @ w).cpu().numpy()).max()))

# 2. Overlap: batch i+1 moves in on the copy stream while the matmul of batch i
#    runs on the compute stream. Two device buffers take turns.
copy_s, compute_s = torch.cuda.Stream(), torch.cuda.Stream()
slots = [torch.empty(n, n, device="cuda") for _ in range(2)]
results, handles = [], []
for i, b in enumerate(batches):
    slot = slots[i % 2]
    copy_s.wait_stream(compute_s)                        # the slot's last matmul has read it
    handles.append(xferbench.copy(slot, b, stream=copy_s, non_blocking=True))
    compute_s.wait_stream(copy_s)                        # this matmul waits for this copy only
    with torch.cuda.stream(compute_s):
        results.append((slot @ w).sum())
for h in handles:
    h.wait()
torch.cuda.synchronize()
want = [float((torch.from_numpy(b).cuda() @ w).sum()) for b in batches]
print("batches agree:", all(abs(float(r) - x) <= 1e-3 * abs(x) + 1 for r, x in zip(results, want)))
