"""Finds xferbench._native, built either into this package (pip install) or by the
project's CMake into build/python/xferbench (the package path is extended with
pkgutil in __init__, so PYTHONPATH=python:build/python works from the tree)."""

from ._errors import NativeModuleMissing

_native = None
_why = ""
try:
    from . import _native  # noqa: F811
except ImportError as e:  # not built, or built for another interpreter
    _why = str(e)


def native():
    """The native module, or NativeModuleMissing saying why it is not there."""
    if _native is None:
        raise NativeModuleMissing(
            "xferbench's native module is not available (" + _why + "): install with "
            "`pip install ./python`, or build the project with CMake (XFER_ENABLE_PYTHON) and put "
            "build/python on PYTHONPATH"
        )
    return _native
