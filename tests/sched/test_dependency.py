"""Dependencies (``-d``) as the scheduler sees them: ``Dependency`` while waiting,
``DependencyNeverSatisfied`` once the condition can no longer hold, and a start once met.

Semantics checked against slurmctld (job_scheduler.c ``_test_job_dependency_common``,
``_find_singleton_job``, ``test_job_dependency``) and the sbatch man page.
"""

from __future__ import annotations

import pytest

from minislurm.core.deps import parse_dependency
from minislurm.core.states import JobState
from minislurm.sched import depend

WAITING, NEVER = "Dependency", "DependencyNeverSatisfied"


def dep(text: str):
    return parse_dependency(text)


def pending_reason(c, job, now):
    c.run(now)
    assert job.state is JobState.PENDING
    return c.reason(job)


# -- after -----------------------------------------------------------------------------

def test_after_waits_for_the_target_to_start(lab):
    c = lab(nodes=1, gpus=4)
    hog = c.submit(0, gpus=4, minutes=60)
    c.run(0)
    target = c.submit(1, gpus=4)
    job = c.submit(2, dependency=dep(f"after:{target.job_id}"))
    assert pending_reason(c, job, 3) == WAITING
    # The target starts in this pass; the dependent is judged on the state before it.
    c.state.finish(hog, JobState.COMPLETED, 10)
    c.run(10)
    assert target.state is JobState.RUNNING and c.reason(job) == WAITING
    c.run(11)
    assert job.state is JobState.RUNNING


def test_after_is_satisfied_when_the_target_is_cancelled_before_starting(lab):
    c = lab()
    target = c.submit(0, hold="user")
    job = c.submit(1, dependency=dep(f"after:{target.job_id}"))
    assert pending_reason(c, job, 2) == WAITING
    c.state.finish(target, JobState.CANCELLED, 3)
    c.run(4)
    assert job.state is JobState.RUNNING


# -- afterany / afterok / afternotok --------------------------------------------------------

@pytest.mark.parametrize("end, code", [(JobState.COMPLETED, 0), (JobState.FAILED, 1),
                                       (JobState.CANCELLED, 0), (JobState.TIMEOUT, 0)])
def test_afterany_is_met_by_any_ending(lab, end, code):
    c = lab()
    target = c.submit(0)
    job = c.submit(0, dependency=dep(f"afterany:{target.job_id}"))
    c.run(0)
    assert target.state is JobState.RUNNING and c.reason(job) == WAITING
    c.state.finish(target, end, 50, exit_code=code)
    c.run(50)
    assert job.state is JobState.RUNNING


def test_afterok_runs_after_success(lab):
    c = lab()
    target = c.submit(0)
    job = c.submit(0, dependency=dep(f"afterok:{target.job_id}"))
    assert pending_reason(c, job, 0) == WAITING
    c.state.finish(target, JobState.COMPLETED, 60, exit_code=0)
    c.run(60)
    assert job.state is JobState.RUNNING


@pytest.mark.parametrize("end, code", [(JobState.FAILED, 1), (JobState.TIMEOUT, 0), (JobState.CANCELLED, 0),
                                       (JobState.NODE_FAIL, 0), (JobState.OUT_OF_MEMORY, 0)])
def test_afterok_can_never_be_met_after_a_failure(lab, end, code):
    c = lab()
    target = c.submit(0)
    job = c.submit(0, dependency=dep(f"afterok:{target.job_id}"))
    c.run(0)
    c.state.finish(target, end, 60, exit_code=code)
    assert pending_reason(c, job, 60) == NEVER


@pytest.mark.parametrize("end, code", [(JobState.FAILED, 2), (JobState.TIMEOUT, 0), (JobState.NODE_FAIL, 0),
                                       (JobState.CANCELLED, 0)])
def test_afternotok_runs_after_a_failure(lab, end, code):
    c = lab()
    target = c.submit(0)
    job = c.submit(0, dependency=dep(f"afternotok:{target.job_id}"))
    assert pending_reason(c, job, 0) == WAITING
    c.state.finish(target, end, 60, exit_code=code)
    c.run(60)
    assert job.state is JobState.RUNNING


def test_afternotok_can_never_be_met_after_success(lab):
    c = lab()
    target = c.submit(0)
    job = c.submit(0, dependency=dep(f"afternotok:{target.job_id}"))
    c.run(0)
    c.state.finish(target, JobState.COMPLETED, 60, exit_code=0)
    assert pending_reason(c, job, 60) == NEVER


