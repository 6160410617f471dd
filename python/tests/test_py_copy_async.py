"""xferbench.copy(..., non_blocking=True) and Copier's non-blocking form through the
host step (its "device memory" is host memory, so the whole path runs here): the
handle, the arrays it keeps alive, its errors. On a GPU with torch: test_py_gpu.py."""

import gc

import pytest

np = pytest.importorskip("numpy")

import xferbench
from native_support import requires_native

pytestmark = requires_native

SMALL = dict(chunk_bytes=64 << 10, ring_depth=4, threads=2, handoff_bytes=16 << 10)
N = 3 << 20 | 12345  # many chunks and a tail


@pytest.fixture(scope="module")
def copier():
    return xferbench.Copier("host", **SMALL)


@pytest.mark.parametrize("n", [1000, N])  # below the handoff (still through the pipeline), many chunks
def test_round_trip_returns_handles(copier, n):
    src = np.random.default_rng(n).integers(0, 255, n, dtype=np.uint8)
    dev, back = np.zeros_like(src), np.full_like(src, 7)
    h = copier.to_device(dev, src, stream=None, non_blocking=True)
    assert isinstance(h, xferbench.CopyHandle) and h.nbytes == n
    h.wait()
    assert h.ready()
    h2 = copier.to_host(back, dev, stream=1234, non_blocking=True)  # an int handle: held by nothing on the host step
    h2.wait()
    assert np.array_equal(dev, src) and np.array_equal(back, src)


def test_blocking_form_is_still_the_default(copier):
    src = np.arange(N, dtype=np.uint8)
    dev = np.zeros_like(src)
    assert copier.to_device(dev, src) is None
    assert np.array_equal(dev, src)


def test_handle_keeps_its_arrays_alive(copier):
    src = np.random.default_rng(1).integers(0, 255, N, dtype=np.uint8)
    want = src.copy()
    dev = np.zeros_like(src)
    h = copier.to_device(dev, src, non_blocking=True)
    del src
    gc.collect()
    h.wait()
    assert np.array_equal(dev, want)


def test_dropped_handle_still_completes(copier):
    src = np.random.default_rng(2).integers(0, 255, N, dtype=np.uint8)
    dev = np.zeros_like(src)
    copier.to_device(dev, src, non_blocking=True)  # dropped at once: it waits as it goes
    gc.collect()
    assert np.array_equal(dev, src)


def test_copy_non_blocking_host_to_host_is_done_at_once():
    src = np.arange(100, dtype=np.uint8)
    dst = np.zeros_like(src)
    h = xferbench.copy(dst, src, non_blocking=True)
    assert h.ready()
    h.wait()
    assert np.array_equal(dst, src)


def test_bad_arguments_raise_before_anything_is_queued(copier):
    with pytest.raises(ValueError, match="sizes differ"):
        copier.to_device(np.zeros(8, np.uint8), np.zeros(4, np.uint8), non_blocking=True)
    with pytest.raises(ValueError, match="stream must be"):
        copier.to_device(np.zeros(4, np.uint8), np.zeros(4, np.uint8), stream="default", non_blocking=True)
    read_only = np.zeros(4, np.uint8)
    read_only.setflags(write=False)
    with pytest.raises(TypeError, match="read-only"):
        copier.to_host(read_only, np.zeros(4, np.uint8), non_blocking=True)
    # Usable afterwards.
    src = np.arange(64, dtype=np.uint8)
    dev = np.zeros_like(src)
    copier.to_device(dev, src, non_blocking=True).wait()
    assert np.array_equal(dev, src)


def test_empty_arrays_give_a_ready_handle(copier):
    h = copier.to_device(np.zeros(0, np.uint8), np.zeros(0, np.uint8), non_blocking=True)
    assert h.ready() and h.nbytes == 0
    h.wait()
