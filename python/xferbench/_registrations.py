"""A copier's registration cache, with the weakref rule (issue 37, item 5).

libxfer's cache can only guess when a registered buffer is freed (registration_cache.hpp
says what its stale check misses). Python knows: an array's memory lives as long as the
array object (or its base, which the object keeps alive). So here a buffer is registered
only for an object that can be weakly referenced, keyed by that object, and forgotten by a
finalizer when the object goes:

- an object's second copy registers its bytes (the first is staged, as without a cache);
- a registration is used only for copies of the object it was made for, at the address it
  was made for: before each copy, a registration of another object over the same bytes, or
  of this object at another address (torch's ``set_``/``resize_``), is dropped first;
- an object without weakref support (``bytearray``) is never registered;
- a refused registration (the cache's bound, the locked-memory limit, ``cudaHostRegister``)
  stages the copy and is kept in ``registration_stats["last_refusal"]``; that object is not
  tried again.
"""

from __future__ import annotations

import threading
import weakref
from typing import Any, Dict, Optional, Tuple


class _Use:
    __slots__ = ("address", "nbytes", "count", "refused")

    def __init__(self, address: int, nbytes: int):
        self.address, self.nbytes, self.count, self.refused = address, nbytes, 0, False


def _gone(registrations_ref: "weakref.ref[_Registrations]", key: int) -> None:
    r = registrations_ref()
    if r is not None:
        r._drop(key)


def _overlap(a: int, n: int, b: int, m: int) -> bool:
    return a < b + m and b < a + n


class _Registrations:
    def __init__(self, native_copier: Any):
        self._c = native_copier
        # Re-entrant: a finalizer (_gone) may run on this thread while it holds the lock
        # (an object collected in the middle of before_copy).
        self._lock = threading.RLock()
        self._uses: Dict[int, _Use] = {}
        self._pinned: Dict[int, Tuple[int, int]] = {}

    def _drop(self, key: int) -> None:
        with self._lock:
            self._uses.pop(key, None)
            pinned = self._pinned.pop(key, None)
            if pinned is not None:
                self._c.forget(*pinned)

    def before_copy(self, obj: Any, to_device: bool) -> None:
        """Called with the host array of each copy, before the copy."""
        address, nbytes = self._c.host_range(obj)
        if nbytes == 0:
            return
        key = id(obj)
        with self._lock:
            for k, (a, n) in list(self._pinned.items()):
                if (k != key or (a, n) != (address, nbytes)) and (k == key or _overlap(a, n, address, nbytes)):
                    del self._pinned[k]
                    self._c.forget(a, n)
            use = self._uses.get(key)
            if use is not None and (use.address, use.nbytes) != (address, nbytes):
                use.address, use.nbytes, use.count, use.refused = address, nbytes, 0, False
            if use is None:
                try:
                    fin = weakref.finalize(obj, _gone, weakref.ref(self), key)
                except TypeError:
                    return  # no weakref: nothing would say when its memory goes
                fin.atexit = False
                use = self._uses[key] = _Use(address, nbytes)
            use.count += 1
            if use.count < 2 or use.refused or key in self._pinned:
                return
            registered, why = self._c.pin(address, nbytes, to_device)
            if registered:
                self._pinned[key] = (address, nbytes)
            elif why:
                use.refused = True

    def stats(self) -> Optional[Dict[str, Any]]:
        s = self._c.registration_stats()
        return None if s is None else dict(s)
