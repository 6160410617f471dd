"""SIGINT, SIGTERM and SIGHUP as an exception in the report tool.

Python dies at once on SIGTERM and SIGHUP, which would leave the temporary
report directory behind. Raised as `Interrupted` instead, the signal unwinds
through render's cleanup like any error, and the CLI exits 128 + signal as
DESIGN.md asks of every xferbench command.
"""

import contextlib
import signal
import threading

SIGNALS = tuple(getattr(signal, name) for name in ("SIGINT", "SIGTERM", "SIGHUP") if hasattr(signal, name))


class Interrupted(BaseException):
    """A BaseException, like KeyboardInterrupt, so that no `except Exception` swallows it."""

    def __init__(self, signum):
        super().__init__(signum)
        self.signum = signum
        self.name = signal.Signals(signum).name


def _raise(signum, frame):
    # The first signal decides: more of them (a second Ctrl-C) must not cut the cleanup it starts short.
    for s in SIGNALS:
        signal.signal(s, signal.SIG_IGN)
    raise Interrupted(signum)


@contextlib.contextmanager
def raised():
    """Within: the signals raise Interrupted in the main thread. The previous handlers come back after."""
    if threading.current_thread() is not threading.main_thread():
        yield  # only the main thread may set handlers (and only it receives them)
        return
    previous = {s: signal.signal(s, _raise) for s in SIGNALS}
    try:
        yield
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)


@contextlib.contextmanager
def held():
    """Within: the signals wait, and arrive at the end. For steps that must not be cut in two."""
    if not hasattr(signal, "pthread_sigmask"):
        yield
        return
    previous = signal.pthread_sigmask(signal.SIG_BLOCK, SIGNALS)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)


def worker_defaults():
    """Pool initializer for forked workers, which inherit the parent's handlers
    (and, from held(), its blocked signals). The parent alone handles a signal and
    ends its workers: they ignore SIGINT (Ctrl-C reaches the whole process group,
    and a traceback from each would follow) and die quietly on SIGTERM, which is
    what Pool.terminate sends, and on SIGHUP."""
    for s in SIGNALS:
        signal.signal(s, signal.SIG_IGN if s == signal.SIGINT else signal.SIG_DFL)
    if hasattr(signal, "pthread_sigmask"):
        signal.pthread_sigmask(signal.SIG_UNBLOCK, SIGNALS)
