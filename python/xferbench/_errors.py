"""The exceptions xferbench raises, in pure Python so they exist (and can be
caught) whether or not the native module is built. The native module raises
these very classes (python/native/errors.cpp).

Bad arguments raise ``BadArgument``, a ``ValueError`` (an unknown kind, a bad
shape or dtype, a tuning out of libxfer's bounds, mismatched sizes or dtypes, a
non-contiguous array, device memory where host memory is required), or
``BadArgumentType``, both a ``TypeError`` and a BadArgument (an object that is not
an array, a read-only destination, a tuning that is not an int). Either is one
line that starts with the argument's name, and carries it as ``.argument``.
"""

import functools
import inspect
import re

from xferbench_report.errors import BadInput


class BadArgument(ValueError):
    """An argument xferbench cannot use; ``argument`` names it (None where the fault is between
    two, such as dst and src of different dtypes: the message names both)."""

    def __init__(self, argument, message):
        super().__init__(message)
        self.argument = argument


class BadArgumentType(BadArgument, TypeError):
    """An argument of the wrong kind: not an array, a read-only destination, a tuning that is not an int."""


def typed_arguments(fn):
    """Re-raises a plain ValueError or TypeError out of `fn` (the native module's, which names the
    argument first: "dst is read-only ...", "ring_depth=2000: expected ...") as BadArgument or
    BadArgumentType with `argument` set to the parameter of `fn` its message starts with, else the
    one parameter it names ("unknown memory kind ..."), else None (it names two, or none)."""
    params = set(inspect.signature(fn).parameters) - {"self"}

    @functools.wraps(fn)
    def call(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except BadArgument:
            raise
        except (ValueError, TypeError) as e:
            m = re.match(r"([A-Za-z_]\w*)[ =]", str(e))
            named = [p for p in params if re.search(rf"\b{p}\b", str(e))]  # "unknown memory kind 'x'"
            name = m.group(1) if m and m.group(1) in params else named[0] if len(named) == 1 else None
            raise (BadArgumentType if isinstance(e, TypeError) else BadArgument)(name, str(e)) from None

    return call


class XferError(RuntimeError):
    """Base of xferbench's runtime failures."""


class BadResultFile(XferError, BadInput):
    """load() of a file that is not a readable xferbench result file (missing, a directory, not JSON, bad gzip,
    another schema, a malformed field): one line naming the file and the field. Also the report tool's BadInput,
    so code catching either catches it."""


class DependencyMissing(XferError, ImportError):
    """An optional package a call needs is not installed (``load(path, frame=True)`` without pandas); the
    message is one line saying what to install, and ``name`` is the package."""


class NativeModuleMissing(XferError, ImportError):
    """The package was installed or run without its native module (xferbench._native):
    Pool and copy need it; load() does not."""


class PoolClosedError(XferError):
    """An allocation from a pool after Pool.close()."""


class CudaUnavailableError(XferError):
    """A CUDA kind, device or copy was asked for where CUDA cannot start: this build has
    no CUDA, or the machine has no driver or no such device. The message says which."""


class AllocationError(XferError, MemoryError):
    """The memory kind could not provide the bytes (the message names the kind, the byte
    count and the cause: ENOMEM, a failed cudaHostAlloc, ...)."""


class CopyError(XferError):
    """A staged copy failed after it started (staging memory, the device step); the
    destination's contents are then unspecified."""


class RegistrationError(XferError):
    """A copier's registration cache could not be made (the device step cannot register
    host memory). A registration refused during a copy is no error: the copy is staged
    and the cause kept in ``Copier.registration_stats["last_refusal"]``."""


class TraceUnavailable(XferError):
    """xferbench.trace() cannot start here: no libxfer_cupti.so (the message names where it was looked
    for and how to point at it), no xferbench binary to write the trace file with, a library that would
    not load, a trace already running in this process, or CUPTI refusing (another profiler holds it,
    no CUPTI): then the message carries the library's own reason (xfer_trace_error())."""


class TraceError(XferError):
    """A trace that ran could not be written: xfer_trace_stop() failed, or `xferbench trace --from DIR`
    did (the message ends with its reason), or its file is not JSON. The raw records are kept, and
    the message names their directory."""
