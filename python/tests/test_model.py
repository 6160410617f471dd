import math
import random

import pytest

from xferbench_report.analysis import break_even_transfers
from xferbench_report.model import fit_cost_model

SIZES = [2 ** k for k in range(0, 31)]  # 1 B .. 1 GiB


def synthetic(L, B, noise=0.0, seed=0, sizes=SIZES):
    rng = random.Random(seed)
    return sizes, [(L + n / B) * math.exp(rng.gauss(0, noise)) for n in sizes]


@pytest.mark.parametrize("L,B", [(2e-6, 53e9), (8e-6, 25e9), (40e-9, 12e9), (1e-3, 1e9)])
def test_exact_data_recovers_L_and_B_exactly(L, B):
    fit = fit_cost_model(*synthetic(L, B))
    assert fit.latency_s == pytest.approx(L, rel=1e-9)
    assert fit.bandwidth_bps == pytest.approx(B, rel=1e-9)
    assert fit.rms_rel_err < 1e-9 and fit.max_rel_err < 1e-9
    assert fit.constrained == ""


@pytest.mark.parametrize("seed", range(5))
def test_noisy_data_recovers_L_and_B_within_tolerance(seed):
    L, B = 2e-6, 53e9
    fit = fit_cost_model(*synthetic(L, B, noise=0.02, seed=seed))  # 2% multiplicative noise
    assert fit.latency_s == pytest.approx(L, rel=0.03)
    assert fit.bandwidth_bps == pytest.approx(B, rel=0.03)
    assert 0.005 < fit.rms_rel_err < 0.04  # the fit error reports the noise


def test_units_and_prediction():
    fit = fit_cost_model(*synthetic(2e-6, 50e9))
    assert fit.latency_us == pytest.approx(2.0)
    assert fit.bandwidth_gbps == pytest.approx(50.0)
    assert fit.predict(1e9) == pytest.approx(2e-6 + 0.02)
    assert "t(n) = 2 us + n / 50 GB/s" in fit.describe()


def test_two_sizes_fit_exactly_and_one_size_cannot_be_fitted():
    fit = fit_cost_model([1024, 1 << 20], [1e-6 + 1024 / 1e10, 1e-6 + (1 << 20) / 1e10])
    assert fit.latency_s == pytest.approx(1e-6) and fit.bandwidth_bps == pytest.approx(1e10)
    assert fit_cost_model([4096], [1e-6]) is None
    assert fit_cost_model([4096, 4096], [1e-6, 1.1e-6]) is None
    assert fit_cost_model([], []) is None


def test_a_curve_bending_the_other_way_pins_L_to_zero():
    # Faster than linear at large sizes would need a negative L: refit with L = 0.
    sizes = [2 ** k for k in range(10, 20)]
    times = [n / 10e9 * (1.3 if n > 2 ** 15 else 1.0) for n in sizes]
    fit = fit_cost_model(sizes, times)
    assert fit.latency_s == 0.0 and fit.constrained == "L=0"
    assert 7e9 < fit.bandwidth_bps < 10e9


def test_flat_times_leave_B_unresolved():
    fit = fit_cost_model([1, 4, 16, 64], [5e-6, 5e-6, 5e-6, 5e-6])
    assert fit.latency_s == pytest.approx(5e-6)
    assert math.isinf(fit.bandwidth_bps) and fit.constrained == "B=inf"


def test_break_even():
    # pinned: 100 us more setup, 1 us faster per transfer -> pays off from the 100th transfer
    assert break_even_transfers(10e-6, 3e-6, 110e-6, 2e-6) == 100
    assert break_even_transfers(10e-6, 3e-6, 5e-6, 2e-6) == 1  # never worse
    assert break_even_transfers(10e-6, 3e-6, 50e-6, 3e-6) == math.inf  # not faster: never
    assert break_even_transfers(10e-6, 3e-6, 5e-6, 4e-6) == math.inf
