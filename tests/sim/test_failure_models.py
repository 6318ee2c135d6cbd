"""The failure model's draws: Weibull up-times of the asked mean and shape, and lemons.

Each check draws enough up-times (fixed seeds) that its tolerance, a few standard errors wide,
lets the right distribution through and stops the wrong one: the same draws are tested against
a wrong shape too, and must fail that test.
"""

from __future__ import annotations

import itertools
import math
import random

import numpy as np
import pytest

from minislurm.sim.failures import FailureModel

HOUR = 3600.0
N = 20_000
KS_LIMIT = 1.95 / math.sqrt(N)  # Kolmogorov-Smirnov at the 0.1% level


def draws(model: FailureModel, node: int = 0, n: int = N) -> np.ndarray:
    return np.fromiter(itertools.islice(model.uptimes(node), n), float, count=n)


def weibull_cdf(mean: float, k: float):
    scale = mean / math.gamma(1 + 1 / k)
    return lambda x: 1 - np.exp(-((x / scale) ** k))


def ks_distance(sample: np.ndarray, cdf) -> float:
    """The largest gap between the sample's empirical CDF and ``cdf``."""
    x = np.sort(sample)
    f, i = cdf(x), np.arange(1, len(x) + 1)
    return float(max((i / len(x) - f).max(), (f - (i - 1) / len(x)).max()))


def shape_estimate(sample: np.ndarray) -> float:
    """k from the spread of log up-times: for a Weibull, sd(ln X) = pi / (k sqrt 6)."""
    return math.pi / (math.sqrt(6) * float(np.log(sample).std()))


def test_exponential_draws_are_the_streams_replays_always_had() -> None:
    """Shape 1 draws what the exponential-only model drew for a seed: old replays repeat."""
    model = FailureModel(500 * HOUR, seed=4)
    old = random.Random("4:7")
    assert list(itertools.islice(model.uptimes(7), 50)) == [old.expovariate(1 / (500 * HOUR)) for _ in range(50)]


@pytest.mark.parametrize("k", [0.5, 0.7, 1.0, 1.5])
def test_weibull_uptimes_have_the_asked_mean_and_shape(k: float) -> None:
    mean = 1000 * HOUR
    x = draws(FailureModel(mean, shape=k, seed=11))
    cv = math.sqrt(math.gamma(1 + 2 / k) / math.gamma(1 + 1 / k) ** 2 - 1)
    assert abs(x.mean() - mean) < 4 * cv * mean / math.sqrt(N)  # 4 standard errors
    assert shape_estimate(x) == pytest.approx(k, rel=0.03)
    assert ks_distance(x, weibull_cdf(mean, k)) < KS_LIMIT
    # the same draws are not those of a neighbouring shape, nor of the exponential
    wrong = [w for w in (0.7 * k, 1.3 * k, 1.0) if abs(w - k) > 1e-9]
    for w in wrong:
        assert shape_estimate(x) != pytest.approx(w, rel=0.1)
        assert ks_distance(x, weibull_cdf(mean, w)) > 3 * KS_LIMIT


def test_infant_mortality_means_failing_again_soon_after_a_return() -> None:
    """Every repair restarts a node's clock: with k = 0.5 over a third of its up-times end in
    the first tenth of the mean (1 - exp(-sqrt(0.2)) = 0.36), against 1 - exp(-0.1) = 0.095
    for the exponential of the same mean."""
    mean = 1000 * HOUR
    soon = {k: float((draws(FailureModel(mean, shape=k, seed=2)) < 0.1 * mean).mean()) for k in (0.5, 1.0)}
    assert soon[0.5] == pytest.approx(1 - math.exp(-math.sqrt(0.2)), abs=0.015)
    assert soon[1.0] == pytest.approx(1 - math.exp(-0.1), abs=0.01)


def test_lemons_are_the_asked_share_fail_far_more_often_and_again_soon_after_repair() -> None:
    model = FailureModel(2000 * HOUR, repair_s=4 * HOUR, seed=1, lemon_fraction=0.05, lemon_factor=10.0)
    nodes = range(4000)
    lemons = {n for n in nodes if model.is_lemon(n)}
    assert abs(len(lemons) / len(nodes) - 0.05) < 0.012  # binomial sd 0.0034
    assert lemons == {n for n in nodes if model.is_lemon(n)}  # seeded: the same nodes every time
    horizon = 4000 * HOUR
    times = {n: model.failure_times(n, horizon) for n in nodes}
    per_lemon = np.mean([len(times[n]) for n in lemons])
    per_healthy = np.mean([len(times[n]) for n in nodes if n not in lemons])
    # a renewal process fails about horizon / (mean up-time + repair) times
    assert per_healthy == pytest.approx(horizon / (2004 * HOUR), rel=0.08)
    assert per_lemon == pytest.approx(horizon / (204 * HOUR), rel=0.08)
    assert per_lemon > 8 * per_healthy

    def back_to_next_failure(n):  # hours from each return to the node's next failure
        return [(b - a - model.repair_s) / HOUR for a, b in zip(times[n], times[n][1:])]

    lemon_gaps = [g for n in lemons for g in back_to_next_failure(n)]
    healthy_gaps = [g for n in nodes if n not in lemons for g in back_to_next_failure(n)]
    assert np.median(lemon_gaps) < np.median(healthy_gaps) / 5
    # no lemons asked for, none drawn; and the model refuses what makes no sense
    assert not any(FailureModel(2000 * HOUR).is_lemon(n) for n in nodes)
    for bad in ({"shape": 0}, {"lemon_fraction": 1.5}, {"lemon_factor": 0.5}, {"repair_s": -1}):
        with pytest.raises(ValueError):
            FailureModel(2000 * HOUR, **bad)


def test_failure_times_take_repairs_into_account() -> None:
    model = FailureModel(100 * HOUR, repair_s=10 * HOUR, seed=5)
    ups = list(itertools.islice(model.uptimes(3), 5))
    expected = list(itertools.accumulate(u + model.repair_s for u in ups))
    expected = [t - model.repair_s for t in expected]
    assert model.failure_times(3, expected[4] + 1) == pytest.approx(expected)
    assert model.failure_times(3, expected[0]) == []
    assert FailureModel(0.0).failure_times(0, 1e12) == []  # MTBF 0: no failures