def test_a_bare_id_list_means_afterany(lab):
    c = lab()
    a, b = c.submit(0), c.submit(0)
    job = c.submit(0, dependency=dep(f"{a.job_id}:{b.job_id}"))
    c.run(0)
    c.state.finish(a, JobState.FAILED, 10, exit_code=1)
    assert pending_reason(c, job, 10) == WAITING
    c.state.finish(b, JobState.COMPLETED, 20)
    c.run(20)
    assert job.state is JobState.RUNNING


# -- singleton ----------------------------------------------------------------------------

def test_singleton_waits_for_the_earlier_job_of_the_same_name_and_user(lab):
    c = lab()
    first = c.submit(0, name="train", user="alice")
    second = c.submit(1, name="train", user="alice", dependency=dep("singleton"))
    other_user = c.submit(2, name="train", user="bob", dependency=dep("singleton"))
    other_name = c.submit(3, name="eval", user="alice", dependency=dep("singleton"))
    c.run(5)
    assert first.state is JobState.RUNNING
    assert c.reason(second) == WAITING
    assert other_user.state is JobState.RUNNING and other_name.state is JobState.RUNNING
    c.state.finish(first, JobState.FAILED, 60, exit_code=1)  # any ending will do
    c.run(60)
    assert second.state is JobState.RUNNING


def test_singleton_waits_behind_an_earlier_pending_job(lab):
    c = lab()
    first = c.submit(0, name="train", hold="user")
    second = c.submit(1, name="train", dependency=dep("singleton"))
    assert pending_reason(c, second, 2) == WAITING
    c.state.finish(first, JobState.CANCELLED, 3)
    c.run(3)
    assert second.state is JobState.RUNNING


def test_singleton_waits_for_a_running_job_submitted_after_it(lab):
    # _find_singleton_job: a running or suspended job of that name blocks, whatever its id;
    # "only one job by that name and owned by that user can be running or suspended".
    c = lab()
    single = c.submit(0, name="train", hold="user", dependency=dep("singleton"))
    later = c.submit(1, name="train")
    c.run(2)
    assert later.state is JobState.RUNNING
    single.hold = None
    c.state.reprioritized()
    assert pending_reason(c, single, 3) == WAITING
    c.state.finish(later, JobState.COMPLETED, 10)
    c.run(10)
    assert single.state is JobState.RUNNING


def test_a_later_pending_job_does_not_block_a_singleton(lab):
    c = lab()
    single = c.submit(0, name="train", dependency=dep("singleton"))
    c.submit(1, name="train", begin_time=10_000.0)
    c.run(2)
    assert single.state is JobState.RUNNING


# -- AND (,) and OR (?) -----------------------------------------------------------------------

def test_and_needs_every_condition(lab):
    c = lab()
    a, b = c.submit(0), c.submit(0)
    job = c.submit(0, dependency=dep(f"afterok:{a.job_id},afterany:{b.job_id}"))
    c.run(0)
    c.state.finish(a, JobState.COMPLETED, 10)
    assert pending_reason(c, job, 10) == WAITING
    c.state.finish(b, JobState.FAILED, 20, exit_code=1)
    c.run(20)
    assert job.state is JobState.RUNNING


def test_and_fails_as_soon_as_one_condition_fails(lab):
    # test_job_dependency: an AND'd failure fails the job even with other terms unfulfilled.
    c = lab()
    a, b = c.submit(0), c.submit(0)
    job = c.submit(0, dependency=dep(f"afterok:{a.job_id},afterok:{b.job_id}"))
    c.run(0)
    c.state.finish(a, JobState.FAILED, 10, exit_code=1)
    assert b.state is JobState.RUNNING
    assert pending_reason(c, job, 10) == NEVER


def test_or_needs_one_condition(lab):
    c = lab()
    a, b = c.submit(0), c.submit(0)
    job = c.submit(0, dependency=dep(f"afterok:{a.job_id}?afterok:{b.job_id}"))
    c.run(0)
    c.state.finish(a, JobState.FAILED, 10, exit_code=1)
    assert pending_reason(c, job, 10) == WAITING
    c.state.finish(b, JobState.COMPLETED, 20)
    c.run(20)
    assert job.state is JobState.RUNNING


