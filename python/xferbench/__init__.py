"""xferbench for Python: libxfer's pinned caching pool and staged copy over DLPack,
and result files as data.

    import numpy as np, xferbench
    pool = xferbench.Pool("pinned", max_cached_bytes=1 << 30)
    a = np.from_dlpack(pool.allocate((1024, 1024), "float32"))  # pinned, no copy
    xferbench.copy(cuda_tensor, a)          # host to device through the staged copier
    rows = xferbench.load("sweep.json")     # a list of dicts, one per point
    df = xferbench.load("sweep.json", frame=True)  # a pandas DataFrame (DependencyMissing without pandas)
    with xferbench.trace("trace.json") as t:  # this process's CUDA transfers, through CUPTI
        train_step()
    t.bill["fixes"]                         # what the C++ tool wrote: groups, prices, fixes

The native module is loaded on import; without it (not built) load() still works and
Pool/copy raise NativeModuleMissing. CUDA is reached at run time, so the same module
imports on a machine without a GPU or a driver: the host kinds and the host copier work,
and CUDA kinds raise CudaUnavailableError saying why.
"""

import pkgutil

# The CMake build puts the native module in build/python/xferbench: with
# PYTHONPATH=python:build/python both directories make up this package.
__path__ = pkgutil.extend_path(__path__, __name__)

from ._errors import (  # noqa: E402
    AllocationError,
    BadArgument,
    BadArgumentType,
    BadResultFile,
    CopyError,
    CudaUnavailableError,
    DependencyMissing,
    NativeModuleMissing,
    PoolClosedError,
    RegistrationError,
    TraceError,
    TraceUnavailable,
    XferError,
)
from ._copy import Copier, CopyHandle, copy, cuda_available, cuda_status  # noqa: E402
from ._blocks import BlockCopier, copy_blocks  # noqa: E402
from ._load import load  # noqa: E402
from ._pool import Pool, kinds  # noqa: E402
from ._settings import settings  # noqa: E402
from ._trace import Trace, trace  # noqa: E402

__version__ = "0.1.0"

__all__ = [
    "AllocationError", "BadArgument", "BadArgumentType", "BadResultFile", "CopyError", "CudaUnavailableError",
    "DependencyMissing", "NativeModuleMissing", "PoolClosedError", "RegistrationError", "XferError", "Copier",
    "CopyHandle", "copy", "cuda_available", "cuda_status", "load", "Pool", "kinds",
]
__all__ += ["BlockCopier", "copy_blocks", "settings"]
__all__ += ["Trace", "trace", "TraceError", "TraceUnavailable"]
