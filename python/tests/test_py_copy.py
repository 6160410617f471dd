"""xferbench.copy and Copier: the staged pipeline through the host step (its
"device memory" is host memory, so it runs here), argument checks, and CUDA's
absence. GPU copies run on the GPU machine only (test_py_gpu.py)."""

import pytest

np = pytest.importorskip("numpy")

import xferbench
from native_support import cuda_ready, requires_native

pytestmark = requires_native

SMALL = dict(chunk_bytes=64 << 10, ring_depth=4, threads=2, handoff_bytes=16 << 10)


@pytest.fixture(scope="module")
def copier():
    return xferbench.Copier("host", **SMALL)


@pytest.mark.parametrize("n", [0, 1000, 3 << 20 | 12345])  # empty, below the handoff, many chunks and a tail
def test_host_copier_round_trip(copier, n):
    rng = np.random.default_rng(n)
    src = rng.integers(0, 255, n, dtype=np.uint8)
    dev = np.zeros_like(src)
    copier.to_device(dev, src)
    back = np.full_like(src, 7)
    copier.to_host(back, dev)
    assert np.array_equal(dev, src) and np.array_equal(back, src)


def test_host_copier_reports_its_tuning(copier):
    want = {k: v for k, v in SMALL.items() if k != "handoff_bytes"}
    want.update(handoff_to_device_bytes=SMALL["handoff_bytes"], handoff_to_host_bytes=SMALL["handoff_bytes"])
    assert copier.tuning == want
    assert copier.device == "host"


def test_a_copier_without_overrides_runs_the_calibration(tmp_path):
    # In a process of its own, so no earlier copier has the tuning cached in
    # memory: the calibration runs and its pick lands in the cache file;
    # calibrate=False leaves the file alone and gives libxfer's defaults.
    import json, os, subprocess, sys
    cache = tmp_path / "tuning"
    code = ("import json, xferbench; c = xferbench.Copier('host', calibrate={}, cache={!r}); "
            "print(json.dumps([c.tuning, xferbench.settings()]))")
    plain, said = json.loads(subprocess.run([sys.executable, "-c", code.format(False, str(cache))], check=True,
                                            capture_output=True, text=True).stdout)
    assert not cache.exists(), "calibrate=False must not calibrate"
    assert plain["threads"] >= 4 and plain["chunk_bytes"] == 8 << 20
    staged = {s["name"]: s for s in said["settings"] if s["component"] == "staged" and s["scope"]}
    assert staged["chunk_bytes"]["source"] == "default"
    tuned, said = json.loads(subprocess.run([sys.executable, "-c", code.format(True, str(cache))], check=True,
                                            capture_output=True, text=True).stdout)
    header, entry = cache.read_text().strip().split("\n")
    assert header == "xfer staged-tuning cache, schema 3"
    key, machine, fields = entry.split("\t")
    assert key.endswith("/host/host") and machine.endswith("; no driver"), entry
    assert [int(x) for x in fields.split()[:3]] == [tuned["chunk_bytes"], tuned["ring_depth"], tuned["threads"]]
    staged = {s["name"]: s for s in said["settings"] if s["component"] == "staged" and s["scope"] == key}
    assert staged["threads"]["source"] == "calibration" and staged["threads"]["value"] == str(tuned["threads"])
    # The next program reads it, and says so; an entry made on another machine is not used.
    _, said = json.loads(subprocess.run([sys.executable, "-c", code.format(True, str(cache))], check=True,
                                        capture_output=True, text=True).stdout)
    staged = {s["name"]: s for s in said["settings"] if s["component"] == "staged" and s["scope"] == key}
    assert staged["threads"]["source"] == "cache" and staged["threads"]["origin"] == str(cache)
    cache.write_text(f"{header}\n{key}\tanother CPU; no driver\t{fields}\n")
    _, said = json.loads(subprocess.run([sys.executable, "-c", code.format(True, str(cache))], check=True,
                                        capture_output=True, text=True).stdout)
    staged = {s["name"]: s for s in said["settings"] if s["component"] == "staged" and s["scope"] == key}
    assert staged["threads"]["source"] == "calibration"
    assert len(said["notices"]) == 1 and "another machine" in said["notices"][0], said["notices"]


