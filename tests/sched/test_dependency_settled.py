"""Dependency results are kept once settled, as slurmctld keeps them: each item is marked
``DEPEND_FULFILLED`` or ``DEPEND_FAILED`` once (``test_job_dependency``), a fully met list is
flushed (``Dependency=(null)``), and a failed one stays failed even if a target is requeued.

The pass reports what it settled (``PassResult.settled``); the ``lab`` driver records it with
``ClusterState.settle_dependencies`` after every pass, as the simulator and controller must.
"""

from __future__ import annotations

from minislurm.core.deps import parse_dependency
from minislurm.core.deps import Dependency
from minislurm.core.states import JobState

WAITING, NEVER = "Dependency", "DependencyNeverSatisfied"


def dep(text: str):
    return parse_dependency(text)


def test_a_met_dependency_is_reported_once_and_cleared(lab):
    c = lab()
    target = c.submit(0)
    job = c.submit(0, dependency=dep(f"afterok:{target.job_id}"))
    assert c.run(0).settled == {}
    c.state.finish(target, JobState.COMPLETED, 10)
    r = c.run(10)
    assert r.settled == {job.job_id: "ok"}
    assert job.state is JobState.RUNNING and job.dependency is None and not job.dependency_failed
    assert c.run(11).settled == {}


def test_a_failed_dependency_is_reported_once_and_kept(lab):
    c = lab()
    target = c.submit(0)
    job = c.submit(0, dependency=dep(f"afterok:{target.job_id}"))
    c.run(0)
    c.state.finish(target, JobState.FAILED, 10, exit_code=1)
    r = c.run(10)
    assert r.settled == {job.job_id: "never"} and c.reason(job) == NEVER
    assert job.dependency_failed and str(job.dependency) == f"afterok:{target.job_id}"
    r = c.run(11)
    assert r.settled == {} and c.reason(job) == NEVER


def test_a_met_item_of_an_and_list_is_dropped_and_stays_met(lab):
    c = lab()
    a, b = c.submit(0), c.submit(0)
    job = c.submit(0, dependency=dep(f"afterok:{a.job_id},afterok:{b.job_id}"))
    c.run(0)
    c.state.finish(a, JobState.COMPLETED, 10)
    r = c.run(10)
    assert r.settled == {job.job_id: Dependency((("afterok", (b.job_id,)),))}
    assert str(job.dependency) == f"afterok:{b.job_id}" and c.reason(job) == WAITING
    c.state.requeue(a, 20)  # `a` pends again; its item was met and is not looked at again
    c.state.finish(b, JobState.COMPLETED, 30)
    c.run(30)
    assert job.state is JobState.RUNNING and job.dependency is None


def test_a_failed_item_of_an_or_list_is_dropped_and_stays_failed(lab):
    c = lab()
    a, b = c.submit(0, minutes=60), c.submit(0, minutes=60)
    job = c.submit(0, dependency=dep(f"afterok:{a.job_id}?afterok:{b.job_id}"))
    c.run(0)
    c.state.finish(a, JobState.FAILED, 10, exit_code=1)
    r = c.run(10)
    assert r.settled == {job.job_id: Dependency((("afterok", (b.job_id,)),), any_of=True)}
    c.state.requeue(a, 20)
    c.run(200)  # `a` runs again after its requeue delay ...
    assert a.state is JobState.RUNNING
    c.state.finish(a, JobState.COMPLETED, 300)  # ... and succeeds: too late, its item failed
    c.run(300)
    assert job.state is JobState.PENDING and c.reason(job) == WAITING
    c.state.finish(b, JobState.FAILED, 400, exit_code=1)
    r = c.run(400)
    assert r.settled == {job.job_id: "never"} and c.reason(job) == NEVER


def test_a_job_deep_in_a_blocked_queue_is_settled_too(lab):
    # build_job_queue tests every pending job, not only those the main stage reaches.
    c = lab(nodes=1, gpus=4)
    target = c.submit(0, gpus=4, minutes=60)
    c.run(0)
    blocker = c.submit(1, gpus=4)  # waits for the node and blocks the only partition
    job = c.submit(2, gpus=4, dependency=dep(f"after:{target.job_id}"))
    r = c.run(3, backfill=False)
    assert c.reason(blocker) == "Resources"
    assert r.settled == {job.job_id: "ok"} and job.dependency is None and c.reason(job) == "Priority"


def test_a_held_job_keeps_its_dependency_untested_until_released(lab):
    # slurmctld's job_independent returns early for a held job: nothing is settled.
    c = lab()
    target = c.submit(0)
    job = c.submit(0, hold="user", dependency=dep(f"afterok:{target.job_id}"))
    c.run(0)
    c.state.finish(target, JobState.FAILED, 10, exit_code=1)
    r = c.run(10)
    assert r.settled == {} and c.reason(job) == "JobHeldUser" and not job.dependency_failed
    job.hold = None
    c.state.reprioritized()
    r = c.run(11)
    assert r.settled == {job.job_id: "never"} and c.reason(job) == NEVER


def test_settling_an_unknown_job_is_ignored(lab):
    c = lab()
    version = c.state.version
    c.state.settle_dependencies({999: "ok"})
    assert 999 not in c.state.jobs and c.state.version == version + 1
