"""Why a job waits, from the scheduler's own plan, and what would make it start sooner.

``squeue`` shows one reason word and ``squeue --start`` one time; the plan behind them is data
here, so :func:`explain` can say what holds a waiting job: the running jobs on the nodes its
promise takes (they end by their time limits), the higher-priority jobs ahead of it, and its
reason in plain words.  :func:`what_if` asks the same pure policy about a changed copy of the
state ("with ``--time=9`` it would start now on gpu02"): nothing here changes the state.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping

from minislurm.core.state import ClusterState
from minislurm.core.states import Reason
from minislurm.sched.order import priority_order
from minislurm.sched.schedule import schedule

MEANING = {
    Reason.RESOURCES: "it is the first in line, but what it asks for is in use",
    Reason.PRIORITY: "jobs of higher priority wait before it, and it may not start in front of them",
    Reason.DEPENDENCY: "it waits for the jobs it depends on (--dependency)",
    Reason.DEPENDENCY_NEVER: "its dependency can never be met: cancel it, or change the dependency",
    Reason.BEGIN_TIME: "it may not start before its begin time (--begin, or a requeue's delay)",
    Reason.HELD_USER: "it is held: scontrol release lets it start",
    Reason.HELD_ADMIN: "an operator holds it: only an operator releases it",
    Reason.RESERVATION: "it runs only inside its reservation, which has not started or has no room",
    Reason.RESERVED_FOR_OTHER: "the free nodes are in an advance reservation it may not use",
    Reason.PARTITION_NODE_LIMIT: "it asks for more nodes than its partition allows: it can never start there",
    Reason.PARTITION_TIME_LIMIT: "its time limit is over its partition's MaxTime: it can never start there",
    Reason.PARTITION_DOWN: "its partition is DOWN",
    Reason.ARRAY_TASK_LIMIT: "its array's throttle (%N) has as many tasks running as it allows",
}


def meaning(reason: str) -> str:
    if reason.startswith(Reason.REQ_NODE_NOT_AVAIL) and reason not in MEANING:
        return "nodes it needs are down, drained or reserved"
    return MEANING.get(reason, "see the reason's entry in Slurm's squeue manual")


def explain(state: ClusterState, job_id: int, now: float, expected: Mapping[int, float],
            planned: Mapping[int, tuple[int, ...]]) -> dict:
    """A pending job's reason, the start the last plan holds for it (``expected``, ``planned``:
    the last backfill cycle's), the running jobs on those nodes and the jobs ahead of it."""
    job = state.jobs[job_id]
    names = state.nodes.names
    out: dict = {"job_id": job_id, "name": job.name, "state": job.state.name, "reason": job.reason,
                 "meaning": meaning(job.reason), "priority": job.priority, "expected_start": expected.get(job_id),
                 "planned_nodes": [names[n] for n in planned.get(job_id, ())], "held_by": [], "ahead": []}
    if not job.pending:
        return out
    mine = set(planned.get(job_id, ()))
    for other in state.running.values():
        on = sorted(mine & set(other.alloc.nodes))
        if on:
            out["held_by"].append({"job_id": other.job_id, "name": other.name, "user": other.user,
                                   "nodes": [names[n] for n in on], "ends_by": other.start_time + other.time_limit})
    for other in priority_order(state):
        if other.job_id == job_id:
            break
        if other.partition == job.partition and other.hold is None:
            out["ahead"].append({"job_id": other.job_id, "name": other.name, "priority": other.priority,
                                 "expected_start": expected.get(other.job_id),
                                 "nodes": [names[n] for n in planned.get(other.job_id, ())]})
    return out


def what_if(state: ClusterState, job_id: int, now: float, **changes) -> tuple[float | None, list[str]]:
    """When the job would start, and where, were it submitted with ``changes`` (``time_limit=``
    seconds, ``partition=``): one full pass of the same policy on a copy of the state.
    (None, []) when the plan holds no start for it within the backfill window."""
    trial = copy.deepcopy(state)
    trial.update(trial.jobs[job_id], changes)
    result = schedule(trial, now)
    names = trial.nodes.names
    for start in result.starts:
        if start.job_id == job_id:
            return now, [names[n] for n in start.alloc.nodes]
    return result.expected_start.get(job_id), [names[n] for n in result.planned_nodes.get(job_id, ())]


# A user acts on a what-if some seconds after reading it.  Advice that goes stale in that time
# (a limit that fits before another job's promise only if started this second) is no advice:
# the suggested limit must also start were the change made this much later.
ACT_WITHIN = 60.0


def longest_now(state: ClusterState, job_id: int, now: float) -> tuple[int, list[str]] | None:
    """The longest time limit, in whole minutes below the job's own, with which it would start
    now and still start were the change made ``ACT_WITHIN`` seconds later (a shorter job may
    backfill in front of the others' promises), and on which nodes (now's); None if no such
    limit.  A shorter limit never starts later, so a bisection finds it in a few passes."""
    limit = state.jobs[job_id].time_limit
    high = int(min(limit, 7 * 86400) // 60) - (1 if limit % 60 == 0 else 0)
    low, best, later = 1, None, now + ACT_WITHIN
    while low <= high:
        mid = (low + high) // 2
        start, nodes = what_if(state, job_id, now, time_limit=mid * 60.0)
        if start == now and what_if(state, job_id, later, time_limit=mid * 60.0)[0] == later:
            best, low = (mid, nodes), mid + 1
        else:
            high = mid - 1
    return best


def what_ifs(state: ClusterState, job_id: int, now: float, expected: float | None) -> list[dict]:
    """The changes worth trying: the longest time limit that would start it now, and each other
    partition."""
    job, out = state.jobs[job_id], []
    shorter = longest_now(state, job_id, now) if job.time_limit > 60 else None
    if shorter is not None:
        out.append({"option": f"--time={shorter[0]}", "start": now, "nodes": shorter[1]})
    for p in state.partitions:
        if p == job.partition:
            continue
        start, nodes = what_if(state, job_id, now, partition=p)
        if start is not None and (expected is None or start < expected):
            out.append({"option": f"--partition={p}", "start": start, "nodes": nodes})
    return out
