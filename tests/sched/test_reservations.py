"""Advance reservations in the Filter stage: who may use the reserved nodes, and when.

One reservation "big" holds node01 for [3600, 7200) for user alice; node02 stays general.
"""

from __future__ import annotations

import pytest

from minislurm.core.reservation import AdvanceReservation
from minislurm.core.states import JobState
from minislurm.sched.schedule import priority_order

RESERVED = "ReqNodeNotAvail, May be reserved for other job"
START, END = 3600.0, 7200.0


@pytest.fixture
def c(lab):
    c = lab(nodes=2, gpus=4)
    c.state.add_reservation(AdvanceReservation("big", ("node01",), start=START, end=END,
                                               users=frozenset({"alice"})))
    return c


def nodes_of(c, job) -> list[str]:
    return [c.state.nodes.names[n] for n in job.alloc.nodes]


def fill_node02(c, now=0.0, minutes=300):
    """Pin a long job on node02 so that only node01 is left."""
    hog = c.submit(now, gpus=4, minutes=minutes, exc_nodes=frozenset({"node01"}))
    c.run(now)
    assert nodes_of(c, hog) == ["node02"]
    return hog


def test_job_that_would_overlap_the_window_is_kept_off_the_reserved_node(c):
    fill_node02(c)
    job = c.submit(10, gpus=1, minutes=120)
    r = c.run(10)
    assert job.state is JobState.PENDING and c.reason(job) == RESERVED
    # Backfill promises it node01 right after the window.
    assert r.expected_start[job.job_id] == END and r.planned_nodes[job.job_id] == (0,)


def test_job_that_ends_before_the_window_may_use_the_reserved_node(c):
    fill_node02(c)
    short = c.submit(10, gpus=1, minutes=30)
    c.run(10)
    assert short.state is JobState.RUNNING and nodes_of(c, short) == ["node01"]


def test_job_ending_exactly_at_the_window_start_fits(c):
    fill_node02(c)
    edge = c.submit(0, gpus=1, minutes=60)
    c.run(0)
    assert edge.state is JobState.RUNNING and nodes_of(c, edge) == ["node01"]


def test_job_one_second_too_long_is_blocked(c):
    fill_node02(c)
    over = c.submit(1, gpus=1, minutes=60)  # ends at 3601
    c.run(1)
    assert c.reason(over) == RESERVED


def test_reserved_node_is_free_for_all_again_after_the_window(c):
    fill_node02(c)
    job = c.submit(10, gpus=1, minutes=120)
    c.run(10)
    c.run(END - 1)
    assert c.reason(job) == RESERVED
    c.run(END)
    assert job.state is JobState.RUNNING and nodes_of(c, job) == ["node01"]


def test_reservation_job_waits_for_the_window_with_reason_reservation(c):
    job = c.submit(0, gpus=1, minutes=30, user="alice", reservation="big")
    c.run(0)
    assert job.state is JobState.PENDING and c.reason(job) == "Reservation"
    c.run(START - 1)
    assert c.reason(job) == "Reservation"
    c.run(START)
    assert job.state is JobState.RUNNING and nodes_of(c, job) == ["node01"]


def test_reservation_job_runs_only_on_the_reserved_nodes(c):
    first = c.submit(START, gpus=4, minutes=30, user="alice", reservation="big")
    second = c.submit(START, gpus=1, minutes=30, user="alice", reservation="big")
    c.run(START)
    assert nodes_of(c, first) == ["node01"]
    # node02 is idle, but it is not in the reservation.
    assert second.state is JobState.PENDING and c.reason(second) == "Resources"


def test_jobs_with_a_reservation_are_considered_first(c):
    plain = c.submit(0, gpus=1)
    resv_job = c.submit(5, gpus=1, user="alice", reservation="big")
    plain.priority, resv_job.priority = 10_000, 1
    c.state.reprioritized()
    assert [j.job_id for j in priority_order(c.state)] == [resv_job.job_id, plain.job_id]


def test_waiting_reservation_job_does_not_block_its_partition(c):
    c.submit(START, gpus=4, minutes=60, user="alice", reservation="big")
    c.run(START)
    waiting = c.submit(START + 1, gpus=4, minutes=10, user="alice", reservation="big")
    plain = c.submit(START + 2, gpus=1, minutes=10)
    r = c.run(START + 3, backfill=False)
    assert c.reason(waiting) == "Resources"
    assert plain.state is JobState.RUNNING and nodes_of(c, plain) == ["node02"]
    assert [s.job_id for s in r.starts] == [plain.job_id]


def test_later_jobs_of_a_reservation_that_could_not_start_get_priority(c):
    c.submit(START, gpus=3, minutes=60, user="alice", reservation="big")
    c.run(START)
    waiting = c.submit(START + 1, gpus=4, minutes=10, user="alice", reservation="big")
    small = c.submit(START + 2, gpus=1, minutes=10, user="alice", reservation="big")
    r = c.run(START + 3, backfill=False)
    # node01 still has a free GPU, but the reservation's queue is blocked behind `waiting`.
    assert r.starts == ()
    assert c.reason(waiting) == "Resources" and c.reason(small) == "Priority"
