"""The scheduler's speed-ups change no decision.

A replay keeps three accelerators between passes: the queue's order (sched/order.QueueOrder),
the running jobs' releases (sched/releases.Releases), and passes that stop once nothing more
could start (``promise_all=False``, with sched/startnow's shortcut).  Here real traces are
replayed twice, with them and without (every pass sorts, plans and tests afresh, as the policy
reads on its own), and every job must start at the same moment on the same nodes.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from minislurm.core.cluster import simple_cluster
from minislurm.sim.engine import Simulator
from minislurm.sim.traces import read_trace

TRACES = Path(__file__).resolve().parents[2] / "data" / "traces"

CASES = [  # trace, jobs, nodes x GPUs: a lesson's, and overloaded slices (deep queues, many promises)
    ("lesson_small.csv", None, 4, 8),
    ("rfold_philly_trace.csv", 1500, 8, 8),
    ("lublin_256.swf", 1000, None, 0),
]


def decisions(trace: str, limit: int | None, nodes: int | None, gpus: int, policy: str, speedups: bool):
    cfg = simple_cluster(nodes or 256, cpus=1 if nodes is None else 32, mem=1, gpus=gpus, policy=policy)
    cfg.priority.type = "priority/basic"
    read = read_trace(str(TRACES / trace), cores_per_node=cfg.nodes[0].cpus, gpus_per_node=gpus, limit=limit)
    sim = Simulator(cfg, read.jobs, speedups=speedups)
    records = sim.run()
    return {r.job_id: (r.start, r.end, tuple((s.start, s.nodes) for s in r.segments)) for r in records}


@pytest.mark.parametrize("policy", ["conservative", "easy"])
@pytest.mark.parametrize("trace,limit,nodes,gpus", CASES)
def test_the_same_decisions_with_the_speedups_and_without(trace, limit, nodes, gpus, policy):
    fast = decisions(trace, limit, nodes, gpus, policy, speedups=True)
    plain = decisions(trace, limit, nodes, gpus, policy, speedups=False)
    assert len(fast) == len(plain) >= 12
    assert fast == plain