@pytest.mark.parametrize("target", ["fifo", "directory", "large", "null-device"])
def test_a_cache_that_is_not_a_small_regular_file_is_left_as_it_is(tmp_path, target):
    # Issue 49: the cache was written through a temporary renamed over whatever it named (a
    # device node became a 43-byte file, a FIFO blocked each copy 30 s). Now a FIFO, a directory
    # or a file too large to be a cache is ignored with one line and left as it is, and a null
    # device means "no cache" (a node of its own as root, else the system's, which only root
    # could replace).
    import os, stat, subprocess, sys
    path = tmp_path / target
    if target == "fifo":
        os.mkfifo(path)
    elif target == "directory":
        path.mkdir()
    elif target == "large":
        path.write_bytes(b"x" * (2 << 20))
    elif os.geteuid() == 0:
        os.mknod(path, stat.S_IFCHR | 0o666, os.makedev(1, 3))
    else:
        path = "/dev/null"
    before = os.lstat(path)
    code = f"import xferbench; c = xferbench.Copier('host', calibrate=True, cache={str(path)!r}); print(c.tuning)"
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    after = os.lstat(path)
    assert (stat.S_IFMT(after.st_mode), after.st_rdev, after.st_size) == \
        (stat.S_IFMT(before.st_mode), before.st_rdev, before.st_size)
    said = [line for line in p.stderr.splitlines() if line.startswith("xfer: cache ")]
    assert len(said) == (0 if target == "null-device" else 1), p.stderr
    assert not [n for n in os.listdir(tmp_path) if n.endswith(".tmp")]


def test_copy_into_a_pool_block():
    pool = xferbench.Pool("pageable")
    dst = np.from_dlpack(pool.allocate((64, 64), "float32"))
    src = np.arange(64 * 64, dtype=np.float32).reshape(64, 64)
    xferbench.copy(dst, src)
    assert np.array_equal(dst, src)


def test_copy_accepts_buffer_protocol_objects():
    dst = bytearray(5)
    xferbench.copy(dst, np.frombuffer(b"hello", dtype=np.uint8))
    assert dst == bytearray(b"hello")


@pytest.mark.parametrize("dst, src, match", [
    (np.zeros(10, np.float32), np.zeros(11, np.float32), "sizes differ"),
    (np.zeros(10, np.float32), np.zeros(10, np.int32), "dtypes differ: dst is float32, src is int32"),
    (np.zeros(10, np.float32), np.zeros(20, np.float32)[::2], "src is not C-contiguous"),
    (np.zeros((4, 4), np.float32).T, np.zeros((4, 4), np.float32), "dst is not C-contiguous"),
])
def test_bad_pairs_raise_value_error(copier, dst, src, match):
    with pytest.raises(ValueError, match=match):
        xferbench.copy(dst, src)
    with pytest.raises(ValueError, match=match):
        copier.to_device(dst, src)


def test_read_only_destination_and_non_arrays_raise_type_error(copier):
    ro = np.zeros(4, np.uint8)
    ro.flags.writeable = False
    with pytest.raises(TypeError):
        copier.to_device(ro, np.zeros(4, np.uint8))
    with pytest.raises(TypeError, match="not an array"):
        xferbench.copy(object(), np.zeros(4))


def test_device_memory_where_host_memory_is_required(copier):
    # An array labelled as CUDA memory (kDLCUDA) is refused by the host copier
    # before anything is touched.
    from xferbench._native_loader import _native
    block = xferbench.Pool("pageable").allocate(64, "uint8")
    fake_device = _native._export_as(block, 2)
    with pytest.raises(ValueError, match="must be host memory"):
        copier.to_device(fake_device, np.zeros(64, np.uint8))
    with pytest.raises(ValueError, match="must be host memory"):
        copier.to_host(np.zeros(64, np.uint8), fake_device)


