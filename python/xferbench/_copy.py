"""copy(): moving arrays between host and device memory with libxfer's staged copier."""

from __future__ import annotations

import threading
from typing import Any, Dict, Optional, Tuple, Union

from ._errors import BadArgument, BadArgumentType, CudaUnavailableError, typed_arguments
from ._native_loader import native
from ._registrations import _Registrations

# DLPack device types (dlpack.h).
_CPU, _CUDA, _CUDA_HOST, _CUDA_MANAGED = 1, 2, 3, 13
_HOST = (_CPU, _CUDA_HOST, _CUDA_MANAGED)


def cuda_status() -> Tuple[int, str]:
    """(CUDA devices usable here, why none when 0). Never raises for a missing CUDA."""
    n, why = native().cuda_status()
    return int(n), str(why)


def cuda_available() -> bool:
    """Whether this build has CUDA and the machine a driver and at least one device."""
    return cuda_status()[0] > 0


class CopyHandle:
    """A copy queued on the caller's stream (``non_blocking=True``). It keeps ``dst`` and
    ``src`` alive until the copy has ended, whether or not it is waited for (a handle
    dropped early waits for the copy when it goes).

    Meanwhile ``src`` must not be modified or freed; ``dst`` must not be read or written
    except by work queued on the stream after the copy, which waits for it on the device.
    """

    def __init__(self, native_handle: Any):
        self._h = native_handle

    def wait(self) -> None:
        """Blocks until the copy has ended. Raises CopyError if it failed (every time it is
        called): the stream was let go all the same, so work queued after the copy ran on
        a destination whose contents are unspecified."""
        self._h.wait()

    def ready(self) -> bool:
        """Whether the copy has ended (successfully or not), without blocking."""
        return bool(self._h.ready())

    @property
    def nbytes(self) -> int:
        return int(self._h.nbytes)


