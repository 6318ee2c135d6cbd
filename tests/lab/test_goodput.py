"""Chapter 8's failures at scale: published rates, the Llama 3 scenario, and goodput against
the checkpoint interval, simulated and modelled."""

from __future__ import annotations

import numpy as np
import pytest

from minislurm.lab.figures import goodput_curve
from minislurm.lab.goodput import (BLOOM, DAY, HOUR, LLAMA3, OPT, frontier_run, goodput_model, goodput_sweep,
                                   llama3_failures)
from minislurm.lab.replays import young_daly

RESTART = 300 + 120 + 1  # SlurmdTimeout, requeue delay and a second: Slurm's defaults


def test_published_rates_per_job_node_and_gpu() -> None:
    assert LLAMA3.job_mtbf_h == pytest.approx(54 * 24 / 419)  # about one every 3 h
    assert LLAMA3.nodes == 2048 and LLAMA3.node_mtbf_h == pytest.approx(6335, abs=1)
    assert LLAMA3.gpu_mtbf_h == pytest.approx(LLAMA3.node_mtbf_h * 8)
    assert OPT.nodes == 124 and BLOOM.nodes == 48
    # a node fails far more often than "once in five years" (44,000 h) in all three
    assert max(r.node_mtbf_h for r in (LLAMA3, OPT, BLOOM)) < 44_000 / 5


def test_lemons_take_their_share_of_the_published_rate() -> None:
    """Over many nodes the mean failure rate is Llama 3's, lemons or not; the lemons' share of
    it is f x F / ((1 - f) + f x F): 2% of nodes failing 10 times as often cause 17% of failures."""
    nodes = range(20_000)
    for model in (llama3_failures(), llama3_failures(shape=0.7, lemon_fraction=0.02, lemon_factor=10)):
        rates = np.array([1 / model.mean_uptime(n) for n in nodes])
        assert rates.mean() == pytest.approx(1 / (LLAMA3.node_mtbf_h * HOUR), rel=0.03)
    lemons = np.array([model.is_lemon(n) for n in nodes])
    assert rates[lemons].sum() / rates.sum() == pytest.approx(0.2 / 1.18, abs=0.02)


def test_the_scenario_fails_as_often_as_llama_3() -> None:
    """2,000 of 2,048 nodes at Llama 3's per-node rate: about 419 x 2000/2048 / 54 = 7.6
    interruptions a day (Poisson: 10 days give about 85 +- 9)."""
    run = frontier_run(1200, 60, work_days=10)
    per_day = run.interruptions / (run.elapsed_s / DAY)
    assert per_day == pytest.approx(419 / 54 * 2000 / 2048, rel=0.2)
    # each interruption cost a restart and lost work; checkpoints cost 60 s per 20 min
    assert run.restart_s == RESTART
    assert run.goodput < 1200 / 1260 * (1 - run.interruptions * RESTART / run.elapsed_s)


JOB_MTBF = LLAMA3.node_mtbf_h * HOUR / 2000


def sweep():
    """Blocks of 8 nodes, each failing 8 times as often, give the run Llama 3's MTBF on an
    eighth of the nodes (fast)."""
    blocks = llama3_failures(node_mtbf_h=LLAMA3.node_mtbf_h / 8)
    return goodput_sweep([300, 600, 1200, 2400, 4800], 60, failures=blocks, nodes=256, job_nodes=250, work_days=30)


def test_simulated_goodput_peaks_near_young_and_follows_the_model() -> None:
    """The simulator's best interval is within a factor of two of Young's, and each point lies
    within 1.5 points of the first-order model."""
    runs, job_mtbf = sweep(), JOB_MTBF
    young = young_daly(60, job_mtbf)
    best = max(runs, key=lambda r: r.goodput)
    assert young / 2 <= best.interval_s <= young * 2
    assert runs[0].goodput < best.goodput > runs[-1].goodput  # too often and too rarely both cost
    for r in runs[:-1]:  # the model is first-order: good while the interval is short against the MTBF
        assert r.goodput == pytest.approx(goodput_model(r.interval_s, 60, job_mtbf, RESTART), abs=0.015)


def test_goodput_model_is_maximal_at_young() -> None:
    job_mtbf = 3 * HOUR
    grid = np.geomspace(60, 20_000, 2000)
    best = grid[np.argmax([goodput_model(t, 30, job_mtbf, 0.0) for t in grid])]
    assert best == pytest.approx(young_daly(30, job_mtbf), rel=0.05)
    assert goodput_model(600, 30, job_mtbf, 0.0) == pytest.approx(600 / 630 * (1 - 315 / job_mtbf))


def test_a_run_too_big_for_the_cluster_is_refused() -> None:
    with pytest.raises(ValueError, match="cannot start"):
        frontier_run(1200, 60, nodes=16, job_nodes=32, work_days=1)


def test_the_figure_shows_simulation_model_young_and_best() -> None:
    runs = sweep()
    fig = goodput_curve(runs, JOB_MTBF)
    lines = {line.get_gid(): line for line in fig.axes[0].lines}
    assert list(lines["simulated"].get_ydata()) == pytest.approx([100 * r.goodput for r in runs])
    best = max(runs, key=lambda r: r.goodput)
    assert list(lines["best"].get_xdata()) == [best.interval_s / 60]
    assert lines["young"].get_xdata()[0] == pytest.approx(young_daly(60, JOB_MTBF) / 60)
    model = lines["model"]
    assert max(model.get_ydata()) == pytest.approx(100 * goodput_model(young_daly(60, JOB_MTBF), 60, JOB_MTBF,
                                                                       RESTART), abs=0.2)
    assert fig.png().startswith(b"\x89PNG")
