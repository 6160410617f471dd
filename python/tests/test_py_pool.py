"""xferbench.Pool over host kinds: DLPack round trips with NumPy, the lifetime of
blocks held by arrays, the pool's books, and bad arguments."""

import gc

import pytest

np = pytest.importorskip("numpy")

import xferbench
from native_support import cuda_ready, requires_native

pytestmark = requires_native


def test_kinds_lists_host_kinds_and_cuda_kinds_only_when_compiled():
    kinds = xferbench.kinds()
    assert {"pageable", "aligned"} <= set(kinds)
    from xferbench._native_loader import _native
    assert ("pinned" in kinds) == bool(_native.cuda_compiled)
    assert "managed" not in kinds  # a device-side kind, not a host block


@pytest.mark.parametrize("kind", ["pageable", "aligned", "pageable-unaligned"])
def test_round_trip_through_numpy_shares_the_block(kind):
    pool = xferbench.Pool(kind)
    block = pool.allocate((3, 5), "float64")
    assert block.__dlpack_device__() == (1, 0)  # kDLCPU for a pageable kind
    assert block.nbytes == 3 * 5 * 8
    a = np.from_dlpack(block)
    assert a.shape == (3, 5) and a.dtype == np.float64
    assert a.ctypes.data == block.ptr  # no copy
    a[...] = np.arange(15).reshape(3, 5)
    b = np.from_dlpack(block)  # a second consumer sees the same bytes
    assert b[2, 4] == 14.0
    b[0, 0] = -1
    assert a[0, 0] == -1


@pytest.mark.parametrize("dtype", ["int8", "uint16", "int32", "uint64", "float16", "float32", "complex128", "bool",
                                   np.float32, np.dtype("int64")])
def test_dtypes_arrive_as_asked(dtype):
    a = np.from_dlpack(xferbench.Pool("pageable").allocate(7, dtype))
    assert a.dtype == np.dtype(dtype) and a.shape == (7,)


def test_zero_size_and_scalar_shapes():
    pool = xferbench.Pool("pageable")
    assert np.from_dlpack(pool.allocate((0, 4), "float32")).shape == (0, 4)
    assert np.from_dlpack(pool.allocate((), "float32")).shape == ()


def test_empty_gives_a_numpy_array_from_the_pool():
    pool = xferbench.Pool("pageable")
    a = pool.empty((1000,), "float32")
    assert isinstance(a, np.ndarray) and a.shape == (1000,)
    assert pool.stats()["requested_bytes"] == 4000


def test_block_outlives_pool_object_and_returns_when_the_last_array_dies():
    pool = xferbench.Pool("pageable")
    stats = pool.stats  # keeps the books readable after the Pool object is dropped
    block = pool.allocate(4096, "uint8")
    a = np.from_dlpack(block)
    a[:] = 42
    view = a[10:20]
    del block, pool
    gc.collect()
    assert stats()["requested_bytes"] == 4096  # held by the arrays
    assert int(a.sum()) == 42 * 4096
    del a
    gc.collect()
    assert stats()["requested_bytes"] == 4096  # the view still refers to the block
    assert (view == 42).all()
    del view
    gc.collect()
    st = stats()
    assert st["requested_bytes"] == 0 and st["cached_bytes"] >= 4096


def test_books_hits_misses_and_rounding():
    pool = xferbench.Pool("pageable")
    size = 1_000_000
    a = pool.allocate(size)
    st = pool.stats()
    assert st["misses"] == 1 and st["hits"] == 0
    assert st["requested_bytes"] == size
    assert size <= st["handed_out_bytes"] < size * (1 + 1 / 16)  # classes 1/16 of a doubling apart
    assert st["rounding_waste_ratio"] < 1 / 16
    del a
    gc.collect()
    b = pool.allocate(size - 100)  # same class: served from the cache
    st = pool.stats()
    assert st["hits"] == 1 and st["misses"] == 1 and st["cached_bytes"] == 0
    del b


def test_cap_on_idle_bytes_sends_frees_upstream():
    pool = xferbench.Pool("pageable", max_cached_bytes=0)
    assert pool.max_cached_bytes == 0
    del_me = pool.allocate(10_000)
    del del_me
    gc.collect()
    st = pool.stats()
    assert st["cached_bytes"] == 0 and st["upstream_frees"] == 1 and st["reserved_bytes"] == 0


def test_trim_returns_idle_blocks():
    pool = xferbench.Pool("pageable")
    assert pool.max_cached_bytes is None
    x = pool.allocate(10_000)
    del x
    gc.collect()
    assert pool.stats()["cached_bytes"] > 0
    pool.trim()
    assert pool.stats()["cached_bytes"] == 0 and pool.stats()["reserved_bytes"] == 0


