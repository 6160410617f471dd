"""Pool: libxfer's caching pool over one host memory kind, for Python."""

from __future__ import annotations

import operator
from typing import Any, Dict, Optional, Sequence, Tuple, Union

from ._dtypes import dlpack_dtype
from ._errors import BadArgument, typed_arguments
from ._native_loader import native

Shape = Union[int, Sequence[int]]
_NO_CAP = (1 << 64) - 1


def kinds() -> list:
    """The memory kind names this build knows: the host kinds (pageable, aligned, huge,
    ...), then, where CUDA was compiled in, the CUDA kinds (registered, pinned, pinned-wc,
    mapped, pinned-fast). A CUDA kind still needs a driver and a device when a Pool is made."""
    return list(native().kind_names())


def _shape(shape: Shape) -> Tuple[int, ...]:
    try:
        dims = (operator.index(shape),)
    except TypeError:
        try:
            dims = tuple(operator.index(d) for d in shape)
        except TypeError:
            raise BadArgument("shape", f"shape must be an int or a sequence of ints, not {shape!r}") from None
    if any(d < 0 for d in dims):
        raise BadArgument("shape", f"shape must not have negative sizes: {dims}")
    if len(dims) > 32:
        raise BadArgument("shape", f"shape has {len(dims)} dimensions; at most 32")
    return dims


class Pool:
    """A caching pool of host memory of one kind (libxfer's caching_pool).

    Requests are rounded up to size classes 1/16 of a power of two apart (under 6.25%
    waste, against up to 50% for power-of-two classes); freed blocks are kept for
    reuse up to ``max_cached_bytes`` of idle memory and handed out again without
    asking the OS or CUDA (pinning 256 MiB takes about 100 ms; a cached block takes
    microseconds).

    Blocks are exported through DLPack: ``numpy.from_dlpack(block)``,
    ``torch.from_dlpack(block)`` and ``cupy.from_dlpack(block)`` use the memory
    without a copy. A block of a pinned kind (pinned, pinned-wc, registered, mapped)
    is DLPack's kDLCUDAHost (NumPy takes it as CPU memory, torch as a pinned CPU
    tensor); any other kind's is kDLCPU. A consumer that takes only kDLCPU can ask for
    it (``__dlpack__(dl_device=(1, 0))``, no copy), or the pool can label its pinned
    blocks kDLCPU throughout (``dlpack_device="cpu"``), as torch and CuPy label their
    own pinned memory. A block returns to the pool when the last
    array referring to it is gone, even after the Pool object itself is.

    Args:
        kind: one of :func:`kinds` (default "pinned").
        max_cached_bytes: idle bytes the pool keeps for reuse (None: no cap).
        api: which CUDA API allocates the CUDA kinds, "runtime" or "driver".
        dlpack_device: "auto" (kDLCUDAHost for pinned kinds, kDLCPU otherwise) or "cpu".

    Raises:
        ValueError: unknown kind or api, negative cap.
        CudaUnavailableError: a CUDA kind where CUDA cannot start.
        NativeModuleMissing: the native module is not built.
    """

    @typed_arguments
    def __init__(self, kind: str = "pinned", *, max_cached_bytes: Optional[int] = None, api: str = "runtime",
                 dlpack_device: str = "auto"):
        if not isinstance(kind, str):
            raise BadArgument("kind", f"kind must be a string, not {kind!r}")
        if max_cached_bytes is None:
            cap = _NO_CAP
        else:
            try:
                cap = operator.index(max_cached_bytes)
            except TypeError:
                raise BadArgument("max_cached_bytes",
                                  f"max_cached_bytes must be an int or None, not {max_cached_bytes!r}") from None
            if cap < 0:
                raise BadArgument("max_cached_bytes", f"max_cached_bytes must not be negative: {cap}")
            cap = min(cap, _NO_CAP)
        if api not in ("runtime", "driver"):
            raise BadArgument("api", f"api must be 'runtime' or 'driver', not {api!r}")
        if dlpack_device not in ("auto", "cpu"):
            raise BadArgument("dlpack_device", f"dlpack_device must be 'auto' or 'cpu', not {dlpack_device!r}")
        self._pool = native().Pool(kind, cap, api, dlpack_device == "cpu")

    @typed_arguments
    def allocate(self, shape: Shape, dtype: Any = "uint8"):
        """A block of ``shape`` elements of ``dtype`` (C order), exported through DLPack.

        Raises ValueError (bad shape or dtype), PoolClosedError, AllocationError."""
        code, bits = dlpack_dtype(dtype)
        return self._pool.allocate(list(_shape(shape)), code, bits)

    @typed_arguments
    def empty(self, shape: Shape, dtype: Any = "float32"):
        """A NumPy array over a new block (needs NumPy): ``numpy.from_dlpack(self.allocate(...))``."""
        import numpy as np

        return np.from_dlpack(self.allocate(shape, dtype))

    def stats(self) -> Dict[str, float]:
        """The pool's books: requested_bytes and handed_out_bytes (live blocks, as asked
        and after rounding), cached_bytes (idle), reserved_bytes (both), peak_reserved_bytes,
        hits, misses, upstream_frees, upstream_seconds, rounding_waste_ratio, waste_ratio."""
        return dict(self._pool.stats())

    def trim(self) -> None:
        """Returns every idle block to the OS (or CUDA)."""
        self._pool.trim()

    def close(self) -> None:
        """Refuses further allocations and returns the idle blocks; blocks still in use
        return to the OS as their last array dies. Closing twice is harmless."""
        self._pool.close()

    @property
    def closed(self) -> bool:
        return self._pool.closed

    @property
    def kind(self) -> str:
        return self._pool.kind

    @property
    def pinned(self) -> bool:
        """Page-locked memory (DMA without a staging copy)."""
        return self._pool.pinned

    @property
    def max_cached_bytes(self) -> Optional[int]:
        cap = self._pool.max_cached_bytes
        return None if cap == _NO_CAP else cap

    def __enter__(self) -> "Pool":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __repr__(self) -> str:
        state = "closed" if self.closed else "open"
        return f"<xferbench.Pool kind={self.kind!r} {state}>"