class Copier:
    """libxfer's staged copier on one device: pageable host memory moves at pinned speed
    through a ring of pinned staging chunks, CPU threads filling chunk i+1 while the copy
    engine moves chunk i. Below ``handoff_bytes`` the plain API copies instead.

    Args:
        device: a CUDA device index, or "host" for the host step, whose "device memory"
            is host memory (the same pipeline with no GPU: for tests and for checking).
        api: "runtime" or "driver", the CUDA API the copier calls.
        chunk_bytes, ring_depth, threads, handoff_bytes: override the machine's tuning
            (libxfer's cached tuning for this machine and device, else its defaults,
            for the fields not given).
        calibrate: with no override given, use the tuning calibrated for this machine and
            device: read from libxfer's cache (``cache``), else measured now, about half a
            second once per machine and device. False: libxfer's defaults.
        cache: the tuning cache's file; "off": none (nothing read or written). None: the
            environment's XFER_STAGED_TUNING_CACHE, else ~/.cache/xfer/staged-tuning. An
            entry written on another machine or by another version is not used.
        shared: share the process's staging budget with the other copiers (one team of
            threads taking turns between the copies in progress, so copiers of several
            devices copying at once do not compete with a team each; a copier alone still
            gets its whole team). False, or XFER_STAGED_SHARED=0 in the environment: a team
            of its own. ``copy()``'s copiers (one per device) share it. Non-blocking copies
            never use it: they run on threads of the copier's own, made on first use.
        registration_cache_bytes: opt in to a registration cache of at most this many pinned
            bytes (0: libxfer's default, 1 GiB or a quarter of the machine's memory). A host
            array copied a second time is registered (pinned) in place, and that copy and
            every later one of it go at pinned speed with no staging; the least recently
            copied registrations are dropped to stay within the bound, and an array's
            registration is dropped when the array is garbage-collected (the weakref rule:
            xferbench/_registrations.py). None (the default): every copy is staged.
            Non-blocking copies are always staged and never counted.

    Raises:
        CudaUnavailableError: a CUDA device where CUDA cannot start or there is none.
        BadArgument (a ValueError): an unusable device, tuning or api, naming it.
    """

    @typed_arguments
    def __init__(self, device: Union[int, str] = 0, *, api: str = "runtime", chunk_bytes: Optional[int] = None,
                 ring_depth: Optional[int] = None, threads: Optional[int] = None,
                 handoff_bytes: Optional[int] = None, calibrate: bool = True, shared: bool = True,
                 registration_cache_bytes: Optional[int] = None, cache: Optional[str] = None):
        if device == "host":
            index = -1
        elif isinstance(device, int) and not isinstance(device, bool) and device >= 0:
            index = device
        else:
            raise BadArgument("device", f"device must be a CUDA device index (>= 0) or 'host', not {device!r}")
        if api not in ("runtime", "driver"):
            raise BadArgument("api", f"api must be 'runtime' or 'driver', not {api!r}")
        for name, v in (("chunk_bytes", chunk_bytes), ("ring_depth", ring_depth), ("threads", threads),
                        ("handoff_bytes", handoff_bytes)):
            if v is not None and (not isinstance(v, int) or isinstance(v, bool) or v <= 0):
                raise BadArgument(name, f"{name} must be a positive int, not {v!r}")
        if registration_cache_bytes is not None and (not isinstance(registration_cache_bytes, int)
                                                     or isinstance(registration_cache_bytes, bool)
                                                     or not 0 <= registration_cache_bytes < 1 << 64):
            raise BadArgument("registration_cache_bytes",
                              f"registration_cache_bytes must be None or an int from 0 to 2**64 - 1, "
                              f"not {registration_cache_bytes!r}")
        self._c = native().Copier(index, api, chunk_bytes, ring_depth, threads, handoff_bytes, bool(calibrate),
                                  bool(shared), registration_cache_bytes, None if cache is None else str(cache))
        self._registrations = None if registration_cache_bytes is None else _Registrations(self._c)

    def _check_stream(self, stream: Any) -> None:
        # A torch stream names its device (.device.index), a CuPy one its id
        # (.device_id); waiting on another device's stream would order
        # nothing on this one. An int handle carries no device: unchecked.
        if stream is None or self._c.device < 0:
            return
        dev = getattr(getattr(stream, "device", None), "index", None)
        if dev is None:
            dev = getattr(stream, "device_id", None)
        if isinstance(dev, int) and dev != self._c.device:
            raise BadArgument("stream",
                              f"stream belongs to CUDA device {dev}, not to this copier's device {self._c.device}")

    def _before_copy(self, host: Any, to_device: bool) -> None:
        # Only host memory is registered; anything else the native copy refuses with
        # its own message, naming the argument.
        if self._registrations is None:
            return
        try:
            if _device_of(host, "array")[0] not in _HOST:
                return
        except TypeError:
            return
        self._registrations.before_copy(host, to_device)

    @typed_arguments
    def to_device(self, dst: Any, src: Any, stream: Any = None,
                  non_blocking: bool = False) -> Optional[CopyHandle]:
        """Copies host array ``src`` into device array ``dst`` (same dtype and byte size,
        both C-contiguous) and returns once the bytes are in device memory.

        stream: the caller's CUDA stream (a torch or CuPy stream, or its handle as an int):
        work queued on it is waited for first. None waits for the whole device.
        A torch or CuPy stream of another device raises ValueError.

        non_blocking: queue the copy on ``stream`` and return a CopyHandle at once: the
        copy starts on the device after the work queued on the stream before the call,
        and the work queued there after the call (a kernel reading ``dst``) waits for it
        on the device, with no host synchronization. None (or 0) is then the legacy
        default stream, the default stream of torch and CuPy.

        Ctrl-C (KeyboardInterrupt) interrupts a staged copy (``handoff_bytes`` and up) that
        does not return, a hung driver's: the copy is then left running, its arrays are kept
        alive, and this copier raises RuntimeError on any later copy (make a new one: it
        does not share the abandoned copy's staging budget). The same holds for a
        CopyHandle's wait()."""
        _check_writable(dst, "dst")
        self._check_stream(stream)
        if non_blocking:  # never through the registration cache (staged_copier.hpp: copy_to_device_on)
            return CopyHandle(self._c.to_device_async(dst, src, stream))
        self._before_copy(src, True)
        self._c.to_device(dst, src, stream)
        return None

    @typed_arguments
    def to_host(self, dst: Any, src: Any, stream: Any = None,
                non_blocking: bool = False) -> Optional[CopyHandle]:
        """Copies device array ``src`` into host array ``dst``; see to_device. With
        non_blocking, ``dst`` holds the bytes once the handle's wait() returns (work
        queued on the stream after the call also waits for the copy)."""
        _check_writable(dst, "dst")
        self._check_stream(stream)
        if non_blocking:
            return CopyHandle(self._c.to_host_async(dst, src, stream))
        self._before_copy(dst, False)
        self._c.to_host(dst, src, stream)
        return None

    @property
    def tuning(self) -> Dict[str, int]:
        """chunk_bytes, ring_depth, threads and handoff_bytes in use."""
        return dict(self._c.tuning())

    @property
    def shared(self) -> bool:
        """Whether it shares the process's staging budget (see ``shared`` above)."""
        return bool(self._c.shared)

    @property
    def team_threads(self) -> int:
        """The threads copying its pieces now: its own team's (``tuning["threads"]``), or,
        shared, the process's staging budget's, which grows while several copies run at once
        (to the sum of their teams, at most three quarters of the physical cores); one copy
        takes at most ``tuning["threads"]`` of them."""
        return int(self._c.team_threads)

    @property
    def registration_stats(self) -> Optional[Dict[str, Any]]:
        """The registration cache's counts (pinned_bytes, registrations, registered, hits,
        evicted, forgotten, stale, refused, last_refusal, max_pinned_bytes); None without
        a cache."""
        return None if self._registrations is None else self._registrations.stats()

    @property
    def device(self) -> Union[int, str]:
        return "host" if self._c.device < 0 else self._c.device