def test_or_fails_only_when_every_condition_failed(lab):
    c = lab()
    a, b = c.submit(0), c.submit(0)
    job = c.submit(0, dependency=dep(f"afterok:{a.job_id}?afternotok:{b.job_id}"))
    c.run(0)
    c.state.finish(a, JobState.FAILED, 10, exit_code=1)
    c.state.finish(b, JobState.COMPLETED, 10)
    assert pending_reason(c, job, 10) == NEVER


# -- arrays ---------------------------------------------------------------------------------

def submit_array(c, n, **fields):
    first = c.state.next_job_id
    return [c.submit(0, array_job_id=first, array_task_id=i, **fields) for i in range(n)]


def test_dependency_on_an_array_id_waits_for_every_task(lab):
    c = lab()
    tasks = submit_array(c, 3)
    job = c.submit(0, dependency=dep(f"afterok:{tasks[0].job_id}"))
    c.run(0)
    for t in tasks[:2]:
        c.state.finish(t, JobState.COMPLETED, 10)
    assert pending_reason(c, job, 10) == WAITING
    c.state.finish(tasks[2], JobState.COMPLETED, 20)
    c.run(20)
    assert job.state is JobState.RUNNING


def test_afterok_on_an_array_fails_when_any_task_fails(lab):
    c = lab()
    tasks = submit_array(c, 3)
    job = c.submit(0, dependency=dep(f"afterok:{tasks[0].job_id}"))
    c.run(0)
    c.state.finish(tasks[1], JobState.FAILED, 10, exit_code=3)
    assert pending_reason(c, job, 10) == NEVER


def test_dependency_on_a_later_task_id_means_that_task_only(lab):
    c = lab()
    tasks = submit_array(c, 3)
    job = c.submit(0, dependency=dep(f"afterok:{tasks[1].job_id}"))
    c.run(0)
    c.state.finish(tasks[1], JobState.COMPLETED, 10)
    c.run(10)
    assert job.state is JobState.RUNNING and tasks[0].state is JobState.RUNNING


def test_aftercorr_waits_for_the_task_with_the_same_index(lab):
    c = lab()
    first = submit_array(c, 2)
    second = submit_array(c, 2, dependency=dep(f"aftercorr:{first[0].job_id}"))
    c.run(0)
    assert [c.reason(t) for t in second] == [WAITING, WAITING]
    c.state.finish(first[1], JobState.COMPLETED, 10)
    c.run(10)
    assert second[1].state is JobState.RUNNING
    assert second[0].state is JobState.PENDING and c.reason(second[0]) == WAITING
    c.state.finish(first[0], JobState.FAILED, 20, exit_code=1)
    assert pending_reason(c, second[0], 20) == NEVER


# -- what the dependency module decides directly -------------------------------------------

def test_a_purged_target_counts_as_satisfied(lab):
    # job_scheduler.c: "job is gone, dependency lifted".
    c = lab()
    job = c.submit(0, dependency=dep("afterok:999"))
    assert depend.status(job, c.state.jobs, c.state.array_tasks) == depend.OK
    c.run(0)
    assert job.state is JobState.RUNNING


def test_a_failed_dependency_is_not_revived_by_a_requeue(lab):
    # The man page: "the dependent job will never be run, even if the preceding job is
    # requeued and has a different termination state in a subsequent execution".
    c = lab()
    target = c.submit(0)
    job = c.submit(0, dependency=dep(f"afterok:{target.job_id}"))
    c.run(0)
    c.state.finish(target, JobState.FAILED, 10, exit_code=1)
    assert pending_reason(c, job, 10) == NEVER
    c.state.requeue(target, 20)
    assert pending_reason(c, job, 400) == NEVER


def test_a_fulfilled_after_dependency_stays_fulfilled_when_the_target_is_requeued(lab):
    c = lab(nodes=1, gpus=4)
    target = c.submit(0, gpus=4)
    job = c.submit(0, gpus=4, dependency=dep(f"after:{target.job_id}"))
    c.run(0)
    c.run(1)  # "after" met: the target started; the dependent now only lacks resources
    assert c.reason(job) == "Resources"
    c.state.requeue(target, 5)  # the node is free again, the target waits out its BeginTime
    c.run(6)
    assert job.state is JobState.RUNNING
