"""sched/releases.py: the running jobs' releases, kept between cycles and changed only where
jobs started or ended, must plan exactly as a table built afresh from the running jobs."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from minislurm.core.cluster import simple_cluster
from minislurm.core.job import Allocation, Job, Shape
from minislurm.core.state import ClusterState
from minislurm.core.states import JobState
from minislurm.sched.plan import NEVER, Plan
from minislurm.sched.releases import Releases
from minislurm.sched.schedule import schedule

NODES = 4
REQUESTS = [(c, m, g) for c in (0, 1, 3, 6, 9) for m in (0, 1000, 3000) for g in (0, 1, 3, 5)]


def ready_times(releases: Releases, free, now: int) -> list[list[int]]:
    plan = Plan(free, releases, now)
    return [plan.ready_times(req, req).tolist() for req in REQUESTS]


def holding(draw_nodes, cpus, gigs, gpus, start: float, limit: float) -> SimpleNamespace:
    alloc = Allocation(tuple(draw_nodes), tuple(cpus), tuple(g * 1000 for g in gigs),
                       tuple(tuple(range(g)) for g in gpus))
    return SimpleNamespace(start_time=start, time_limit=limit, alloc=alloc)


job_st = st.builds(
    lambda nodes, amounts, start, limit: holding(nodes, [a[0] for a in amounts[:len(nodes)]],
                                                 [a[1] for a in amounts[:len(nodes)]],
                                                 [a[2] for a in amounts[:len(nodes)]], start, limit),
    st.lists(st.integers(0, NODES - 1), min_size=1, max_size=NODES, unique=True),
    st.lists(st.tuples(st.integers(1, 4), st.integers(0, 2), st.integers(0, 3)), min_size=NODES, max_size=NODES),
    st.sampled_from([0.0, 30.0, 60.0, 90.0, 120.0, 150.0]),
    st.sampled_from([60.0, 90.0, 120.0, 300.0, float("inf")]),
)

# One step of the cluster between cycles: a job starts, ends, is requeued and starts again
# (a new allocation under the same id), or has its time limit changed; then a cycle at ``now``.
step_st = st.tuples(st.sampled_from(["start", "end", "restart", "limit"]), st.integers(0, 9), job_st,
                    st.sampled_from([60.0, 600.0]), st.integers(0, 300))


@settings(max_examples=300, deadline=None)
@given(st.lists(step_st, min_size=1, max_size=25))
def test_a_kept_table_plans_as_one_built_afresh(steps):
    free = SimpleNamespace(cpu=np.array([2, 0, 5, 1]), mem=np.array([1000, 0, 2000, 0]), gpu=np.array([1, 0, 2, 4]))
    kept = Releases(NODES, 60)
    running: dict[int, SimpleNamespace] = {}
    for kind, job_id, job, new_limit, now in steps:
        if kind in ("start", "restart") and (kind == "start") != (job_id in running):
            running[job_id] = job
        elif kind == "end":
            running.pop(job_id, None)
        elif kind == "limit" and job_id in running:
            running[job_id].time_limit = new_limit
        kept.update(running)
        fresh = Releases(NODES, 60).update(running)
        assert ready_times(kept, free, now) == ready_times(fresh, free, now)


def test_a_job_past_its_limit_frees_one_step_from_now_and_rows_stay_in_order():
    """Job A's limit ended before now (it is being killed): its release counts at now + 60 s,
    after job B's at now + 50 s on the same node, as a table built with A's time moved."""
    free = SimpleNamespace(cpu=np.array([0]), mem=np.array([0]), gpu=np.array([0]))
    a = holding([0], [4], [0], [0], start=0.0, limit=60.0)   # ends at 60, before now
    b = holding([0], [1], [0], [0], start=0.0, limit=180.0)  # ends at 180
    table = Releases(1, 60).update({1: a, 2: b})
    plan = Plan(free, table, now=130)
    assert plan.ready_times("one", (1, 0, 0)).tolist() == [180]  # B alone is enough, at 180
    assert plan.ready_times("four", (4, 0, 0)).tolist() == [190]  # A, at now + 60
    assert plan.ready_times("five", (5, 0, 0)).tolist() == [190]  # both: by 190
    assert plan.ready_times("six", (6, 0, 0)).tolist() == [NEVER]
    assert table.times[0].tolist()[1:] == [60, 180]  # the kept table is not changed by a plan


def test_a_kept_table_follows_the_state_through_its_journal():
    """Starts, ends, requeues and time-limit changes on a real state, read by a kept table
    through the state's journal (and afresh after ``reprioritized``), across journal trims."""
    rng = np.random.default_rng(3)
    state = ClusterState(simple_cluster(4, cpus=8, mem=8000, gpus=4, policy="conservative"))
    kept = Releases()
    for step in range(3000):
        now = float(step * 30)
        action = rng.integers(4)
        if action == 0 or not state.running:
            job = Job(state.new_job_id(), partition="gpu", submit_time=now, time_limit=float(rng.integers(1, 20) * 60),
                      num_nodes=int(rng.integers(1, 3)), shape=Shape(cpus=int(rng.integers(1, 5)), gpus=int(rng.integers(0, 3))))
            state.add(job)
            for start in schedule(state, now, backfill_cycle=False).starts:
                state.start(state.jobs[start.job_id], start.alloc, now)
        else:
            job = state.running[int(rng.choice(list(state.running)))]
            if action == 1:
                state.finish(job, JobState.COMPLETED, now)
            elif action == 2:
                state.requeue(job, now)
            else:  # scontrol update TimeLimit=: the controller calls reprioritized()
                job.time_limit = float(rng.integers(1, 20) * 60)
                state.reprioritized()
        if step % 7 == 0:
            free = SimpleNamespace(cpu=state.nodes.free_cpu, mem=state.nodes.free_mem, gpu=state.nodes.free_gpu)
            assert ready_times(kept.refresh(state), free, int(now)) == ready_times(Releases().refresh(state), free, int(now))
    assert state.journal_start > 0  # trimmed along the way, and read across


