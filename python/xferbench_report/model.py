"""The cost model t(n) = L + n / B: a fixed overhead L plus bytes over bandwidth B.

Sizes span 1 B to GiBs, so times span six or more decades. An ordinary least
squares fit on absolute times would be decided by the largest sizes alone and
leave L meaningless; the fit here minimises the *relative* residuals,
sum(((L + n_i / B) - t_i) / t_i)^2, which is still linear in (L, 1/B) and has a
closed-form solution. Every size then counts alike, and the reported error is
the RMS (and worst) relative deviation of the measurements from the model.

Where the unconstrained fit would give L < 0 (a curve that bends the other way,
e.g. a CPU memcpy falling out of cache), L is pinned to 0 and B refitted; where
the times do not grow with size at all, B is reported as unresolved (infinite).
"""

import math
from dataclasses import dataclass


@dataclass
class Fit:
    latency_s: float  # L
    bandwidth_bps: float  # B in bytes per second; math.inf when unresolved
    rms_rel_err: float  # RMS of (model - measured) / measured
    max_rel_err: float
    n_points: int
    constrained: str = ""  # "", "L=0" or "B=inf"

    @property
    def latency_us(self):
        return self.latency_s * 1e6

    @property
    def bandwidth_gbps(self):
        return self.bandwidth_bps / 1e9

    def predict(self, n):
        return self.latency_s + (n / self.bandwidth_bps if math.isfinite(self.bandwidth_bps) else 0.0)

    def describe(self):
        b = f"{self.bandwidth_gbps:.3g} GB/s" if math.isfinite(self.bandwidth_bps) else "unresolved B"
        return f"t(n) = {self.latency_us:.3g} us + n / {b} (rms error {100 * self.rms_rel_err:.1f}%)"


def fit_cost_model(sizes, times):
    """Fits t = L + n / B to (size in bytes, time in seconds) pairs.

    Returns None with fewer than two distinct sizes (two unknowns need two).
    """
    pairs = [(float(n), float(t)) for n, t in zip(sizes, times) if t > 0 and n > 0]
    if len({n for n, _ in pairs}) < 2:
        return None
    # Rows of the weighted system: [1/t, n/t] . [L, c] ~ 1, with c = 1/B.
    a = [1.0 / t for _, t in pairs]
    b = [n / t for n, t in pairs]
    # Scale the columns to unit norm so the 2x2 normal equations stay well conditioned
    # (n/t reaches 1e11 while 1/t can be 1e2).
    sa = math.sqrt(sum(x * x for x in a))
    sb = math.sqrt(sum(x * x for x in b))
    a_s = [x / sa for x in a]
    b_s = [x / sb for x in b]
    saa = sum(x * x for x in a_s)
    sbb = sum(x * x for x in b_s)
    sab = sum(x * y for x, y in zip(a_s, b_s))
    ra = sum(a_s)
    rb = sum(b_s)
    det = saa * sbb - sab * sab
    constrained = ""
    if det > 1e-12:
        L = (ra * sbb - rb * sab) / det / sa
        c = (rb * saa - ra * sab) / det / sb
    else:  # all points proportional: fall through to the one-parameter fits
        L, c = -1.0, -1.0
    if L < 0 or c <= 0:
        # One-parameter fits; keep the better of the two admissible ones.
        c_only = sum(b) / sum(x * x for x in b)  # L = 0
        L_only = sum(a) / sum(x * x for x in a)  # c = 0 (B unresolved)
        err_c = _rms([(c_only * n - t) / t for n, t in pairs])
        err_L = _rms([(L_only - t) / t for n, t in pairs])
        if c_only > 0 and err_c <= err_L:
            L, c, constrained = 0.0, c_only, "L=0"
        else:
            L, c, constrained = L_only, 0.0, "B=inf"
    rel = [((L + c * n) - t) / t for n, t in pairs]
    return Fit(
        latency_s=L,
        bandwidth_bps=1.0 / c if c > 0 else math.inf,
        rms_rel_err=_rms(rel),
        max_rel_err=max(abs(r) for r in rel),
        n_points=len(pairs),
        constrained=constrained,
    )


def _rms(values):
    return math.sqrt(sum(v * v for v in values) / len(values)) if values else 0.0
