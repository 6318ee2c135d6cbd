"""Plan.OneNodeStarts (the kept search for one-node jobs, a speed-up) must give the answer of
Plan.earliest_start's search over every node, whatever promises and starts came between two
questions; Promises.first_fit is the walk it rests on."""

from types import SimpleNamespace

import numpy as np

from minislurm.core.job import Allocation
from minislurm.sched.plan import NEVER, Plan
from minislurm.sched.promises import Promises
from minislurm.sched.releases import Releases


def _running(rng, nodes: int, start: float) -> SimpleNamespace:
    node = int(rng.integers(nodes))
    alloc = Allocation((node,), (int(rng.integers(1, 4)),), (1000,), (tuple(range(int(rng.integers(0, 3)))),))
    return SimpleNamespace(start_time=start, time_limit=float(rng.integers(1, 30) * 60), alloc=alloc)


def _searched(plan: Plan, ready: np.ndarray, duration: int):
    """The answer of the search over every node (the kept one set aside)."""
    kept, plan.one_node = plan.one_node, None
    try:
        found = plan.earliest_start(ready, 1, duration)
    finally:
        plan.one_node = kept
    return None if found is None else (found[0], found[1].tolist())


def test_the_kept_search_answers_as_the_full_one():
    rng = np.random.default_rng(27)
    answers = later = 0
    for _ in range(150):
        nodes = int(rng.integers(1, 10))
        free = SimpleNamespace(cpu=rng.integers(0, 9, nodes), mem=rng.integers(0, 9, nodes) * 1000,
                               gpu=rng.integers(0, 5, nodes))
        running = {i: _running(rng, nodes, float(rng.integers(0, 3) * 60)) for i in range(int(rng.integers(0, 12)))}
        plan = Plan(free, Releases(nodes, 60).update(running), 120)
        plan.keep_one_node_starts()
        # A few requests and node sets, asked again and again as a cycle asks them.
        asks = [((int(rng.integers(1, 5)), 1000, int(rng.integers(0, 3))), rng.random(nodes) < 0.8) for _ in range(3)]
        for _ in range(40):
            req, allowed = asks[int(rng.integers(len(asks)))]
            ready = np.where(allowed, plan.ready_times(req, req), NEVER)
            duration = int(rng.choice([60, 300, 600, 1800, NEVER]))
            found = plan.earliest_start(ready, 1, duration)
            got = None if found is None else (found[0], found[1].tolist())
            assert got == _searched(plan, ready, duration)
            answers += found is not None
            if found is not None and found[0] > plan.now:
                later += 1
                plan.reserve(found[1], found[0], min(found[0] + duration, NEVER))  # its promise, as backfill makes it
            elif found is not None and rng.random() < 0.3:
                plan.add_running(SimpleNamespace(start_time=plan.now, time_limit=float(duration),
                                                 alloc=Allocation((int(found[1][0]),), (req[0],), (1000,),
                                                                  (tuple(range(req[2])),))))
            node, start, length = int(rng.integers(nodes)), 120 + int(rng.integers(0, 40)) * 60, int(rng.integers(1, 20)) * 60
            if plan.promises.first_fit(node, start, length) == start:  # and some other job's promise
                plan.reserve([node], start, start + length)
    assert answers > 2000 and later > 1000  # promises and later starts were really exercised


def test_first_fit_walks_one_nodes_promises():
    p = Promises()
    p.add(np.array([3]), 100, 200)
    p.add(np.array([3]), 260, 300)
    p.add(np.array([3, 4]), 300, NEVER)
    assert p.first_fit(3, 0, 100) == 0  # before the first promise, just long enough
    assert p.first_fit(3, 250, 10) == 250  # between two
    assert p.first_fit(3, 150, 60) == 200  # inside one: from its end, into a gap just long enough
    assert p.first_fit(3, 0, 101) == NEVER  # too long for every gap, and then promised for ever
    assert p.first_fit(5, 42, NEVER) == 42  # no promise on the node
    assert p.first_fit(4, 0, NEVER) == NEVER
