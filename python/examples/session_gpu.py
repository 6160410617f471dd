# The tutorial's GPU session (docs/python.md): torch and xferbench side by side
# on one CUDA device. Run from the repository root after the CMake build:
#   PYTHONPATH=python:build/python python3 python/examples/session_gpu.py
import time
import numpy as np, torch, xferbench
print(xferbench.cuda_status(), torch.cuda.get_device_name(0))
pool = xferbench.Pool("pinned", dlpack_device="cpu")      # torch takes host blocks labelled kDLCPU
block = pool.allocate(129_500_000, "uint8")              # torch's allocator would reserve 256 MiB here
t = torch.from_dlpack(block)                             # no copy: the tensor is the block
print(t.data_ptr() == block.ptr, t.is_pinned(), pool.stats()["reserved_bytes"])
del block, t                                             # the last reference: back to the pool
t0 = time.perf_counter(); again = pool.allocate(129_500_000, "uint8"); dt = time.perf_counter() - t0
print(f"re-acquired in {dt * 1e6:.1f} us, hits {pool.stats()['hits']}")
del again
src = torch.randint(0, 256, (256 << 20,), dtype=torch.uint8)   # pageable, as most CPU tensors are
dst = torch.empty_like(src, device="cuda")
copier = xferbench.Copier(0)                             # calibrated once per machine, then cached
print(copier.tuning)
def timed(f):
    torch.cuda.synchronize(); t0 = time.perf_counter(); f(); torch.cuda.synchronize()
    return time.perf_counter() - t0
copier.to_device(dst, src); _ = src.to("cuda")          # warm-up
s = min(timed(lambda: copier.to_device(dst, src)) for _ in range(5))
p = min(timed(lambda: src.to("cuda")) for _ in range(5))
print(f"256 MiB pageable -> cuda: staged {src.nbytes / s / 1e9:.1f} GB/s, .to('cuda') {src.nbytes / p / 1e9:.1f} GB/s")
print(torch.equal(dst.cpu(), src))
stream = torch.cuda.Stream()
with torch.cuda.stream(stream):
    dst.fill_(7)                                         # queued on `stream`
back = np.empty(src.numel(), np.uint8)
xferbench.copy(back, dst, stream=stream)                 # waits for the fill first
print(int(back[0]), int(back[-1]))
try:
    xferbench.copy(dst, src.view(2, -1).t())             # a transposed view: not contiguous
except ValueError as e:
    print("ValueError:", e)