def test_ready_times_asked_between_starts_are_those_of_a_plan_built_with_them():
    """A plan's ready times come from columns kept with the table: asked before and after each
    job started in the cycle, they must be a fresh plan's, and the next cycle's plan (a new
    copy of the kept table, without those starts) must not see them."""
    rng = np.random.default_rng(27)
    for _ in range(100):
        free = SimpleNamespace(cpu=rng.integers(0, 6, NODES), mem=rng.integers(0, 4, NODES) * 1000,
                               gpu=rng.integers(0, 4, NODES))

        def job(start: float) -> SimpleNamespace:
            nodes = rng.choice(NODES, size=int(rng.integers(1, 3)), replace=False).tolist()
            return holding(nodes, rng.integers(1, 4, len(nodes)).tolist(), rng.integers(0, 3, len(nodes)).tolist(),
                           rng.integers(0, 3, len(nodes)).tolist(), start, float(rng.integers(1, 6) * 60))
        running = {i: job(float(rng.integers(0, 3) * 60)) for i in range(int(rng.integers(0, 8)))}
        kept = Releases(NODES, 60).update(running)
        before = ready_times(kept, free, 120)
        plan, started = Plan(free, kept, 120), []
        for _ in range(int(rng.integers(1, 5))):
            started.append(job(120.0))
            plan.add_running(started[-1])
            fresh = Plan(free, Releases(NODES, 60).update(running | dict(enumerate(started, 100))), 120)
            assert [plan.ready_times(r, r).tolist() for r in REQUESTS] == [fresh.ready_times(r, r).tolist() for r in REQUESTS]
        assert ready_times(kept, free, 120) == before
        started.append(job(120.0))  # a plan still in use after a later one was made keeps its own columns
        plan.add_running(started[-1])
        fresh = Plan(free, Releases(NODES, 60).update(running | dict(enumerate(started, 100))), 120)
        assert [plan.ready_times(r, r).tolist() for r in REQUESTS] == [fresh.ready_times(r, r).tolist() for r in REQUESTS]
