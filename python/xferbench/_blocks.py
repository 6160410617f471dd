"""copy_blocks(): many small blocks between host and device arrays with libxfer's block copier
(issue 38), the shape serving engines use for their KV-cache offload."""

from __future__ import annotations

import functools
from typing import Any, Optional, Union

from ._copy import _CUDA, _HOST, _device_of  # the same DLPack device rules as copy()
from ._native_loader import native

WAYS = ("loop", "batch", "kernel", "pack")
POLICIES = ("alone", "beside_compute")


def _stream_handle(stream: Any) -> int:
    """A torch stream (.cuda_stream), a CuPy one (.ptr), an int handle, or None (0)."""
    if stream is None:
        return 0
    for attr in ("cuda_stream", "ptr"):
        if hasattr(stream, attr):
            stream = getattr(stream, attr)
            break
    if not isinstance(stream, int) or isinstance(stream, bool) or stream < 0:
        raise ValueError("stream must be None, an int handle, or a torch/CuPy stream")
    return stream


def _stream_device(stream: Any) -> Optional[int]:
    dev = getattr(getattr(stream, "device", None), "index", None)
    if dev is None:
        dev = getattr(stream, "device_id", None)
    return dev if isinstance(dev, int) else None


class BlockCopier:
    """libxfer's block copier on one device: moves a list of blocks (rows of an array)
    between a host array and a device array the fastest way for the block size, the
    host memory kind and the direction on this device: a loop of async copies, one
    cudaMemcpyBatchAsync, a gather/scatter kernel through pinned host memory, or packing
    into pinned staging with one DMA. The choice is calibrated once per machine, device
    and (block size class, host kind, direction) and cached beside the staged copier's
    tuning (~/.cache/xfer/block-ways).

    Args:
        device: a CUDA device index, or "host" for the host step (its "device memory" is
            host memory: the same ways and checks with no GPU).
        way: force one of "loop", "batch", "kernel", "pack" (over XFER_BLOCKS_WAY).
        policy: what the choice ranks the ways for: "alone" (their times on an idle
            device) or "beside_compute" (the program keeps the GPU's multiprocessors
            busy: the kernel way, which holds them for the whole copy, last). None:
            XFER_BLOCKS_POLICY, else "alone". docs/blocks.md says when each wins.
        calibrate: False ranks uncached keys in a fixed order instead of measuring.
        cache: the rankings' file; "off": none (nothing read or written). None: the
            environment's XFER_BLOCKS_CACHE, else block-ways beside the staged copier's cache.
    """

    def __init__(self, device: Union[int, str] = 0, *, way: Optional[str] = None, calibrate: bool = True,
                 cache: Optional[str] = None, policy: Optional[str] = None):
        cuda_index = isinstance(device, int) and not isinstance(device, bool) and device >= 0
        if device != "host" and not cuda_index:
            raise ValueError(f"device must be a CUDA device index (>= 0) or 'host', not {device!r}")
        if way is not None and way not in WAYS:
            raise ValueError(f"way must be one of {', '.join(WAYS)} or None, not {way!r}")
        if policy is not None and policy not in POLICIES:
            raise ValueError(f"policy must be one of {', '.join(POLICIES)} or None, not {policy!r}")
        self._c = native().BlockCopier(device if cuda_index else -1, way, bool(calibrate),
                                       None if cache is None else str(cache), policy)

    def copy(self, dst: Any, src: Any, mapping: Any, stream: Any = None) -> str:
        """Copies block ``mapping[i, 0]`` of ``src`` to block ``mapping[i, 1]`` of ``dst`` for
        every row i of ``mapping`` (an int64 [n, 2] host array); a block is one row of
        ``src``/``dst`` (shape [num_blocks, ...], C-contiguous, rows of the same size).
        Returns the way used once the blocks are at ``dst``.

        stream: the caller's CUDA stream (torch/CuPy stream or int handle); the copy's
        device work is queued on it, after the work queued before. None waits for the whole
        device first, as copy() does.

        Raises:
            ValueError: a bad mapping (shape, dtype, an empty list, an index beyond its
                array, two pairs writing one block), rows that differ, arrays on the wrong
                devices; nothing is moved.
            CopyError: the device failed on the way.
        """
        if stream is not None and self._c.device >= 0:
            dev = _stream_device(stream)
            if dev is not None and dev != self._c.device:
                raise ValueError(f"stream belongs to CUDA device {dev}, not to this copier's device {self._c.device}")
        return str(self._c.copy(dst, src, mapping, _stream_handle(stream)))

    @property
    def device(self) -> Union[int, str]:
        return "host" if self._c.device < 0 else self._c.device

    @property
    def policy(self) -> str:
        """The policy this copier ranks the ways by: the argument, else XFER_BLOCKS_POLICY, else "alone"."""
        return str(self._c.policy)


@functools.lru_cache(maxsize=None)
def _default(device: int) -> BlockCopier:
    """The block copier of a device (-1: the host step), made on first use and kept."""
    return BlockCopier("host" if device < 0 else device)


def copy_blocks(dst: Any, src: Any, mapping: Any, stream: Any = None) -> str:
    """Copies blocks (rows) of ``src`` into ``dst`` as ``mapping`` (int64 [n, 2]: source block,
    destination block) says, through the block copier of the device involved (one per
    device, made on first use); host arrays on both sides go through the host step.
    Blocking; returns the way used. See BlockCopier.copy for the rules and errors."""
    (dt, di), (st, si) = _device_of(dst, "dst"), _device_of(src, "src")
    if dt in _HOST and st in _HOST:
        return _default(-1).copy(dst, src, mapping, stream)
    if dt == _CUDA and st in _HOST:
        return _default(di).copy(dst, src, mapping, stream)
    if dt in _HOST and st == _CUDA:
        return _default(si).copy(dst, src, mapping, stream)
    if dt == _CUDA and st == _CUDA:
        raise ValueError("copy_blocks moves blocks between host and device: both arrays are CUDA memory")
    raise ValueError(f"unsupported DLPack devices: dst {(dt, di)}, src {(st, si)}")


__all__ = ["BlockCopier", "copy_blocks", "WAYS"]
