"""The exceptions xferbench raises, in pure Python so they exist (and can be
caught) whether or not the native module is built. The native module raises
these very classes (python/native/errors.cpp).

Besides these, bad arguments raise the built-in ``ValueError`` (an unknown
kind, a bad shape or dtype, mismatched sizes or dtypes, a non-contiguous
array, device memory where host memory is required) or ``TypeError`` (an
object that is not an array, a read-only destination).
"""

from xferbench_report.errors import BadInput as BadResultFile  # noqa: F401  (re-exported)


class XferError(RuntimeError):
    """Base of xferbench's runtime failures."""


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
