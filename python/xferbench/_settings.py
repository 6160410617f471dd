"""What libxfer resolved in this process, and where each value came from."""
from typing import Any, Dict

from ._native_loader import native


def settings() -> Dict[str, Any]:
    """The settings libxfer resolved in this process so far, as a result file's
    ``config.settings`` records them: ``{"settings": [...], "notices": [...]}``. Each
    setting is a dict of component ("staged", "blocks", "spin", "staging-budget", ...),
    scope (the device and key it applies to; "" for the whole process), name, value (a
    string), source ("default", "environment", "argument", "cache", "calibration") and
    origin (the variable, argument or cache file). A notice says why a cache was not used.
    """
    return native().settings()
