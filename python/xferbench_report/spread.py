"""A point's measured spread, shared by `compare` and the break-even analysis."""

import math

LOW_Q, HIGH_Q = 0.05, 0.95


def quantile(values, q):
    """Linear interpolation between order statistics (numpy's default)."""
    v = sorted(values)
    if not v:
        return math.nan
    h = (len(v) - 1) * q
    lo = math.floor(h)
    return v[lo] + (h - lo) * (v[lo + 1] - v[lo]) if lo + 1 < len(v) else v[lo]


def spread(p):
    """(low, high) of an ok point's per-transfer sample times: p5..p95 (load
    refuses an ok point without samples)."""
    return quantile(p.samples_s, LOW_Q), quantile(p.samples_s, HIGH_Q)


def clearly_faster(a, b):
    """a is faster than b beyond both points' spread (a's p95 below b's p5)."""
    return spread(a)[1] < spread(b)[0]
