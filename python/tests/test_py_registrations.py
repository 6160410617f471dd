"""Copier(registration_cache_bytes=...): the weakref rule on the host copier (its
registrations are emulated, so the whole policy runs here). GPU copies: test_py_gpu.py's
machine, and tests/cuda/registration_cache_test.cpp."""

import gc

import pytest

np = pytest.importorskip("numpy")

import xferbench
from native_support import requires_native

pytestmark = requires_native

SMALL = dict(chunk_bytes=64 << 10, ring_depth=4, threads=2, handoff_bytes=16 << 10)
N = 1 << 20


def make(cache_bytes=64 << 20):
    return xferbench.Copier("host", registration_cache_bytes=cache_bytes, **SMALL)


def pattern(seed):
    return np.random.default_rng(seed).integers(0, 255, N, dtype=np.uint8)


def test_the_second_copy_registers_and_later_copies_hit():
    c = make()
    src, dev = pattern(1), np.zeros(N, np.uint8)
    c.to_device(dev, src)
    assert c.registration_stats["registered"] == 0, "a first copy never pins"
    for seed in (2, 3, 4):
        src[:] = pattern(seed)
        c.to_device(dev, src)
        assert np.array_equal(dev, src)
    s = c.registration_stats
    assert s["registered"] == 1 and s["hits"] == 3 and s["pinned_bytes"] >= N
    back = np.zeros(N, np.uint8)
    for _ in range(2):
        back[:] = 0
        c.to_host(back, dev)
        assert np.array_equal(back, src)
    assert c.registration_stats["registered"] == 2, "the destination of copies to the host too"


def test_an_array_garbage_collected_is_forgotten():
    c = make()
    src, dev = pattern(5), np.zeros(N, np.uint8)
    c.to_device(dev, src)
    c.to_device(dev, src)
    assert c.registration_stats["registrations"] == 1
    del src
    gc.collect()
    s = c.registration_stats
    assert s["registrations"] == 0 and s["pinned_bytes"] == 0 and s["forgotten"] == 1


def test_another_object_over_the_same_bytes_drops_the_registration():
    # As memory freed and reused: a registration is used only for its own object.
    c = make()
    a, dev = pattern(6), np.zeros(N, np.uint8)
    c.to_device(dev, a)
    c.to_device(dev, a)
    view = a[:]
    view[:10] = 99
    c.to_device(dev, view)
    assert np.array_equal(dev, a)
    s = c.registration_stats
    assert s["forgotten"] == 1 and s["registrations"] == 0
    c.to_device(dev, view)
    assert c.registration_stats["registrations"] == 1, "the view's own second copy registers it"


def test_an_object_without_weakrefs_is_never_registered():
    c = make()
    src, dev = bytearray(pattern(7).tobytes()), np.zeros(N, np.uint8)
    for _ in range(3):
        c.to_device(dev, src)
    assert bytes(dev) == bytes(src)
    assert c.registration_stats["registered"] == 0


def test_a_refused_registration_stages_the_copy_and_is_recorded():
    c = make(cache_bytes=N // 2)  # smaller than the array: the bound refuses it
    src, dev = pattern(8), np.zeros(N, np.uint8)
    for seed in (8, 9, 10):
        src[:] = pattern(seed)
        c.to_device(dev, src)
        assert np.array_equal(dev, src)
    s = c.registration_stats
    assert s["registered"] == 0 and s["pinned_bytes"] == 0
    assert "bound" in s["last_refusal"] and str(N) in s["last_refusal"], s["last_refusal"]
    assert s["max_pinned_bytes"] == N // 2


def test_copies_below_the_handoff_register_nothing():
    c = make()
    src, dev = np.ones(1000, np.uint8), np.zeros(1000, np.uint8)
    for _ in range(3):
        c.to_device(dev, src)
    assert np.array_equal(dev, src)
    assert c.registration_stats["registered"] == 0


@pytest.mark.parametrize("bad", [-1, True, 1.5, "1G", 1 << 64])
def test_a_bad_bound_is_a_value_error(bad):
    with pytest.raises(ValueError, match="registration_cache_bytes"):
        make(cache_bytes=bad)


def test_without_a_cache_there_are_no_stats():
    assert xferbench.Copier("host", **SMALL).registration_stats is None
    assert make(cache_bytes=0).registration_stats["max_pinned_bytes"] > 0, "0: libxfer's default bound"
