"""Human-readable sizes, times and rates (binary sizes, decimal GB/s as the C++ tool)."""

import math

_SIZE_UNITS = ["B", "KiB", "MiB", "GiB", "TiB"]


def format_size(n):
    """1 -> '1 B', 65536 -> '64 KiB', 1.5 GiB -> '1.5 GiB'."""
    n = float(n)
    unit = 0
    while n >= 1024 and unit < len(_SIZE_UNITS) - 1:
        n /= 1024
        unit += 1
    text = f"{n:.0f}" if n == int(n) else f"{n:.3g}"
    return f"{text} {_SIZE_UNITS[unit]}"


def short_size(n):
    """Compact axis label: '1', '4K', '64M', '1G'."""
    text = format_size(n).replace(" ", "")
    return text.replace("KiB", "K").replace("MiB", "M").replace("GiB", "G").replace("TiB", "T").replace("B", "")


def format_time(seconds):
    """Three significant digits in ns, us, ms or s."""
    if seconds is None or not math.isfinite(seconds):
        return "-"
    s = abs(seconds)
    for scale, unit in ((1, "s"), (1e-3, "ms"), (1e-6, "us"), (1e-9, "ns")):
        if s >= scale or unit == "ns":
            return f"{_sig3(seconds / scale)} {unit}"
    return "-"


def format_us(seconds):
    """Microseconds with sensible precision, no unit."""
    if seconds is None or not math.isfinite(seconds):
        return "-"
    return _sig3(seconds * 1e6)


def format_gbps(v):
    if v is None or not math.isfinite(v):
        return "-"
    return f"{v:.3f}" if v < 1 else f"{v:.2f}" if v < 100 else f"{v:.1f}"


def _sig3(x):
    if x == 0:
        return "0"
    digits = max(0, 2 - int(math.floor(math.log10(abs(x)))))
    return f"{x:.{digits}f}"
