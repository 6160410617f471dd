import math
import random

import pytest

from xferbench_report.ranktest import (benjamini_hochberg, mad_sigma, mann_whitney_greater, min_p, ranks)


def test_ranks_share_ties():
    assert ranks([3.0, 1.0, 3.0, 2.0]) == ([3.5, 1.0, 3.5, 2.0], [2])


@pytest.mark.parametrize("x, y, u, p", [
    # Counted by hand over the C(m+n, m) orderings, each equally likely under H0.
    ([1, 2], [3, 4], 4, 1 / 6),  # the one ordering of 6 with both y's on top
    ([1, 3], [2, 4], 3, 2 / 6),  # U over the 6 orderings of two and two: 0, 1, 2, 2, 3, 4
    ([3, 4], [1, 2], 0, 1.0),
    ([1, 2, 3], [4, 5, 6], 9, 1 / 20),
    ([1, 2, 4], [3, 5, 6], 8, 2 / 20),  # U >= 8: U = 9 (1 ordering) and U = 8 (1 ordering)
])
def test_exact_p_values_match_hand_counts(x, y, u, p):
    got_u, got_p = mann_whitney_greater(x, y)
    assert got_u == u
    assert got_p == pytest.approx(p)


def test_normal_approximation_with_ties_matches_a_hand_computation():
    # x = 1, 1, 2 and y = 2, 3, 3: mid-ranks 1.5 1.5 3.5 | 3.5 5.5 5.5, U = 14.5 - 6 = 8.5;
    # three ties of two: var = 9/12 x (7 - 18/30) = 4.8; z = (8.5 - 4.5 - 0.5) / sqrt(4.8).
    u, p = mann_whitney_greater([1, 1, 2], [2, 3, 3])
    z = 3.5 / math.sqrt(4.8)
    assert u == 8.5
    assert p == pytest.approx(0.5 * math.erfc(z / math.sqrt(2)), rel=1e-12)
    assert p == pytest.approx(0.0551, abs=1e-4)


def test_all_equal_values_give_no_evidence():
    assert mann_whitney_greater([1.0] * 30, [1.0] * 30) == (450.0, 1.0)


def test_larger_samples_use_the_normal_approximation():
    # 30 y's all above 30 x's: U = 900, z = (900 - 450 - 0.5) / sqrt(900 x 61 / 12).
    u, p = mann_whitney_greater(list(range(30)), list(range(100, 130)))
    assert u == 900
    assert p == pytest.approx(0.5 * math.erfc((449.5 / math.sqrt(900 * 61 / 12)) / math.sqrt(2)))


def test_min_p():
    assert min_p(2, 2) == pytest.approx(1 / 6)
    assert min_p(3, 3) == pytest.approx(1 / 20)
    assert min_p(0, 5) == 1.0
    assert min_p(600, 600) == 0.0  # C(1200, 600) is beyond a float: as good as 0


def test_agrees_with_scipy():
    stats = pytest.importorskip("scipy.stats")
    rng = random.Random(1)
    for _ in range(300):
        m, n = rng.randint(1, 40), rng.randint(1, 40)
        tied = rng.random() < 0.5
        draw = (lambda: rng.randint(0, 6)) if tied else rng.random
        x = [draw() for _ in range(m)]
        y = [draw() + (0.5 if rng.random() < 0.5 else 0) for _ in range(n)]
        if len(set(x + y)) == 1:
            continue
        exact = len(set(x + y)) == m + n and max(m, n) <= 20
        ref = stats.mannwhitneyu(y, x, alternative="greater", method="exact" if exact else "asymptotic")
        u, p = mann_whitney_greater(x, y)
        assert u == ref.statistic
        assert p == pytest.approx(ref.pvalue, rel=1e-9, abs=1e-300)


def test_benjamini_hochberg_by_hand():
    # Sorted: 0.01 (x4/1 = 0.04), 0.03 (x4/2 = 0.06), 0.04 (x4/3 = 0.0533), 0.5 (x4/4); step-up minimum from the top.
    q = benjamini_hochberg([0.01, 0.04, 0.03, 0.5])
    assert q == pytest.approx([0.04, 0.04 * 4 / 3, 0.04 * 4 / 3, 0.5])
    assert benjamini_hochberg([]) == []
    assert benjamini_hochberg([0.9, 0.99]) == pytest.approx([0.99, 0.99])


def test_benjamini_hochberg_agrees_with_scipy():
    stats = pytest.importorskip("scipy.stats")
    rng = random.Random(2)
    for _ in range(100):
        p = [rng.random() ** 3 for _ in range(rng.randint(1, 60))]
        assert benjamini_hochberg(p) == pytest.approx(list(stats.false_discovery_control(p)))


def test_mad_sigma_is_robust():
    assert mad_sigma([1.0, 2.0, 3.0, 4.0, 100.0]) == pytest.approx(1.4826)
    assert mad_sigma([]) == 0.0
