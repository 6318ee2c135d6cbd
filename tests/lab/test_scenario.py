"""The lesson driver: jobs through time, every decision from minislurm's schedule()."""

from __future__ import annotations

import random

import pytest

from minislurm.core.reservation import AdvanceReservation
from minislurm.lab.scenario import LabJob, run_scenario

MIN, H = 60.0, 3600.0

# The reference scenario (tests/sched/test_scenario.py), now played through time.
REFERENCE = [LabJob("A", 0, 1, 4, 120), LabJob("B", 10, 2, 4, 300), LabJob("C", 20, 1, 2, 60),
             LabJob("D", 30, 1, 2, 600)]

# D is second in line; under EASY only B gets a promise, so E may overtake D.
OVERTAKE = [LabJob("A", 0, 1, 4, 60 * MIN), LabJob("F", 0, 1, 2, 30 * MIN), LabJob("B", 60, 2, 4, 60 * MIN),
            LabJob("D", 120, 1, 4, 20 * MIN), LabJob("E", 180, 1, 2, 50 * MIN)]


def test_reference_scenario_conservative():
    r = run_scenario(REFERENCE)
    assert r.order == ["A", "C", "B", "D"]
    assert r.runs["A"].gpus == ((0, 1, 2, 3),) and r.runs["A"].nodes == (0,)
    assert r.runs["C"].backfilled and r.start("C") == 20
    assert r.runs["C"].nodes == (1,) and r.runs["C"].gpus == ((0, 1),)
    assert r.first_promise("B").start == 120 and r.first_promise("B").nodes == (0, 1)
    assert r.start("B") == 120
    assert r.reasons["B"] == "Resources" and r.reasons["D"] == "Priority"
    # Conservative: D is promised a start after B as soon as it is submitted.
    assert r.first_promise("D").at == 30 and r.first_promise("D").start == 420


def test_reference_scenario_easy_promises_only_the_first_blocked_job():
    r = run_scenario(REFERENCE, policy="easy")
    assert r.order == ["A", "C", "B", "D"]
    assert r.first_promise("D").at == 120  # only once B has started is D the first in line


def test_reference_scenario_fifo_never_backfills():
    r = run_scenario(REFERENCE, policy="fifo")
    assert r.backfilled == [] and r.promises == {}
    assert r.start("C") == 420 and r.reasons["C"] == "Priority"


def test_easy_lets_a_later_job_overtake_the_second_in_line():
    cons = run_scenario(OVERTAKE)
    easy = run_scenario(OVERTAKE, policy="easy")
    assert cons.order == ["A", "F", "D", "B", "E"] and cons.start("D") == 30 * MIN
    assert easy.order == ["A", "F", "E", "B", "D"] and easy.start("D") == 120 * MIN
    assert easy.start("B") == cons.start("B") == 60 * MIN  # the first in line is protected by both


def test_a_job_that_ends_early_lets_the_promised_job_start_early():
    jobs = [LabJob("long", 0, 1, 4, limit=3 * H, runtime=2 * H), LabJob("big", 60, 2, 4, limit=H)]
    r = run_scenario(jobs)
    assert r.first_promise("big").start == 3 * H
    assert r.start("big") == 2 * H


def test_runtime_beyond_the_limit_is_a_timeout_at_the_limit():
    r = run_scenario([LabJob("greedy", 0, 1, 1, limit=10 * MIN, runtime=30 * MIN)])
    run = r.runs["greedy"]
    assert run.state == "TIMEOUT" and run.end == 10 * MIN


def test_advance_reservation_holds_its_nodes():
    resv = AdvanceReservation("llm", ("node02",), start=2 * H, end=50 * H, users=frozenset({"alice"}))
    jobs = [LabJob("fill1", 0, 1, 4, limit=10 * H),
            LabJob("short", 60, 1, 2, limit=H),  # ends before the window: may use node02
            LabJob("long", 120, 1, 2, limit=5 * H),  # would overlap the window: kept off node02
            LabJob("run", 180, 1, 4, limit=48 * H, user="alice", reservation="llm")]
    r = run_scenario(jobs, reservations=[resv])
    assert r.runs["short"].nodes == (1,) and r.start("short") == 60
    assert r.reasons["long"] == "ReqNodeNotAvail, May be reserved for other job"
    assert r.runs["long"].nodes == (0,) and r.start("long") == 10 * H
    assert r.reasons["run"] == "Reservation"
    assert r.start("run") == 2 * H and r.runs["run"].nodes == (1,)


