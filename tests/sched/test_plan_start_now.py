"""Plan.start_now (EASY's shortcut for jobs that get no promise) must answer exactly as
Plan.earliest_start does whenever that start is now, and say None otherwise."""

from types import SimpleNamespace

import numpy as np

from minislurm.core.job import Allocation
from minislurm.sched.plan import NEVER, Plan
from minislurm.sched.releases import Releases


def plan_of(free, running: list, now: int = 120, resolution: int = 60) -> Plan:
    return Plan(free, Releases(len(free.cpu), resolution).update(dict(enumerate(running))), now)


def _random_plan(rng: np.random.Generator) -> Plan:
    nodes = int(rng.integers(2, 12))
    free = SimpleNamespace(cpu=rng.integers(0, 9, nodes), mem=rng.integers(0, 9, nodes) * 1000,
                           gpu=rng.integers(0, 5, nodes))
    running = []
    for _ in range(int(rng.integers(0, 10))):
        node = int(rng.integers(nodes))
        alloc = Allocation((node,), (int(rng.integers(1, 4)),), (1000,), ((0,),))
        running.append(SimpleNamespace(start_time=0.0, time_limit=float(rng.integers(1, 20) * 60), alloc=alloc))
    plan = plan_of(free, running)
    for _ in range(int(rng.integers(0, 6))):
        chosen = rng.choice(nodes, size=int(rng.integers(1, nodes + 1)), replace=False)
        start = int(rng.integers(0, 15)) * 60 + 120
        free_of_promises = all(
            not ((plan.promises.node == n) & (plan.promises.start < start + 600) & (plan.promises.end > start)).any()
            for n in chosen)
        if free_of_promises:
            plan.reserve(chosen, start, start + int(rng.integers(1, 10)) * 60)
    return plan


def test_start_now_agrees_with_earliest_start():
    rng = np.random.default_rng(14)
    now_answers = 0
    for _ in range(600):
        plan = _random_plan(rng)
        req = (int(rng.integers(1, 5)), 1000, int(rng.integers(0, 3)))
        ready = plan.ready_times(None, req).copy()
        # A node's ready time is now exactly where the request is free now (backfill asks
        # start_now with what is free, without working out ready times).
        free = plan.free
        assert ((ready <= plan.now) == ((free.cpu >= req[0]) & (free.mem >= req[1]) & (free.gpu >= req[2]))).all()
        ready[rng.random(len(ready)) < 0.2] = NEVER  # nodes the job may not use
        k, duration = int(rng.integers(1, 4)), int(rng.integers(1, 12)) * 60
        found = plan.earliest_start(ready, k, duration)
        shortcut = plan.start_now(ready <= plan.now, k, duration)
        if found is not None and found[0] <= plan.now:
            now_answers += 1
            assert shortcut is not None and list(shortcut) == list(found[1])
        else:
            assert shortcut is None
    assert now_answers > 50  # the "now" case was really exercised


def test_a_job_added_to_the_plan_counts_as_if_it_had_been_running():
    """Plan.add_running updates only the started job's nodes; every request's ready times must
    be those of a plan built with the job among the running ones (several jobs to a node,
    equal end times, rows that must grow, multi-node jobs)."""
    rng = np.random.default_rng(7)
    for _ in range(300):
        nodes = int(rng.integers(1, 6))
        free = SimpleNamespace(cpu=rng.integers(0, 9, nodes), mem=rng.integers(0, 9, nodes) * 1000,
                               gpu=rng.integers(0, 5, nodes))

        def job(start: float) -> SimpleNamespace:
            held = rng.choice(nodes, size=int(rng.integers(1, nodes + 1)), replace=False).tolist()
            alloc = Allocation(tuple(held), tuple(int(c) for c in rng.integers(1, 4, len(held))),
                               tuple(int(m) * 1000 for m in rng.integers(0, 3, len(held))),
                               tuple(tuple(range(int(g))) for g in rng.integers(0, 3, len(held))))
            return SimpleNamespace(start_time=start, time_limit=float(rng.integers(1, 6) * 60), alloc=alloc)
        running = [job(float(rng.integers(0, 3) * 60)) for _ in range(int(rng.integers(0, 6)))]
        started = [job(120.0) for _ in range(int(rng.integers(1, 6)))]
        grown = plan_of(free, running)
        for one in started:
            grown.add_running(one)
        built = plan_of(free, running + started)
        for cpus in range(0, 12, 2):
            for gpus in range(0, 6):
                req = (cpus, 1000, gpus)
                assert grown.ready_times(req, req).tolist() == built.ready_times(req, req).tolist()
