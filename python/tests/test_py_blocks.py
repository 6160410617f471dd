"""xferbench.copy_blocks and BlockCopier (issue 38) on host arrays: the host step's
"device memory" is host memory, so every way, the choice and every refusal run here.
GPU copies run on the GPU machine (tests/cuda/blocks_test.cpp)."""

import zlib

import pytest

np = pytest.importorskip("numpy")

import xferbench
from native_support import requires_native

pytestmark = requires_native


@pytest.fixture(autouse=True)
def no_cache_file(monkeypatch):
    # Calibrations stay in the process: no test writes ~/.cache.
    monkeypatch.setenv("XFER_BLOCKS_CACHE", "off")
    monkeypatch.delenv("XFER_BLOCKS_WAY", raising=False)
    monkeypatch.delenv("XFER_BLOCKS_POLICY", raising=False)


def random_mapping(rng, n, src_blocks, dst_blocks):
    src = rng.choice(src_blocks, size=n, replace=n > src_blocks)
    dst = rng.choice(dst_blocks, size=n, replace=False)
    return np.stack([src, dst], axis=1).astype(np.int64)


def expected(dst, src, mapping):
    out = dst.copy()
    for s, d in mapping:
        out[d] = src[s]
    return out


@pytest.mark.parametrize("way", [None, "loop", "batch", "pack"])
@pytest.mark.parametrize("shape", [(64, 16), (40, 3, 5), (33, 4096)])
def test_copy_blocks_moves_random_mappings(way, shape):
    rng = np.random.default_rng(zlib.crc32(repr((way, shape)).encode()))
    src = rng.integers(0, 1 << 30, size=shape, dtype=np.int32)
    dst = rng.integers(0, 1 << 30, size=(shape[0] + 7,) + shape[1:], dtype=np.int32)
    mapping = random_mapping(rng, shape[0] // 2 + 1, shape[0], dst.shape[0])
    want = expected(dst, src, mapping)
    copier = xferbench.BlockCopier("host", way=way, calibrate=way is None)
    used = copier.copy(dst, src, mapping)
    assert used in xferbench._blocks.WAYS and (way is None or used == way)
    assert np.array_equal(dst, want)


def test_copy_blocks_function_on_host_arrays_in_both_roles():
    rng = np.random.default_rng(38)
    a = rng.standard_normal((100, 8)).astype(np.float32)
    b = np.zeros((50, 8), np.float32)
    m = random_mapping(rng, 50, 100, 50)
    xferbench.copy_blocks(b, a, m)
    assert np.array_equal(b, expected(np.zeros_like(b), a, m))
    back = np.zeros_like(a)
    m2 = m[:, ::-1].copy()  # the reverse mapping, made contiguous
    xferbench.copy_blocks(back, b, m2)
    assert np.array_equal(back[m[:, 0]], a[m[:, 0]])


@pytest.mark.parametrize("layout", ["contiguous", "columns reversed", "every other row", "fortran"])
def test_mappings_of_any_layout_move_their_pairs(layout):
    # The native module copies a C-contiguous mapping's rows at once and any other pair by
    # pair: both must read the same pairs.
    rng = np.random.default_rng(zlib.crc32(layout.encode()))
    src = rng.integers(0, 1 << 30, size=(64, 5), dtype=np.int64)
    pairs = random_mapping(rng, 24, 64, 40)
    mapping = {"contiguous": pairs,
               "columns reversed": pairs[:, ::-1].copy()[:, ::-1],
               "every other row": np.repeat(pairs, 2, axis=0)[::2],
               "fortran": np.asfortranarray(pairs)}[layout]
    assert np.array_equal(mapping, pairs)
    dst = np.zeros((40, 5), np.int64)
    xferbench.BlockCopier("host", way="loop", calibrate=False).copy(dst, src, mapping)
    assert np.array_equal(dst, expected(np.zeros_like(dst), src, pairs))


def test_a_short_mapping_after_a_long_one_moves_only_its_pairs():
    # The pairs go through a buffer kept from call to call: the second call must not see
    # the first call's pairs beyond its own.
    rng = np.random.default_rng(5)
    src = rng.integers(0, 1 << 30, size=(300, 3), dtype=np.int32)
    copier = xferbench.BlockCopier("host", way="pack", calibrate=False)
    copier.copy(np.zeros((300, 3), np.int32), src, random_mapping(rng, 300, 300, 300))
    dst = np.zeros((300, 3), np.int32)
    copier.copy(dst, src, np.array([[7, 11]], np.int64))
    assert np.array_equal(dst, expected(np.zeros_like(dst), src, [(7, 11)]))


def test_the_kernel_way_refuses_pageable_memory():
    copier = xferbench.BlockCopier("host", way="kernel", calibrate=False)
    src, dst = np.ones((4, 4), np.uint8), np.zeros((4, 4), np.uint8)
    with pytest.raises(ValueError, match="way kernel was forced and cannot.*pageable"):
        copier.copy(dst, src, np.array([[0, 1]], np.int64))
    assert not dst.any()


def test_xfer_blocks_way_forces_and_is_checked(monkeypatch):
    src, dst = np.ones((4, 4), np.uint8), np.zeros((4, 4), np.uint8)
    monkeypatch.setenv("XFER_BLOCKS_WAY", "batch")
    assert xferbench.BlockCopier("host").copy(dst, src, np.array([[0, 1]], np.int64)) == "batch"
    monkeypatch.setenv("XFER_BLOCKS_WAY", "quick")
    with pytest.raises(ValueError, match="XFER_BLOCKS_WAY=quick: expected one of loop, batch, kernel, pack"):
        xferbench.BlockCopier("host")


def test_the_policy_is_taken_and_checked(monkeypatch):
    # Which way each policy picks from a ranking is the C++ tests' (blocks_test: the kernel way last
    # beside compute); here, that the argument and the variable reach the copier, and a bad one is refused.
    src, dst = np.ones((4, 4), np.uint8), np.zeros((4, 4), np.uint8)
    mapping = np.array([[0, 1], [2, 3]], np.int64)
    assert xferbench.BlockCopier("host", calibrate=False).policy == "alone"
    beside = xferbench.BlockCopier("host", calibrate=False, policy="beside_compute")
    assert beside.policy == "beside_compute"
    assert beside.copy(dst, src, mapping) == "pack"  # pageable: the fixed order's first, kernel refused anyway
    assert (dst[[1, 3]] == 1).all() and not dst[[0, 2]].any()
    monkeypatch.setenv("XFER_BLOCKS_POLICY", "beside_compute")
    assert xferbench.BlockCopier("host", calibrate=False).policy == "beside_compute"
    assert xferbench.BlockCopier("host", calibrate=False, policy="alone").policy == "alone"  # the argument first
    monkeypatch.setenv("XFER_BLOCKS_POLICY", "eager")
    with pytest.raises(ValueError, match="XFER_BLOCKS_POLICY=eager: expected alone or beside_compute"):
        xferbench.BlockCopier("host")
    monkeypatch.delenv("XFER_BLOCKS_POLICY")
    with pytest.raises(ValueError, match="policy must be one of alone, beside_compute or None, not 'fast'"):
        xferbench.BlockCopier("host", policy="fast")


BAD_MAPPINGS = [
    (np.array([[0, 1], [2, 1]], np.int64), r"pairs 0 and 1 both write destination block 1"),
    (np.array([[0, 0], [8, 1]], np.int64), r"pair 1 \(8 -> 1\): source block 8 is outside src's blocks 0 to 7"),
    (np.array([[0, 6]], np.int64), r"destination block 6 is outside dst's blocks 0 to 5"),
    (np.array([[-1, 0]], np.int64), r"source block -1 is outside"),
    (np.zeros((0, 2), np.int64), r"the block list is empty"),
    (np.array([0, 1], np.int64), r"mapping must have shape \[n, 2\]"),
    (np.array([[0, 1, 2]], np.int64), r"mapping must have shape \[n, 2\].*\[1, 3\]"),
    (np.array([[0, 1]], np.int32), r"mapping must be int64 \(it is int32\)"),
    (np.array([[0.0, 1.0]]), r"mapping must be int64 \(it is float64\)"),
    ([[0, 1]], r"mapping is not an array"),
]


@pytest.mark.parametrize("mapping,message", BAD_MAPPINGS)
def test_every_bad_mapping_is_a_value_error_and_moves_nothing(mapping, message):
    src = np.arange(8 * 4, dtype=np.float64).reshape(8, 4)
    dst = np.full((6, 4), -1.0)
    with pytest.raises(ValueError, match=message) as raised:
        xferbench.copy_blocks(dst, src, mapping)
    assert (dst == -1.0).all()
    # Two host arrays: the message names them as the call did, never a "device".
    assert "device" not in str(raised.value)


@pytest.mark.parametrize("dst_shape,src_shape,dtype_dst,message", [
    ((6, 3), (8, 4), np.float64, r"rows differ: dst's blocks are 24 bytes, src's 32 bytes"),
    ((6, 4), (8, 4), np.float32, r"rows differ"),
    ((6, 8), (8, 4), np.float32, r"dtypes differ: dst is float32, src is float64"),
    ((), (8, 4), np.float64, r"dst must have a first dimension of blocks"),
])
def test_rows_that_do_not_match_are_refused(dst_shape, src_shape, dtype_dst, message):
    src = np.arange(int(np.prod(src_shape)), dtype=np.float64).reshape(src_shape)
    dst = np.full(dst_shape, -1, dtype=dtype_dst)
    with pytest.raises(ValueError, match=message):
        xferbench.copy_blocks(dst, src, np.array([[0, 0]], np.int64))
    assert (dst == -1).all()


def test_a_non_contiguous_array_and_a_shared_array_are_refused():
    src = np.arange(64, dtype=np.int64).reshape(8, 8)
    dst = np.zeros((8, 8), np.int64)
    with pytest.raises(ValueError, match="src is not C-contiguous"):
        xferbench.copy_blocks(dst, src[:, ::2], np.array([[0, 0]], np.int64))
    with pytest.raises(ValueError, match="src and dst overlap"):
        xferbench.copy_blocks(src, src, np.array([[0, 1]], np.int64))
    assert not dst.any() and src[1, 0] == 8


def test_arguments_of_the_wrong_kind():
    with pytest.raises(ValueError, match="way must be one of"):
        xferbench.BlockCopier("host", way="fast")
    with pytest.raises(ValueError, match="device must be"):
        xferbench.BlockCopier(-2)
    with pytest.raises(TypeError, match="dst is read-only"):
        ro = np.zeros((2, 2))
        ro.setflags(write=False)
        xferbench.copy_blocks(ro, np.zeros((2, 2)), np.array([[0, 0]], np.int64))
    with pytest.raises(ValueError, match="stream must be"):
        xferbench.copy_blocks(np.zeros((2, 2)), np.ones((2, 2)), np.array([[0, 0]], np.int64), stream="s")


def test_a_read_only_source_and_a_strided_mapping_are_taken():
    src = np.arange(40, dtype=np.float32).reshape(10, 4)
    src.setflags(write=False)
    dst = np.zeros((6, 4), np.float32)
    reversed_view = np.array([[0, 1], [5, 9], [2, 3]], np.int64)[:, ::-1]  # (1, 0), (9, 5), (3, 2)
    xferbench.copy_blocks(dst, src, reversed_view)
    assert np.array_equal(dst, expected(np.zeros_like(dst), src, np.ascontiguousarray(reversed_view)))
    dst[:] = 0
    column_slice = np.array([[1, 0, 7], [9, 5, 7], [3, 2, 7]], np.int64)[:, :2]
    xferbench.copy_blocks(dst, src, column_slice)
    assert np.array_equal(dst, expected(np.zeros_like(dst), src, np.ascontiguousarray(column_slice)))


def test_a_broadcast_mapping_claiming_a_billion_pairs_is_refused_before_anything_is_taken():
    # Issue 49: a 16-byte view of 10^9 rows was copied into a 16 GB vector before any check.
    import resource
    src, dst = np.zeros((64, 16), np.uint8), np.zeros((64, 16), np.uint8)
    mapping = np.lib.stride_tricks.as_strided(np.zeros(2, np.int64), shape=(10 ** 9, 2), strides=(0, 8))
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    with pytest.raises(ValueError, match="mapping has 1000000000 pairs, more than dst's 64 blocks"):
        xferbench.copy_blocks(dst, src, mapping)
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before < 100 << 10  # KiB: nothing near 16 GB


def test_a_mapping_as_long_as_dsts_blocks_still_copies():
    src, dst = np.arange(64 * 16, dtype=np.uint8).reshape(64, 16), np.zeros((64, 16), np.uint8)
    mapping = np.stack([np.arange(64)[::-1], np.arange(64)], axis=1).astype(np.int64)
    xferbench.copy_blocks(dst, src, mapping)
    assert np.array_equal(dst, src[::-1])
