"""What one pass does around a job that cannot start, and within-pass bookkeeping.

Checked against slurmctld's ``_schedule`` (job_scheduler.c): a waiting job whose ``-w`` list
covers its node count only withholds those nodes from later jobs of the pass; one whose list
does not still blocks its partition; ``-w`` nodes are a floor (the job gets them plus others);
the ``%N`` throttle counts tasks started earlier in the same pass, in backfill too.
"""

from __future__ import annotations

from minislurm.core.states import JobState


def W(*names: str) -> frozenset[str]:
    return frozenset(names)


def nodes_of(c, job) -> list[str]:
    return [c.state.nodes.names[n] for n in job.alloc.nodes]


# -- -w in the main stage ------------------------------------------------------------------

def test_required_nodes_are_taken_first_then_the_lowest_free_others(lab):
    c = lab(nodes=4, gpus=4)
    c.submit(0, gpus=4, minutes=60)  # fills node01's GPUs
    c.run(0)
    job = c.submit(1, nodes=3, gpus=1, req_nodes=W("node04", "node02"))
    c.run(1)
    assert job.state is JobState.RUNNING and nodes_of(c, job) == ["node02", "node03", "node04"]


def test_listed_nodes_of_a_waiting_job_are_withheld_from_later_jobs(lab):
    c = lab(nodes=2, gpus=4)
    c.submit(0, gpus=2, minutes=60)  # node01 keeps 2 free GPUs
    c.run(0)
    pinned = c.submit(1, gpus=4, req_nodes=W("node01"))
    later = c.submit(2, gpus=1)
    r = c.run(3, backfill=False)
    assert c.reason(pinned) == "Resources"
    # node01 would be the first choice, but it is kept for the pinned job.
    assert [s.job_id for s in r.starts] == [later.job_id] and nodes_of(c, later) == ["node02"]


def test_a_waiting_job_whose_list_does_not_cover_its_count_blocks_the_partition(lab):
    c = lab(nodes=3, gpus=4)
    c.submit(0, gpus=4, minutes=60, req_nodes=W("node01"))
    c.run(0)
    pinned = c.submit(1, nodes=2, gpus=1, req_nodes=W("node01"))
    later = c.submit(2, gpus=1)
    r = c.run(3, backfill=False)
    assert r.starts == ()
    assert c.reason(pinned) == "Resources" and c.reason(later) == "Priority"


# -- -w in backfill ------------------------------------------------------------------------

def test_backfill_starts_a_pinned_multi_node_job_that_fits_now(lab):
    c = lab(nodes=3, gpus=4)
    c.submit(0, gpus=4, minutes=60, req_nodes=W("node01"))
    c.run(0)
    blocker = c.submit(1, nodes=3, gpus=4, minutes=60)  # needs node01 too: waits, blocks the partition
    job = c.submit(2, nodes=2, gpus=1, minutes=30, req_nodes=W("node03"))
    r = c.run(3)
    assert c.reason(blocker) == "Resources" and r.expected_start[blocker.job_id] == 3600.0
    assert [(s.job_id, s.backfilled) for s in r.starts] == [(job.job_id, True)]
    assert nodes_of(c, job) == ["node02", "node03"]


def test_backfill_promises_the_required_node_plus_the_first_others_free_with_it(lab):
    c = lab(nodes=3, gpus=4)
    c.submit(0, gpus=4, minutes=60, req_nodes=W("node01"))  # node01 until 3600
    c.submit(0, gpus=4, minutes=20, req_nodes=W("node02"))  # node02 until 1200
    c.submit(0, gpus=4, minutes=30, req_nodes=W("node03"))  # node03 until 1800
    c.run(0)
    first = c.submit(1, gpus=4, minutes=30, req_nodes=W("node02"))
    job = c.submit(2, nodes=2, gpus=4, minutes=30, req_nodes=W("node03"))
    r = c.run(3)
    assert r.expected_start[first.job_id] == 1200.0 and r.planned_nodes[first.job_id] == (1,)
    # node03 is free from 1800, but its partner must wait for node02's promise to end at 3000
    # (node01 frees only at 3600).
    assert r.expected_start[job.job_id] == 3000.0 and r.planned_nodes[job.job_id] == (1, 2)


# -- array throttle -----------------------------------------------------------------------

def test_array_throttle_counts_tasks_backfill_started_in_the_same_cycle(lab):
    c = lab(nodes=2, gpus=4)
    c.submit(0, gpus=4, minutes=60)  # node01 busy for an hour
    c.run(0)
    blocker = c.submit(1, nodes=2, gpus=4, minutes=60)  # waits for node01, blocks the partition
    first = c.state.next_job_id
    tasks = [c.submit(2, gpus=1, minutes=10, array_job_id=first, array_task_id=i, array_max_running=2)
             for i in range(3)]
    r = c.run(3)
    assert c.reason(blocker) == "Resources"
    assert [(s.job_id, s.backfilled) for s in r.starts] == [(tasks[0].job_id, True), (tasks[1].job_id, True)]
    assert c.reason(tasks[2]) == "JobArrayTaskLimit" and tasks[2].job_id not in r.expected_start