@pytest.mark.parametrize("kwargs, match", [
    (dict(device=-1), "device must be"),
    (dict(device="cuda"), "device must be"),
    (dict(device="host", api="metal"), "api must be"),
    (dict(device="host", chunk_bytes=0), "chunk_bytes must be a positive int"),
    (dict(device="host", threads=1000), "threads"),
])
def test_bad_copier_arguments(kwargs, match):
    with pytest.raises(ValueError, match=match):
        xferbench.Copier(**kwargs)


def test_bad_stream_argument(copier):
    with pytest.raises(ValueError, match="stream must be"):
        copier.to_device(np.zeros(4, np.uint8), np.zeros(4, np.uint8), stream="default")


@pytest.mark.skipif(cuda_ready(), reason="CUDA is available here")
def test_without_cuda_device_copies_raise_cuda_unavailable():
    n, why = xferbench.cuda_status()
    assert n == 0 and why
    assert not xferbench.cuda_available()
    with pytest.raises(xferbench.CudaUnavailableError):
        xferbench.Copier(0)
    from xferbench._native_loader import _native
    device_array = _native._export_as(xferbench.Pool("pageable").allocate(8, "uint8"), 2)
    with pytest.raises(xferbench.CudaUnavailableError):
        xferbench.copy(device_array, np.zeros(8, np.uint8))


def test_copiers_of_several_devices_share_one_budget_copying_at_once(monkeypatch):
    # Three "devices" (host copiers) copying at once from threads of their
    # own, on the process's one staging budget: every byte arrives.
    import threading
    monkeypatch.delenv("XFER_STAGED_SHARED", raising=False)
    copiers = [xferbench.Copier("host", **SMALL) for _ in range(3)]
    assert all(c.shared for c in copiers)
    failures = []

    def device(i):
        try:
            src = np.random.default_rng(i).integers(0, 255, (2 << 20) + 77 * i, dtype=np.uint8)
            dev, back = np.zeros_like(src), np.zeros_like(src)
            for _ in range(3):
                copiers[i].to_device(dev, src)
                copiers[i].to_host(back, dev)
                assert np.array_equal(back, src), f"device {i}"
        except Exception as e:  # noqa: BLE001 - reported below, on the test's thread
            failures.append(e)

    threads = [threading.Thread(target=device, args=(i,)) for i in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not failures


def test_a_copier_reports_the_team_its_pieces_run_on(monkeypatch):
    monkeypatch.delenv("XFER_STAGED_SHARED", raising=False)
    monkeypatch.delenv("XFER_STAGED_BUDGET_THREADS", raising=False)
    assert xferbench.Copier("host", shared=False, **SMALL).team_threads == SMALL["threads"]
    a, b = xferbench.Copier("host", **SMALL), xferbench.Copier("host", **SMALL)
    # Shared: the budget's team, at least the copier's own (earlier copies at once may have grown it).
    assert a.team_threads == b.team_threads >= SMALL["threads"]


def test_a_copier_can_keep_a_team_of_its_own(monkeypatch):
    monkeypatch.delenv("XFER_STAGED_SHARED", raising=False)
    own = xferbench.Copier("host", shared=False, **SMALL)
    assert not own.shared
    monkeypatch.setenv("XFER_STAGED_SHARED", "0")
    assert not xferbench.Copier("host", **SMALL).shared
    monkeypatch.setenv("XFER_STAGED_SHARED", "yes")
    with pytest.raises(ValueError, match="XFER_STAGED_SHARED=yes: expected 0 or 1"):
        xferbench.Copier("host", **SMALL)
    src = np.arange(1 << 20, dtype=np.uint8)
    dev = np.zeros_like(src)
    own.to_device(dev, src)
    assert np.array_equal(dev, src)