def test_closed_pool_refuses_and_live_blocks_return_upstream():
    with xferbench.Pool("pageable") as pool:
        live = np.from_dlpack(pool.allocate(5000))
        idle = pool.allocate(7000)
        del idle
        gc.collect()
    assert pool.closed
    assert pool.stats()["cached_bytes"] == 0  # close() trimmed the idle block
    with pytest.raises(xferbench.PoolClosedError, match="closed"):
        pool.allocate(10)
    pool.close()  # twice is harmless
    live[:] = 1  # still usable
    del live
    gc.collect()
    assert pool.stats()["reserved_bytes"] == 0  # not cached: the pool is closed


@pytest.mark.parametrize("kwargs, match", [
    (dict(kind="no-such-kind"), "unknown memory kind 'no-such-kind'"),
    (dict(kind=3), "kind must be a string"),
    (dict(kind="pageable", max_cached_bytes=-1), "must not be negative"),
    (dict(kind="pageable", max_cached_bytes=1.5), "must be an int or None"),
    (dict(kind="pageable", api="opencl"), "api must be"),
    (dict(kind="pageable", dlpack_device="cuda"), "dlpack_device must be"),
])
def test_bad_pool_arguments_raise_value_error(kwargs, match):
    with pytest.raises(ValueError, match=match):
        xferbench.Pool(**kwargs)


@pytest.mark.parametrize("shape, dtype, match", [
    ((-1, 2), "uint8", "negative"),
    ("abc", "uint8", "shape must be"),
    (4, "U10", "unsupported dtype"),
    (4, "no-such-type", "unsupported dtype"),
    ((1 << 40, 1 << 40), "float64", "overflows"),
])
def test_bad_allocation_arguments_raise_value_error(shape, dtype, match):
    with pytest.raises(ValueError, match=match):
        xferbench.Pool("pageable").allocate(shape, dtype)


def test_refused_allocation_raises_allocation_error_and_leaks_nothing():
    pool = xferbench.Pool("pageable")
    with pytest.raises(xferbench.AllocationError) as e:
        pool.allocate(1 << 62)  # 4 EiB: malloc refuses
    assert isinstance(e.value, MemoryError)
    assert str(1 << 62) in str(e.value) or "bytes" in str(e.value)
    assert pool.stats()["reserved_bytes"] == 0


def test_numpy_takes_cuda_host_blocks_and_refuses_device_ones():
    # NumPy's from_dlpack accepts kDLCUDAHost (pinned host memory is CPU memory)
    # and refuses kDLCUDA: what a pinned Pool's blocks rely on.
    from xferbench._native_loader import _native
    block = xferbench.Pool("pageable").allocate(16, "uint8")
    pinned_like = _native._export_as(block, 3)
    assert pinned_like.__dlpack_device__() == (3, 0)
    a = np.from_dlpack(pinned_like)
    a[:] = 5
    assert (np.from_dlpack(block) == 5).all()
    # NumPy 2.4 raises RuntimeError here, the GPU machine's NumPy BufferError.
    with pytest.raises((RuntimeError, BufferError), match="Unsupported device"):
        np.from_dlpack(_native._export_as(block, 2))


@pytest.mark.skipif(cuda_ready(), reason="CUDA is available here")
def test_cuda_kind_without_cuda_raises_cuda_unavailable():
    if "pinned" not in xferbench.kinds():
        with pytest.raises(ValueError, match="unknown memory kind"):
            xferbench.Pool("pinned")
    else:
        with pytest.raises(xferbench.CudaUnavailableError, match="pinned"):
            xferbench.Pool("pinned")


@pytest.mark.skipif(not cuda_ready(), reason="no CUDA device here")
@pytest.mark.parametrize("kind", ["pinned", "pinned-wc", "registered", "mapped"])
def test_pinned_kinds_export_cuda_host_blocks(kind):
    pool = xferbench.Pool(kind, max_cached_bytes=64 << 20)
    assert pool.pinned
    block = pool.allocate((256, 1024), "float32")
    assert block.__dlpack_device__() == (3, 0)
    a = np.from_dlpack(block)
    a[:] = 3.0
    assert a[255, 1023] == 3.0
    del a, block
    gc.collect()
    again = pool.allocate((256, 1024), "float32")  # re-acquired from the cache
    assert pool.stats()["hits"] == 1
    del again


def test_consumer_may_ask_for_cpu_device():
    block = xferbench.Pool("pageable").allocate(8, "uint8")
    a = np.from_dlpack(block, device="cpu")  # passes dl_device=(kDLCPU, 0)
    assert a.ctypes.data == block.ptr


@pytest.mark.skipif(not cuda_ready(), reason="no CUDA device here")
def test_pinned_block_asked_for_as_cpu_is_the_same_memory():
    pool = xferbench.Pool("pinned")
    block = pool.allocate(64, "uint8")
    assert block.__dlpack_device__() == (3, 0)
    assert np.from_dlpack(block, device="cpu").ctypes.data == block.ptr
    cpu_pool = xferbench.Pool("pinned", dlpack_device="cpu")
    assert cpu_pool.allocate(8).__dlpack_device__() == (1, 0)
