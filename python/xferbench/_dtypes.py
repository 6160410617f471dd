"""Element types as DLPack describes them: (type code, bits). NumPy's dtype when
NumPy is there (so any spelling NumPy takes works), else a table of names."""

import functools

# DLPack's DLDataTypeCode values.
_INT, _UINT, _FLOAT, _COMPLEX, _BOOL = 0, 1, 2, 5, 6
_NUMPY_KIND = {"i": _INT, "u": _UINT, "f": _FLOAT, "c": _COMPLEX, "b": _BOOL}
_NAMES = {
    **{f"int{b}": (_INT, b) for b in (8, 16, 32, 64)},
    **{f"uint{b}": (_UINT, b) for b in (8, 16, 32, 64)},
    **{f"float{b}": (_FLOAT, b) for b in (16, 32, 64)},
    "complex64": (_COMPLEX, 64),
    "complex128": (_COMPLEX, 128),
    "bool": (_BOOL, 8),
}


def dlpack_dtype(dtype):
    """(code, bits) for `dtype` (see _lookup); cached, as a pool's allocate() sits on hot paths."""
    try:
        return _cached(dtype)
    except TypeError:  # unhashable: not cached
        return _lookup(dtype)


def _lookup(dtype):
    """(code, bits) for `dtype`: a NumPy dtype or anything np.dtype() takes, a torch
    dtype, or a name such as "float32". ValueError for anything else."""
    name = str(dtype)
    if name.startswith("torch."):  # torch.float32 -> float32
        name = name[len("torch."):]
    try:
        import numpy as np
    except ImportError:
        np = None
    if np is not None:
        try:
            dt = np.dtype(name if isinstance(dtype, str) or name in _NAMES else dtype)
        except TypeError:
            dt = None
        if dt is not None and dt.kind in _NUMPY_KIND and dt.fields is None and dt.subdtype is None:
            return _NUMPY_KIND[dt.kind], dt.itemsize * 8
    if name in _NAMES:
        return _NAMES[name]
    raise ValueError(f"unsupported dtype {dtype!r} (supported: {', '.join(_NAMES)})")


_cached = functools.lru_cache(maxsize=64)(_lookup)
