"""A heterogeneous job's components start together or not at all (sched/hetjob.py)."""

from __future__ import annotations

from minislurm.core.states import JobState, Reason


def _het(lab, shapes, now=0.0, **fields):
    """Submit one heterogeneous job: a component per (nodes, cpus) shape, ids leader+offset."""
    parts = []
    for offset, (nodes, cpus) in enumerate(shapes):
        job = lab.submit(now, nodes=nodes, cpus=cpus, name=f"part{offset}", **fields)
        leader = parts[0].job_id if parts else job.job_id
        job.het_job_id, job.het_job_offset = leader, offset
        parts.append(job)
    return parts


def test_all_components_start_in_the_same_pass(lab):
    lab = lab(nodes=2, cpus=8)
    a, b = _het(lab, [(1, 8), (1, 8)])
    result = lab.run(10.0)
    assert {s.job_id for s in result.starts} == {a.job_id, b.job_id}
    assert a.state is b.state is JobState.RUNNING and a.start_time == b.start_time == 10.0
    assert {a.alloc.nodes, b.alloc.nodes} == {(0,), (1,)}  # each took a whole node


def test_components_never_share_a_node(lab):
    """As on the twin: three one-CPU components on two eight-CPU nodes wait for Resources;
    two start, each on a node of its own."""
    three = lab(nodes=2, cpus=8)
    parts = _het(three, [(1, 1), (1, 1), (1, 1)])
    three.run(0.0)
    assert all(p.state is JobState.PENDING and three.reason(p) == Reason.RESOURCES for p in parts)
    two = lab(nodes=2, cpus=8)
    a, b = _het(two, [(1, 1), (1, 1)])
    two.run(0.0)
    assert a.state is b.state is JobState.RUNNING and {a.alloc.nodes, b.alloc.nodes} == {(0,), (1,)}


def test_none_starts_while_one_component_does_not_fit(lab):
    lab = lab(nodes=2, cpus=8)
    running = lab.submit(0.0, nodes=1, cpus=8, minutes=60)
    lab.run(0.0)
    a, b = _het(lab, [(1, 4), (1, 8)], now=1.0)  # the first would fit alone, not the second
    result = lab.run(2.0)
    assert running.state is JobState.RUNNING and not result.starts
    assert a.state is b.state is JobState.PENDING
    assert lab.reason(a) == lab.reason(b) == Reason.RESOURCES
    small = lab.submit(3.0, nodes=1, cpus=2, minutes=5)  # behind it: the partition is blocked
    lab.run(4.0, backfill=False)
    assert small.state is JobState.PENDING and lab.reason(small) == Reason.PRIORITY
    lab.state.finish(running, JobState.COMPLETED, 5.0)
    lab.run(6.0)
    assert a.state is b.state is JobState.RUNNING and a.start_time == b.start_time == 6.0


def test_backfill_does_not_start_a_component_alone(lab):
    lab = lab(nodes=2, cpus=8)
    lab.submit(0.0, nodes=1, cpus=8, minutes=60)
    lab.run(0.0)
    a, b = _het(lab, [(1, 4), (1, 8)], now=1.0, minutes=1)
    lab.run(2.0, backfill=True)
    assert a.state is b.state is JobState.PENDING


def test_a_held_component_holds_the_whole_job(lab):
    lab = lab(nodes=2, cpus=8)
    a, b = _het(lab, [(1, 1), (1, 1)])
    lab.state.hold(b, "user")
    lab.run(0.0)
    assert a.state is b.state is JobState.PENDING
    assert lab.reason(a) == lab.reason(b) == Reason.held("user")
