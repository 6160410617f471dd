"""The statistics behind `compare`: a one-sided Mann-Whitney U test and the
Benjamini-Hochberg step-up procedure, in plain Python (the report tool needs
no SciPy).

Mann-Whitney U (Mann & Whitney 1947): U counts the pairs (x, y) with y > x,
ties counting one half. Under H0 (both samples from one distribution) its mean
is m n / 2 and its variance m n / 12 * ((N + 1) - sum(t^3 - t) / (N (N - 1))),
t the size of each group of tied values, N = m + n (the tie-corrected variance
as in Hollander & Wolfe, Nonparametric Statistical Methods, sec. 4.1). With no
ties and both samples small the exact null distribution is cheap: the number
of orderings with U = u obeys c(m, n, u) = c(m, n - 1, u - m) + c(m - 1, n, u)
(the largest of the m + n values is either a y, above all m x's, or an x).
Otherwise the normal approximation with a continuity correction of 1/2 is
used. These are scipy.stats.mannwhitneyu's formulas (its method="auto" goes
exact only up to 8 values a side; here up to EXACT_MAX_N, where the exact table
is still small); the tests check against SciPy when it is installed and against
hand-counted cases always.
"""

import math
from functools import lru_cache

# Exact p-values while both samples are at most this large and there are no
# ties: the table below then has at most 21 x 21 x 401 entries.
EXACT_MAX_N = 20


def ranks(values):
    """Mid-ranks (1-based; tied values share the mean of their ranks) and the tie sizes."""
    order = sorted(range(len(values)), key=values.__getitem__)
    out = [0.0] * len(values)
    ties = []
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and values[order[j + 1]] == values[order[i]]:
            j += 1
        mid = (i + j) / 2 + 1
        for k in range(i, j + 1):
            out[order[k]] = mid
        if j > i:
            ties.append(j - i + 1)
        i = j + 1
    return out, ties


@lru_cache(maxsize=None)
def _u_counts(m, n):
    """counts[u] = number of the C(m+n, m) orderings of m x's and n y's in which
    exactly u (x, y) pairs have y above x."""
    if m == 0 or n == 0:
        return (1,)
    # The largest value is either a y (it is above all m x's: u gains m) or an x (it gains nothing).
    top_y = _u_counts(m, n - 1)
    top_x = _u_counts(m - 1, n)
    out = [0] * (m * n + 1)
    for u, c in enumerate(top_y):
        out[u + m] += c
    for u, c in enumerate(top_x):
        out[u] += c
    return tuple(out)


def exact_sf(m, n, u):
    """P(U >= u) under H0, exactly (no ties)."""
    counts = _u_counts(m, n)
    u = max(0, math.ceil(u - 1e-9))
    return sum(counts[u:]) / math.comb(m + n, m) if u < len(counts) else 0.0


def min_p(m, n):
    """The smallest one-sided p-value samples of sizes m and n can give (all
    of one above all of the other, no ties): 1 / C(m + n, m)."""
    if not m or not n:
        return 1.0
    c = math.comb(m + n, m)
    return 1.0 / c if c.bit_length() < 1000 else 0.0  # beyond a float's range: as good as 0


def mann_whitney_greater(x, y):
    """One-sided test of H1: y tends to be larger than x. Returns (U, p) with U
    the number of pairs y > x (ties one half)."""
    m, n = len(x), len(y)
    if not m or not n:
        raise ValueError("both samples need at least one value")
    r, ties = ranks(list(x) + list(y))
    u = sum(r[m:]) - n * (n + 1) / 2
    if not ties and max(m, n) <= EXACT_MAX_N:
        return u, exact_sf(m, n, u)
    big_n = m + n
    var = m * n / 12 * ((big_n + 1) - sum(t ** 3 - t for t in ties) / (big_n * (big_n - 1)))
    if var <= 0:  # every value the same: no evidence either way
        return u, 1.0
    z = (u - m * n / 2 - 0.5) / math.sqrt(var)
    return u, 0.5 * math.erfc(z / math.sqrt(2))


def benjamini_hochberg(pvalues):
    """Adjusted p-values (q-values) of the step-up procedure (Benjamini &
    Hochberg 1995): a hypothesis is rejected at FDR level a when its q <= a.
    q_(i) = min over j >= i of p_(j) m / j, capped at 1."""
    m = len(pvalues)
    order = sorted(range(m), key=pvalues.__getitem__)
    q = [1.0] * m
    running = 1.0
    for rank in range(m, 0, -1):
        i = order[rank - 1]
        running = min(running, pvalues[i] * m / rank)
        q[i] = running
    return q


def median(values):
    v = sorted(values)
    n = len(v)
    if not n:
        return math.nan
    return v[n // 2] if n % 2 else (v[n // 2 - 1] + v[n // 2]) / 2


def mad_sigma(values):
    """1.4826 x the median absolute deviation: a robust estimate of the standard
    deviation (equal to it for normal data), untroubled by a minority of outliers."""
    if not values:
        return 0.0
    c = median(values)
    return 1.4826 * median([abs(v - c) for v in values])