class _Done:
    """A copy already done (host to host)."""

    nbytes = 0

    def wait(self) -> None:
        pass

    def ready(self) -> bool:
        return True


_copiers: Dict[int, Copier] = {}
_lock = threading.Lock()


def _default_copier(device: int) -> Copier:
    c = _copiers.get(device)  # the common case, without the lock (a dict read is atomic)
    if c is not None:
        return c
    with _lock:
        c = _copiers.get(device)
        if c is None:
            c = _copiers[device] = Copier(device)
        return c


def _device_of(a: Any, name: str) -> Tuple[int, int]:
    if hasattr(a, "__dlpack_device__"):
        t, i = a.__dlpack_device__()
        return int(t), int(i)
    try:
        memoryview(a)
    except TypeError:
        raise BadArgumentType(name,
                              f"{name} is not an array (it has neither __dlpack__ nor the buffer protocol)") from None
    return _CPU, 0


# Types that do not have the buffer protocol (torch.Tensor, CuPy's ndarray): a type has it or
# not, so memoryview is tried once per type, not per copy (its TypeError cost a torch copy
# microseconds each time, measured beside torch's own copy).
_no_buffer_protocol: set = set()


def _check_writable(a: Any, name: str) -> None:
    # Where the buffer protocol tells (NumPy, bytes, memoryview), before any native call; an
    # array that has DLPack alone (torch, CuPy) the native module checks, with the same message.
    if type(a) in _no_buffer_protocol:
        return
    try:
        readonly = memoryview(a).readonly
    except TypeError:  # no buffer protocol
        _no_buffer_protocol.add(type(a))
        return
    except (ValueError, BufferError):  # this array's buffer not exported (device memory, say)
        return
    if readonly:
        raise BadArgumentType(name, f"{name} is read-only (pass a writable array)")


@typed_arguments
def copy(dst: Any, src: Any, stream: Any = None, non_blocking: bool = False) -> Optional[CopyHandle]:
    """Copies ``src`` into ``dst``: any DLPack producers (NumPy, torch, CuPy) of the same
    dtype and byte size, C-contiguous. Host to device and device to host go through the
    staged copier of the device (one per device, made on first use); host to host is one
    memmove. Blocking: returns when the bytes are at ``dst``.

    stream: the caller's CUDA stream (torch/CuPy stream or int handle) whose queued work
    must finish first; None waits for the whole device.

    non_blocking: return a CopyHandle at once instead, the copy queued on ``stream``
    (None: the legacy default stream): it waits on the device for the work queued there
    before, and the work queued there after it (a torch op reading ``dst``) waits on the
    device for the copy. Until the handle is ready, leave ``src`` unmodified and ``dst``
    to that work. A host-to-host copy is done at once (its handle is ready).

    Raises:
        BadArgument (a ValueError): mismatched dtype or size, a non-contiguous array, a
            device-to-device copy.
        BadArgumentType (a TypeError): an argument that is not an array, a read-only dst.
        CudaUnavailableError: a device array where CUDA cannot start.
        CopyError: the copy failed on the way.
    """
    (dt, di), (st, si) = _device_of(dst, "dst"), _device_of(src, "src")
    if dt in _HOST and st in _HOST:
        _check_writable(dst, "dst")  # the Copier's to_device and to_host check it for the others
        native().host_copy(dst, src)
        return CopyHandle(_Done()) if non_blocking else None
    elif dt == _CUDA and st in _HOST:
        return _default_copier(di).to_device(dst, src, stream, non_blocking)
    elif dt in _HOST and st == _CUDA:
        return _default_copier(si).to_host(dst, src, stream, non_blocking)
    elif dt == _CUDA and st == _CUDA:
        raise BadArgument(None, "a device-to-device copy is not staged: use the framework's own copy")
    else:
        raise BadArgument(None, f"unsupported DLPack devices: dst {(dt, di)}, src {(st, si)}")


__all__ = ["Copier", "CopyHandle", "copy", "cuda_available", "cuda_status", "CudaUnavailableError"]
