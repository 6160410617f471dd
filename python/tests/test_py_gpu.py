"""The Python package on a GPU (the GPU machine's gate; skipped elsewhere): pinned
pool blocks in torch, and staged copies between pageable and pool memory and CUDA
tensors, data verified."""

import gc

import pytest

np = pytest.importorskip("numpy")

import xferbench
from native_support import cuda_ready, requires_native

torch = pytest.importorskip("torch")
pytestmark = [
    requires_native,
    pytest.mark.skipif(not cuda_ready(), reason="no CUDA device here (xferbench.cuda_status())"),
    pytest.mark.skipif(not torch.cuda.is_available(), reason="torch has no CUDA here"),
]

N = (8 << 20) + 4099  # several 8 MiB chunks and a tail, above the handoff


def test_pinned_block_in_torch_is_pinned_and_shared():
    # torch 2.x refuses kDLCUDAHost (BufferError "Unsupported device_type: 3" on
    # the GPU machine), and NumPy re-exports an imported block with its device
    # type: so torch gets the block as kDLCPU, which pinned host memory also is.
    pool = xferbench.Pool("pinned", dlpack_device="cpu")
    block = pool.allocate(1024, "float32")
    t = torch.from_dlpack(block)
    t[:] = 2.5
    assert t.data_ptr() == block.ptr, "torch copied the block"
    # torch asks CUDA about the pointer only once its own CUDA state is up
    # (a program moving tensors to the GPU has it); the answer before is
    # kept in the message, to say which way it failed at 146991a.
    before = t.is_pinned()
    torch.cuda.init()
    assert t.is_pinned(), f"torch does not see the block as pinned (before torch.cuda.init(): {before})"
    assert float(np.from_dlpack(block).sum()) == 2.5 * 1024


@pytest.mark.parametrize("source", ["pageable", "pool"])
def test_copy_to_cuda_and_back(source):
    src = torch.randint(0, 255, (N,), dtype=torch.uint8)
    if source == "pool":
        pooled = np.from_dlpack(xferbench.Pool("pinned").allocate(N, "uint8"))
        pooled[:] = src.numpy()
        src_arr = pooled
    else:
        src_arr = src.numpy()
    dev = torch.empty(N, dtype=torch.uint8, device="cuda")
    xferbench.copy(dev, src_arr)
    assert torch.equal(dev.cpu(), src)
    back = np.zeros(N, np.uint8)
    xferbench.copy(back, dev)
    assert np.array_equal(back, src.numpy())


def test_copy_waits_for_the_callers_stream():
    s = torch.cuda.Stream()
    dev = torch.empty(N, dtype=torch.uint8, device="cuda")
    with torch.cuda.stream(s):
        dev.fill_(9)  # queued on s
        back = np.zeros(N, np.uint8)
        xferbench.copy(back, dev, stream=s)
    assert (back == 9).all()


def test_a_stream_of_another_device_is_refused():
    class OtherDevice:  # CuPy's spelling of a stream's device; torch's is .device.index
        device_id = 7
        ptr = 0
    c = xferbench.Copier(0, threads=2)
    with pytest.raises(ValueError, match="device 7"):
        c.to_device(torch.empty(4, device="cuda"), np.zeros(4, np.float32), stream=OtherDevice())
    c.to_device(torch.empty(4, device="cuda"), np.zeros(4, np.float32), stream=torch.cuda.current_stream())


def test_device_array_where_host_memory_is_required():
    dev = torch.zeros(16, dtype=torch.uint8, device="cuda")
    copier = xferbench.Copier(0)
    with pytest.raises(ValueError, match="must be host memory"):
        copier.to_device(dev, torch.zeros(16, dtype=torch.uint8, device="cuda"))


def test_device_to_device_is_refused():
    a = torch.zeros(4, device="cuda")
    with pytest.raises(ValueError, match="device-to-device"):
        xferbench.copy(a, torch.ones(4, device="cuda"))


def test_pinned_blocks_are_not_leaked():
    pool = xferbench.Pool("pinned", max_cached_bytes=0)
    for _ in range(3):
        a = np.from_dlpack(pool.allocate(1 << 20))
        del a
        gc.collect()
    assert pool.stats()["reserved_bytes"] == 0


@pytest.mark.parametrize("n", [N, 1000])  # staged; under the handoff (still on the stream)
def test_non_blocking_copy_overlaps_a_torch_op_on_the_stream(n):
    # copy in -> torch op -> copy out, all queued on s with no host synchronization
    # between: the op reads dev while the copier may still be filling it, so only
    # the stream's wait for the copy makes it see the copied bytes.
    s = torch.cuda.Stream()
    src = np.random.default_rng(n).integers(0, 200, n, dtype=np.uint8)
    dev = torch.zeros(n, dtype=torch.uint8, device="cuda")
    torch.cuda.synchronize()
    with torch.cuda.stream(s):
        torch.cuda._sleep(50_000_000)  # the stream busy first: the copy must wait for it too
        h_in = xferbench.copy(dev, src, stream=s, non_blocking=True)
        out = dev + 1  # queued on s
        back = np.zeros(n, np.uint8)
        h_out = xferbench.copy(back, out, stream=s, non_blocking=True)
    h_out.wait()
    h_in.wait()
    assert h_in.ready() and h_out.ready()
    assert np.array_equal(back, src + 1)
    s.synchronize()  # let go: a held stream would never finish


def test_non_blocking_copy_on_the_default_stream_and_an_int_handle():
    src = np.arange(N, dtype=np.uint8)
    dev = torch.zeros(N, dtype=torch.uint8, device="cuda")
    h = xferbench.copy(dev, src, non_blocking=True)  # None: the legacy default stream
    doubled = dev * 2  # torch's default stream
    h.wait()
    assert torch.equal(doubled.cpu(), torch.from_numpy(src) * 2)
    s = torch.cuda.Stream()
    c = xferbench.Copier(0, threads=2)
    back = np.zeros(N, np.uint8)
    c.to_host(back, doubled, stream=s.cuda_stream, non_blocking=True).wait()
    assert np.array_equal(back, src * 2)


def test_non_blocking_copy_with_a_cupy_stream():
    cupy = pytest.importorskip("cupy")
    s = cupy.cuda.Stream(non_blocking=True)
    src = np.arange(N, dtype=np.uint8)
    dev = cupy.zeros(N, dtype=cupy.uint8)
    cupy.cuda.Device().synchronize()
    h = xferbench.copy(dev, src, stream=s, non_blocking=True)
    with s:
        out = dev + 3
    back = np.zeros(N, np.uint8)
    xferbench.copy(back, out, stream=s, non_blocking=True).wait()
    h.wait()
    assert np.array_equal(back, src + 3)


def test_non_blocking_copy_refuses_another_devices_stream():
    class OtherDevice:
        device_id = 7
        ptr = 0
    with pytest.raises(ValueError, match="device 7"):
        xferbench.Copier(0, threads=2).to_device(torch.empty(4, device="cuda"), np.zeros(4, np.float32),
                                                 stream=OtherDevice(), non_blocking=True)