def test_impossible_jobs_are_refused_with_slurms_message():
    with pytest.raises(ValueError, match="Requested node configuration is not available"):
        run_scenario([LabJob("huge", 0, nodes=3, gpus=4)], nodes=2)
    with pytest.raises(ValueError, match="unique"):
        run_scenario([LabJob("x"), LabJob("x")])
    with pytest.raises(ValueError, match="policy"):
        run_scenario([LabJob("x")], policy="sjf")


def _random_jobs(rng: random.Random, n: int) -> list[LabJob]:
    jobs = []
    for i in range(n):
        limit = rng.choice([10, 20, 30, 60, 120, 240]) * MIN
        jobs.append(LabJob(f"j{i}", submit=rng.randrange(0, 120) * MIN, nodes=rng.choice([1, 1, 1, 2, 3]),
                           gpus=rng.randint(1, 4), limit=limit, runtime=limit * rng.choice([0.3, 0.7, 1.0])))
    return jobs


def test_a_promise_is_an_estimate_a_job_ahead_may_start_early_and_take_its_place():
    # Backfill reserves whole nodes, so it plans j2 (3 nodes x 2 GPUs) after j0 frees node01 at
    # 6:12; the main scheduler then packs j2 beside j0 at 2:12, ahead of j3 (priority order),
    # and j3's promised start slips by j2's ten minutes.  Real Slurm behaves the same way.
    jobs = [LabJob("j1", 72 * MIN, 3, 4, 60 * MIN), LabJob("j0", 84 * MIN, 1, 2, 240 * MIN),
            LabJob("j2", 110 * MIN, 3, 2, 10 * MIN), LabJob("j3", 119 * MIN, 2, 3, 240 * MIN)]
    r = run_scenario(jobs, nodes=3)
    assert r.first_promise("j2").start == 372 * MIN and r.start("j2") == 132 * MIN
    assert r.first_promise("j3").start == 132 * MIN and r.start("j3") == 142 * MIN
    assert not r.runs["j2"].backfilled  # the main scheduler started it, in priority order


def test_the_first_job_in_line_starts_by_its_promise_when_jobs_use_their_limits():
    # Nothing ahead of the head of the queue can take its place, under either backfill policy.
    for seed in range(40):
        jobs = [LabJob(j.name, j.submit, j.nodes, j.gpus, j.limit) for j in _random_jobs(random.Random(seed), 12)]
        for policy in ("conservative", "easy"):
            r = run_scenario(jobs, nodes=3, policy=policy)
            for name, promises in r.promises.items():
                p = promises[0]
                ahead = [j for j in jobs if (j.submit, jobs.index(j)) < (r.job(name).submit, jobs.index(r.job(name)))]
                if all(r.start(j.name) <= p.at for j in ahead):  # it was first in line when promised
                    assert r.start(name) <= p.start, (seed, policy, name, p)


@pytest.mark.parametrize("seed", range(10))
def test_every_policy_runs_every_job_once_without_overcommitting(seed):
    jobs = _random_jobs(random.Random(100 + seed), 12)
    for policy in ("conservative", "easy", "fifo"):
        r = run_scenario(jobs, nodes=3, policy=policy)
        assert sorted(r.runs) == sorted(j.name for j in jobs)
        # No GPU is held by two runs at the same time.
        held = [(run.start, run.end, n, g) for run in r.runs.values()
                for n, gs in zip(run.nodes, run.gpus) for g in gs]
        for i, (s1, e1, n1, g1) in enumerate(held):
            for s2, e2, n2, g2 in held[i + 1:]:
                assert not (n1 == n2 and g1 == g2 and s1 < e2 and s2 < e1)
