import numpy as np, xferbench
print(xferbench.kinds())
print(xferbench.cuda_status())
pool = xferbench.Pool("pageable", max_cached_bytes=256 << 20)
block = pool.allocate((1024, 1024), "float32")
print(block.__dlpack_device__(), block.nbytes)
a = np.from_dlpack(block)
a[:] = 1.0
del block                      # the array keeps the block
print(pool.stats()["requested_bytes"])
del a                          # the last reference: back to the pool
print(pool.stats()["cached_bytes"], pool.stats()["hits"], pool.stats()["misses"])
b = pool.empty((1024, 1024), "float32")   # served from the cache
print(pool.stats()["hits"])
copier = xferbench.Copier("host")        # the staged pipeline, host step
src = np.random.default_rng(0).random(1 << 22)
dst = np.empty_like(src)
copier.to_device(dst, src)
print(np.array_equal(dst, src), copier.tuning)
try:
    xferbench.Pool("pinned")
except xferbench.CudaUnavailableError as e:
    print("CudaUnavailableError:", e)
recs = xferbench.load("python/tests/data/host_small.json")
print(type(recs).__name__, len(recs), recs[0]["backend"], recs[0]["bytes"], round(recs[0]["gbps"], 3))
