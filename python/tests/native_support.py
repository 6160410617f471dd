"""Shared by the tests of the native module: skip them where it is not built,
unless XFERBENCH_REQUIRE_NATIVE=1 (scripts/test.sh sets it when the build made
the module), where its absence is a failure instead of a quiet skip."""

import os

import pytest

import xferbench
from xferbench._native_loader import _native, _why

if _native is None:
    if os.environ.get("XFERBENCH_REQUIRE_NATIVE") == "1":
        raise ImportError(f"XFERBENCH_REQUIRE_NATIVE=1 but xferbench._native does not import: {_why}")
    requires_native = pytest.mark.skip(reason=f"xferbench._native is not built ({_why})")
else:
    requires_native = pytest.mark.skipif(False, reason="")


def cuda_ready():
    return _native is not None and xferbench.cuda_available()
